/**
 * A 429 or 503 with `Retry-After` that is not the authorization server's own (no OAuth error body:
 * nginx's HTML page, a load balancer's empty answer, a gateway's `{"message":...}`), from a real
 * HTTP server on a socket (node:http, through the global fetch) standing in front of the token
 * endpoint. It holds the client's token requests as the server's own 429/503 does (at most 300 s),
 * and the call that got it is told what it was. Until 2026-11-30 it was reported as a body that is
 * not JSON, its Retry-After was not read, and the next call asked again (then the backoff's 1 s).
 * Any other 5xx without an OAuth error body (a 500, 502 or 504 page) holds nothing but is told the
 * same way; until 2026-11-30 it too was reported as a body that is not JSON.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, TOKEN_PATH } from "../src/index.js";
import { accountPage, manualClock, rejectionOf } from "./support.js";

/** What the proxy answers to token requests: its own error, or (null) the server's token. */
interface ProxyAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function proxyServer(clock: ReturnType<typeof manualClock>) {
  const state = { answer: null as ProxyAnswer | null, issued: [] as string[], arrivals: [] as number[] };
  const start = clock.now();
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === TOKEN_PATH) {
      // When it arrived, in seconds after the test's start on the client's clock.
      state.arrivals.push((clock.now() - start) / 1000);
      req.resume();
      req.on("end", () => {
        const answer = state.answer;
        if (answer !== null) {
          res.writeHead(answer.status, answer.headers).end(answer.body);
          return;
        }
        const token = `at-${state.arrivals.length}`;
        state.issued.push(token);
        res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify({ access_token: token, token_type: "Bearer", expires_in: 3600, scope: "Platform_UserAPIs" }));
      });
      return;
    }
    if (path === "/rbac/ServerCommand/GetAccountList") {
      const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      if (!state.issued.includes(token)) res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: 1202, message: "The access token is invalid or expired." }));
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(accountPage(1, 20, 1)));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { state, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

function clientOf(baseUrl: string, clock: ReturnType<typeof manualClock>) {
  return createClient({ baseUrl, clientId: "third-party", clientSecret: "client-secret-that-is-long-enough", scope: "Platform_UserAPIs", clock: clock.now });
}

/** What a rejection says, whole: its class, reason, status, retryAfter, message and cause (`first` when it is that error). */
function summary(e: unknown, first?: unknown) {
  const error = e as Error & { reason?: string; status?: number | null; retryAfter?: number | null };
  return { name: error.name, reason: error.reason, status: error.status, retryAfter: error.retryAfter, message: error.message, cause: error.cause === undefined ? undefined : error.cause === first ? "first" : error.cause };
}

const NGINX_503 = "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

describe.each<{ what: string; status: number; headers: Record<string, string>; body: string; reason: string; detail: string }>([
  { what: "nginx's 503 page (text/html)", status: 503, headers: { "content-type": "text/html", "retry-after": "30" }, body: NGINX_503, reason: "not_json", detail: "text/html, not JSON" },
  { what: "a load balancer's 429 with an empty body", status: 429, headers: { "retry-after": "30", "content-length": "0" }, body: "", reason: "not_json", detail: "an empty body" },
  { what: "a gateway's 503 JSON without an OAuth error", status: 503, headers: { "content-type": "application/json", "retry-after": "30" }, body: '{"message":"Service Unavailable"}', reason: "unexpected_response", detail: "JSON without an 'error' code" },
])("a proxy's answer in front of the token endpoint: $what, Retry-After 30", ({ status, headers, body, reason, detail }) => {
  it("holds token requests for 30 s as the server's own 429/503 does: the call that got it is told what it was, the calls in the hold reject at once with a NetworkError counting down, nothing sent; at 30 s one request", async () => {
    const clock = manualClock();
    const { state, baseUrl } = await proxyServer(clock);
    state.answer = { status, headers, body };
    const client = clientOf(baseUrl, clock);
    const first = await rejectionOf(client.getAccessToken());
    // A call every 0.5 s for 29.5 s, of each kind that needs a token.
    const held: ReturnType<typeof summary>[] = [];
    for (let i = 1; i < 60; i++) {
      clock.advance(0.5);
      held.push(summary(await rejectionOf(i % 3 === 0 ? client.refresh() : i % 3 === 1 ? client.listAccounts() : client.getAccessToken()), first));
    }
    const arrivalsInHold = [...state.arrivals];
    // The proxy lets requests through again; the hold ends at 30 s, not before.
    state.answer = null;
    clock.advance(0.499);
    const last = summary(await rejectionOf(client.getAccessToken()), first);
    clock.advance(0.001);
    const page = await client.listAccounts();
    const message = `token endpoint: HTTP ${status} without an OAuth error body (${detail}); Retry-After 30 s: no token request is sent for 30 s`;
    const heldAt = (left: number) => ({
      name: "NetworkError",
      reason,
      status,
      retryAfter: left,
      message: `POST ${TOKEN_PATH} not sent: held by the Retry-After; the next one is sent in ${left} s at the earliest (last: ${message})`,
      cause: "first",
    });
    expect({ first: summary(first), held, last, arrivalsInHold, total: page.total, arrivals: state.arrivals }).toEqual({
      // The answer's own Retry-After, as an OAuthError's (null until 2026-12-02).
      first: { name: "NetworkError", reason, status, retryAfter: 30, message, cause: undefined },
      held: Array.from({ length: 59 }, (_, i) => heldAt(Math.ceil(30 - (i + 1) * 0.5))),
      last: heldAt(1),
      arrivalsInHold: [0],
      total: 1,
      arrivals: [0, 30],
    });
  });
});

it("a proxy's Retry-After of a day (86400) on its HTML 503 holds for 300 s, as the server's own would", async () => {
  const clock = manualClock();
  const { state, baseUrl } = await proxyServer(clock);
  state.answer = { status: 503, headers: { "content-type": "text/html; charset=utf-8", "retry-after": "86400" }, body: NGINX_503 };
  const client = clientOf(baseUrl, clock);
  const first = summary(await rejectionOf(client.getAccessToken()));
  const atOnce = summary(await rejectionOf(client.getAccessToken()));
  clock.advance(299.999);
  const atEnd = summary(await rejectionOf(client.getAccessToken()));
  clock.advance(0.001);
  // The proxy still answers its page: one more request is sent at 300 s (a new hold).
  const again = summary(await rejectionOf(client.getAccessToken()));
  const message = "token endpoint: HTTP 503 without an OAuth error body (text/html; charset=utf-8, not JSON); Retry-After 86400 s: no token request is sent for 300 s";
  const held = (left: number) => ({ name: "NetworkError", reason: "not_json", status: 503, retryAfter: left, message: `POST ${TOKEN_PATH} not sent: held by the Retry-After; the next one is sent in ${left} s at the earliest (last: ${message})`, cause: expect.objectContaining({ message }) });
  expect({ first, atOnce, atEnd, again, arrivals: state.arrivals }).toEqual({
    first: { name: "NetworkError", reason: "not_json", status: 503, retryAfter: 86400, message, cause: undefined },
    atOnce: held(300),
    atEnd: held(1),
    again: { name: "NetworkError", reason: "not_json", status: 503, retryAfter: 86400, message, cause: undefined },
    arrivals: [0, 300],
  });
});

it("without a Retry-After (or with 0) it holds nothing and is counted toward the backoff as before, with the same clear message", async () => {
  for (const retryAfter of [undefined, "0"]) {
    const clock = manualClock();
    const { state, baseUrl } = await proxyServer(clock);
    state.answer = { status: 503, headers: { "content-type": "text/html", ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }) }, body: NGINX_503 };
    const client = clientOf(baseUrl, clock);
    const message = "token endpoint: HTTP 503 without an OAuth error body (text/html, not JSON)";
    const first = summary(await rejectionOf(client.getAccessToken()));
    // The first failure costs nothing (the next call asks again); the second opens a backoff window.
    const second = summary(await rejectionOf(client.getAccessToken()));
    const third = (await rejectionOf(client.getAccessToken())) as { retryAfter: unknown; cause: unknown };
    expect({ first, second, third: [third.retryAfter, (third.cause as Error).message], arrivals: state.arrivals }).toEqual({
      // The answer's Retry-After as it is (0), or null without one.
      first: { name: "NetworkError", reason: "not_json", status: 503, retryAfter: retryAfter === undefined ? null : 0, message, cause: undefined },
      second: { name: "NetworkError", reason: "not_json", status: 503, retryAfter: retryAfter === undefined ? null : 0, message, cause: undefined },
      third: [1, message],
      arrivals: [0, 0],
    });
  }
});

