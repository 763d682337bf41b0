/**
 * A refresh the token endpoint refuses for good (RFC 6749 §5.2): not only `invalid_grant` (the
 * token itself is dead) but `unauthorized_client` (this client may no longer use the refresh_token
 * grant), `unsupported_grant_type` (the server has no refresh grant) and `invalid_scope` (the SDK
 * sends no `scope` on a refresh, so the scope refused is the token's own grant, RFC 6749 §6): the
 * same refresh token presented the same way gets the same answer. The client drops it, from the
 * shared cache too, and falls back to the original grant or ends the session, as for
 * `invalid_grant`. An `invalid_request` (a malformed request, nothing said of the token) keeps it.
 * Until 2026-12-02 only `invalid_grant` dropped it: a client that lost the refresh grant presented
 * its refresh token again at every call, never fell back to a password it kept, and left the token
 * in the shared cache for every other process to present.
 */
import { describe, expect, it } from "vitest";
import { createClient, OAuthError, type CachedToken, type TokenCache } from "../src/index.js";
import { countingFetch, expectStopped, manualClock, rejectionOf, serversClosedAfterEach } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

/** A shared cache in memory (standing in for Redis), as JSON so no object is shared by reference. */
function sharedCache() {
  const map = new Map<string, string>();
  const cache: TokenCache = {
    async get(key) {
      const v = map.get(key);
      return v === undefined ? null : (JSON.parse(v) as CachedToken);
    },
    async set(key, token) {
      map.set(key, JSON.stringify(token));
    },
  };
  return { cache, map };
}

const servers = serversClosedAfterEach();

describe("a refresh answered unauthorized_client by plantgate (the client re-created without the refresh_token grant)", () => {
  it("the refresh token is presented once and dropped, from the shared cache too: later calls reject with the same OAuthError, and no process presents it again", async () => {
    const t = await servers.target();
    const { cache, map } = sharedCache();
    const credentials = { username: t.username, password: t.password };
    const a = countingFetch();
    // A process that keeps no password: its session goes on by the refresh token alone.
    const one = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials, keepCredentials: false, tokenCache: cache, refreshJitterSeconds: 0, fetch: a.fetch });
    expect((await one.listAccounts()).total).toBe(1);
    const signedIn = JSON.parse(map.get(one.cacheKey)!) as CachedToken;
    expect(typeof signedIn.refreshToken).toBe("string");

    // plantgate has no grant edit: the operator deletes the client and creates it again, the same
    // id and secret, with the password and client-credentials grants only, a minute later.
    t.clock.advance(60);
    await t.app.admin.deleteClient(t.clientId);
    await t.app.admin.createClient({ clientId: t.clientId, clientSecret: t.clientSecret, grantTypes: ["client_credentials", "password"] });

    const refused = await rejectionOf(one.refresh());
    expect(refused).toBeInstanceOf(OAuthError);
    expect(refused).toMatchObject({ status: 400, error: "unauthorized_client", error_description: "This client is not allowed the refresh_token grant.", grantType: "refresh_token", retryAfter: null });
    expect((refused as Error).message).toBe("unauthorized_client: This client is not allowed the refresh_token grant.");
    await expectStopped(one, refused);
    expect(a.grants).toEqual(["password", "refresh_token"]);
    // The shared cache keeps the access token, without the refresh token.
    expect(JSON.parse(map.get(one.cacheKey)!)).toEqual({ ...signedIn, refreshToken: null });

    // Another process on the same entry, which keeps its password, once the cached access token
    // has expired (its clock past the token's expiresAt): it does not present the refused refresh
    // token but signs in again, which plantgate refuses too (offline_access needs the
    // refresh_token grant): the operator's change is told, no refresh token presented.
    const b = countingFetch();
    const later = manualClock(signedIn.expiresAt);
    const two = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials, tokenCache: cache, refreshJitterSeconds: 0, clock: later.now, fetch: b.fetch });
    const second = await rejectionOf(two.listAccounts());
    expect(second).toBeInstanceOf(OAuthError);
    expect(second).toMatchObject({ status: 400, error: "invalid_scope", error_description: "offline_access needs the refresh_token grant, which this client is not allowed.", grantType: "password", retryAfter: null });
    expect(b.grants).toEqual(["password"]);
    const events = await t.events();
    expect(events).not.toContain("account.login_failed");
  });

  it("a client that keeps its password falls back to the password grant at once (one refresh), and presents the refresh token never again; the password grant, refused too (invalid_scope), is sent once", async () => {
    const t = await servers.target();
    const a = countingFetch();
    const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, fetch: a.fetch });
    expect((await client.listAccounts()).total).toBe(1);
    await t.app.admin.deleteClient(t.clientId);
    await t.app.admin.createClient({ clientId: t.clientId, clientSecret: t.clientSecret, grantTypes: ["client_credentials", "password"] });
    const outcomes: unknown[] = [];
    for (let i = 0; i < 3; i++) outcomes.push(await rejectionOf(client.refresh()));
    const refusal = (e: unknown) => (e instanceof OAuthError ? [e.status, e.error, e.grantType] : e);
    expect(outcomes.map(refusal)).toEqual([
      [400, "invalid_scope", "password"],
      [400, "invalid_scope", "password"],
      [400, "invalid_scope", "password"],
    ]);
    // The password grant's invalid_scope holds whenever it is sent (the scope option is fixed):
    // the password is dropped, later calls get the same error (until 2026-12-02 each sent it again,
    // see refused-password-grant.test.ts).
    expect(outcomes[1]).toBe(outcomes[0]);
    expect(outcomes[2]).toBe(outcomes[0]);
    expect(a.grants).toEqual(["password", "refresh_token", "password"]);
  });
});

