/**
 * A hostile (or broken) server's text in the client's error messages, from a real HTTP server over
 * a socket: control characters (newlines, ANSI escapes) are escaped and the length is bounded, so
 * an app logging `error.message` gets one bounded line; the raw fields stay as received.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError, createClient, NetworkError, OAuthError, SERVER_TEXT_MAX, serverText } from "../src/index.js";
import { rejectionOf, startTarget, type ServerTarget } from "./support.js";

/** About 1 MB of description: ANSI escapes (clear screen, red), a forged log line, then filler. */
const HOSTILE = "bad\n\u001b[2J\u001b[31mred\r\n2026-11-29T00:00:00Z INFO admin logged in\u2028\u202eevil\u0000" + "x".repeat(1_000_000);
const CODE = "invalid_grant\u001b[0m";

let server: Server | null = null;
afterEach(async () => {
  const s = server;
  server = null;
  if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
});

/** A real HTTP server on port 0 answering with `answer`; its base URL. */
async function hostileServer(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => answer(req, res));
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const options = { clientId: "third-party", clientSecret: "a-client-secret-0123456789", scope: "Platform_UserAPIs" };

/** What the escaped head of HOSTILE looks like, and the message it gives cut at SERVER_TEXT_MAX. */
const ESCAPED_HEAD = "bad\\n\\u001b[2J\\u001b[31mred\\r\\n2026-11-29T00:00:00Z INFO admin logged in\\u2028\\u202eevil\\u0000";
const hostileInMessage = () => {
  const shown = ESCAPED_HEAD + "x".repeat(SERVER_TEXT_MAX - ESCAPED_HEAD.length);
  const left = 1_000_000 - (SERVER_TEXT_MAX - ESCAPED_HEAD.length); // of the filler
  return `${shown}… (${left} more characters)`;
};

/** No control character, separator or bidi control in the text; at most `max` characters. */
function expectLoggable(text: string, max: number) {
  expect(text).not.toMatch(/[\p{Cc}\u2028\u2029\u202a-\u202e]/u);
  expect(text.length).toBeLessThanOrEqual(max);
}

describe("a server's text in error messages", () => {
  it("OAuthError: a 1 MB error_description with ANSI escapes and newlines gives a bounded one-line message; the fields stay as received", async () => {
    const baseUrl = await hostileServer((_req, res) => json(res, 400, { error: CODE, error_description: HOSTILE }));
    const error = await rejectionOf(createClient({ baseUrl, ...options }).getAccessToken());
    expect(error).toBeInstanceOf(OAuthError);
    const e = error as OAuthError;
    expect(e.message).toBe(`invalid_grant\\u001b[0m: ${hostileInMessage()}`);
    expectLoggable(e.message, 2 * SERVER_TEXT_MAX + 40);
    expect(e.stack).not.toContain("\u001b");
    // The raw fields: untrusted, as the server sent them.
    expect([e.status, e.error, e.error_description, e.grantType]).toEqual([400, CODE, HOSTILE, "client_credentials"]);
  });

  it("ApiError: the same text as an API's message; body.message stays as received", async () => {
    const baseUrl = await hostileServer((req, res) => {
      if (req.url!.startsWith("/UserService/connect/token")) json(res, 200, { access_token: "an-access-token", token_type: "Bearer", expires_in: 3600 });
      else json(res, 500, { error: 1500, message: HOSTILE });
    });
    const error = await rejectionOf(createClient({ baseUrl, ...options }).listAccounts());
    expect(error).toBeInstanceOf(ApiError);
    const e = error as ApiError;
    expect(e.message).toBe(hostileInMessage());
    expectLoggable(e.message, SERVER_TEXT_MAX + 40);
    expect(e.stack).not.toContain("\u001b");
    expect([e.status, e.error, e.body]).toEqual([500, 1500, { error: 1500, message: HOSTILE }]);
  });

  it("a short, plain description is the message unchanged; an error code of 1 MB is cut too", async () => {
    let code = "invalid_client";
    const baseUrl = await hostileServer((_req, res) => json(res, 401, { error: code, error_description: "Client authentication failed." }));
    expect(await rejectionOf(createClient({ baseUrl, ...options }).getAccessToken())).toMatchObject({ message: "invalid_client: Client authentication failed." });
    code = "y".repeat(1_000_000);
    // A new client: one whose secret was refused (invalid_client) sends nothing again.
    const e = (await rejectionOf(createClient({ baseUrl, ...options }).getAccessToken())) as OAuthError;
    expect(e.message).toBe(`${"y".repeat(SERVER_TEXT_MAX)}… (${1_000_000 - SERVER_TEXT_MAX} more characters): Client authentication failed.`);
    expect(e.error).toBe(code);
  });

  it("NetworkError not_json: a long content-type is cut in the message", async () => {
    const type = `text/html; charset=utf-8; x=${"z".repeat(10_000)}`;
    const baseUrl = await hostileServer((_req, res) => {
      res.writeHead(502, { "content-type": type });
      res.end("<html>bad gateway</html>");
    });
    const e = (await rejectionOf(createClient({ baseUrl, ...options }).getAccessToken())) as NetworkError;
    expect(e).toBeInstanceOf(NetworkError);
    expect(e.message).toBe(`token endpoint: HTTP 502 without an OAuth error body (${type.slice(0, 100)}… (${type.length - 100} more characters), not JSON)`);
  });
});

