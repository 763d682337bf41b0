/**
 * A client secret the server refused (invalid_client) against the real example server over a
 * socket: it is presented once, never again. plantgate counts each failed client authentication
 * toward its lock of that client id + address (bruteForce.maxFailures, 10), and a locked pair is
 * refused before the secret is looked at: a process that kept presenting a stale secret at every
 * call locked out every other process on its host using that client id, the right secret too.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { createClient, OAuthError, type CachedToken, type TokenCache } from "../src/index.js";
import { countingFetch, rejectionOf, startTarget, type ServerTarget } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

let t: ServerTarget;
beforeEach(async () => {
  t = await startTarget();
});
afterEach(async () => {
  await t.close();
});

/** A shared cache in memory (standing in for Redis), as JSON so no object is shared by reference. */
function sharedCache(): TokenCache {
  const map = new Map<string, string>();
  return {
    async get(key) {
      const v = map.get(key);
      return v === undefined ? null : (JSON.parse(v) as CachedToken);
    },
    async set(key, token) {
      map.set(key, JSON.stringify(token));
    },
  };
}

const REFUSED = { status: 401, error: "invalid_client", error_description: "Client authentication failed." };

it.each(["basic", "post"] as const)("a wrong client secret (%s) is presented once: later calls reject with the same OAuthError and send nothing, so the client id is not locked on this host", async (auth) => {
  const { grants, fetch } = countingFetch();
  const stale = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: "a-secret-revoked-since-0123456789", auth, fetch });
  const first = await rejectionOf(stale.listAccounts());
  expect(first).toBeInstanceOf(OAuthError);
  expect(first).toMatchObject({ ...REFUSED, grantType: "client_credentials", retryAfter: null });
  expect((first as Error).message).toBe("invalid_client: Client authentication failed.");
  for (let i = 0; i < 11; i++) {
    expect(await rejectionOf(stale.listAccounts())).toBe(first);
    expect(await rejectionOf(stale.getAccessToken())).toBe(first);
    expect(await rejectionOf(stale.refresh())).toBe(first);
  }
  expect(grants).toEqual(["client_credentials"]);
  const events = await t.events();
  expect(events.filter((e) => e === "client.authentication_failed")).toHaveLength(1);
  // Another process on this host with the right secret (same client id, same address) gets its token.
  const right = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, auth });
  expect((await right.listAccounts()).total).toBe(1);
});

it("the password grant with a wrong client secret: one request, the password never presented again either", async () => {
  const { grants, fetch } = countingFetch();
  const stale = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: "a-secret-revoked-since-0123456789", scope: OFFLINE, credentials: { username: t.username, password: t.password }, fetch });
  const first = await rejectionOf(stale.listAccounts());
  expect(first).toMatchObject({ ...REFUSED, grantType: "password" });
  for (let i = 0; i < 11; i++) {
    expect(await rejectionOf(stale.listAccounts())).toBe(first);
    expect(await rejectionOf(stale.refresh())).toBe(first);
  }
  expect(grants).toEqual(["password"]);
  const events = await t.events();
  expect(events.filter((e) => e === "client.authentication_failed")).toHaveLength(1);
  expect(events).not.toContain("account.login_failed");
  const right = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password } });
  expect((await right.listAccounts()).total).toBe(1);
});

it("a secret rotated away while the client holds a refresh token: one refused refresh, then nothing; a token a process with the new secret put in the shared cache is still taken", async () => {
  const cache = sharedCache();
  const old = countingFetch();
  const stale = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, tokenCache: cache, fetch: old.fetch });
  expect((await stale.listAccounts()).total).toBe(1);
  // Every earlier secret stops working at once (the CLI's `client rotate-secret`).
  const { clientSecret: rotated } = await t.app.admin.rotateClientSecret(t.clientId);
  const refused = await rejectionOf(stale.refresh());
  expect(refused).toBeInstanceOf(OAuthError);
  expect(refused).toMatchObject({ ...REFUSED, grantType: "refresh_token" });
  for (let i = 0; i < 11; i++) {
    expect(await rejectionOf(stale.listAccounts())).toBe(refused);
    expect(await rejectionOf(stale.getAccessToken())).toBe(refused);
  }
  expect(old.grants).toEqual(["password", "refresh_token"]);
  // A process deployed with the new secret renews (the refresh token the cache holds is still
  // good: only the client's secret changed) and caches the result.
  const now = countingFetch();
  const fresh = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: rotated, scope: OFFLINE, credentials: { username: t.username, password: t.password }, tokenCache: cache, fetch: now.fetch });
  await fresh.getAccessToken(); // the cache's token, taken as it is
  const renewed = await fresh.refresh();
  expect(now.grants).toEqual(["refresh_token"]);
  // The stale process takes it from the cache and its calls work again, still sending nothing.
  expect((await stale.listAccounts()).total).toBe(1);
  expect(await stale.getAccessToken()).toBe(renewed.accessToken);
  expect(old.grants).toEqual(["password", "refresh_token"]);
  const events = await t.events();
  expect(events.filter((e) => e === "client.authentication_failed")).toHaveLength(1);
});
