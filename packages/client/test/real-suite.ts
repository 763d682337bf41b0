/**
 * The integration suite: the client against a real plantgate (core's `createPlantgate`, through
 * `app.fetch` or over a socket), never a fake. Each transport's test file calls
 * {@link realServerSuite} with a factory. Expiry is tested for real: the server runs on core's
 * `clock` option and the client on its own `clock`, and the tests move them.
 * Not a test file itself.
 */
import type { Plantgate } from "@plantgate/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiError, createClient, OAuthError, TOKEN_PATH, type ClientOptions, type FetchLike, type PlantgateClient } from "../src/index.js";
import { manualClock, rejectionOf } from "./support.js";

export const MAX = 9223372036854775807n;
export const MIN = -9223372036854775808n;
export const OFFLINE = "Platform_UserAPIs offline_access";
const TTL = 7200;

export type ManualClock = ReturnType<typeof manualClock>;

/** A running plantgate and the raw transport to it. */
export interface Target {
  baseUrl: string;
  /** The transport: app.fetch in-process, or global fetch / node-fetch over the socket. */
  fetch: FetchLike;
  app: Plantgate;
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
  /** What the server logged at level error (a 500 or 503 somewhere). */
  errors: unknown[];
  close(): Promise<void>;
}

/** Builds a target whose server runs on `serverClock`. */
export type MakeTarget = (serverClock: ManualClock) => Promise<Target>;

interface Recorded {
  token: { request: Record<string, string>; status: number; body: Record<string, unknown> }[];
  api: { url: string; status: number }[];
}

/** Wraps a transport to record token-endpoint traffic and API statuses, and to run a hook before API calls. */
function recording(inner: FetchLike, hooks: { beforeApi?: () => void }): { fetch: FetchLike; recorded: Recorded } {
  const recorded: Recorded = { token: [], api: [] };
  const fetch: FetchLike = async (url, init) => {
    const isToken = new URL(url).pathname.endsWith(TOKEN_PATH);
    if (!isToken) hooks.beforeApi?.();
    const response = await inner(url, init);
    const text = await response.text();
    if (isToken) {
      recorded.token.push({ request: Object.fromEntries(new URLSearchParams(init.body)), status: response.status, body: JSON.parse(text) });
    } else {
      recorded.api.push({ url, status: response.status });
    }
    return { status: response.status, headers: response.headers, text: async () => text };
  };
  return { fetch, recorded };
}

