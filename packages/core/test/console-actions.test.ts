/**
 * Management console: every admin action succeeds with its whole body and has the effect it
 * claims (checked at the token endpoint, the account listing and the JWKS), plus its refusals.
 */
import type { JWK } from "jose";
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, generateKeyRecord, type PlantgateOptions, type SecurityEvent, type Storage } from "../src/index.js";
import { ACCOUNTS_URL, getAccounts } from "./api-helpers.js";
import { call, consoleHarness, read, signIn, type ConsoleHarness, type SignedIn } from "./console-helpers.js";
import { basic, clientToken, passwordTokens, tokenRequest } from "./helpers.js";
import { createKeyEncryption, parseKeyEncryptionKeys } from "../src/crypto/key-encryption.js";

const T0 = "2026-01-01T00:00:00.000Z";
const ALL_GRANTS = ["client_credentials", "password", "refresh_token"];
const ALL_SCOPES = ["Platform_UserAPIs", "Platform_AllAppsServerCommands", "offline_access"];
const SECRET = expect.stringMatching(/^[A-Za-z0-9_-]{43}$/);

async function setup(options: PlantgateOptions = {}): Promise<ConsoleHarness & { root: SignedIn; as: (method: string, path: string, body?: unknown) => Promise<Awaited<ReturnType<typeof read>>> }> {
  const h = await consoleHarness(options);
  const root = await signIn(h.app);
  const as = async (method: string, path: string, body?: unknown) =>
    read(await call(h.app, method, path, { cookie: root.cookie, csrf: root.csrf, ...(body !== undefined ? { body } : {}) }));
  return { ...h, root, as };
}

const ccToken = (h: ConsoleHarness, id: string, secret: string) =>
  tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(id, secret) });

describe("console API: session", () => {
  it("GET /api/session returns the user, the same CSRF token and what the forms offer", async () => {
    const h = await setup();
    const r = await h.as("GET", "/api/session");
    expect(r).toEqual({
      status: 200,
      body: {
        username: "root",
        displayName: "Root",
        csrfToken: h.root.csrf,
        // Signed in just now: the end of its first idle window (console.idleTimeoutSeconds, 30 minutes).
        expiresAt: "2026-01-01T00:30:00.000Z",
        grantTypes: ALL_GRANTS,
        scopes: ALL_SCOPES,
        adminRole: "admin",
        accountPages: { defaultPageSize: 20, maxPageSize: 100 },
      },
      cacheControl: "no-store",
      setCookie: null,
      contentType: "application/json",
    });
  });
});

