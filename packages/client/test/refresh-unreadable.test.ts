/**
 * A refresh the server carried out (it rotated the refresh token) whose answer the client cannot
 * use: a 200 whose body passes `maxResponseBytes` (a proxy or middlebox that sends more than the
 * server's answer, once; chunked or with its Content-Length declared), a 200 of the wrong shape
 * (no access_token, token_type not Bearer: a middlebox rewriting the body once), or a 5xx page past
 * `maxResponseBytes` (a proxy's large error page, its upstream having answered). Each is an answer
 * lost: the client keeps the refresh token and presents it again in the background within the
 * server's grace window, as after a connection lost once the request was sent; the server answers
 * with the rotation's own answer, and the session lives past the window. Until 2026-12-02 none of
 * them was taken for a lost answer (the first two cases were fixed earlier that day, in 79de47a):
 * nothing was retried, the client kept the spent refresh token, and its next renewal after the
 * grace window presented it: reuse, the family revoked, the user signed out.
 * The example server over a socket, behind a node:http proxy that rewrites one refresh answer.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, NetworkError, TOKEN_PATH } from "../src/index.js";
import { manualClock, rejectionOf, startTarget, type ServerTarget } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";
const LIMIT = 8192;

let target: ServerTarget | null = null;
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await target?.close();
  target = null;
});

/** The answer of the server as the proxy got it: status, the headers it forwards, body. */
interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}
/** Sends a rewritten answer instead of the server's. */
type Rewrite = (res: ServerResponse, answer: Answer) => void;

/**
 * A proxy in front of `upstream` that forwards every request; while `rewrite` is set, the next
 * answer to a refresh (once the server has answered it) goes out as it writes it. Records each
 * refresh token presented.
 */
async function rewritingProxy(upstream: string) {
  const state = { rewrite: null as Rewrite | null, presented: [] as string[], rewritten: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const headers = new Headers();
        for (const [name, value] of Object.entries(req.headers)) {
          if (typeof value === "string" && !["host", "connection", "content-length"].includes(name)) headers.set(name, value);
        }
        const refresh = new URL(req.url ?? "/", "http://x").pathname === TOKEN_PATH ? new URLSearchParams(body).get("refresh_token") : null;
        if (refresh !== null) state.presented.push(refresh);
        const answer = await fetch(upstream + (req.url ?? "/"), { method: req.method!, headers, ...(req.method === "POST" ? { body } : {}), redirect: "manual" });
        const text = await answer.text();
        const out: Record<string, string> = {};
        for (const name of ["content-type", "cache-control", "date", "www-authenticate", "retry-after"]) {
          const value = answer.headers.get(name);
          if (value !== null) out[name] = value;
        }
        const rewrite = refresh !== null ? state.rewrite : null;
        if (rewrite !== null) {
          state.rewrite = null;
          state.rewritten++;
          rewrite(res, { status: answer.status, headers: out, text });
          return;
        }
        send(res, answer.status, out, text);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { state, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function send(res: ServerResponse, status: number, headers: Record<string, string>, text: string): void {
  res.writeHead(status, { ...headers, "content-length": String(Buffer.byteLength(text)) }).end(text);
}

const PADDING = " ".repeat(65_536);
/** The server's answer followed by 64 KB of spaces (still JSON), chunked. */
const paddedChunked: Rewrite = (res, a) => {
  res.writeHead(a.status, a.headers);
  res.write(a.text);
  res.end(PADDING);
};
/** The same with its Content-Length declared. */
const paddedDeclared: Rewrite = (res, a) => send(res, a.status, a.headers, a.text + PADDING);
/** The server's 200 without its access_token. */
const withoutAccessToken: Rewrite = (res, a) => {
  const { access_token: _, ...rest } = JSON.parse(a.text) as Record<string, unknown>;
  send(res, a.status, a.headers, JSON.stringify(rest));
};
/** The server's 200 with token_type "mac". */
const notBearer: Rewrite = (res, a) => send(res, a.status, a.headers, JSON.stringify({ ...(JSON.parse(a.text) as object), token_type: "mac" }));
/** A proxy's 502 page of 64 KB (its upstream answered, the proxy failed on the way back). */
const big502: Rewrite = (res) => send(res, 502, { "content-type": "text/html" }, `<html><body>Bad Gateway${PADDING}</body></html>`);

const TOO_LARGE = (status: number) => ({ reason: "response_too_large", status, message: `POST ${TOKEN_PATH} answered HTTP ${status} with a body over ${LIMIT} bytes (maxResponseBytes); it was not read further` });

describe("a refresh the server carried out whose answer the client cannot use", () => {
  it.each([
    ["a 200 past maxResponseBytes (chunked)", paddedChunked, TOO_LARGE(200)],
    ["a 200 past maxResponseBytes (Content-Length declared)", paddedDeclared, TOO_LARGE(200)],
    ["a 200 without access_token", withoutAccessToken, { reason: "unexpected_response", status: 200, message: `token endpoint: HTTP 200, no access_token in the response` }],
    ["a 200 whose token_type is not Bearer", notBearer, { reason: "unexpected_response", status: 200, message: `token endpoint: HTTP 200, token_type is not Bearer` }],
    ["a 502 page past maxResponseBytes", big502, TOO_LARGE(502)],
  ] as const)("%s: an answer lost, the refresh token presented again within the grace window, and the session lives past it", async (_, rewrite, expected) => {
    const t = (target = await startTarget());
    const proxy = await rewritingProxy(t.baseUrl);
    const clock = manualClock(t.clock.now());
    // keepCredentials false: a refused refresh token signs the user out (no password to fall back on).
    // The client's background work (its renewals, the retries of a lost refresh), to wait for.
    const work: Promise<void>[] = [];
    const client = createClient({ baseUrl: proxy.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, keepCredentials: false, clock: clock.now, maxResponseBytes: LIMIT, waitUntil: (p) => void work.push(p) });
    expect((await client.listAccounts()).total).toBe(1);

    proxy.state.rewrite = rewrite;
    const lost = await rejectionOf(client.refresh());
    expect(lost).toBeInstanceOf(NetworkError);
    const e = lost as NetworkError;
    expect({ reason: e.reason, status: e.status, retryAfter: e.retryAfter, message: e.message }).toEqual({ ...expected, retryAfter: null });
    expect(proxy.state.rewritten).toBe(1);
    const spent = proxy.state.presented[0]!;
    expect(proxy.state.presented).toEqual([spent]);

    // The background retry (0.5 to 1 s after the loss): the same refresh token, answered within
    // the grace window with the rotation's own answer.
    for (let waited = 0; waited < 5000 && proxy.state.presented.length < 2; waited += 100) await new Promise((r) => setTimeout(r, 100));
    expect(proxy.state.presented).toEqual([spent, spent]);
    // Its answer reached the client (the retry's work has ended) before the clocks move on.
    await Promise.all(work);

    // 40 s later (past the 30 s grace window) a renewal presents the new refresh token, not the spent one.
    t.clock.advance(40);
    clock.advance(40);
    const renewed = await client.refresh();
    expect(renewed.hasRefreshToken).toBe(true);
    expect(proxy.state.presented).toHaveLength(3);
    expect(proxy.state.presented[2]).not.toBe(spent);
    expect((await client.listAccounts()).total).toBe(1);
    expect(await t.events()).not.toContain("refresh_token.reuse_detected");
  });
});