export function realServerSuite(name: string, makeTarget: MakeTarget): void {
  describe(name, () => {
    let target: Target;
    let serverClock: ManualClock;
    let clientClock: ManualClock;
    let hooks: { beforeApi?: () => void };
    let recorded: Recorded;
    let transport: FetchLike;

    beforeEach(async () => {
      serverClock = manualClock(Date.now());
      clientClock = manualClock(Date.now());
      target = await makeTarget(serverClock);
      hooks = {};
      ({ fetch: transport, recorded } = recording(target.fetch, hooks));
    });
    afterEach(async () => {
      await target.close();
      expect(target.errors).toEqual([]);
    });

    const advanceBoth = (seconds: number) => {
      serverClock.advance(seconds);
      clientClock.advance(seconds);
    };
    const client = (options: Partial<ClientOptions> = {}): PlantgateClient =>
      createClient({
        baseUrl: target.baseUrl,
        clientId: target.clientId,
        clientSecret: target.clientSecret,
        auth: "basic",
        fetch: transport,
        clock: clientClock.now,
        ...options,
      });
    const userClient = (options: Partial<ClientOptions> = {}) =>
      client({ credentials: { username: target.username, password: target.password }, scope: OFFLINE, ...options });
    const grants = () => recorded.token.map((t) => t.request.grant_type);

    it("client credentials (basic): lists accounts and creates plants with exact int64 ids", async () => {
      const c = client({ scope: "Platform_UserAPIs Platform_AllAppsServerCommands" });
      const page = await c.listAccounts({ page: 1, pageSize: 20 });
      expect(page).toMatchObject({ page: 1, pageSize: 20, total: 1, totalPages: 1 });
      expect(page.accounts.map((a) => a.username)).toEqual([target.username]);
      expect(page.accounts[0]).toEqual({
        id: expect.any(String),
        username: target.username,
        displayName: null,
        email: null,
        roles: [],
        enabled: true,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      for (const [id, tag] of [[MAX, "indoor"], [MIN, undefined], [9007199254740993n, "odd"]] as const) {
        const plant = await c.createPlant(tag === undefined ? { id, name: `plant ${id}` } : { id, name: `plant ${id}`, tag });
        expect(plant).toEqual(tag === undefined ? { id, name: `plant ${id}` } : { id, name: `plant ${id}`, tag });
        expect(await target.app.storage.plants.get(id)).toEqual({ id, name: `plant ${id}`, tag: tag ?? null });
      }
      expect(grants()).toEqual(["client_credentials"]);
      expect(recorded.token[0]!.body).toMatchObject({ token_type: "Bearer", expires_in: TTL, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" });
      expect(recorded.token[0]!.body.refresh_token).toBeUndefined();
    });

    it("client credentials (post) with the server's default scope", async () => {
      const c = client({ auth: "post" });
      expect(await c.getToken()).toMatchObject({ grantType: "client_credentials", scope: "Platform_UserAPIs Platform_AllAppsServerCommands", hasRefreshToken: false });
      expect(recorded.token[0]!.request).toEqual({ grant_type: "client_credentials", client_id: target.clientId, client_secret: target.clientSecret });
      await c.listAccounts();
    });

    it("App. B: a client id and secret full of reserved characters authenticate with basic and with post", async () => {
      const clientId = "odd:id+with%reserved&chars=1";
      const clientSecret = "sécret with spaces : + % & = ✓ long enough";
      await target.app.admin.createClient({ clientId, clientSecret });
      for (const auth of ["basic", "post"] as const) {
        const c = client({ clientId, clientSecret, auth });
        expect(await c.getToken()).toMatchObject({ grantType: "client_credentials" });
      }
      const wrong = client({ clientId, clientSecret: `${clientSecret}x` });
      expect(await rejectionOf(wrong.getAccessToken())).toMatchObject({ name: "OAuthError", status: 401, error: "invalid_client" });
    });

    it("password grant with offline_access: caches, renews before expiry with the refresh token, rotates to the newest", async () => {
      const c = userClient({ auth: "post" });
      const first = await c.getToken();
      expect(first).toMatchObject({ grantType: "password", scope: OFFLINE, hasRefreshToken: true });
      advanceBoth(TTL - 31);
      expect(await c.getAccessToken()).toBe(first.accessToken); // 31 s left: still cached
      for (let i = 0; i < 3; i++) {
        advanceBoth(1 + (i === 0 ? 0 : TTL - 30)); // 30 s left: renewed
        await c.listAccounts();
      }
      expect(grants()).toEqual(["password", "refresh_token", "refresh_token", "refresh_token"]);
      // Every refresh presented the refresh token of the response just before it.
      for (let i = 1; i < recorded.token.length; i++) {
        expect(recorded.token[i]!.request.refresh_token).toBe(recorded.token[i - 1]!.body.refresh_token);
        expect(recorded.token[i]!.request.username).toBeUndefined();
        expect(recorded.token[i]!.request.password).toBeUndefined();
      }
      expect(new Set(recorded.token.map((t) => t.body.refresh_token)).size).toBe(4);
    });

    it("100 concurrent calls on a cold client and again at expiry: one token request each time", async () => {
      const c = userClient();
      await Promise.all(Array.from({ length: 100 }, () => c.listAccounts()));
      expect(grants()).toEqual(["password"]);
      advanceBoth(TTL);
      await Promise.all(Array.from({ length: 100 }, () => c.listAccounts()));
      expect(grants()).toEqual(["password", "refresh_token"]);
      expect(recorded.api.every((a) => a.status === 200)).toBe(true);
      expect(recorded.api).toHaveLength(200);
    });

    it("a token the server already considers expired: 401, one refresh, one retry", async () => {
      const c = userClient();
      await c.listAccounts();
      serverClock.advance(TTL + 1); // the client's clock says the token is fresh; the server's says expired
      const plant = await c.createPlant({ id: 42n, name: "Retried" });
      expect(plant).toEqual({ id: 42n, name: "Retried" });
      expect(recorded.api.map((a) => a.status)).toEqual([200, 401, 200]);
      expect(grants()).toEqual(["password", "refresh_token"]);
    });

    it("a second 401 surfaces as ApiError 1202 after exactly two attempts", async () => {
      const c = client();
      hooks.beforeApi = () => serverClock.advance(TTL + 1); // every token has expired by the time it arrives
      const error = await rejectionOf(c.listAccounts());
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ status: 401, error: 1202, wwwAuthenticate: expect.stringContaining('error="invalid_token"') });
      expect(recorded.api.map((a) => a.status)).toEqual([401, 401]);
      expect(grants()).toEqual(["client_credentials", "client_credentials"]);
    });

    it("refresh family revoked (a replayed refresh token): falls back to the password grant", async () => {
      const c = userClient();
      await c.getAccessToken();
      await c.refresh(); // rt1 -> rt2; rt1 is now spent
      const spent = recorded.token[0]!.body.refresh_token as string;
      // Someone replays the spent token after the server's grace window (30 s): the server revokes
      // the whole family (RFC 9700 §4.14.2), rt2 included.
      advanceBoth(30);
      const replay = await target.fetch(target.baseUrl + TOKEN_PATH, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        redirect: "manual",
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: spent, client_id: target.clientId, client_secret: target.clientSecret }).toString(),
      });
      expect(replay.status).toBe(400);
      advanceBoth(TTL);
      const page = await c.listAccounts();
      expect(page.total).toBe(1);
      expect(grants()).toEqual(["password", "refresh_token", "refresh_token", "password"]);
      expect(recorded.token[2]!.body).toMatchObject({ error: "invalid_grant" });
      expect(await c.getToken()).toMatchObject({ grantType: "password", hasRefreshToken: true });
    });

    it("refresh family revoked and the password not kept: OAuthError invalid_grant", async () => {
      const c = userClient({ keepCredentials: false });
      await c.getAccessToken();
      await c.refresh();
      await target.app.admin.setAccountEnabled(target.username, false); // revokes the account's refresh tokens
      await target.app.admin.setAccountEnabled(target.username, true);
      advanceBoth(TTL);
      const error = await rejectionOf(c.listAccounts());
      expect(error).toBeInstanceOf(OAuthError);
      expect(error).toMatchObject({ status: 400, error: "invalid_grant", grantType: "refresh_token" });
      expect(grants()).toEqual(["password", "refresh_token", "refresh_token"]);
    });

    it("walks every account with the iterator, each once, in order", async () => {
      const created = await target.app.admin.importAccounts(
        Array.from({ length: 46 }, (_, i) => ({ username: `walker-${String(i).padStart(2, "0")}`, password: `password-${i}-long` })),
      );
      const c = client();
      const seen = [];
      for await (const account of c.accounts({ pageSize: 20 })) seen.push(account);
      expect(seen).toHaveLength(47);
      expect(new Set(seen.map((a) => a.id)).size).toBe(47);
      // Creation order, oldest first: the bootstrap user, then the import in its input order.
      expect(seen.map((a) => a.username)).toEqual([target.username, ...created.map((a) => a.username)]);
      expect(recorded.api.map((a) => new URL(a.url).search)).toEqual(["?page=1&pageSize=20", "?page=2&pageSize=20", "?page=3&pageSize=20"]);
    });

    it("typed errors from the real server", async () => {
      const wrongSecret = client({ clientSecret: "not-the-secret-at-all" });
      expect(await rejectionOf(wrongSecret.listAccounts())).toMatchObject({ name: "OAuthError", status: 401, error: "invalid_client" });
      const wrongPassword = client({ credentials: { username: target.username, password: "wrong-password" } });
      expect(await rejectionOf(wrongPassword.listAccounts())).toMatchObject({ name: "OAuthError", status: 400, error: "invalid_grant", grantType: "password" });
      const offlineCc = client({ scope: OFFLINE });
      expect(await rejectionOf(offlineCc.getAccessToken())).toMatchObject({ name: "OAuthError", status: 400, error: "invalid_scope" });

      const c = client();
      await c.createPlant({ id: 7n, name: "Once" });
      expect(await rejectionOf(c.createPlant({ id: 7n, name: "Twice" }))).toMatchObject({ name: "ApiError", status: 400, error: 1006 });
      expect(await rejectionOf(c.createPlant({ id: 8n, name: "" }))).toMatchObject({ name: "ApiError", status: 400, error: 1009 });
      expect(await rejectionOf(c.listAccounts({ pageSize: 0 }))).toMatchObject({ name: "ApiError", status: 400, error: 1102 });
      expect(await rejectionOf(c.listAccounts({ page: 1.5 }))).toMatchObject({ name: "ApiError", status: 400, error: 1101 });

      // A token with only offline_access may not list accounts: 403, not retried.
      const narrow = userClient({ scope: "offline_access" });
      const before = recorded.api.length;
      expect(await rejectionOf(narrow.listAccounts())).toMatchObject({ name: "ApiError", status: 403, error: 1203 });
      expect(recorded.api.length - before).toBe(1);
    });

    it("a shared token cache hands a token only to the same client id, user and scope (not to a wrong secret's client: documented)", async () => {
      const store = new Map<string, string>();
      const tokenCache = {
        get: async (key: string) => (store.has(key) ? JSON.parse(store.get(key)!) : null),
        set: async (key: string, token: unknown) => void store.set(key, JSON.stringify(token)),
      };
      const other = await target.app.admin.createClient({ clientId: "other-client" });
      const claims = async (c: PlantgateClient) => {
        const payload = JSON.parse(Buffer.from((await c.getAccessToken()).split(".")[1]!, "base64url").toString()) as Record<string, unknown>;
        return { client_id: payload.client_id, scope: payload.scope, user: typeof payload.sub === "string" && payload.sub.startsWith("client:") ? null : "user" };
      };
      const mine = client({ tokenCache, scope: "Platform_UserAPIs" });
      expect(await claims(mine)).toEqual({ client_id: target.clientId, scope: "Platform_UserAPIs", user: null });
      expect(await claims(client({ tokenCache, scope: "Platform_UserAPIs", clientId: "other-client", clientSecret: other.clientSecret }))).toEqual({ client_id: "other-client", scope: "Platform_UserAPIs", user: null });
      expect(await claims(client({ tokenCache, scope: "Platform_AllAppsServerCommands" }))).toEqual({ client_id: target.clientId, scope: "Platform_AllAppsServerCommands", user: null });
      expect(await claims(userClient({ tokenCache, scope: "Platform_UserAPIs" }))).toEqual({ client_id: target.clientId, scope: "Platform_UserAPIs", user: "user" });
      expect(grants()).toEqual(["client_credentials", "client_credentials", "client_credentials", "password"]);
      expect(store.size).toBe(4);
      // The key holds no secret (README "Shared token cache"): the same client id with a wrong
      // secret is handed the cached token without a request; share caches only among checked configs.
      expect(await client({ tokenCache, scope: "Platform_UserAPIs", clientSecret: "not-the-secret-at-all" }).getAccessToken()).toBe(await mine.getAccessToken());
      expect(grants()).toHaveLength(4);
    });

    it("two clients sharing a token cache use one token", async () => {
      const store = new Map<string, string>();
      const tokenCache = {
        get: async (key: string) => (store.has(key) ? JSON.parse(store.get(key)!) : null),
        set: async (key: string, token: unknown) => void store.set(key, JSON.stringify(token)),
      };
      const a = userClient({ tokenCache });
      const b = userClient({ tokenCache });
      await a.listAccounts();
      await b.listAccounts();
      expect(grants()).toEqual(["password"]);
      advanceBoth(TTL);
      await b.listAccounts(); // b refreshes with the cached refresh token
      await a.listAccounts(); // a takes b's new token from the cache
      expect(grants()).toEqual(["password", "refresh_token"]);
      expect(recorded.api.every((r) => r.status === 200)).toBe(true);
    });
  });
}