it("a token still valid (due, not expired) is handed out while the proxy's Retry-After holds its renewal; one request in the hold", async () => {
  const clock = manualClock();
  const { state, baseUrl } = await proxyServer(clock);
  const client = clientOf(baseUrl, clock);
  const token = await client.getAccessToken();
  // Due: within refreshSkewSeconds (30) of its expiry (3600 s); the proxy answers its page.
  clock.advance(3580);
  state.answer = { status: 503, headers: { "content-type": "text/html", "retry-after": "60" }, body: NGINX_503 };
  const handed: string[] = [];
  for (let i = 0; i < 19; i++) {
    handed.push(await client.getAccessToken());
    expect((await client.listAccounts()).total).toBe(1);
    clock.advance(1);
  }
  // Expired (3599 s + 1): the calls get the hold's error, and nothing more is sent.
  clock.advance(1);
  const expired = summary(await rejectionOf(client.getAccessToken()));
  expect({ handed, expired: [expired.name, expired.reason, expired.retryAfter], arrivals: state.arrivals }).toEqual({
    handed: Array<string>(19).fill(token),
    expired: ["NetworkError", "not_json", 40],
    arrivals: [0, 3580],
  });
});

it.each([
  ["a declared Content-Length", true],
  ["a chunked body (no Content-Length)", false],
])("a proxy's 503 page larger than maxResponseBytes (%s), Retry-After 30: it holds as a smaller one does (the body is not read past the cap, the Retry-After is in the head)", async (_what, declared) => {
  const clock = manualClock();
  const { state, baseUrl } = await proxyServer(clock);
  const page = `<html><body>${"x".repeat(4000)}</body></html>`;
  state.answer = { status: 503, headers: { "content-type": "text/html", "retry-after": "30", ...(declared ? { "content-length": String(page.length) } : {}) }, body: page };
  const client = createClient({ baseUrl, clientId: "third-party", clientSecret: "client-secret-that-is-long-enough", scope: "Platform_UserAPIs", clock: clock.now, maxResponseBytes: 1024 });
  const first = await rejectionOf(client.getAccessToken());
  const held: ReturnType<typeof summary>[] = [];
  for (const step of [0.5, 10, 19]) {
    clock.advance(step);
    held.push(summary(await rejectionOf(client.getAccessToken()), first));
  }
  state.answer = null;
  clock.advance(0.5);
  const page1 = await client.listAccounts();
  const message = `POST ${TOKEN_PATH} answered HTTP 503 with a body over 1024 bytes (maxResponseBytes); it was not read further`;
  const heldAt = (left: number) => ({ name: "NetworkError", reason: "response_too_large", status: 503, retryAfter: left, message: `POST ${TOKEN_PATH} not sent: held by the Retry-After; the next one is sent in ${left} s at the earliest (last: ${message})`, cause: "first" });
  expect({ first: summary(first), held, total: page1.total, arrivals: state.arrivals }).toEqual({
    first: { name: "NetworkError", reason: "response_too_large", status: 503, retryAfter: 30, message, cause: undefined },
    held: [heldAt(30), heldAt(20), heldAt(1)],
    total: 1,
    arrivals: [0, 30],
  });
});

