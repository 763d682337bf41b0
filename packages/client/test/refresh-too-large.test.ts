/**
 * A 200 to a refresh whose body passes `maxResponseBytes` (a proxy or middlebox that sends more
 * than the server's answer, once): the server carried the refresh out and rotated the refresh
 * token, and the client could not read the new one. That is an answer lost, and the client
 * presents the refresh token again in the background within the server's grace window, as after a
 * connection lost once the request was sent: the server answers with the rotation's own answer, and
 * the session lives. Until 2026-12-02 `response_too_large` was not taken for a lost answer: nothing
 * was retried, the client kept the spent refresh token, and its next renewal after the grace window
 * presented it: reuse, the family revoked, the user signed out.
 * The example server over a socket, behind a node:http proxy that pads one answer.
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

/**
 * A proxy in front of `upstream` that forwards every request; while `pad` is set, the next answer
 * to a refresh goes out with the server's own status and headers and its body followed by 64 KB
 * of spaces (still JSON), chunked or with its Content-Length declared. Records each refresh token
 * presented.
 */
async function paddingProxy(upstream: string) {
  const state = { pad: null as "chunked" | "declared" | null, presented: [] as string[], padded: 0 };
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
        const padding = refresh !== null && state.pad !== null ? " ".repeat(65_536) : "";
        if (padding !== "") state.padded++;
        if (padding !== "" && state.pad === "chunked") {
          res.writeHead(answer.status, out);
          res.write(text);
          res.end(padding);
        } else {
          res.writeHead(answer.status, { ...out, "content-length": String(Buffer.byteLength(text + padding)) }).end(text + padding);
        }
        if (padding !== "") state.pad = null;
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { state, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe("a 200 to a refresh whose body passes maxResponseBytes", () => {
  it.each(["chunked", "declared"] as const)("(%s) is an answer lost: the refresh token is presented again within the grace window, and the session lives past it", async (pad) => {
    const t = (target = await startTarget());
    const proxy = await paddingProxy(t.baseUrl);
    const clock = manualClock(t.clock.now());
    // keepCredentials false: a refused refresh token signs the user out (no password to fall back on).
    // The client's background work (its renewals, the retries of a lost refresh), to wait for.
    const work: Promise<void>[] = [];
    const client = createClient({ baseUrl: proxy.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, keepCredentials: false, clock: clock.now, maxResponseBytes: LIMIT, waitUntil: (p) => void work.push(p) });
    expect((await client.listAccounts()).total).toBe(1);

    proxy.state.pad = pad;
    const lost = await rejectionOf(client.refresh());
    expect(lost).toBeInstanceOf(NetworkError);
    const e = lost as NetworkError;
    expect({ reason: e.reason, status: e.status, retryAfter: e.retryAfter, message: e.message }).toEqual({
      reason: "response_too_large",
      status: 200,
      retryAfter: null,
      message: `POST ${TOKEN_PATH} answered HTTP 200 with a body over ${LIMIT} bytes (maxResponseBytes); it was not read further`,
    });
    expect(proxy.state.padded).toBe(1);
    const spent = proxy.state.presented[0]!;
    expect(proxy.state.presented).toEqual([spent]);

    // The background retry (0.5 to 1 s after the loss): the same refresh token, answered within
    // the grace window with the rotation's own answer, which arrives whole this time.
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