describe("a custom fetch's error text in NetworkError messages", () => {
  let target: ServerTarget | null = null;
  afterEach(async () => {
    await target?.close();
    expect(target?.errors).toEqual([]);
    target = null;
  });

  /** A client on the real server whose fetch (the global one) is wrapped by `wrap` for API requests; token requests pass through. */
  function clientWith(t: ServerTarget, wrap: (url: string, init: RequestInit) => Promise<Response>) {
    return createClient({
      baseUrl: t.baseUrl,
      clientId: t.clientId,
      clientSecret: t.clientSecret,
      scope: "Platform_UserAPIs",
      fetch: (url, init) => (new URL(url).pathname.startsWith("/UserService/") ? globalThis.fetch(url, init) : wrap(url, init)),
    });
  }

  it("a rejected fetch whose message and cause's message are 1 MB with ANSI escapes and newlines: the message is bounded and escaped, the cause kept as thrown", async () => {
    target = await startTarget();
    const thrown = new TypeError(HOSTILE, { cause: new Error(HOSTILE) });
    const client = clientWith(target, async () => {
      throw thrown;
    });
    const e = (await rejectionOf(client.listAccounts())) as NetworkError;
    expect(e).toBeInstanceOf(NetworkError);
    expect(e.reason).toBe("fetch_failed");
    expect(e.message).toBe(`GET /rbac/ServerCommand/GetAccountList failed: ${hostileInMessage()} (${hostileInMessage()})`);
    expectLoggable(e.message, 2 * SERVER_TEXT_MAX + 120);
    expect(e.stack).not.toContain("\u001b");
    expect(e.cause).toBe(thrown);
  });

  it("a body that fails while it is read, with such a message, and a fetch rejecting with a non-Error: bounded and escaped too", async () => {
    target = await startTarget();
    let failWith: unknown = new Error(HOSTILE);
    const client = clientWith(target, async (url, init) => {
      const real = await globalThis.fetch(url, init);
      await real.arrayBuffer();
      if (typeof failWith === "string") throw failWith;
      // The real answer's status and headers, then a body stream that errors.
      return new Response(new ReadableStream({ start: (controller) => controller.error(failWith) }), { status: real.status, headers: real.headers });
    });
    const e = (await rejectionOf(client.listAccounts())) as NetworkError;
    expect(e).toMatchObject({ name: "NetworkError", reason: "fetch_failed", status: 200 });
    expect(e.message).toBe(`reading the response of GET /rbac/ServerCommand/GetAccountList failed: ${hostileInMessage()}`);
    failWith = HOSTILE;
    const s = (await rejectionOf(client.listAccounts())) as NetworkError;
    expect(s).toMatchObject({ name: "NetworkError", reason: "fetch_failed", status: null, cause: HOSTILE });
    expect(s.message).toBe(`GET /rbac/ServerCommand/GetAccountList failed: ${hostileInMessage()}`);
  });

  it("a fetch rejecting with a value that cannot be made a string still gives a NetworkError", async () => {
    target = await startTarget();
    const odd = Object.create(null) as object;
    const client = clientWith(target, async () => {
      throw odd;
    });
    const e = (await rejectionOf(client.listAccounts())) as NetworkError;
    expect(e).toMatchObject({ name: "NetworkError", reason: "fetch_failed", status: null, cause: odd });
    expect(e.message).toBe("GET /rbac/ServerCommand/GetAccountList failed: a value that is not an Error");
  });
});

describe("serverText", () => {
  it("escapes controls, separators, bidi controls and lone surrogates, keeps other text (astral characters whole), and cuts after max characters of its result", () => {
    expect(serverText("a\tb\u007f\u0085\u2029\u2066c\ud800d\udc00 é 🌱")).toBe("a\\tb\\u007f\\u0085\\u2029\\u2066c\\ud800d\\udc00 é 🌱");
    expect(serverText("🌱🌱🌱", 4)).toBe("🌱🌱… (2 more characters)");
    // An escape is never split: it goes whole or not at all.
    expect(serverText("ab\u001bc", 5)).toBe("ab… (2 more characters)");
    expect(serverText("x".repeat(SERVER_TEXT_MAX))).toBe("x".repeat(SERVER_TEXT_MAX));
  });
});