const NGINX_502 = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

// Until 2026-11-30 only a 429's or 503's message said so: a 500, 502 or 504 of a proxy read `HTTP
// 502 with a body that is not JSON (text/html)` (or `HTTP 504, an error body without an OAuth
// 'error' code` for a gateway's JSON), as if the server had answered with a malformed body.
it.each<{ what: string; status: number; headers: Record<string, string>; body: string; reason: string; detail: string }>([
  { what: "nginx's 502 page (text/html), with a Retry-After", status: 502, headers: { "content-type": "text/html", "retry-after": "30" }, body: NGINX_502, reason: "not_json", detail: "text/html, not JSON" },
  { what: "a 500 page (text/html; charset=utf-8)", status: 500, headers: { "content-type": "text/html; charset=utf-8" }, body: "<h1>Internal Server Error</h1>", reason: "not_json", detail: "text/html; charset=utf-8, not JSON" },
  { what: "a 502 with an empty body", status: 502, headers: { "content-length": "0" }, body: "", reason: "not_json", detail: "an empty body" },
  { what: "a gateway's 504 JSON (AWS API Gateway's timeout)", status: 504, headers: { "content-type": "application/json" }, body: '{"message":"Endpoint request timed out"}', reason: "unexpected_response", detail: "JSON without an 'error' code" },
])("a proxy's 5xx other than 503 without an OAuth error body ($what): the error names the status and says there was no OAuth error body; only 429 and 503 hold, so it is counted toward the backoff", async ({ status, headers, body, reason, detail }) => {
  const clock = manualClock();
  const { state, baseUrl } = await proxyServer(clock);
  state.answer = { status, headers, body };
  const client = clientOf(baseUrl, clock);
  const message = `token endpoint: HTTP ${status} without an OAuth error body (${detail})`;
  const first = summary(await rejectionOf(client.getAccessToken()));
  // The first failure costs nothing (the next call asks again); the second opens a backoff window.
  const second = summary(await rejectionOf(client.getAccessToken()));
  const third = (await rejectionOf(client.getAccessToken())) as { name: string; retryAfter: unknown; cause: unknown };
  expect({ first, second, third: [third.name, third.retryAfter, (third.cause as Error).message], arrivals: state.arrivals }).toEqual({
    first: { name: "NetworkError", reason, status, retryAfter: null, message, cause: undefined },
    second: { name: "NetworkError", reason, status, retryAfter: null, message, cause: undefined },
    third: ["NetworkError", 1, message],
    arrivals: [0, 0],
  });
});
