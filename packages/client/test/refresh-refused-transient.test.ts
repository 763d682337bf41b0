/**
 * A 429 or 5xx answer to a refresh whose OAuth error body says `invalid_grant` (or another code that
 * would drop the token on a 400): RFC 6749 §5.2 error responses are 400 (401 for invalid_client),
 * and a 429 or 5xx is a transient answer whatever its body says (a throttle, a storage outage, a
 * server's bug mapping its failure to the wrong code). So the client treats it as it treats any
 * other such answer: undecided, the refresh token kept and presented again. Until 2026-12-02 it was
 * both: a 5xx started the background retries of a lost answer, and the same answer dropped the
 * refresh token as refused for good, so the retries (and every later call) found no token to
 * present and, without a kept password, the session ended.
 * A node:http token endpoint on a socket.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createClient, OAuthError } from "../src/index.js";
import { rejectionOf, tokenServer } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

type Failure = { status: number; error: string } | null;

/**
 * A token endpoint: a password grant gets `at-<n>` and `rt-<n>`, a refresh too (rotating), except
 * that while `fail` is set the next refresh is answered with it (status and OAuth error body), and
 * while `failPassword` is set the next password grant.
 */
async function failingServer() {
  const state = { fail: null as Failure, failPassword: null as Failure, grants: [] as string[], presented: [] as string[] };
  const server = await tokenServer((form, n) => {
    const grant = form.get("grant_type") ?? "";
    state.grants.push(grant);
    if (grant === "refresh_token") state.presented.push(form.get("refresh_token") ?? "");
    const failure = grant === "refresh_token" ? state.fail : grant === "password" ? state.failPassword : null;
    if (failure !== null) {
      if (grant === "refresh_token") state.fail = null;
      else state.failPassword = null;
      return { status: failure.status, body: { error: failure.error, error_description: `${failure.status} ${failure.error}` } };
    }
    return { status: 200, body: { access_token: `at-${n}`, token_type: "Bearer", expires_in: 3600, scope: OFFLINE, refresh_token: `rt-${n}` } };
  });
  open.push(server);
  return { state, baseUrl: server.baseUrl };
}

describe("a refresh answered 429 or 5xx with an OAuth body that would refuse it on a 400", () => {
  it.each([
    [503, "invalid_grant"],
    [500, "invalid_grant"],
    [429, "invalid_grant"],
    [503, "unauthorized_client"],
    // A refused secret ends the client on a 400 or 401; a 503 says nothing of it.
    [503, "invalid_client"],
  ])("%i %s: undecided, the refresh token is kept and presented again (no password kept)", async (status, error) => {
    const s = await failingServer();
    // keepCredentials false: a dropped refresh token ends the session.
    const client = createClient({ baseUrl: s.baseUrl, clientId: "third-party", clientSecret: "a-client-secret-0123456789", scope: OFFLINE, credentials: { username: "alice", password: "wonderland-42" }, keepCredentials: false });
    expect(await client.getAccessToken()).toBe("at-1");
    s.state.fail = { status, error };
    const first = await rejectionOf(client.refresh());
    expect(first).toBeInstanceOf(OAuthError);
    expect(first).toMatchObject({ status, error, error_description: `${status} ${error}`, grantType: "refresh_token", retryAfter: null });
    // The next renewal presents the same refresh token (or a background retry already did, and
    // the client holds its rotated one): the session goes on.
    const renewed = await client.refresh();
    expect(renewed.hasRefreshToken).toBe(true);
    expect(s.state.grants[0]).toBe("password");
    expect(s.state.grants.slice(1).every((g) => g === "refresh_token")).toBe(true);
    expect(s.state.presented.slice(0, 2)).toEqual(["rt-1", "rt-1"]);
  });
});

it.each([
  [503, "invalid_grant"],
  [429, "invalid_scope"],
])("a password grant answered %i %s: the password is kept and sent again at the next call", async (status, error) => {
  const s = await failingServer();
  const client = createClient({ baseUrl: s.baseUrl, clientId: "third-party", clientSecret: "a-client-secret-0123456789", scope: OFFLINE, credentials: { username: "alice", password: "wonderland-42" } });
  s.state.failPassword = { status, error };
  const first = await rejectionOf(client.getAccessToken());
  expect(first).toBeInstanceOf(OAuthError);
  expect(first).toMatchObject({ status, error, error_description: `${status} ${error}`, grantType: "password", retryAfter: null });
  expect(await client.getAccessToken()).toBe("at-2");
  expect(s.state.grants).toEqual(["password", "password"]);
});
