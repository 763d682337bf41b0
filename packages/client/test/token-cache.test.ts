/**
 * The shared token cache hook: processes (here: client instances) sharing one cache share one
 * token, pick up each other's rotated refresh tokens, and never reuse a token an API rejected.
 */
import { describe, expect, it } from "vitest";
import { OAuthError, type CachedToken, type TokenCache } from "../src/index.js";
import { BASE, bearerOf, CLIENT_ID, clientOn, fakeAccounts, fakeTokenEndpoint, manualClock, newMock, T0, USER } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

/** An in-memory cache that records what happened, standing in for Redis or a database. */
function memoryCache() {
  const map = new Map<string, string>();
  const log: string[] = [];
  const cache: TokenCache = {
    async get(key) {
      log.push(`get ${key}`);
      const v = map.get(key);
      return v === undefined ? null : (JSON.parse(v) as CachedToken);
    },
    async set(key, token) {
      log.push(`set ${key}`);
      map.set(key, JSON.stringify(token));
    },
  };
  return { cache, map, log };
}

describe("tokenCache", () => {
  it("is keyed by base URL, client, user and scope (scope order does not matter)", () => {
    const fm = newMock();
    const { cache } = memoryCache();
    const a = clientOn(fm, { tokenCache: cache, credentials: USER, scope: "offline_access Platform_UserAPIs" });
    const b = clientOn(fm, { tokenCache: cache, credentials: USER, scope: ["Platform_UserAPIs", "offline_access"] });
    const c = clientOn(fm, { tokenCache: cache, credentials: { ...USER, username: "bob" }, scope: OFFLINE });
    const d = clientOn(fm, { tokenCache: cache, scope: OFFLINE });
    const e = clientOn(fm, { tokenCache: cache, credentials: USER, scope: "Platform_UserAPIs" });
    const f = clientOn(fm, { tokenCache: cache, credentials: USER, scope: OFFLINE, clientId: "other" });
    const g = clientOn(fm, { tokenCache: cache, credentials: USER, scope: OFFLINE, baseUrl: "https://other.example.test/" });
    expect(a.cacheKey).toBe(`plantgate-client:["${BASE}","${CLIENT_ID}","alice","Platform_UserAPIs offline_access"]`);
    expect(b.cacheKey).toBe(a.cacheKey);
    expect(new Set([a, c, d, e, f, g].map((x) => x.cacheKey)).size).toBe(6);
    // A trailing slash on the base URL is the same service.
    expect(clientOn(fm, { credentials: USER, scope: OFFLINE, baseUrl: `${BASE}/` }).cacheKey).toBe(a.cacheKey);
  });

  it("stores the whole token, refresh token included, and a second process reuses it without a request", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    fakeAccounts(fm);
    const { cache, map, log } = memoryCache();
    const clock = manualClock();
    const one = clientOn(fm, { tokenCache: cache, clock: clock.now, credentials: USER, scope: OFFLINE });
    await one.listAccounts();
    expect([...map.values()].map((v) => JSON.parse(v))).toEqual([
      { accessToken: "at-1", tokenType: "Bearer", expiresAt: T0 + 3_600_000, obtainedAt: T0, scope: OFFLINE, refreshToken: "rt-1", grantType: "password" },
    ]);
    const two = clientOn(fm, { tokenCache: cache, clock: clock.now, credentials: USER, scope: OFFLINE });
    await two.listAccounts();
    expect(tokens.requests).toHaveLength(1);
    expect(fm.callHistory.calls("accounts").map(bearerOf)).toEqual(["at-1", "at-1"]);
    expect(log.map((l) => l.split(" ")[0])).toEqual(["get", "set", "get"]);
  });

  it("uses the newest refresh token: the one another process rotated into the cache", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 100 });
    const { cache } = memoryCache();
    const clock = manualClock();
    const one = clientOn(fm, { tokenCache: cache, clock: clock.now, credentials: USER, scope: OFFLINE });
    const two = clientOn(fm, { tokenCache: cache, clock: clock.now, credentials: USER, scope: OFFLINE });
    await one.getAccessToken(); // password -> rt-1
    await two.getAccessToken(); // from the cache
    clock.advance(100);
    expect(await one.getAccessToken()).toBe("at-2"); // refresh rt-1 -> rt-2, cached
    clock.advance(100);
    expect(await two.getAccessToken()).toBe("at-3"); // two still holds rt-1 in memory, but uses rt-2
    expect(tokens.requests.map((r) => r.refresh_token ?? r.grant_type)).toEqual(["password", "rt-1", "rt-2"]);
  });

  it("never takes back from the cache a token an API rejected", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    fakeAccounts(fm, (t) => t !== "at-1");
    const { cache } = memoryCache();
    const client = clientOn(fm, { tokenCache: cache, clock: manualClock().now });
    await client.listAccounts();
    expect(fm.callHistory.calls("accounts").map(bearerOf)).toEqual(["at-1", "at-2"]);
    expect(tokens.requests).toHaveLength(2);
  });

  it("after losing a refresh race (invalid_grant), adopts the winner's cached token instead of logging in", async () => {
    const fm = newMock();
    const { cache, map } = memoryCache();
    const clock = manualClock();
    const winner: CachedToken = { accessToken: "at-winner", tokenType: "Bearer", expiresAt: T0 + 200_000, obtainedAt: T0 + 100_000, scope: OFFLINE, refreshToken: "rt-winner", grantType: "refresh_token" };
    const tokens = fakeTokenEndpoint(fm, {
      expiresIn: 100,
      override: (form) => {
        if (form.refresh_token !== "rt-1") return undefined;
        // Meanwhile another process refreshed rt-1 first and cached its result.
        for (const key of map.keys()) map.set(key, JSON.stringify(winner));
        return { status: 400, body: { error: "invalid_grant" } };
      },
    });
    const client = clientOn(fm, { tokenCache: cache, clock: clock.now, credentials: USER, scope: OFFLINE });
    await client.getAccessToken();
    clock.advance(100);
    expect(await client.getAccessToken()).toBe("at-winner");
    expect(tokens.requests.map((r) => r.refresh_token ?? r.grant_type)).toEqual(["password", "rt-1"]);
  });

  it("ignores cache entries that are not tokens", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    const cache: TokenCache = { get: async () => ({ nonsense: true }) as unknown as CachedToken, set: async () => {} };
    expect(await clientOn(fm, { tokenCache: cache }).getAccessToken()).toBe("at-1");
    expect(tokens.requests).toHaveLength(1);
  });

  it("lets cache failures reach the caller (the hook decides whether to swallow them)", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm);
    const cache: TokenCache = { get: async () => Promise.reject(new Error("redis down")), set: async () => {} };
    await expect(clientOn(fm, { tokenCache: cache }).getAccessToken()).rejects.toThrow("redis down");
  });

  it("a fresh cached token from another process is used even when this one's refresh would fail", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { override: () => ({ status: 400, body: { error: "invalid_grant" } }) });
    const token: CachedToken = { accessToken: "shared", tokenType: "Bearer", expiresAt: T0 + 3_600_000, obtainedAt: T0, scope: OFFLINE, refreshToken: "rt-x", grantType: "password" };
    const cache: TokenCache = { get: async () => token, set: async () => {} };
    const client = clientOn(fm, { tokenCache: cache, clock: manualClock().now, credentials: USER, scope: OFFLINE });
    expect(await client.getToken()).toMatchObject({ accessToken: "shared", hasRefreshToken: true });
    expect(tokens.requests).toHaveLength(0);
    // refresh(): rt-x is rejected, so it logs in again, which this fake rejects too.
    const error = await client.refresh().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OAuthError);
    expect(error).toMatchObject({ grantType: "password", error: "invalid_grant" });
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["refresh_token", "password"]);
  });
});