describe("console API: third-party applications (settings > security settings)", () => {
  it("lists clients without secrets or hashes", async () => {
    const h = await setup();
    expect(await h.as("GET", "/api/clients")).toEqual({
      status: 200,
      body: {
        clients: [
          {
            clientId: "app-1",
            name: "app-1",
            grantTypes: ALL_GRANTS,
            scopes: ALL_SCOPES,
            accessTokenTtl: null,
            refreshTokenTtl: null,
            refreshTokenAbsoluteTtl: null,
            createdAt: T0,
            secretUpdatedAt: T0,
            authMethod: "client_secret",
            secrets: [{ id: expect.stringMatching(/^[\w-]{12}$/), createdAt: T0, expiresAt: null, lastUsedAt: null, expired: false }],
            jwksUri: null,
          },
        ],
        next: null,
      },
      cacheControl: "no-store",
      setCookie: null,
      contentType: "application/json",
    });
  });

  it("creates a client (secret shown once) that gets tokens with exactly its grants, scopes and lifetime", async () => {
    const h = await setup();
    h.clock.advance(60_000);
    const r = await h.as("POST", "/api/clients", {
      name: "Reporting",
      clientId: "reporting",
      grantTypes: ["client_credentials"],
      scopes: ["Platform_AllAppsServerCommands"],
      accessTokenTtl: 600,
      refreshTokenTtl: null,
    });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      client: {
        clientId: "reporting",
        name: "Reporting",
        grantTypes: ["client_credentials"],
        scopes: ["Platform_AllAppsServerCommands"],
        accessTokenTtl: 600,
        refreshTokenTtl: null,
        refreshTokenAbsoluteTtl: null,
        createdAt: "2026-01-01T00:01:00.000Z",
        secretUpdatedAt: "2026-01-01T00:01:00.000Z",
        authMethod: "client_secret",
        secrets: [{ id: expect.any(String), createdAt: "2026-01-01T00:01:00.000Z", expiresAt: null, lastUsedAt: null, expired: false }],
        jwksUri: null,
      },
      clientSecret: SECRET,
    });
    const secret = (r.body as { clientSecret: string }).clientSecret;
    const token = await ccToken(h, "reporting", secret);
    expect(token.status).toBe(200);
    expect(await token.json()).toMatchObject({ token_type: "Bearer", expires_in: 600, scope: "Platform_AllAppsServerCommands" });
    const pw = await tokenRequest(h.app, { grant_type: "password", username: "root", password: "root-password-1" }, { authorization: basic("reporting", secret) });
    expect([pw.status, ((await pw.json()) as { error: string }).error]).toEqual([400, "unauthorized_client"]);
    // The secret is never shown again: the listing has no secret and no hash.
    const list = await h.as("GET", "/api/clients");
    expect(JSON.stringify(list.body)).not.toContain(secret);
    expect(JSON.stringify(list.body)).not.toMatch(/secretHash/);
    expect((list.body as { clients: { clientId: string }[] }).clients.map((c) => c.clientId)).toEqual(["app-1", "reporting"]);
  });

  it("without a client id, grants or scopes it picks a random id and all grants and scopes", async () => {
    const h = await setup();
    const r = await h.as("POST", "/api/clients", { name: "Mobile app", clientId: "" });
    expect(r.status).toBe(201);
    const { client, clientSecret } = r.body as { client: { clientId: string; grantTypes: string[]; scopes: string[] }; clientSecret: string };
    expect(client.clientId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect([client.grantTypes, client.scopes]).toEqual([ALL_GRANTS, ALL_SCOPES]);
    expect((await ccToken(h, client.clientId, clientSecret)).status).toBe(200);
  });

  it("refuses bad client input with documented errors", async () => {
    const h = await setup();
    const cases: [unknown, number, unknown][] = [
      [{ clientId: "x" }, 400, { error: 1003, message: "name is required." }],
      [{ name: 5 }, 400, { error: 1004, message: "name must be a string." }],
      [{ name: "A", grantTypes: [] }, 400, { error: 1009, message: "Choose at least one grant type." }],
      [{ name: "A", grantTypes: ["implicit"] }, 400, { error: 1009, message: "grantTypes must be among client_credentials, password, refresh_token." }],
      [{ name: "A", grantTypes: "password" }, 400, { error: 1004, message: "grantTypes must be a list of strings." }],
      [{ name: "A", scopes: ["openid"] }, 400, { error: 1009, message: "scopes must be among Platform_UserAPIs, Platform_AllAppsServerCommands, offline_access." }],
      [{ name: "A", accessTokenTtl: 0 }, 400, { error: 1009, message: "accessTokenTtl must be from 1 to 315360000 seconds." }],
      [{ name: "A", accessTokenTtl: 1.5 }, 400, { error: 1004, message: "accessTokenTtl must be an integer number of seconds." }],
      [{ name: "A", clientId: "has space" }, 400, { error: 1009, message: "clientId must be 1-200 printable ASCII characters without spaces" }],
      [{ name: "A", clientId: "app-1" }, 409, { error: 1307, message: 'A client with id "app-1" already exists.' }],
      // Storable on every backend: on PostgreSQL (U+0000) and every SQL engine (a lone surrogate,
      // sent as the JSON escape \ud800) these were a 500 from the failed insert.
      [{ name: "a\u0000b" }, 400, { error: 1009, message: "name must be 1-200 characters without U+0000 or unpaired surrogates" }],
      [{ name: "a\ud800b" }, 400, { error: 1009, message: "name must be 1-200 characters without U+0000 or unpaired surrogates" }],
      [{ name: "x".repeat(201) }, 400, { error: 1009, message: "name must be at most 200 characters." }],
      [{ name: "   " }, 400, { error: 1009, message: "name must hold a visible character and no control characters" }],
      [{ name: "line\nbreak" }, 400, { error: 1009, message: "name must hold a visible character and no control characters" }],
    ];
    for (const [body, status, expected] of cases) {
      const r = await h.as("POST", "/api/clients", body);
      expect([r.status, r.body, r.cacheControl]).toEqual([status, expected, "no-store"]);
    }
    expect((await h.app.admin.listClients()).map((c) => c.clientId)).toEqual(["app-1"]);
  });

  it("two concurrent creations of one client id or one username: one 201, the other the 409 1307 of the console's own check, not a 400", async () => {
    const h = await setup();
    // Both pass the existence check before either writes (hashing the secret or password awaits).
    const clients = await Promise.all([0, 1].map(() => h.as("POST", "/api/clients", { name: "Twin", clientId: "twin-client" })));
    expect(clients.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(clients.find((r) => r.status === 409)!.body).toEqual({ error: 1307, message: 'A client with id "twin-client" already exists.' });
    const accounts = await Promise.all([0, 1].map(() => h.as("POST", "/api/accounts", { username: "twin", password: "long-enough-1" })));
    expect(accounts.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(accounts.find((r) => r.status === 409)!.body).toEqual({ error: 1307, message: 'The username "twin" is taken.' });
    expect((await h.app.admin.listAccounts()).filter((a) => a.username === "twin")).toHaveLength(1);
  });

  it("a client or secret gone between the console's check and the write (another instance deleted it) is 404 1306, not a 400", async () => {
    // The record vanishes right after the console's existence check has read it.
    const memory = createMemoryStorage();
    let vanish: { clientId: string; secretId?: string } | null = null;
    const storage: Storage = {
      ...memory,
      clients: {
        ...memory.clients,
        get: async (id) => {
          const record = await memory.clients.get(id);
          if (record && vanish?.clientId === id) {
            const { secretId } = vanish;
            vanish = null;
            if (secretId === undefined) await memory.clients.delete(id);
            else await memory.clients.removeSecret(id, secretId, Date.now());
          }
          return record;
        },
      },
    };
    const h = await setup({ storage });
    const cases: [string, string, unknown, string][] = [
      ["DELETE", "/api/clients/gone", undefined, 'Client "gone" does not exist.'],
      ["POST", "/api/clients/gone/secret", undefined, 'Client "gone" does not exist.'],
      ["POST", "/api/clients/gone/secrets", {}, 'Client "gone" does not exist.'],
    ];
    for (const [method, path, body, message] of cases) {
      expect((await h.as("POST", "/api/clients", { name: "Gone", clientId: "gone" })).status).toBe(201);
      vanish = { clientId: "gone" };
      const r = await h.as(method, path, body);
      expect([method, path, r.status, r.body]).toEqual([method, path, 404, { error: 1306, message }]);
      expect(await h.app.storage.clients.get("gone")).toBeNull();
    }
    expect((await h.as("POST", "/api/clients", { name: "Gone", clientId: "gone" })).status).toBe(201);
    const secretId = ((await h.as("POST", "/api/clients/gone/secrets", {})).body as { secret: { id: string } }).secret.id;
    vanish = { clientId: "gone", secretId };
    const revoked = await h.as("DELETE", `/api/clients/gone/secrets/${secretId}`);
    expect([revoked.status, revoked.body]).toEqual([404, { error: 1306, message: `Secret "${secretId}" of client "gone" does not exist.` }]);
  });

  it("regenerates a secret: shown once, the old one fails at once (401 invalid_client), the new one works", async () => {
    const h = await setup();
    expect((await ccToken(h, "app-1", h.clientSecret)).status).toBe(200);
    h.clock.advance(5_000);
    const r = await h.as("POST", "/api/clients/app-1/secret");
    expect([r.status, r.body, r.cacheControl]).toEqual([200, { clientId: "app-1", clientSecret: SECRET, secretUpdatedAt: "2026-01-01T00:00:05.000Z" }, "no-store"]);
    const fresh = (r.body as { clientSecret: string }).clientSecret;
    expect(fresh).not.toBe(h.clientSecret);
    const old = await ccToken(h, "app-1", h.clientSecret);
    expect(old.status).toBe(401);
    expect(((await old.json()) as { error: string }).error).toBe("invalid_client");
    expect((await ccToken(h, "app-1", fresh)).status).toBe(200);
  });

  it("adds a secret beside the first (both work), revokes one by id (that one fails at once), 404 for unknown ones", async () => {
    const h = await setup();
    h.clock.advance(5_000);
    const r = await h.as("POST", "/api/clients/app-1/secrets", { expiresIn: 3600 });
    const added = { id: expect.stringMatching(/^[\w-]{12}$/), createdAt: "2026-01-01T00:00:05.000Z", expiresAt: "2026-01-01T01:00:05.000Z", lastUsedAt: null, expired: false };
    expect([r.status, r.body, r.cacheControl]).toEqual([201, { clientId: "app-1", clientSecret: SECRET, secret: added }, "no-store"]);
    const second = (r.body as { clientSecret: string; secret: { id: string } });
    expect((await ccToken(h, "app-1", h.clientSecret)).status).toBe(200);
    expect((await ccToken(h, "app-1", second.clientSecret)).status).toBe(200);
    const listed = (await h.as("GET", "/api/clients")).body as { clients: { secrets: { id: string; lastUsedAt: string | null }[] }[] };
    expect(listed.clients[0]!.secrets.map((x) => x.lastUsedAt)).toEqual(["2026-01-01T00:00:05.000Z", "2026-01-01T00:00:05.000Z"]);
    expect(JSON.stringify(listed)).not.toContain(second.clientSecret);
    const firstId = listed.clients[0]!.secrets.find((x) => x.id !== second.secret.id)!.id;
    const del = await h.as("DELETE", `/api/clients/app-1/secrets/${firstId}`);
    expect([del.status, del.body]).toEqual([204, null]);
    expect((await ccToken(h, "app-1", h.clientSecret)).status).toBe(401);
    expect((await ccToken(h, "app-1", second.clientSecret)).status).toBe(200);
    const again = await h.as("DELETE", `/api/clients/app-1/secrets/${firstId}`);
    expect([again.status, again.body]).toEqual([404, { error: 1306, message: `Secret "${firstId}" of client "app-1" does not exist.` }]);
    const ghost = await h.as("POST", "/api/clients/ghost/secrets", {});
    expect([ghost.status, ghost.body]).toEqual([404, { error: 1306, message: 'Client "ghost" does not exist.' }]);
  });

  it("an add whose secret a rotation replaced before the add finished is 409 1307 (try again), not 400", async () => {
    const storage = createMemoryStorage();
    const addSecret = storage.clients.addSecret.bind(storage.clients);
    let rotateMeanwhile: (() => Promise<unknown>) | undefined;
    storage.clients.addSecret = async (clientId, secret) => {
      const added = await addSecret(clientId, secret);
      await rotateMeanwhile?.();
      return added;
    };
    const h = await setup({ storage });
    rotateMeanwhile = () => h.app.admin.rotateClientSecret("app-1");
    const r = await h.as("POST", "/api/clients/app-1/secrets", {});
    // Until 2026-12-02 400 1009, as if the request were wrong; nothing in it was.
    expect([r.status, r.body]).toEqual([409, { error: 1307, message: 'The secrets of client "app-1" changed meanwhile; try again.' }]);
  });

  it('client ids "." and ".." are refused with 400 (URL normalisation would make them unreachable); "..." is fine', async () => {
    const h = await setup();
    for (const clientId of [".", ".."]) {
      const r = await h.as("POST", "/api/clients", { name: "Dots", clientId });
      expect([r.status, r.body]).toEqual([400, { error: 1009, message: 'clientId must not be "." or ".."' }]);
    }
    const ok = await h.as("POST", "/api/clients", { name: "Dots", clientId: "..." });
    expect(ok.status).toBe(201);
    expect((await h.as("POST", "/api/clients/.../secret")).status).toBe(200);
    expect((await h.app.admin.listClients()).map((c) => c.clientId).sort()).toEqual(["...", "app-1"]);
  });

  it("a client id with '/' or spaces-free punctuation is addressed percent-encoded", async () => {
    const h = await setup();
    const created = await h.as("POST", "/api/clients", { name: "Odd", clientId: "team/a%b" });
    expect(created.status).toBe(201);
    const r = await h.as("POST", `/api/clients/${encodeURIComponent("team/a%b")}/secret`);
    expect(r.status).toBe(200);
    expect((await ccToken(h, "team/a%b", (r.body as { clientSecret: string }).clientSecret)).status).toBe(200);
    expect((await h.as("DELETE", `/api/clients/${encodeURIComponent("team/a%b")}`)).status).toBe(204);
  });

  it("deletes a client: 204 with no body; its secret and refresh tokens fail at once, its access tokens live until they expire; unknown ids are 404", async () => {
    // No idle timeout: the console session outlives the 2 h wait for the access token.
    const h = await setup({ console: { enabled: true, idleTimeoutSeconds: 0 } });
    const access = await clientToken(h);
    const refresh = (await passwordTokens(h)).refresh_token!;
    const r = await h.as("DELETE", "/api/clients/app-1");
    expect(r).toEqual({ status: 204, body: null, cacheControl: "no-store", setCookie: null, contentType: null });
    const invalidClient = { error: "invalid_client", error_description: "Client authentication failed." };
    const after = await ccToken(h, "app-1", h.clientSecret);
    expect([after.status, await after.json()]).toEqual([401, invalidClient]);
    // A refresh needs the client's authentication, so its refresh tokens are dead at once.
    const refreshed = await tokenRequest(h.app, { grant_type: "refresh_token", refresh_token: refresh }, { authorization: basic("app-1", h.clientSecret) });
    expect([refreshed.status, await refreshed.json()]).toEqual([401, invalidClient]);
    // Documented in SECURITY.md: the API bearer check does not read the client (no storage read per
    // call), so an access token already issued works until it expires (accessTokenTtl, 2 h).
    expect((await getAccounts(h.app, access)).status).toBe(200);
    h.clock.advance(7200 * 1000);
    expect((await getAccounts(h.app, access)).status).toBe(401);
    for (const [method, path] of [["DELETE", "/api/clients/app-1"], ["POST", "/api/clients/app-1/secret"], ["DELETE", "/api/clients/%E0%A4%A"]] as const) {
      const res = await h.as(method, path);
      expect([path, res.status, res.body]).toEqual(
        path.includes("%E0") ? [path, 404, { error: 1404, message: "Not found." }] : [path, 404, { error: 1306, message: 'Client "app-1" does not exist.' }],
      );
    }
  });
});

describe("console API: accounts", () => {
  it("pages through accounts exactly like GetAccountList (same body for the same page)", async () => {
    const h = await setup();
    for (let i = 0; i < 5; i++) await h.app.admin.createAccount({ username: `user-${i}`, password: "password-123" });
    const token = await clientToken(h);
    for (const query of ["page=1&pageSize=3", "page=2&pageSize=3", "page=3&pageSize=3", "", "pageSize=100"]) {
      const console = await h.as("GET", `/api/accounts${query ? `?${query}` : ""}`);
      const api = await getAccounts(h.app, token, query, ACCOUNTS_URL);
      expect(console.status).toBe(200);
      expect(console.body).toEqual(await api.json());
    }
    const past = await h.as("GET", "/api/accounts?page=4&pageSize=3");
    expect(past.body).toEqual({ accounts: [], page: 4, pageSize: 3, total: 7, totalPages: 3 });
    const last = await h.as("GET", "/api/accounts?page=3&pageSize=3");
    const lastAccount = (await h.storage.accounts.list(6, 1)).items[0]!;
    expect(last.body).toEqual({
      accounts: [{ id: lastAccount.id, username: lastAccount.username, displayName: lastAccount.displayName, email: null, roles: lastAccount.roles, enabled: true, createdAt: T0 }],
      page: 3,
      pageSize: 3,
      total: 7,
      totalPages: 3,
    });
    const first = (await h.as("GET", "/api/accounts?page=1&pageSize=2")).body as { accounts: unknown[]; total: number; totalPages: number };
    expect([first.accounts.length, first.total, first.totalPages]).toEqual([2, 7, 4]);
    for (const [query, body] of [
      ["page=0", { error: 1101, message: "page must be an integer from 1 to 2147483647." }],
      ["pageSize=101", { error: 1102, message: "pageSize must be an integer from 1 to 100." }],
      ["page=1&page=2", { error: 1103, message: "page must be given at most once." }],
    ] as const) {
      const r = await h.as("GET", `/api/accounts?${query}`);
      expect([r.status, r.body]).toEqual([400, body]);
    }
  });

  it("creates an account (no password or hash in the answer) that can use the password grant", async () => {
    const h = await setup();
    const r = await h.as("POST", "/api/accounts", { username: "dana", password: "dana-password-1", displayName: "Dana", email: "dana@example.com", roles: ["admin"] });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      username: "dana",
      displayName: "Dana",
      email: "dana@example.com",
      roles: ["admin"],
      enabled: true,
      createdAt: T0,
    });
    const grant = await tokenRequest(h.app, { grant_type: "password", username: "dana", password: "dana-password-1" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(grant.status).toBe(200);
    // An admin created here can sign in to the console.
    await signIn(h.app, "dana", "dana-password-1");
    const minimal = await h.as("POST", "/api/accounts", { username: "erin", password: "erin-password-1", displayName: "", email: "" });
    expect(minimal.body).toMatchObject({ username: "erin", displayName: null, email: null, roles: [], enabled: true });
  });

  it("refuses bad account input", async () => {
    const h = await setup();
    const cases: [unknown, number, unknown][] = [
      [{ password: "long-enough-1" }, 400, { error: 1003, message: "username is required." }],
      [{ username: "x" }, 400, { error: 1003, message: "password is required." }],
      [{ username: "x", password: "short" }, 400, { error: 1009, message: "password must be 8-1024 characters" }],
      [{ username: "x", password: "long-enough-1", roles: [""] }, 400, { error: 1009, message: "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters" }],
      [{ username: "x", password: "long-enough-1", roles: ["\u0000"] }, 400, { error: 1009, message: "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters" }],
      [{ username: "x", password: "long-enough-1", roles: ["\ud800"] }, 400, { error: 1009, message: "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters" }],
      [{ username: "x", password: "long-enough-1", roles: ["admin\u200b"] }, 400, { error: 1009, message: "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters" }],
      [{ username: "x", password: "long-enough-1", roles: [" admin"] }, 400, { error: 1009, message: "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters" }],
      [{ username: "x", password: "long-enough-1", roles: ["ad\nmin"] }, 400, { error: 1009, message: "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters" }],
      [{ username: "x", password: "long-enough-1", roles: Array.from({ length: 33 }, (_, i) => `r${i}`) }, 400, { error: 1009, message: "roles must have at most 32 entries." }],
      [{ username: "x", password: "long-enough-1", enabled: "yes" }, 400, { error: 1004, message: "enabled must be true or false." }],
      [{ username: "alice", password: "long-enough-1" }, 409, { error: 1307, message: 'The username "alice" is taken.' }],
    ];
    for (const [body, status, expected] of cases) {
      const r = await h.as("POST", "/api/accounts", body);
      expect([r.status, r.body]).toEqual([status, expected]);
    }
    expect((await h.app.admin.listAccounts()).map((a) => a.username).sort()).toEqual(["alice", "root"]);
  });

  it("disables and enables an account: the password grant and its refresh tokens stop, then work again", async () => {
    const h = await setup();
    const alice = (await h.storage.accounts.findByUsername("alice"))!;
    const off = await h.as("POST", `/api/accounts/${alice.id}/disable`);
    expect([off.status, off.cacheControl]).toEqual([200, "no-store"]);
    expect(off.body).toEqual({ id: alice.id, username: "alice", displayName: "Alice", email: null, roles: [], enabled: false, createdAt: T0 });
    const grant = () => tokenRequest(h.app, { grant_type: "password", username: "alice", password: h.password }, { authorization: basic(h.clientId, h.clientSecret) });
    expect((await grant()).status).toBe(400);
    const on = await h.as("POST", `/api/accounts/${alice.id}/enable`);
    expect(on.body).toEqual({ id: alice.id, username: "alice", displayName: "Alice", email: null, roles: [], enabled: true, createdAt: T0 });
    expect((await grant()).status).toBe(200);
  });

  it("refuses to disable the signed-in account itself and unknown ids", async () => {
    const h = await setup();
    const self = await h.as("POST", `/api/accounts/${h.adminId}/disable`);
    expect([self.status, self.body]).toEqual([400, { error: 1009, message: "You cannot disable your own account." }]);
    const missing = await h.as("POST", "/api/accounts/no-such-id/enable");
    expect([missing.status, missing.body]).toEqual([404, { error: 1306, message: 'Account "no-such-id" does not exist.' }]);
    expect((await h.storage.accounts.get(h.adminId))!.enabled).toBe(true);
  });

  it("two administrators disabling each other at the same instant: at least one stays enabled; the one undone gets 401 and changed nothing", async () => {
    for (let round = 0; round < 5; round++) {
      const h = await setup();
      const ops = await h.app.admin.createAccount({ username: "ops", password: "ops-password-1", roles: ["admin"] });
      const opsIn = await signIn(h.app, "ops", "ops-password-1");
      const [a, b] = await Promise.all([
        call(h.app, "POST", `/api/accounts/${ops.id}/disable`, { cookie: h.root.cookie, csrf: h.root.csrf }).then(read),
        call(h.app, "POST", `/api/accounts/${h.adminId}/disable`, { cookie: opsIn.cookie, csrf: opsIn.csrf }).then(read),
      ]);
      const enabled = (await h.app.admin.listAccounts()).filter((x) => x.roles.includes("admin") && x.enabled).map((x) => x.username);
      expect(enabled.length, `round ${round}: ${a.status} ${b.status}`).toBeGreaterThanOrEqual(1);
      for (const [answer, target] of [[a, "ops"], [b, "root"]] as const) {
        if (answer.status === 200) expect(enabled).not.toContain(target);
        else {
          // 401 1301: refused by its session check, or undone after its write: its target is enabled.
          expect([answer.status, (answer.body as { error: number }).error]).toEqual([401, 1301]);
          expect(enabled).toContain(target);
        }
      }
      // Whoever stayed enabled was not disabled by a request that answered 200.
      expect([a.status, b.status]).not.toEqual([200, 200]);
    }
  });
});

describe("console API: signing keys", () => {
  it("lists keys with activation time and status; a rotation without a body publishes a next key that signs 360 s later", async () => {
    const h = await setup();
    // A store without keys lists none, and the listing makes none (it stored the first key until
    // 2026-11-30): that is a server's first load of the keys (its start, first token or JWKS).
    expect(await h.as("GET", "/api/signing-keys")).toEqual({ status: 200, body: { keys: [] }, cacheControl: "no-store", contentType: "application/json", setCookie: null });
    expect(await h.app.storage.signingKeys.list()).toEqual([]);
    await h.app.jwks();
    const before = await h.as("GET", "/api/signing-keys");
    expect(before.status).toBe(200);
    const [only] = (before.body as { keys: { kid: string }[] }).keys;
    expect(before.body).toEqual({ keys: [{ kid: only!.kid, alg: "ES256", createdAt: T0, activatesAt: T0, status: "active", signing: true, stored: true, atRest: "clear", kek: null, kekStatus: null }] });
    const oldToken = await clientToken(h);
    h.clock.advance(1000);
    const rotated = await h.as("POST", "/api/signing-keys");
    expect([rotated.status, rotated.body]).toEqual([
      200,
      { kid: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), activatesAt: "2026-01-01T00:06:01.000Z", status: "next", deleted: [], cancelled: [] },
    ]);
    const kid = (rotated.body as { kid: string }).kid;
    expect(kid).not.toBe(only!.kid);
    expect((await h.as("GET", "/api/signing-keys")).body).toEqual({
      keys: [
        { kid, alg: "ES256", createdAt: "2026-01-01T00:00:01.000Z", activatesAt: "2026-01-01T00:06:01.000Z", status: "next", signing: false, stored: true, atRest: "clear", kek: null, kekStatus: null },
        { kid: only!.kid, alg: "ES256", createdAt: T0, activatesAt: T0, status: "active", signing: true, stored: true, atRest: "clear", kek: null, kekStatus: null },
      ],
    });
    const kidOf = (t: string) => (JSON.parse(atob(t.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/"))) as { kid: string }).kid;
    expect(kidOf(await clientToken(h))).toBe(only!.kid);
    expect(((await h.app.jwks()).keys as { kid: string }[]).map((k) => k.kid).sort()).toEqual([kid, only!.kid].sort());
    h.clock.advance(360_000);
    expect(kidOf(await clientToken(h))).toBe(kid);
    expect((await getAccounts(h.app, oldToken)).status).toBe(200);
  });

  it("rotate now: without confirm it is 400 (error 1308) saying why and changes nothing; with confirm the new key signs at once", async () => {
    const h = await setup();
    await h.app.jwks(); // the first key, as a server's start makes it
    const before = await h.as("GET", "/api/signing-keys");
    const refused = await h.as("POST", "/api/signing-keys", { now: true });
    expect([refused.status, refused.body, refused.cacheControl]).toEqual([
      400,
      {
        error: 1308,
        message:
          "Rotating now skips the activation delay: the new key signs at once (on other instances within a minute), and resource servers that cached the JWKS reject its tokens until they fetch it again (up to 5 minutes). Keys scheduled to sign later (next) are deleted, so none made before it takes over. Do it only when the current key may have leaked; send confirm: true to proceed.",
      },
      "no-store",
    ]);
    expect(await h.as("GET", "/api/signing-keys")).toEqual(before);
    const wrongType = await h.as("POST", "/api/signing-keys", { now: "yes" });
    expect([wrongType.status, wrongType.body]).toEqual([400, { error: 1004, message: "now must be true or false." }]);
    const done = await h.as("POST", "/api/signing-keys", { now: true, confirm: true });
    expect([done.status, done.body]).toEqual([200, { kid: expect.any(String), activatesAt: T0, status: "active", deleted: [], cancelled: [] }]);
    const kid = (done.body as { kid: string }).kid;
    expect((await h.as("GET", "/api/signing-keys")).body).toMatchObject({ keys: [{ kid, status: "active", signing: true }, { status: "retired", signing: false }] });
    const header = JSON.parse(atob((await clientToken(h)).split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/"))) as { kid: string };
    expect(header.kid).toBe(kid);
  });

  it("rotate now while a next key is published: the answer names it in cancelled, and it is gone from the listing (it would have taken over from the new key)", async () => {
    const h = await setup();
    await h.app.jwks(); // the first key, as a server's start makes it
    const scheduled = await h.as("POST", "/api/signing-keys", {});
    const next = (scheduled.body as { kid: string }).kid;
    h.clock.advance(1000);
    const done = await h.as("POST", "/api/signing-keys", { now: true, confirm: true });
    expect([done.status, done.body]).toEqual([200, { kid: expect.any(String), activatesAt: "2026-01-01T00:00:01.000Z", status: "active", deleted: [], cancelled: [next] }]);
    const kid = (done.body as { kid: string }).kid;
    const listed = (await h.as("GET", "/api/signing-keys")).body as { keys: { kid: string; status: string }[] };
    expect(listed.keys.map((k) => [k.kid === kid ? "new" : k.kid === next ? "next" : "first", k.status])).toEqual([
      ["new", "active"],
      ["first", "retired"],
    ]);
  });

  it("DELETE /api/signing-keys/{kid}: the signing key and a just-replaced key are 409 saying why, an unknown kid 404; a retired key a minute on is 204, out of the JWKS, its tokens refused, the event naming the administrator", async () => {
    const events: SecurityEvent[] = [];
    const h = await setup({ onEvent: (e) => void events.push(e) });
    await h.app.jwks(); // the first key, as a server's start makes it
    const [first] = ((await h.as("GET", "/api/signing-keys")).body as { keys: { kid: string }[] }).keys;
    const oldKid = first!.kid;
    const signsNow = await h.as("DELETE", `/api/signing-keys/${oldKid}`);
    expect([signsNow.status, signsNow.body, signsNow.cacheControl]).toEqual([
      409,
      { error: 1307, message: `signing key "${oldKid}" signs now: rotate with now (keys rotate --now) first, then revoke it` },
      "no-store",
    ]);
    const oldToken = await clientToken(h);
    const newKid = ((await h.as("POST", "/api/signing-keys", { now: true, confirm: true })).body as { kid: string }).kid;
    const listed = (await h.as("GET", "/api/signing-keys")).body as { keys: { kid: string; status: string }[] };
    expect(listed.keys.map((k) => [k.kid, k.status])).toEqual([[newKid, "active"], [oldKid, "retired"]]);
    const tooSoon = await h.as("DELETE", `/api/signing-keys/${oldKid}`);
    expect([tooSoon.status, tooSoon.body]).toEqual([
      409,
      { error: 1307, message: `signing key "${oldKid}" may still sign on instances that have not re-read the keys since "${newKid}" took over (they do within a minute): revoke it from 2026-01-01T00:01:00.000Z` },
    ]);
    const missing = await h.as("DELETE", "/api/signing-keys/no-such-kid");
    expect([missing.status, missing.body]).toEqual([404, { error: 1306, message: 'Signing key "no-such-kid" does not exist.' }]);
    expect((await getAccounts(h.app, oldToken)).status).toBe(200);
    await h.app.flushEvents();
    expect(events.filter((e) => e.type === "signing_key.revoked")).toEqual([]);

    h.clock.advance(60_000);
    const revoked = await h.as("DELETE", `/api/signing-keys/${oldKid}`);
    expect([revoked.status, revoked.body, revoked.cacheControl]).toEqual([204, null, "no-store"]);
    expect((await h.as("GET", "/api/signing-keys")).body).toEqual({ keys: [listed.keys[0]] });
    expect(((await h.app.jwks()).keys as { kid: string }[]).map((k) => k.kid)).toEqual([newKid]);
    expect((await getAccounts(h.app, oldToken)).status).toBe(401);
    await h.app.flushEvents();
    expect(events.filter((e) => e.type === "signing_key.revoked")).toEqual([
      { type: "signing_key.revoked", id: expect.any(String), time: Date.parse(T0) + 60_000, kid: oldKid, status: "retired", deleted: [], actor: "root" },
    ]);
    const again = await h.as("DELETE", `/api/signing-keys/${oldKid}`);
    expect([again.status, again.body]).toEqual([404, { error: 1306, message: `Signing key "${oldKid}" does not exist.` }]);
  });

  it("a stored key of any kid can be revoked: `reencrypt` by its path (the POST re-encrypt route does not take its DELETE), and any kid, those a path cannot carry included (\"\", \".\", \"..\"), by DELETE /api/signing-keys?kid=", async () => {
    const events: SecurityEvent[] = [];
    const h = await setup({ onEvent: (e) => void events.push(e) });
    const quiet = { error() {}, warn() {} };
    // Keys an earlier configuration stored: a configured key (PLANTGATE_SIGNING_KEY) is stored
    // under its own kid, any string; once the configuration is gone they are the store's keys.
    const KIDS = ["reencrypt", "", ".", "..", "a/b", "a?b#c", "%2F"];
    for (const kid of KIDS) {
      const jwk = JSON.parse((await generateKeyRecord("ES256", 0)).privateJwk) as JWK;
      await createPlantgate({ storage: h.storage, signingKey: { ...jwk, kid }, clock: h.clock.now, logger: quiet }).jwks();
      h.clock.advance(1000);
    }
    const newKid = ((await h.as("POST", "/api/signing-keys", { now: true, confirm: true })).body as { kid: string }).kid;
    h.clock.advance(60_000);
    const kids = async () => ((await h.as("GET", "/api/signing-keys")).body as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    expect((await kids()).sort()).toEqual([...KIDS, newKid].sort());
    await h.app.flushEvents();
    events.length = 0;

    const byPath = await h.as("DELETE", "/api/signing-keys/reencrypt");
    expect(byPath).toEqual({ status: 204, body: null, cacheControl: "no-store", contentType: null, setCookie: null });
    for (const kid of KIDS.slice(1)) {
      const byQuery = await h.as("DELETE", `/api/signing-keys?kid=${encodeURIComponent(kid)}`);
      expect([kid, byQuery]).toEqual([kid, { status: 204, body: null, cacheControl: "no-store", contentType: null, setCookie: null }]);
    }
    expect(await kids()).toEqual([newKid]);
    await h.app.flushEvents();
    expect(events).toEqual(KIDS.map((kid) => ({ type: "signing_key.revoked", id: expect.any(String), time: Date.parse(T0) + 67_000, kid, status: "retired", deleted: [], actor: "root" })));

    // The query form's own refusals, and its answers for an unknown or signing key.
    const none = await h.as("DELETE", "/api/signing-keys");
    expect([none.status, none.body]).toEqual([400, { error: 1003, message: "kid is required: DELETE /console/api/signing-keys?kid={kid}." }]);
    const twice = await h.as("DELETE", `/api/signing-keys?kid=${newKid}&kid=x`);
    expect([twice.status, twice.body]).toEqual([400, { error: 1009, message: "kid must be given exactly once: DELETE /console/api/signing-keys?kid={kid}." }]);
    const gone = await h.as("DELETE", "/api/signing-keys?kid=..");
    expect([gone.status, gone.body]).toEqual([404, { error: 1306, message: 'Signing key ".." does not exist.' }]);
    // The kid is quoted as JSON: the empty one shows (until 2026-11-30 "Signing key  does not exist."),
    // and a quote or line break in one is escaped.
    const empty = await h.as("DELETE", "/api/signing-keys?kid=");
    expect([empty.status, empty.body]).toEqual([404, { error: 1306, message: 'Signing key "" does not exist.' }]);
    const odd = await h.as("DELETE", `/api/signing-keys?kid=${encodeURIComponent('a"b\n\u202ec')}`);
    expect([odd.status, odd.body]).toEqual([404, { error: 1306, message: 'Signing key "a\\"b\\n\u202ec" does not exist.' }]);
    const signing = await h.as("DELETE", `/api/signing-keys?kid=${newKid}`);
    expect([signing.status, signing.body]).toEqual([409, { error: 1307, message: `signing key "${newKid}" signs now: rotate with now (keys rotate --now) first, then revoke it` }]);
    // The path of the re-encrypt action takes POST (still the action) and DELETE (the key of that name).
    const get = await call(h.app, "GET", "/api/signing-keys/reencrypt", { cookie: h.root.cookie });
    expect([get.status, get.headers.get("allow"), await get.json()]).toEqual([405, "POST, DELETE", { error: 1405, message: "Use POST, DELETE for this endpoint." }]);
    const action = await h.as("POST", "/api/signing-keys/reencrypt");
    expect([action.status, action.body]).toEqual([409, { error: 1307, message: "No key encryption key is configured; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)." }]);
    expect(await kids()).toEqual([newKid]);
  });

  it("with a configured signingKey, rotating is 409 and changes nothing", async () => {
    const jwk = JSON.parse((await generateKeyRecord("ES256", 0)).privateJwk) as JWK;
    const h = await consoleHarness({ signingKey: jwk });
    const root = await signIn(h.app);
    const as = async (method: string, path: string) => read(await call(h.app, method, path, { cookie: root.cookie, csrf: root.csrf }));
    const before = await as("GET", "/api/signing-keys");
    const refused = await as("POST", "/api/signing-keys");
    expect([refused.status, refused.body, refused.cacheControl]).toEqual([
      409,
      { error: 1307, message: "The signing key is configured (signingKey / PLANTGATE_SIGNING_KEY); rotate it by changing the configured key." },
      "no-store",
    ]);
    expect(await as("GET", "/api/signing-keys")).toEqual(before);
  });

  describe("POST /api/signing-keys/reencrypt (the keys reencrypt step of a KEK rotation, for where no CLI reaches the store)", () => {
    const kek = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32)))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const quiet = { error() {}, warn() {} };
    /** The id of the KEK a stored row is sealed under (`enc:A256GCM:<kek id>:...`). */
    const kekOfRow = async (storage: Storage, kid: string) => (await storage.signingKeys.list()).find((k) => k.kid === kid)!.privateJwk.split(":")[2]!;
    const NO_KEK = { error: 1307, message: "No key encryption key is configured; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)." };

    it("with [new, old]: 200 {reencrypted, unchanged}, the listing then shows no key under the older KEK, one event naming the administrator; the new KEK alone then serves; a second call moves nothing", async () => {
      const OLD = kek();
      const NEW = kek();
      const events: SecurityEvent[] = [];
      const h = await setup({ keyEncryptionKeys: [NEW, OLD], onEvent: (e) => void events.push(e) });
      // Before the rotation: a server with OLD alone made the first key, sealed under OLD.
      const before = createPlantgate({ storage: h.storage, keyEncryptionKeys: [OLD], clock: h.clock.now, logger: quiet });
      const oldKid = ((await before.jwks()).keys[0] as { kid: string }).kid;
      const oldId = await kekOfRow(h.storage, oldKid);
      // During it: a rotation on the [new, old] server seals its key under OLD, the signing key's
      // KEK, so servers on OLD alone open it too (under NEW until 2026-12-01).
      h.clock.advance(1000);
      const newKid = ((await h.as("POST", "/api/signing-keys")).body as { kid: string }).kid;
      expect(await kekOfRow(h.storage, newKid)).toBe(oldId);
      const listed = async () => ((await h.as("GET", "/api/signing-keys")).body as { keys: { kid: string; kek: string | null; kekStatus: string | null }[] }).keys.map((k) => [k.kid, k.kek, k.kekStatus]);
      expect(await listed()).toEqual([
        [newKid, oldId, "older"],
        [oldKid, oldId, "older"],
      ]);
      await h.app.flushEvents();
      events.length = 0;

      const moved = await h.as("POST", "/api/signing-keys/reencrypt");
      expect(moved).toEqual({ status: 200, body: { reencrypted: [oldKid, newKid], unchanged: [], left: [], complete: true }, cacheControl: "no-store", contentType: "application/json", setCookie: null });
      const newId = await kekOfRow(h.storage, newKid);
      expect(newId).not.toBe(oldId);
      expect(await listed()).toEqual([
        [newKid, newId, "current"],
        [oldKid, newId, "current"],
      ]);
      await h.app.flushEvents();
      expect(events).toEqual([{ type: "signing_key.reencrypted", id: expect.any(String), time: Date.parse(T0) + 1000, reencrypted: [oldKid, newKid], kek: newId, actor: "root" }]);

      // The old KEK can go: a server with NEW alone loads both keys; one with OLD alone cannot.
      const after = createPlantgate({ storage: h.storage, keyEncryptionKeys: [NEW], clock: h.clock.now, logger: quiet });
      expect(((await after.jwks()).keys as { kid: string }[]).map((k) => k.kid).sort()).toEqual([newKid, oldKid].sort());
      const stale = await createPlantgate({ storage: h.storage, keyEncryptionKeys: [OLD], clock: h.clock.now, logger: quiet }).jwks().then(() => "loaded", (e: Error) => e.name);
      expect(stale).toBe("KeyEncryptionError");

      const again = await h.as("POST", "/api/signing-keys/reencrypt");
      // (In the store's order: the memory store lists in insertion order.)
      expect([again.status, again.body]).toEqual([200, { reencrypted: [], unchanged: [oldKid, newKid], left: [], complete: true }]);
      await h.app.flushEvents();
      expect(events).toHaveLength(1);
    });

    it("without the CSRF token 403 1303, from another origin 403 1304, as an account that lost the admin role 403 1302: nothing moved", async () => {
      const OLD = kek();
      const NEW = kek();
      const h = await setup({ keyEncryptionKeys: [NEW, OLD] });
      await createPlantgate({ storage: h.storage, keyEncryptionKeys: [OLD], clock: h.clock.now, logger: quiet }).jwks();
      const rows = await h.storage.signingKeys.list();
      const noCsrf = await read(await call(h.app, "POST", "/api/signing-keys/reencrypt", { cookie: h.root.cookie }));
      expect([noCsrf.status, noCsrf.body]).toEqual([403, { error: 1303, message: "The CSRF token is missing or wrong; reload the console." }]);
      const cross = await read(await call(h.app, "POST", "/api/signing-keys/reencrypt", { cookie: h.root.cookie, csrf: h.root.csrf, origin: "https://evil.example" }));
      expect([cross.status, cross.body]).toEqual([403, { error: 1304, message: "Cross-site requests to the console are refused." }]);
      await h.app.admin.createAccount({ username: "eve", password: "eve-password-1", roles: ["admin"] });
      const eve = await signIn(h.app, "eve", "eve-password-1");
      h.demoted.add((await h.storage.accounts.findByUsername("eve"))!.id);
      const demoted = await read(await call(h.app, "POST", "/api/signing-keys/reencrypt", { cookie: eve.cookie, csrf: eve.csrf }));
      expect([demoted.status, demoted.body]).toEqual([403, { error: 1302, message: "This account is not a console administrator." }]);
      const notSignedIn = await read(await call(h.app, "POST", "/api/signing-keys/reencrypt", { csrf: h.root.csrf }));
      expect([notSignedIn.status, notSignedIn.body]).toEqual([401, { error: 1301, message: "Sign in to the console first." }]);
      // A GET is 405; a DELETE is the revocation of a key named "reencrypt", none here (since 2026-11-30; a 405 before).
      const wrong = await read(await call(h.app, "GET", "/api/signing-keys/reencrypt", { cookie: h.root.cookie, csrf: h.root.csrf }));
      expect([wrong.status, wrong.body]).toEqual([405, { error: 1405, message: "Use POST, DELETE for this endpoint." }]);
      const revoke = await read(await call(h.app, "DELETE", "/api/signing-keys/reencrypt", { cookie: h.root.cookie, csrf: h.root.csrf }));
      expect([revoke.status, revoke.body]).toEqual([404, { error: 1306, message: 'Signing key "reencrypt" does not exist.' }]);
      expect(await h.storage.signingKeys.list()).toEqual(rows);
    });

    it("no key encryption key on this server: 409 1307 saying so; a key under a KEK this server lacks: 409 1307 naming the kid and the variable (never a key), the keys before it moved and told in the event", async () => {
      const plain = await setup();
      await plain.app.jwks();
      const rows = await plain.storage.signingKeys.list();
      const none = await plain.as("POST", "/api/signing-keys/reencrypt");
      expect([none.status, none.body, none.cacheControl]).toEqual([409, NO_KEK, "no-store"]);
      expect(await plain.storage.signingKeys.list()).toEqual(rows);

      const OLD = kek();
      const NEW = kek();
      const OTHER = kek();
      const events: SecurityEvent[] = [];
      const h = await setup({ keyEncryptionKeys: [NEW, OLD], onEvent: (e) => void events.push(e) });
      // One key under OLD (which this server has), then one under OTHER (which it lacks).
      const underOld = (await createPlantgate({ storage: h.storage, keyEncryptionKeys: [OLD], clock: h.clock.now, logger: quiet }).admin.rotateSigningKey()).kid;
      // (Written as a process with OTHER first would seal it: a rotation there is refused now, as
      // the key signing is under OLD, which that process lacks.)
      const record = await generateKeyRecord("ES256", h.clock.now() + 1, h.clock.now() + 360_000);
      const underOther = record.kid;
      await h.storage.signingKeys.create({ ...record, privateJwk: await createKeyEncryption(parseKeyEncryptionKeys(OTHER)).seal(underOther, record.privateJwk) });
      const otherRow = (await h.storage.signingKeys.list()).find((k) => k.kid === underOther)!;
      const refused = await h.as("POST", "/api/signing-keys/reencrypt");
      expect([refused.status, refused.body, refused.cacheControl]).toEqual([
        409,
        { error: 1307, message: `signing key "${underOther}" is encrypted with a key encryption key that is not configured; add it to PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)` },
        "no-store",
      ]);
      for (const secret of [OLD, NEW, OTHER]) expect(JSON.stringify(refused.body)).not.toContain(secret);
      const newId = await kekOfRow(h.storage, underOld);
      expect((await h.storage.signingKeys.list()).find((k) => k.kid === underOther)).toEqual(otherRow);
      const listed = ((await h.as("GET", "/api/signing-keys")).body as { keys: { kid: string; kekStatus: string | null }[] }).keys.map((k) => [k.kid, k.kekStatus]);
      expect(listed.sort()).toEqual([[underOld, "current"], [underOther, "missing"]].sort());
      await h.app.flushEvents();
      expect(events.filter((e) => e.type === "signing_key.reencrypted")).toEqual([
        { type: "signing_key.reencrypted", id: expect.any(String), time: Date.parse(T0), reencrypted: [underOld], kek: newId, actor: "root" },
      ]);
    });
  });
});
