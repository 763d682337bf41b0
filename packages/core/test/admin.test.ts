import { describe, expect, it } from "vitest";
import { decodeProtectedHeader } from "jose";
import { AdminConflictError, AdminError, AdminNotFoundError, createMemoryStorage, createPlantgate, generateKeyRecord, refreshTokenKey, sha256, StorageError, type SecurityEvent, type Storage } from "../src/index.js";
import { BASE, basic, harness, keyDeletesFailing, passwordTokens, tokenRequest } from "./helpers.js";

const listAccounts = (app: Awaited<ReturnType<typeof harness>>["app"], token: string) =>
  app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${token}` } }));

/** Signs `root` (password root-password-1) in to the console; its `Cookie` header value. */
async function consoleSignIn(app: Awaited<ReturnType<typeof harness>>["app"]): Promise<string> {
  const res = await app.fetch(
    new Request(`${BASE}/console/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: new URL(BASE).origin, "sec-fetch-site": "same-origin" },
      body: JSON.stringify({ username: "root", password: "root-password-1" }),
    }),
  );
  if (res.status !== 200) throw new Error(`console sign-in failed: ${res.status} ${await res.text()}`);
  return /^(plantgate_console=[^;]*);/.exec(res.headers.get("set-cookie")!)![1]!;
}

