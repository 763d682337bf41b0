/**
 * A refresh the server carried out (it rotated the refresh token) whose answer the client cannot
 * use: a 200 of the wrong shape (no access_token, token_type not Bearer: a middlebox rewriting the
 * body once), or a 5xx page past `maxResponseBytes` (a proxy's large error page, its upstream having
 * answered). Either is an answer lost, as a 2xx past maxResponseBytes is (refresh-too-large.test.ts):
 * the client keeps the refresh token and presents it again in the background within the server's
 * grace window, which answers with the rotation's own answer, and the session lives past the window.
 * Until 2026-12-02 neither was retried: the client kept the spent refresh token, and its next
 * renewal after the grace window presented it (reuse: the family revoked, the user signed out).
 * The example server over a socket, behind a node:http proxy that rewrites one refresh answer.
 */
import { createServer, type Server } from "node:http";
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

type Rewrite = (status: number, text: string) => { status: number; contentType: string; text: string };

/**
 * A proxy in front of `upstream` that forwards every request; while `rewrite` is set, the next
 * answer to a refresh (once the server has answered it) goes out as it says. Records each refresh
 * token presented.
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
          const sent = rewrite(answer.status, text);
          res.writeHead(sent.status, { "content-type": sent.contentType, "content-length": String(Buffer.byteLength(sent.text)) }).end(sent.text);
          return;
        }
        res.writeHead(answer.status, { ...out, "content-length": String(Buffer.byteLength(text)) }).end(text);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { state, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** The server's 200 without its access_token. */
const withoutAccessToken: Rewrite = (status, text) => {
  const { access_token: _, ...rest } = JSON.parse(text) as Record<string, unknown>;
  return { status, contentType: "application/json", text: JSON.stringify(rest) };
};
/** The server's 200 with token_type "mac". */
const notBearer: Rewrite = (status, text) => ({ status, contentType: "application/json", text: JSON.stringify({ ...(JSON.parse(text) as object), token_type: "mac" }) });
/** A proxy's 502 page of 64 KB (its upstream answered, the proxy failed on the way back). */
const big502: Rewrite = () => ({ status: 502, contentType: "text/html", text: `<html><body>Bad Gateway${" ".repeat(65_536)}</body></html>` });

describe("a refresh the server carried out whose answer the client cannot use", () => {
  it.each([
    ["a 200 without access_token", withoutAccessToken, { reason: "unexpected_response", status: 200, message: `token endpoint: HTTP 200, no access_token in the response` }],
    ["a 200 whose token_type is not Bearer", notBearer, { reason: "unexpected_response", status: 200, message: `token endpoint: HTTP 200, token_type is not Bearer` }],
    ["a 502 page past maxResponseBytes", big502, { reason: "response_too_large", status: 502, message: `POST ${TOKEN_PATH} answered HTTP 502 with a body over ${LIMIT} bytes (maxResponseBytes); it was not read further` }],
  ] as const)("%s: an answer lost, the refresh token presented again within the grace window, and the session lives past it", async (_, rewrite, expected) => {
    const t = (target = await startTarget());
    const proxy = await rewritingProxy(t.baseUrl);
    const clock = manualClock(t.clock.now());
    const work: Promise<void>[] = [];
    // keepCredentials false: a refused refresh token signs the user out (no password to fall back on).
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