describe("tokenCache and refused refresh tokens", () => {
  it("a refresh token refused with invalid_grant is never presented again, by this client or by another on the same cache", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 60, override: (form) => (form.refresh_token !== undefined ? { status: 400, body: { error: "invalid_grant" } } : undefined) });
    const { cache, map } = memoryCache();
    const clock = manualClock();
    const one = clientOn(fm, { tokenCache: cache, clock: clock.now, credentials: USER, scope: OFFLINE, keepCredentials: false });
    await one.getAccessToken(); // password -> rt-1 (the password is dropped: keepCredentials is off)
    clock.advance(61_000);
    const outcomes: unknown[] = [];
    for (let i = 0; i < 5; i++) outcomes.push(await one.getAccessToken().catch((e: unknown) => e));
    const two = clientOn(fm, { tokenCache: cache, clock: clock.now, credentials: USER, scope: OFFLINE });
    outcomes.push(await two.getAccessToken().catch((e: unknown) => e));
    // The first client, whose refresh token was refused and who kept no password, is refused each
    // time (not handed its expired token); the second logs in. (Until 2026-11-30 the outcomes were
    // swallowed with .catch(() => undefined) and only the requests were checked.)
    const refused = (e: unknown) => (e instanceof OAuthError ? [e.status, e.error, e.grantType] : e);
    expect(outcomes.map(refused)).toEqual([...Array.from({ length: 5 }, () => [400, "invalid_grant", "refresh_token"]), "at-3"]);
    // rt-1 once; the second client, which still has the password, logs in instead of presenting it.
    expect(tokens.requests.map((r) => r.refresh_token ?? r.grant_type)).toEqual(["password", "rt-1", "password"]);
    expect([...map.values()].map((v) => (JSON.parse(v) as CachedToken).refreshToken)).not.toContain("rt-1");
  });

  it("a cached token with characters a header cannot hold is not used (a fetch would quote it in its error)", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    const bad: CachedToken = { accessToken: "SECRET-ACCESS-TOKEN\nx", tokenType: "Bearer", expiresAt: T0 + 3_600_000, obtainedAt: T0, scope: "", refreshToken: null, grantType: "client_credentials" };
    const badRefresh: CachedToken = { ...bad, accessToken: "fine", expiresAt: T0, refreshToken: "rt\u0000x" };
    for (const entry of [bad, badRefresh]) {
      const cache: TokenCache = { get: async () => entry, set: async () => {} };
      expect(await clientOn(fm, { tokenCache: cache, clock: manualClock().now }).getAccessToken()).toMatch(/^at-\d+$/);
    }
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["client_credentials", "client_credentials"]);
  });
});