describe("admin operations", () => {
  it("ensureClient and ensureAccount from several instances at once on one store (Worker isolates starting together): one creates, the others find it, none throws", async () => {
    const storage = createMemoryStorage();
    const apps = Array.from({ length: 5 }, () => createPlantgate({ storage, passwordHashIterations: 1000, logger: { error() {}, warn() {} } }));
    const clients = await Promise.all(apps.map((app) => app.admin.ensureClient("raced-client", "raced-secret-0123456789abcdef")));
    expect([...clients].sort()).toEqual(["created", "exists", "exists", "exists", "exists"]);
    const accounts = await Promise.all(apps.map((app) => app.admin.ensureAccount("raced-user", "raced-password")));
    expect([...accounts].sort()).toEqual(["created", "exists", "exists", "exists", "exists"]);
    expect((await storage.clients.list()).map((c) => c.clientId)).toEqual(["raced-client"]);
    expect((await storage.accounts.list(0, 10)).total).toBe(1);
  });

  it("listAccountsPage: one page as GetAccountList answers it, and the API's refusals as AdminError with its message", async () => {
    const h = await harness();
    await h.app.admin.importAccounts([1, 2, 3, 4].map((n) => ({ username: `paged-${n}`, password: "long-enough-pw" })));
    const token = ((await (await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) })).json()) as { access_token: string }).access_token;
    const api = async (query: string) => {
      const res = await h.app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList?${query}`, { headers: { authorization: `Bearer ${token}` } }));
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    for (const [query, args] of [
      ["page=1&pageSize=2", { page: 1, pageSize: 2 }],
      ["page=3&pageSize=2", { page: 3, pageSize: 2 }],
      ["page=4&pageSize=2", { page: 4, pageSize: 2 }],
      ["", undefined],
    ] as const) {
      const answer = await api(query);
      expect(answer.status).toBe(200);
      expect(await h.app.admin.listAccountsPage(args)).toEqual(answer.body);
    }
    expect((await h.app.admin.listAccountsPage({ page: 3, pageSize: 2 })).accounts.map((a) => a.username)).toEqual(["paged-4"]);
    for (const [query, args] of [
      ["page=0", { page: 0 }],
      ["page=1.5", { page: 1.5 }],
      ["pageSize=0", { pageSize: 0 }],
      ["pageSize=1001", { pageSize: 1001 }],
      ["page=NaN", { page: Number.NaN }],
    ] as const) {
      const answer = await api(query);
      expect(answer.status, query).toBe(400);
      await expect(h.app.admin.listAccountsPage(args)).rejects.toThrow(new AdminError(answer.body.message as string, { field: Object.keys(args)[0] as "page" | "pageSize" }));
    }
    await expect(h.app.admin.listAccountsPage({ page: "2" as unknown as number })).rejects.toThrow(new AdminError("page must be a number", { field: "page" }));
  });

  it("deleteClient: the client can no longer authenticate; deleting twice is an AdminError", async () => {
    const h = await harness();
    await h.app.admin.deleteClient(h.clientId);
    const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: "invalid_client", error_description: "Client authentication failed." });
    await expect(h.app.admin.deleteClient(h.clientId)).rejects.toThrow(new AdminNotFoundError(`client "${h.clientId}" does not exist`));
  });

  it("setAccountEnabled(false): the user cannot log in and their refresh tokens stop working, even after re-enabling", async () => {
    const h = await harness();
    const { refresh_token } = await passwordTokens(h);
    const view = await h.app.admin.setAccountEnabled(h.username, false);
    expect(view.enabled).toBe(false);
    // Revoked by the disable itself, at once: enabling the account revokes its tokens too (since
    // 2026-11-30), so the refresh below, after re-enabling, was refused even when the disable
    // revoked nothing (and a disabled account's refresh is refused for being disabled).
    expect(await h.app.storage.refreshTokens.findByHash(await refreshTokenKey(sha256, refresh_token!))).toMatchObject({ consumedAt: null, revokedAt: h.clock.now() });
    const auth = { authorization: basic(h.clientId, h.clientSecret) };
    const login = await tokenRequest(h.app, { grant_type: "password", username: h.username, password: h.password }, auth);
    expect(login.status).toBe(400);
    expect(await login.json()).toEqual({ error: "invalid_grant", error_description: "The username or password is incorrect." });
    await h.app.admin.setAccountEnabled(h.username, true);
    const refresh = await tokenRequest(h.app, { grant_type: "refresh_token", refresh_token: refresh_token! }, auth);
    expect(refresh.status).toBe(400);
    expect(await refresh.json()).toEqual({ error: "invalid_grant", error_description: "The refresh token is invalid, expired or revoked." });
    // Re-enabled, the password works again.
    expect((await passwordTokens(h)).access_token).toEqual(expect.any(String));
    await expect(h.app.admin.setAccountEnabled("nobody", false)).rejects.toThrow(new AdminNotFoundError('user "nobody" does not exist'));
  });

  it("createAccount refuses roles that only look like another or no text column holds, and more than 32 (the console's own bound)", async () => {
    const h = await harness();
    const message = "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters";
    for (const roles of [[""], ["\u0000"], ["\ud800"], ["admin\u200b"], ["\u200badmin"], [" admin"], ["ad\u0007min"], Array.from({ length: 33 }, (_, i) => `r${i}`)]) {
      await expect(h.app.admin.createAccount({ username: "x", password: "long-enough-1", roles })).rejects.toThrow(new AdminError(message, { field: "roles" }));
    }
    expect((await h.app.admin.createAccount({ username: "x", password: "long-enough-1", roles: ["admin", "ops team", "Überprüfer"] })).roles).toEqual(["admin", "ops team", "Überprüfer"]);
  });

  it("setAccountEnabled(false) whose revocation fails: it throws with the account disabled and account.disabled recorded once; running it again finishes the job", async () => {
    const memory = createMemoryStorage();
    let failRevoke = true;
    const storage: Storage = {
      ...memory,
      refreshTokens: {
        ...memory.refreshTokens,
        async revokeByAccount(accountId, now) {
          if (failRevoke) throw new StorageError("down");
          return memory.refreshTokens.revokeByAccount(accountId, now);
        },
      },
    };
    const events: SecurityEvent[] = [];
    const h = await harness({ storage, onEvent: (e) => void events.push(e) });
    const { refresh_token } = await passwordTokens(h);
    await expect(h.app.admin.setAccountEnabled(h.username, false)).rejects.toThrow(StorageError);
    expect((await memory.accounts.findByUsername(h.username))!.enabled).toBe(false);
    failRevoke = false;
    expect((await h.app.admin.setAccountEnabled(h.username, false)).enabled).toBe(false);
    await h.app.flushEvents();
    expect(events.filter((e) => e.type === "account.disabled").map((e) => e.type)).toEqual(["account.disabled"]);
    await h.app.admin.setAccountEnabled(h.username, true);
    const refresh = await tokenRequest(h.app, { grant_type: "refresh_token", refresh_token: refresh_token! }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(refresh.status).toBe(400);
  });

  for (const failing of ["refreshTokens.revokeByAccount", "sessions.deleteByAccount"] as const) {
    it(`setAccountEnabled(false) that fails at ${failing}, then setAccountEnabled(true) without a retry: its refresh tokens and console sessions do not come back`, async () => {
      const memory = createMemoryStorage();
      let fail = true;
      const down = () => Promise.reject(new StorageError("down"));
      const storage: Storage = {
        ...memory,
        refreshTokens: { ...memory.refreshTokens, revokeByAccount: (id, now) => (fail && failing === "refreshTokens.revokeByAccount" ? down() : memory.refreshTokens.revokeByAccount(id, now)) },
        sessions: { ...memory.sessions, deleteByAccount: (id) => (fail && failing === "sessions.deleteByAccount" ? down() : memory.sessions.deleteByAccount(id)) },
      };
      const h = await harness({ storage, console: { enabled: true } });
      await h.app.admin.createAccount({ username: "root", password: "root-password-1", roles: ["admin"] });
      const session = await consoleSignIn(h.app);
      const { refresh_token } = await passwordTokens(h);
      await expect(h.app.admin.setAccountEnabled(h.username, false)).rejects.toThrow(new StorageError("down"));
      await expect(h.app.admin.setAccountEnabled("root", false)).rejects.toThrow(new StorageError("down"));
      fail = false;
      // Enabled again, not disabled again: what the failed disable left is ended now.
      expect((await h.app.admin.setAccountEnabled(h.username, true)).enabled).toBe(true);
      expect((await h.app.admin.setAccountEnabled("root", true)).enabled).toBe(true);
      const refresh = await tokenRequest(h.app, { grant_type: "refresh_token", refresh_token: refresh_token! }, { authorization: basic(h.clientId, h.clientSecret) });
      expect([refresh.status, await refresh.json()]).toEqual([400, { error: "invalid_grant", error_description: "The refresh token is invalid, expired or revoked." }]);
      const after = await h.app.fetch(new Request(`${BASE}/console/api/session`, { headers: { cookie: session } }));
      expect([after.status, await after.json()]).toEqual([401, { error: 1301, message: "Sign in to the console first." }]);
      // Enabled, both sign in again.
      expect((await passwordTokens(h)).refresh_token).toEqual(expect.any(String));
      expect(await consoleSignIn(h.app)).toMatch(/^plantgate_console=[A-Za-z0-9_-]{43}$/);
    });
  }

  it("setAccountEnabled(true) of an enabled account ends none of its sessions or refresh tokens", async () => {
    const h = await harness({ console: { enabled: true } });
    await h.app.admin.createAccount({ username: "root", password: "root-password-1", roles: ["admin"] });
    const session = await consoleSignIn(h.app);
    const { refresh_token } = await passwordTokens(h);
    await h.app.admin.setAccountEnabled(h.username, true);
    await h.app.admin.setAccountEnabled("root", true);
    const refresh = await tokenRequest(h.app, { grant_type: "refresh_token", refresh_token: refresh_token! }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(refresh.status).toBe(200);
    expect((await h.app.fetch(new Request(`${BASE}/console/api/session`, { headers: { cookie: session } }))).status).toBe(200);
  });

  it("rotateSigningKey whose pruning fails: the rotation stands (one new key, its event, a warning naming no key), so a retry adds no second key", async () => {
    const { memory, storage, deletes } = keyDeletesFailing();
    const events: SecurityEvent[] = [];
    const warnings: unknown[][] = [];
    const h = await harness({ storage, onEvent: (e) => void events.push(e), logger: { error() {}, warn: (...args: unknown[]) => void warnings.push(args) } });
    await passwordTokens(h); // the first key
    await h.app.admin.rotateSigningKey({ now: true });
    // The first key is prunable once the second has signed for longer than any token lives.
    h.clock.advance(7200_000 + 61_000);
    deletes.fail = true;
    const rotated = await h.app.admin.rotateSigningKey({ now: true });
    expect(rotated.deleted).toEqual([]);
    expect((await memory.signingKeys.list()).map((k) => k.kid)).toContain(rotated.kid);
    expect((await memory.signingKeys.list())).toHaveLength(3);
    await h.app.flushEvents();
    expect(events.filter((e) => e.type === "signing_key.rotated").map((e) => (e as { kid: string }).kid).at(-1)).toBe(rotated.kid);
    expect(warnings.filter((w) => String(w[0]).startsWith("signing key rotated"))).toEqual([["signing key rotated; deleting keys past their use failed (the next rotation or prune deletes them)", { name: "StorageError", message: "down" }]]);
    // The keyring was refreshed: the new key signs at once.
    const { access_token } = await passwordTokens(h);
    expect(decodeProtectedHeader(access_token).kid).toBe(rotated.kid);
    deletes.fail = false;
    expect((await h.app.admin.prune()).signingKeys).toBe(1);
  });

  it("importAccounts is all-or-nothing and names the first bad record (1-based)", async () => {
    const h = await harness();
    const good = (n: number) => ({ username: `user-${n}`, password: "long-enough-pw" });
    await expect(h.app.admin.importAccounts([good(1), { username: "", password: "long-enough-pw" }, good(3)])).rejects.toThrow(
      new AdminError("record 2: username must be 1-200 characters", { field: "username", record: 2 }),
    );
    await expect(h.app.admin.importAccounts([good(1), good(2), good(1)])).rejects.toThrow(new AdminError('record 3: username "user-1" is taken', { record: 3 }));
    await expect(h.app.admin.importAccounts([good(1), { username: h.username, password: "long-enough-pw" }])).rejects.toThrow(
      new AdminError(`record 2: username "${h.username}" is taken`, { record: 2 }),
    );
    expect((await h.app.admin.listAccounts()).map((a) => a.username)).toEqual([h.username]);
    const created = await h.app.admin.importAccounts([good(1), { ...good(2), roles: ["ops", "ops"], email: "u2@example.test" }]);
    expect(created.map((a) => [a.username, a.roles, a.email])).toEqual([
      ["user-1", [], null],
      ["user-2", ["ops"], "u2@example.test"],
    ]);
    expect((await h.app.admin.listAccounts()).length).toBe(3);
    // Imported users log in with their passwords.
    const res = await tokenRequest(h.app, { grant_type: "password", username: "user-2", password: "long-enough-pw" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(res.status).toBe(200);
  });

  it.each(["alice ", " alice", "\talice", "alice\n", "alice\u00a0", "\ufeffalice", "alice\u3000", " ", "alice\u200b", "\u2060alice", "alice\u00ad", "\u200ealice", "alice\u0085", "\u3164alice", "alice\u115f"])(
    "a username starting or ending with white space or an invisible character (%j) is refused, on create, import and provisioning, and nothing is stored",
    async (username) => {
      const h = await harness();
      const refusal = new AdminError("username must not start or end with white space or an invisible character", { field: "username" });
      await expect(h.app.admin.createAccount({ username, password: "long-enough-pw" })).rejects.toThrow(refusal);
      await expect(h.app.admin.importAccounts([{ username: "fine-1", password: "long-enough-pw" }, { username, password: "long-enough-pw" }])).rejects.toThrow(
        new AdminError(`record 2: ${refusal.message}`, { field: "username", record: 2 }),
      );
      await expect(h.app.admin.ensureAccount(username, "long-enough-pw")).rejects.toThrow(refusal);
      expect((await h.app.admin.listAccounts()).map((a) => a.username)).toEqual([h.username]);
    },
  );

  it.each(["mal\u202Eyrol", "al\u202Dice", "a\u202Ab", "b\u202Bc", "c\u202Cd", "x\u2066y\u2069z", "y\u2067z", "w\u2068v"])(
    "a username or client name with a bidirectional control character (%j) is refused on create, import and provisioning, and nothing is stored",
    async (name) => {
      const h = await harness();
      const refusal = new AdminError("username must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)", { field: "username" });
      await expect(h.app.admin.createAccount({ username: name, password: "long-enough-pw" })).rejects.toThrow(refusal);
      await expect(h.app.admin.importAccounts([{ username: "fine-1", password: "long-enough-pw" }, { username: name, password: "long-enough-pw" }])).rejects.toThrow(
        new AdminError(`record 2: ${refusal.message}`, { field: "username", record: 2 }),
      );
      await expect(h.app.admin.ensureAccount(name, "long-enough-pw")).rejects.toThrow(refusal);
      expect((await h.app.admin.listAccounts()).map((a) => a.username)).toEqual([h.username]);
      await expect(h.app.admin.createClient({ clientId: "bidi", name })).rejects.toThrow(
        new AdminError("name must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)", { field: "name" }),
      );
      expect((await h.app.admin.listClients()).map((c) => c.clientId)).toEqual([h.clientId]);
    },
  );

  it.each(["mal\u009b2Jory", "a\u0007b", "x\u007fy", "n\u0085l", "tab\there"])(
    "a username holding a control character (%j: C0, DEL or C1, CSI to a terminal) is refused on create, import and provisioning, as a client name is",
    async (name) => {
      const h = await harness();
      const refusal = new AdminError("username must not contain control characters", { field: "username" });
      await expect(h.app.admin.createAccount({ username: name, password: "long-enough-pw" })).rejects.toThrow(refusal);
      await expect(h.app.admin.importAccounts([{ username: "fine-1", password: "long-enough-pw" }, { username: name, password: "long-enough-pw" }])).rejects.toThrow(
        new AdminError(`record 2: ${refusal.message}`, { field: "username", record: 2 }),
      );
      await expect(h.app.admin.ensureAccount(name, "long-enough-pw")).rejects.toThrow(refusal);
      // Until 2026-12-02 taken: raw in log lines and on the CLI's terminal.
      expect((await h.app.admin.listAccounts()).map((a) => a.username)).toEqual([h.username]);
    },
  );

  it.each(["jose\u0301", "\u1100\u1161", "A\u030A", "\u212B"])(
    "a username not in Unicode NFC (%j: it prints as a composed name another account may hold) is refused on create, import and provisioning; its NFC form is taken",
    async (name) => {
      const h = await harness();
      const refusal = new AdminError("username must be in Unicode normalization form C (NFC: a composed é, not e followed by a combining accent)", { field: "username" });
      await expect(h.app.admin.createAccount({ username: name, password: "long-enough-pw" })).rejects.toThrow(refusal);
      await expect(h.app.admin.importAccounts([{ username: "fine-1", password: "long-enough-pw" }, { username: name, password: "long-enough-pw" }])).rejects.toThrow(
        new AdminError(`record 2: ${refusal.message}`, { field: "username", record: 2 }),
      );
      await expect(h.app.admin.ensureAccount(name, "long-enough-pw")).rejects.toThrow(refusal);
      expect((await h.app.admin.listAccounts()).map((a) => a.username)).toEqual([h.username]);
      // Until 2026-12-02 both forms were created: two accounts that print alike.
      expect((await h.app.admin.createAccount({ username: name.normalize("NFC"), password: "long-enough-pw" })).username).toBe(name.normalize("NFC"));
    },
  );

  it("right-to-left names and direction marks inside a name are kept as they are", async () => {
    const h = await harness();
    for (const name of ["\u05D3\u05E0\u05D4", "\u0633\u0627\u0631\u0627 2", "a\u200Fb", "x\u061Cy"]) {
      expect((await h.app.admin.createAccount({ username: name, password: "long-enough-pw" })).username).toBe(name);
      expect((await h.app.admin.createClient({ clientId: `c-${name.length}-${name.codePointAt(1)}`, name })).client.name).toBe(name);
    }
  });

  it("white space inside a username is kept as it is (and so is a zero-width joiner inside an emoji name)", async () => {
    const h = await harness();
    const created = await h.app.admin.createAccount({ username: "Ada Lovelace", password: "long-enough-pw" });
    expect(created.username).toBe("Ada Lovelace");
    expect((await h.app.admin.createAccount({ username: "ops-\u{1F469}\u200d\u{1F4BB}", password: "long-enough-pw" })).username).toBe("ops-\u{1F469}\u200d\u{1F4BB}");
    const res = await tokenRequest(h.app, { grant_type: "password", username: "Ada Lovelace", password: "long-enough-pw" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(res.status).toBe(200);
  });

  it("rotateSigningKey({ now: true }): the new key signs, tokens of the old key keep verifying until keys are pruned after the longest lifetime", async () => {
    const h = await harness();
    const before = (await passwordTokens(h, "Platform_UserAPIs")).access_token;
    const oldKid = decodeProtectedHeader(before).kid;
    const { kid, deleted } = await h.app.admin.rotateSigningKey({ now: true });
    expect(deleted).toEqual([]);
    expect(kid).not.toBe(oldKid);
    const after = (await passwordTokens(h, "Platform_UserAPIs")).access_token;
    expect(decodeProtectedHeader(after).kid).toBe(kid);
    expect((await listAccounts(h.app, before)).status).toBe(200);
    expect((await listAccounts(h.app, after)).status).toBe(200);
    const jwks = (await (await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`))).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid).sort()).toEqual([oldKid, kid].sort());
    // Once the new key has signed for longer than any token lives (plus the minute other instances
    // may take to switch), the next rotation prunes the old one.
    h.clock.advance(7200_000 + 60_000 + 10);
    const second = await h.app.admin.rotateSigningKey({ now: true });
    expect(second.deleted).toEqual([oldKid]);
    const jwks2 = (await (await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`))).json()) as { keys: { kid: string }[] };
    expect(jwks2.keys.map((k) => k.kid).sort()).toEqual([kid, second.kid].sort());
  });

  it("revokeSigningKey of an unknown kid on a store without keys: does not exist, and no first key is made", async () => {
    const storage = createMemoryStorage();
    const app = createPlantgate({ storage, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    await expect(app.admin.revokeSigningKey("no-such-kid")).rejects.toThrow(new AdminNotFoundError('signing key "no-such-kid" does not exist'));
    expect(await storage.signingKeys.list()).toEqual([]);
  });

  it("revokeSigningKey after a leak: rotate now, revoke the old key: it leaves the JWKS and its tokens are refused here at once and on another instance within a minute", async () => {
    const events: SecurityEvent[] = [];
    const h = await harness({ onEvent: (e) => void events.push(e) });
    const { createPlantgate } = await import("../src/index.js");
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, passwordHashIterations: 1000 });
    const leaked = (await passwordTokens(h, "Platform_UserAPIs")).access_token;
    const oldKid = decodeProtectedHeader(leaked).kid!;
    expect((await listAccounts(other, leaked)).status).toBe(200); // the other instance has the key set loaded
    await expect(h.app.admin.revokeSigningKey(oldKid)).rejects.toThrow(new AdminError(`signing key "${oldKid}" signs now: rotate with now (keys rotate --now) first, then revoke it`));

    const { kid } = await h.app.admin.rotateSigningKey({ now: true });
    expect((await listAccounts(h.app, leaked)).status).toBe(200); // retired: still verifies
    // The other instance signs with the old key until it re-reads the keys (within a minute): its
    // tokens would be refused if the key went now.
    const fromOther = (await passwordTokens({ ...h, app: other }, "Platform_UserAPIs")).access_token;
    expect(decodeProtectedHeader(fromOther).kid).toBe(oldKid);
    const takeover = h.clock.now();
    await expect(h.app.admin.revokeSigningKey(oldKid)).rejects.toThrow(
      new AdminError(`signing key "${oldKid}" may still sign on instances that have not re-read the keys since "${kid}" took over (they do within a minute): revoke it from ${new Date(takeover + 60_000).toISOString()}`),
    );
    h.clock.advance(60_000);
    expect(decodeProtectedHeader((await passwordTokens({ ...h, app: other }, "Platform_UserAPIs")).access_token).kid).toBe(kid);
    expect(await h.app.admin.revokeSigningKey(oldKid)).toEqual({ kid: oldKid, status: "retired", deleted: [] });
    const refused = await listAccounts(h.app, leaked);
    expect(refused.status).toBe(401);
    const jwks = (await (await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`))).json()) as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid)).toEqual([kid]);
    expect((await h.app.admin.listSigningKeys()).map((k) => [k.kid, k.status])).toEqual([[kid, "active"]]);
    // The other instance re-reads the keys within a minute (it last did a minute ago).
    h.clock.advance(60_000);
    expect((await listAccounts(other, leaked)).status).toBe(401);
    expect((await listAccounts(other, fromOther)).status).toBe(401);
    // Tokens of the new key are untouched.
    expect((await listAccounts(h.app, (await passwordTokens(h, "Platform_UserAPIs")).access_token)).status).toBe(200);

    await expect(h.app.admin.revokeSigningKey(oldKid)).rejects.toThrow(new AdminNotFoundError(`signing key "${oldKid}" does not exist`));
    expect(events.filter((e) => e.type === "signing_key.revoked")).toEqual([{ type: "signing_key.revoked", id: expect.any(String), time: expect.any(Number), kid: oldKid, status: "retired", deleted: [], actor: null }]);
  });

  it("revokeSigningKey of a next key calls off a scheduled rotation, unless it is due within a minute; with a configured signing key it is refused", async () => {
    const h = await harness();
    await h.app.jwks();
    const { kid } = await h.app.admin.rotateSigningKey();
    expect(await h.app.admin.revokeSigningKey(kid)).toEqual({ kid, status: "next", deleted: [] });
    expect((await h.app.admin.listSigningKeys()).map((k) => k.status)).toEqual(["active"]);
    // One due within the minute instances take to re-read the keys is refused.
    const soon = await h.app.admin.rotateSigningKey();
    h.clock.advance(soon.activatesAt - h.clock.now() - 59_000);
    await expect(h.app.admin.revokeSigningKey(soon.kid)).rejects.toThrow(
      new AdminError(`signing key "${soon.kid}" starts signing within a minute, too soon for every instance to learn of its revocation: rotate with now once it signs, then revoke it`),
    );

    const record = await generateKeyRecord("ES256", 0);
    const configured = await harness({ signingKey: JSON.parse(record.privateJwk) as JsonWebKey });
    await expect(configured.app.admin.revokeSigningKey(record.kid)).rejects.toThrow(new AdminError("The signing key is configured (signingKey / PLANTGATE_SIGNING_KEY); the store's keys are not used."));
  });

  it("another instance on the same storage switches to a key rotated with now: true within a minute", async () => {
    const h = await harness();
    const { createPlantgate } = await import("../src/index.js");
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, passwordHashIterations: 1000 });
    const first = await other.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) },
        body: "grant_type=client_credentials",
      }),
    );
    const firstKid = decodeProtectedHeader(((await first.json()) as { access_token: string }).access_token).kid;
    const { kid } = await h.app.admin.rotateSigningKey({ now: true });
    h.clock.advance(60_000);
    const next = await other.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) },
        body: "grant_type=client_credentials",
      }),
    );
    const nextKid = decodeProtectedHeader(((await next.json()) as { access_token: string }).access_token).kid;
    expect(firstKid).not.toBe(kid);
    expect(nextKid).toBe(kid);
  });

  it("createClient and createAccount reject bad input with AdminError and store nothing", async () => {
    const h = await harness();
    await expect(h.app.admin.createClient({ clientId: "has space" })).rejects.toThrow(AdminError);
    await expect(h.app.admin.createClient({ clientId: "x", clientSecret: "short" })).rejects.toThrow(new AdminError("clientSecret must be 16-1024 characters", { field: "clientSecret" }));
    await expect(h.app.admin.createClient({ clientId: "x", scopes: ["nope"] })).rejects.toThrow(AdminError);
    // "." and ".." vanish from console URLs (path normalisation), so they could never be managed there.
    for (const clientId of [".", ".."]) {
      await expect(h.app.admin.createClient({ clientId })).rejects.toThrow(new AdminError('clientId must not be "." or ".."', { field: "clientId" }));
      await expect(h.app.admin.ensureClient(clientId, "a-long-enough-secret-0123456789")).rejects.toThrow(new AdminError('clientId must not be "." or ".."', { field: "clientId" }));
    }
    await expect(h.app.admin.createClient({ clientId: h.clientId })).rejects.toThrow(new AdminError(`client "${h.clientId}" already exists`));
    // A name every backend can store (PostgreSQL text holds no U+0000, no SQL engine a lone surrogate).
    for (const name of ["a\u0000b", "a\ud800b", "\udc00", "", "x".repeat(201), 42 as unknown as string]) {
      await expect(h.app.admin.createClient({ clientId: "named", name })).rejects.toThrow(new AdminError("name must be 1-200 characters without U+0000 or unpaired surrogates", { field: "name" }));
    }
    // One that shows as nothing, or breaks a line in the console's lists and the CLI's table.
    for (const name of [" ", "\t \u00a0", "\u200b", "\ufeff\u3164", "a\nb", "a\u0007"]) {
      await expect(h.app.admin.createClient({ clientId: "named", name }), JSON.stringify(name)).rejects.toThrow(new AdminError("name must hold a visible character and no control characters", { field: "name" }));
    }
    expect((await h.app.admin.createClient({ clientId: "named", name: "🌱 ".repeat(66) + "x" })).client.name).toBe("🌱 ".repeat(66) + "x");
    await h.app.admin.deleteClient("named");
    await expect(h.app.admin.createAccount({ username: "bob", password: "short" })).rejects.toThrow(new AdminError("password must be 8-1024 characters", { field: "password" }));
    await expect(h.app.admin.createAccount({ username: "bob", password: "long-enough\u0000" })).rejects.toThrow(new AdminError("password must not contain U+0000", { field: "password" }));
    await expect(h.app.admin.createAccount({ username: h.username, password: "long-enough-pw" })).rejects.toThrow(new AdminError(`username "${h.username}" is taken`));
    // A conflict with what is stored is its own kind (the console answers it 409), still an AdminError.
    await expect(h.app.admin.createAccount({ username: h.username, password: "long-enough-pw" })).rejects.toBeInstanceOf(AdminConflictError);
    await expect(h.app.admin.createClient({ clientId: h.clientId })).rejects.toBeInstanceOf(AdminConflictError);
    await expect(h.app.admin.createClient({ clientId: "has space" })).rejects.not.toBeInstanceOf(AdminConflictError);
    expect((await h.app.admin.listClients()).map((c) => c.clientId)).toEqual([h.clientId]);
    expect((await h.app.admin.listAccounts()).map((a) => a.username)).toEqual([h.username]);
    // Views never carry secrets.
    expect(JSON.stringify(await h.app.admin.listClients())).not.toContain("secretHash");
  });
});
