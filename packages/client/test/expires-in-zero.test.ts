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
import { afterEach, expect, it } from "vitest";
import { createClient, NetworkError, TOKEN_PATH } from "../src/index.js";
import { manualClock, rejectionOf, tokenServer } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

/** Issues `at-<n>` and `rt-<n>` (rotating) to every grant, with `expires_in` 0 while `zero` is set (else 3600). */
async function zeroServer() {
  const state = { zero: true, grants: [] as string[] };
  const server = await tokenServer((form, n) => {
    state.grants.push(form.get("grant_type") ?? "");
    return { status: 200, body: { access_token: `at-${n}`, token_type: "Bearer", expires_in: state.zero ? 0 : 3600, scope: OFFLINE, refresh_token: `rt-${n}` } };
  });
  open.push(server);
  return { state, baseUrl: server.baseUrl };
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