describe("tokenCache entries another process left", () => {
  it("without the password (keepCredentials false), a session another process found revoked ends in OAuthError invalid_grant, for this call and the next", async () => {
    const fm = newMock();
    let revoked = false;
    const tokens = fakeTokenEndpoint(fm, {
      expiresIn: 100,
      override: (form) => (revoked && form.grant_type === "refresh_token" ? { status: 400, body: { error: "invalid_grant" } } : undefined),
    });
    // After the revocation the API refuses every token of the family.
    fakeAccounts(fm, (t) => !revoked && t.startsWith("at-"));
    const { cache } = memoryCache();
    const clock = manualClock();
    const options = { tokenCache: cache, clock: clock.now, credentials: USER, scope: OFFLINE, keepCredentials: false, refreshJitterSeconds: 0 };
    const a = clientOn(fm, options);
    const b = clientOn(fm, options);
    expect(await a.getAccessToken()).toBe("at-1"); // password -> rt-1, cached; A drops the password
    clock.advance(80_000); // at-1 due (30 s skew)
    expect(await b.getAccessToken()).toBe("at-2"); // B refreshes rt-1 -> rt-2, cached
    revoked = true; // sign-out everywhere, a password change, an administrator
    const refused = (e: unknown) => (e instanceof OAuthError ? [e.status, e.error, e.grantType] : e);
    // B: its at-2 refused, rt-2 refused; it caches at-2 without its refresh token.
    expect(refused(await b.listAccounts().catch((e: unknown) => e))).toEqual([400, "invalid_grant", "refresh_token"]);
    // A: takes at-2 from the cache, which the API refuses, and has neither refresh token nor
    // password left (until 2026-12-01 an untyped Error, "no refresh token and no credentials").
    const first = await a.listAccounts().catch((e: unknown) => e);
    const second = await a.listAccounts().catch((e: unknown) => e);
    for (const e of [first, second]) {
      expect(refused(e)).toEqual([400, "invalid_grant", "refresh_token"]);
      expect(e).toMatchObject({ error_description: expect.stringContaining("sign in again") });
    }
    expect(tokens.requests.map((r) => r.refresh_token ?? r.grant_type)).toEqual(["password", "rt-1", "rt-2"]);
  });

  it("an entry whose lifetime ends before it starts (obtainedAt after expiresAt) is no entry: a new token is fetched, and no expired one handed out", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    const clock = manualClock();
    const junk: CachedToken = {
      accessToken: "expired-an-hour-ago",
      tokenType: "Bearer",
      expiresAt: T0 - 3_600_000,
      obtainedAt: T0 + 6 * 3_600_000,
      scope: "Platform_UserAPIs",
      refreshToken: null,
      grantType: "client_credentials",
    };
    for (const entry of [junk, { ...junk, expiresAt: Number.POSITIVE_INFINITY, obtainedAt: T0 }, { ...junk, obtainedAt: Number.NaN }]) {
      const cache: TokenCache = { get: async () => entry, set: async () => {} };
      // Until 2026-12-01 the first entry passed for fresh until an hour after its end: no request
      // was sent, every process's first call failed with a NetworkError "answered after -21599999 ms".
      const token = await clientOn(fm, { tokenCache: cache, clock: clock.now }).getToken();
      expect(token.accessToken).toMatch(/^at-\d+$/);
      expect(token.expiresAt).toBeGreaterThan(clock.now());
    }
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["client_credentials", "client_credentials", "client_credentials"]);
  });
});

describe("refresh(rejectedAccessToken)", () => {
  it("several callers reporting one refused token, late and one after another, cause one renewal; without the token each call renews", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    const client = clientOn(fm, { clock: manualClock().now, credentials: USER, scope: OFFLINE });
    const refused = await client.getAccessToken(); // at-1
    for (let i = 0; i < 3; i++) expect((await client.refresh(refused)).accessToken).toBe("at-2");
    expect(tokens.requests.map((r) => r.refresh_token ?? r.grant_type)).toEqual(["password", "rt-1"]);
    // Without a token it is "a new one now", each time.
    expect((await client.refresh()).accessToken).toBe("at-3");
    expect(tokens.requests.map((r) => r.refresh_token ?? r.grant_type)).toEqual(["password", "rt-1", "rt-2"]);
  });
});
