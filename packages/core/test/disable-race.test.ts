/**
 * An account disabled while its password is being checked gets nothing that outlives the disable:
 * no console session, no refresh token, no access token. The storage below runs the disable at the
 * worst moment, right before the session or the token family is stored (after the disable has
 * deleted the account's sessions and revoked its tokens), or right after the account was read for
 * the password check. Before 2026-11-29 both were stored and came back when the account was
 * enabled again; until 2026-12-01 a grant without offline_access got an access token minted after
 * the disable.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type Plantgate, type Storage } from "../src/index.js";
import { basic, manualClock, tokenRequest } from "./helpers.js";
import { call, read } from "./console-helpers.js";

/**
 * A memory store whose next session or refresh-token insert first runs `before` (once), or whose
 * next read by username runs `afterFind` before it answers with what it read (once).
 */
function racing() {
  const memory = createMemoryStorage();
  const hook: { before: (() => Promise<void>) | null; afterFind: (() => Promise<void>) | null } = { before: null, afterFind: null };
  const once = async () => {
    const step = hook.before;
    hook.before = null;
    await step?.();
  };
  const storage: Storage = {
    ...memory,
    sessions: { ...memory.sessions, create: async (record) => (await once(), memory.sessions.create(record)) },
    accounts: {
      ...memory.accounts,
      findByUsername: async (username) => {
        const record = await memory.accounts.findByUsername(username);
        const step = hook.afterFind;
        hook.afterFind = null;
        await step?.();
        return record;
      },
    },
    refreshTokens: { ...memory.refreshTokens, create: async (record) => (await once(), memory.refreshTokens.create(record)) },
  };
  return { memory, storage, hook };
}

async function app(storage: Storage, events: string[] = []): Promise<Plantgate> {
  const app = createPlantgate({ storage, clock: manualClock().now, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, console: { enabled: true }, onEvent: (e) => void events.push(e.type) });
  await app.admin.createAccount({ username: "root", password: "root-password-1", roles: ["admin"] });
  await app.admin.createAccount({ username: "ops", password: "ops-password-1", roles: ["admin"] });
  return app;
}

describe("disabling an account while its password is checked", () => {
  it("console sign-in: 401 as a wrong password, no session stored, none back after re-enabling", async () => {
    const { memory, storage, hook } = racing();
    const pg = await app(storage);
    hook.before = async () => void (await pg.admin.setAccountEnabled("ops", false));
    const res = await read(await call(pg, "POST", "/api/session", { body: { username: "ops", password: "ops-password-1" } }));
    expect([res.status, res.setCookie, res.body]).toEqual([401, null, { error: 1305, message: "The username or password is incorrect." }]);
    // No session stored, counted before the account is enabled again: enabling deletes the account's
    // sessions itself (since 2026-11-30), so a count taken after it was 0 even with no check at sign-in.
    const ops = (await memory.accounts.findByUsername("ops"))!;
    expect(await memory.sessions.deleteByAccount(ops.id)).toBe(0);
    await pg.admin.setAccountEnabled("ops", true);
    // Signing in now works as ever.
    expect((await call(pg, "POST", "/api/session", { body: { username: "ops", password: "ops-password-1" } })).status).toBe(200);
  });

  it("password grant with offline_access: invalid_grant, and the family stored after the disable is revoked (re-enabling does not bring its token back)", async () => {
    const { memory, storage, hook } = racing();
    const pg = await app(storage);
    const { clientSecret } = await pg.admin.createClient({ clientId: "app-1" });
    await pg.admin.createAccount({ username: "alice", password: "wonderland-42" });
    const stored: string[] = [];
    hook.before = async () => void (await pg.admin.setAccountEnabled("alice", false));
    const create = storage.refreshTokens.create;
    storage.refreshTokens.create = async (record) => (stored.push(record.tokenHash), create(record));
    const res = await tokenRequest(pg, { grant_type: "password", username: "alice", password: "wonderland-42", scope: "Platform_UserAPIs offline_access" }, { authorization: basic("app-1", clientSecret) });
    expect([res.status, await res.json()]).toEqual([400, { error: "invalid_grant", error_description: "The username or password is incorrect." }]);
    // The token stored after the disable is revoked by the grant itself, at the request's time: read
    // before the account is enabled again, since enabling revokes the account's tokens too (since
    // 2026-11-30; a check after it, `?.revokedAt` not null, also passed for a missing row).
    expect(stored).toHaveLength(1);
    const alice = (await memory.accounts.findByUsername("alice"))!;
    const revoked = { tokenHash: stored[0], clientId: "app-1", accountId: alice.id, consumedAt: null, revokedAt: Date.UTC(2026, 0, 1) };
    expect(await memory.refreshTokens.findByHash(stored[0]!)).toMatchObject(revoked);
    // Enabling the account does not bring it back.
    await pg.admin.setAccountEnabled("alice", true);
    expect(await memory.refreshTokens.findByHash(stored[0]!)).toMatchObject(revoked);
  });

  it("password grant without offline_access: invalid_grant, no token (the account read for the check was enabled)", async () => {
    const { memory, storage, hook } = racing();
    const events: string[] = [];
    const pg = await app(storage, events);
    const { clientSecret } = await pg.admin.createClient({ clientId: "app-1" });
    await pg.admin.createAccount({ username: "alice", password: "wonderland-42" });
    hook.afterFind = async () => void (await pg.admin.setAccountEnabled("alice", false));
    const res = await tokenRequest(pg, { grant_type: "password", username: "alice", password: "wonderland-42", scope: "Platform_UserAPIs" }, { authorization: basic("app-1", clientSecret) });
    expect((await memory.accounts.findByUsername("alice"))!.enabled).toBe(false);
    expect([res.status, await res.json()]).toEqual([400, { error: "invalid_grant", error_description: "The username or password is incorrect." }]);
    await pg.flushEvents();
    expect(events.filter((t) => t.startsWith("token."))).toEqual([]);
    // Enabled again, the same grant gets its token.
    await pg.admin.setAccountEnabled("alice", true);
    expect((await tokenRequest(pg, { grant_type: "password", username: "alice", password: "wonderland-42", scope: "Platform_UserAPIs" }, { authorization: basic("app-1", clientSecret) })).status).toBe(200);
  });
});
