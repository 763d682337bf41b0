/**
 * A token endpoint that answers every request with `expires_in: 0` (a misconfigured server): each
 * token arrives already expired and is never handed out (README: "it arrived unusable"). Such an
 * answer is a token request without a usable answer, and counts toward the backoff as a malformed
 * token answer does: after the second in a row the calls that need a new token reject at once for
 * the backoff's window, sending nothing. Until 2026-12-02 it reset the count instead (a token had
 * arrived): every call sent a token request, with a refresh token each rotating it, however many
 * calls a second the app made.
 * A node:http token endpoint on a socket.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { createClient, NetworkError, TOKEN_PATH } from "../src/index.js";
import { manualClock, rejectionOf } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** Issues `at-<n>` and `rt-<n>` (rotating) to every grant, with `expires_in` 0 while `zero` is set (else 3600). */
async function zeroServer() {
  const state = { zero: true, grants: [] as string[] };
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      if (new URL(req.url ?? "/", "http://x").pathname !== TOKEN_PATH) {
        res.writeHead(404).end();
        return;
      }
      state.grants.push(new URLSearchParams(body).get("grant_type") ?? "");
      const n = state.grants.length;
      res
        .writeHead(200, { "content-type": "application/json", "cache-control": "no-store" })
        .end(JSON.stringify({ access_token: `at-${n}`, token_type: "Bearer", expires_in: state.zero ? 0 : 3600, scope: OFFLINE, refresh_token: `rt-${n}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { state, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

it("expires_in 0 on every answer: 50 calls in a row send 2 token requests, the others are held by the backoff; once the server gives lifetimes again, the session goes on", async () => {
  const s = await zeroServer();
  const clock = manualClock(Date.now());
  const client = createClient({ baseUrl: s.baseUrl, clientId: "third-party", clientSecret: "a-client-secret-0123456789", scope: OFFLINE, credentials: { username: "alice", password: "wonderland-42" }, clock: clock.now });
  const errors: unknown[] = [];
  for (let i = 0; i < 50; i++) errors.push(await rejectionOf(client.getAccessToken()));
  expect(s.state.grants).toEqual(["password", "refresh_token"]);
  // The ms: the time the answer took, on the monotonic clock (the manual one stands still).
  const unusable = /^POST \/UserService\/connect\/token answered after \d+ ms with a token that expired after 0 s \(expires_in\): it arrived unusable$/;
  for (const e of errors.slice(0, 2)) {
    expect(e).toBeInstanceOf(NetworkError);
    expect(e).toMatchObject({ reason: "timeout", status: null, retryAfter: null, message: expect.stringMatching(unusable) });
  }
  for (const e of errors.slice(2)) {
    expect(e).toBeInstanceOf(NetworkError);
    expect(e).toMatchObject({ reason: "timeout", status: null, retryAfter: 1, message: `POST ${TOKEN_PATH} not sent: 2 token requests in a row got no usable answer; the next one is sent in 1 s at the earliest (last: ${(errors[1] as Error).message})` });
    expect((e as NetworkError).cause).toBe(errors[1]);
  }
  // Past the window (at most 1 s): the next call sends one request, with the newest refresh token.
  s.state.zero = false;
  clock.advance(1);
  expect(await client.getAccessToken()).toBe("at-3");
  expect(s.state.grants).toEqual(["password", "refresh_token", "refresh_token"]);
});