/**
 * Another authorization server (node:http on a socket): a password grant gets `at-<n>` and
 * `rt-<n>`; every refresh is refused with `code`.
 */
async function refusingServer(code: string) {
  const grants: string[] = [];
  const presented: string[] = [];
  const server = await servers.tokenServer((form, n) => {
    grants.push(form.get("grant_type") ?? "");
    if (form.get("grant_type") === "refresh_token") {
      presented.push(form.get("refresh_token") ?? "");
      return { status: 400, body: { error: code, error_description: `refused: ${code}` } };
    }
    return { status: 200, body: { access_token: `at-${n}`, token_type: "Bearer", expires_in: 3600, scope: OFFLINE, refresh_token: `rt-${n}` } };
  });
  return { grants, presented, baseUrl: server.baseUrl };
}

describe("which refusals of a refresh drop the refresh token (RFC 6749 §5.2)", () => {
  it.each([
    ["unauthorized_client", true],
    ["unsupported_grant_type", true],
    ["invalid_scope", true],
    ["invalid_grant", true],
    ["invalid_request", false],
  ])("%s: dropped %s", async (code, dropped) => {
    const s = await refusingServer(code);
    const client = createClient({ baseUrl: s.baseUrl, clientId: "third-party", clientSecret: "a-client-secret-0123456789", scope: OFFLINE, credentials: { username: "alice", password: "wonderland-42" }, keepCredentials: false });
    expect(await client.getAccessToken()).toBe("at-1");
    const first = await rejectionOf(client.refresh());
    expect(first).toBeInstanceOf(OAuthError);
    expect(first).toMatchObject({ status: 400, error: code, error_description: `refused: ${code}`, grantType: "refresh_token" });
    const second = await rejectionOf(client.refresh());
    if (dropped) {
      // Dropped, no password kept: the session is over, the same error, nothing sent.
      expect(second).toBe(first);
      expect(s.presented).toEqual(["rt-1"]);
    } else {
      // Kept: a malformed request says nothing of the token; the next call presents it again.
      expect(second).not.toBe(first);
      expect(second).toMatchObject({ status: 400, error: code, grantType: "refresh_token" });
      expect(s.presented).toEqual(["rt-1", "rt-1"]);
    }
    expect(s.grants).toEqual(["password", ...s.presented.map(() => "refresh_token")]);
  });
});
