/**
 * Housekeeping (`admin.prune`) through the token endpoint: what it deletes never changes an
 * answer, and a rotated token is kept as long as presenting it again can detect reuse.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, generateKeyRecord, pruneIntervalFromEnv, ConfigError, StorageError } from "../src/index.js";
import { harness } from "./helpers.js";
import { DAY, expectTokenError, expectTokenSuccess, INVALID_REFRESH, passwordRequest, refreshRequest } from "./token-helpers.js";

const ZERO = { refreshTokens: 0, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: true };

describe("admin.prune", () => {
  it("keeps a rotated token past its own sliding expiry while its family lives: its reuse still revokes the family", async () => {
    const h = await harness({ storage: createMemoryStorage() });
    const first = await expectTokenSuccess(await passwordRequest(h, { scope: "offline_access" }));
    // Refresh every 5 days: each token is used before its 7-day sliding expiry.
    let current = first.refresh_token!;
    for (let i = 0; i < 3; i++) {
      h.clock.advance(5 * DAY);
      current = (await expectTokenSuccess(await refreshRequest(h, current))).refresh_token!;
    }
    // Day 15: the first token's own sliding expiry (day 7) has passed; the family lives to day 30.
    expect(await h.app.admin.prune()).toStrictEqual(ZERO);
    // A thief replays the first token: recognised as reuse, so the whole family is revoked.
    await expectTokenError(await refreshRequest(h, first.refresh_token!), 400, INVALID_REFRESH);
    await expectTokenError(await refreshRequest(h, current), 400, INVALID_REFRESH);
  });

  it("deletes a family once its absolute expiry has passed, and an unconsumed token once its sliding expiry has", async () => {
    const h = await harness({ storage: createMemoryStorage() });
    const first = await expectTokenSuccess(await passwordRequest(h, { scope: "offline_access" }));
    h.clock.advance(DAY);
    const second = await expectTokenSuccess(await refreshRequest(h, first.refresh_token!));
    // An idle family: the unconsumed token's sliding expiry (day 1 + 7) passes.
    h.clock.advance(7 * DAY);
    expect(await h.app.admin.prune(), "only the unconsumed token goes; the consumed one waits for the family").toStrictEqual({ ...ZERO, refreshTokens: 1 });
    await expectTokenError(await refreshRequest(h, second.refresh_token!), 400, INVALID_REFRESH);
    h.clock.advance(22 * DAY); // day 30: the family's absolute expiry
    expect(await h.app.admin.prune()).toStrictEqual({ ...ZERO, refreshTokens: 1 });
    await expectTokenError(await refreshRequest(h, first.refresh_token!), 400, INVALID_REFRESH);
  });

  it("deletes finished brute-force windows (after windowSeconds), not running ones", async () => {
    const h = await harness({ storage: createMemoryStorage(), bruteForce: { maxFailures: 5, windowSeconds: 600 } });
    const failed = await passwordRequest(h, { password: "wrong-password" });
    expect(failed.status).toBe(400);
    h.clock.advance(600_000 - 1);
    expect(await h.app.admin.prune()).toStrictEqual(ZERO);
    h.clock.advance(1);
    // One counter per (username + IP), one per username, and the client's budget across usernames
    // (finding 2): a failed password grant leaves three, and all three end with the window.
    expect(await h.app.admin.prune()).toStrictEqual({ ...ZERO, attempts: 3 });
  });

  it("with maxBatches the stores take turns, one batch each per round: a huge backlog in one does not starve the rest, and `complete` says work was left", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage, bruteForce: { maxFailures: 5, windowSeconds: 600 } });
    const now = h.clock.now();
    // A refresh-token backlog of 100 (first in each round), then 30 sessions, 5 counters, 30 revoked jtis.
    for (let i = 0; i < 100; i++) {
      await storage.refreshTokens.create({
        tokenHash: `rt-${i}`,
        familyId: `family-${i}`,
        clientId: h.clientId,
        accountId: "a",
        scope: ["offline_access"],
        createdAt: now - 2 * DAY,
        expiresAt: now - DAY,
        familyExpiresAt: now + DAY,
        consumedAt: null,
        revokedAt: null,
        replay: null,
        graceUses: 0,
      });
    }
    for (let i = 0; i < 30; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - DAY, expiresAt: now - 1 });
    for (let i = 0; i < 5; i++) await storage.attempts.increment(`t:${i}`, now - 600_000, 600_000);
    for (let i = 0; i < 30; i++) await storage.revokedTokens.add(`jti-${i}`, now - 1);

    // Round 1: refresh tokens 10, sessions 10, counters 5 (short: done), revoked jtis 10, assertion
    // jtis 0 (done); round 2: the three with work left, 10 each. 8 batches.
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 8 })).toStrictEqual({ ...ZERO, refreshTokens: 20, sessions: 20, attempts: 5, revokedTokens: 20, complete: false });
    // From assertion jtis (the store after the first run's last batch): 0, then refresh tokens 10,
    // sessions 10 (full: not known to be done), counters 0, revoked jtis 10; round 2: refresh
    // tokens 10, and the short batches of sessions and revoked jtis.
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 8 })).toStrictEqual({ ...ZERO, refreshTokens: 20, sessions: 10, revokedTokens: 10, complete: false });
    // A budget larger than the work: every store's last batch short.
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 100 })).toStrictEqual({ ...ZERO, refreshTokens: 60, complete: true });
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 1 }), "one batch, short, and the other stores not looked at: not complete").toStrictEqual({ ...ZERO, complete: false });
  });

  it("with maxBatches below the number of stores each run starts where the last one left off: every store gets a batch within ceil(stores / maxBatches) runs", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const now = h.clock.now();
    // The memory store's five queues: refresh tokens, sessions, counters, revoked jtis, assertion
    // jtis. Work only in the last two, which a budget of 2 starting at the first store never reached.
    for (let i = 0; i < 30; i++) await storage.revokedTokens.add(`jti-${i}`, now - 1);
    for (let i = 0; i < 30; i++) await storage.assertionJtis.use(`assertion-${i}`, now - 1);
    const runs = [];
    for (let run = 0; run < 5; run++) runs.push(await h.app.admin.prune({ batchSize: 10, maxBatches: 2 }));
    expect(runs).toStrictEqual([
      { ...ZERO, complete: false }, // refresh tokens, sessions
      { ...ZERO, revokedTokens: 10, complete: false }, // counters, revoked jtis
      { ...ZERO, assertionJtis: 10, complete: false }, // assertion jtis, refresh tokens
      { ...ZERO, complete: false }, // sessions, counters
      { ...ZERO, revokedTokens: 10, assertionJtis: 10, complete: false }, // revoked jtis, assertion jtis
    ]);
    // A budget of one round and a batch more: round 1 from refresh tokens (revoked and assertion jtis
    // full, 10 each), the 6th batch to revoked jtis (short: done), so the next run starts at assertion jtis.
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 6 })).toStrictEqual({ ...ZERO, revokedTokens: 10, assertionJtis: 10, complete: false });
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 6 }), "assertion jtis (short), then the other four: one round").toStrictEqual({ ...ZERO, complete: true });
  });

  it("with maxBatches each signing-key delete is a batch: the keys take the budget less a batch per store (at least one), the oldest first, and leave the rest to the next run (complete false)", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const now = h.clock.now();
    // 12 keys rotated a second apart ten days ago (the store's only keys): the newest signs, the 11
    // before it are past their use.
    const t0 = now - 10 * DAY;
    expect(await storage.signingKeys.list()).toEqual([]);
    for (let i = 0; i < 12; i++) await storage.signingKeys.create(await generateKeyRecord("ES256", t0 + i * 1000, t0 + i * 1000));
    const oldestFirst = (await storage.signingKeys.list()).sort((a, b) => a.activatesAt - b.activatesAt).map((k) => k.kid);
    for (let i = 0; i < 3; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - DAY, expiresAt: now - 1 });
    // Every storage call that deletes, counted: each is one statement.
    let deletes = 0;
    for (const store of [storage.refreshTokens, storage.sessions, storage.attempts, storage.revokedTokens, storage.assertionJtis, storage.signingKeys] as const) {
      const key = store === storage.signingKeys ? "delete" : "deleteExpired";
      const real = (store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[key]!.bind(store);
      (store as unknown as Record<string, unknown>)[key] = (...args: unknown[]) => (deletes++, real(...args));
    }
    // The memory store's 5 stores: a budget of 8 leaves 3 to the keys, then one round.
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 8 })).toStrictEqual({ ...ZERO, sessions: 3, signingKeys: 3, complete: false });
    expect(deletes).toBe(8);
    const left = (await storage.signingKeys.list()).map((k) => k.kid);
    expect(oldestFirst.filter((kid) => !left.includes(kid))).toEqual(oldestFirst.slice(0, 3));
    // A budget of one round: the keys still get one delete (and the last store of the round waits).
    deletes = 0;
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 5 })).toStrictEqual({ ...ZERO, signingKeys: 1, complete: false });
    expect(deletes).toBe(5);
    // Without maxBatches (the CLI's default, Node's timer): every prunable key, as before.
    deletes = 0;
    expect(await h.app.admin.prune({ batchSize: 10 })).toStrictEqual({ ...ZERO, signingKeys: 7 });
    expect(deletes).toBe(7 + 5);
    expect((await storage.signingKeys.list()).map((k) => k.kid)).toEqual([oldestFirst.at(-1)]);
    // Nothing left: complete within the budget.
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 8 })).toStrictEqual(ZERO);
  });

  it("a signing-key delete that fails midway: the keys deleted before it are counted (and the keyring re-reads), the failed attempt spends its batch, and the run rejects with it", async () => {
    const storage = createMemoryStorage();
    const errors: unknown[][] = [];
    const h = await harness({ storage, logger: { error: (...args: unknown[]) => void errors.push(args), warn() {} } });
    const now = h.clock.now();
    const t0 = now - 10 * DAY;
    for (let i = 0; i < 12; i++) await storage.signingKeys.create(await generateKeyRecord("ES256", t0 + i * 1000, t0 + i * 1000));
    const oldestFirst = (await storage.signingKeys.list()).sort((a, b) => a.activatesAt - b.activatesAt).map((k) => k.kid);
    for (let i = 0; i < 25; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - DAY, expiresAt: now - 1 });
    // The keys loaded once (a JWKS request), so a later read of them is the keyring's invalidate at work.
    expect((await h.app.fetch(new Request("http://localhost/.well-known/jwks.json"))).status).toBe(200);
    let lists = 0;
    const list = storage.signingKeys.list.bind(storage.signingKeys);
    storage.signingKeys.list = () => (lists++, list());
    // The third key's delete fails; every storage call that deletes is counted.
    let deletes = 0;
    const outage = new StorageError("memory storage failed during signingKeys.delete");
    const realDelete = storage.signingKeys.delete.bind(storage.signingKeys);
    storage.signingKeys.delete = (kid) => (++deletes === 3 ? Promise.reject(outage) : realDelete(kid));
    for (const store of [storage.refreshTokens, storage.sessions, storage.attempts, storage.revokedTokens, storage.assertionJtis] as const) {
      const real = store.deleteExpired.bind(store) as (...args: unknown[]) => Promise<number>;
      (store as unknown as Record<string, unknown>).deleteExpired = (...args: unknown[]) => (deletes++, real(...args));
    }
    // A budget of 8: the keys' share is 3 (two deleted, the third failed: all three spent), the five
    // stores one round (the sessions' second batch waits for the next run: the failed attempt spent its batch).
    await expect(h.app.admin.prune({ batchSize: 10, maxBatches: 8 })).rejects.toBe(outage);
    expect(deletes).toBe(8);
    expect(errors).toStrictEqual([
      [
        "prune: some stores failed; the others were pruned",
        { failed: [{ store: "signingKeys", name: "StorageError", message: "memory storage failed during signingKeys.delete" }], counts: { ...ZERO, sessions: 10, signingKeys: 2, complete: false } },
      ],
    ]);
    expect((await storage.signingKeys.list()).map((k) => k.kid).sort()).toEqual(oldestFirst.slice(2).sort());
    lists = 0;
    expect((await h.app.fetch(new Request("http://localhost/.well-known/jwks.json"))).status).toBe(200);
    expect(lists, "the keyring was invalidated: the JWKS request read the keys again").toBe(1);
  });

  it("`complete: false` is conservative: a last batch that took exactly the rest is not known to be the last, and the next run finds nothing", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const now = h.clock.now();
    for (let i = 0; i < 10; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - DAY, expiresAt: now - 1 });
    // One round of the five stores, the sessions' batch full: the budget is spent before a second call could say none are left.
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 5 })).toStrictEqual({ ...ZERO, sessions: 10, complete: false });
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 5 })).toStrictEqual(ZERO);
  });

  it("a store that fails does not stop the others: they are pruned, the failure is logged with the counts, and the run rejects with it", async () => {
    const storage = createMemoryStorage();
    const errors: unknown[][] = [];
    const h = await harness({ storage, logger: { error: (...args: unknown[]) => void errors.push(args), warn() {} } });
    const now = h.clock.now();
    for (let i = 0; i < 25; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - DAY, expiresAt: now - 1 });
    for (let i = 0; i < 25; i++) await storage.revokedTokens.add(`jti-${i}`, now - 1);
    const outage = new StorageError("memory storage failed during signingKeys.list");
    storage.signingKeys.list = () => Promise.reject(outage);
    storage.sessions.deleteExpired = () => Promise.reject(new StorageError("memory storage failed during sessions.deleteExpired"));
    for (const options of [{ batchSize: 10 }, { batchSize: 10, maxBatches: 7 }]) {
      // With the budget: refresh tokens 0, sessions (failed: out of the rounds), counters 0, revoked
      // jtis 10, assertion jtis 0; revoked jtis 10; revoked jtis 5 (7 batches).
      errors.length = 0;
      for (let i = 0; i < 25; i++) await storage.revokedTokens.add(`jti-${i}`, now - 1);
      // The first failure (the signing keys', which go first) is the run's.
      await expect(h.app.admin.prune(options), JSON.stringify(options)).rejects.toBe(outage);
      for (let i = 0; i < 25; i++) expect(await storage.revokedTokens.has(`jti-${i}`), `jti-${i} ${JSON.stringify(options)}`).toBe(false);
      expect(errors, JSON.stringify(options)).toStrictEqual([
        [
          "prune: some stores failed; the others were pruned",
          {
            failed: [
              { store: "signingKeys", name: "StorageError", message: "memory storage failed during signingKeys.list" },
              { store: "sessions", name: "StorageError", message: "memory storage failed during sessions.deleteExpired" },
            ],
            counts: { ...ZERO, revokedTokens: 25, complete: false },
          },
        ],
      ]);
    }
  });

  it("the refresh tokens' replays: a batch beside the tokens' first of each run, then batches once the tokens come back short, uncounted, within the budget, even while expired tokens fill it; a failure of theirs is named refreshReplays and the rest is pruned", async () => {
    const storage = createMemoryStorage();
    const errors: unknown[][] = [];
    const h = await harness({ storage, logger: { error: (...args: unknown[]) => void errors.push(args), warn() {} } });
    const now = h.clock.now();
    const rotated = (i: number, consumedAt: number) => ({
      tokenHash: `rt-${i}`, familyId: `f-${i}`, clientId: "c", accountId: "a", scope: [], createdAt: now - DAY, expiresAt: now + DAY,
      familyExpiresAt: now + 30 * DAY, consumedAt, revokedAt: null, replay: `v1.sealed-${i}`, graceUses: 0,
    });
    const expired = (i: number) => ({ ...rotated(i, 0), consumedAt: null, replay: null, expiresAt: now - 1 });
    // 25 rotated 7 minutes ago (past the 6 kept), 3 rotated a minute ago (within), 5 expired tokens.
    for (let i = 0; i < 25; i++) await storage.refreshTokens.create(rotated(i, now - 420_000));
    for (let i = 25; i < 28; i++) await storage.refreshTokens.create(rotated(i, now - 60_000));
    for (let i = 0; i < 5; i++) await storage.refreshTokens.create(expired(100 + i));
    const calls: string[] = [];
    const drop = storage.refreshTokens.dropReplays!.bind(storage.refreshTokens);
    storage.refreshTokens.dropReplays = (before, limit) => (calls.push(`dropReplays ${now - before} ${limit}`), drop(before, limit));
    const deleteExpired = storage.refreshTokens.deleteExpired.bind(storage.refreshTokens);
    storage.refreshTokens.deleteExpired = (at, limit) => (calls.push(`deleteExpired ${limit}`), deleteExpired(at, limit));
    const replays = async () => {
      const held: string[] = [];
      for (let i = 0; i < 28; i++) if ((await storage.refreshTokens.findByHash(`rt-${i}`))?.replay) held.push(`rt-${i}`);
      return held;
    };
    // A budget of 5 (one round of the memory store's five queues): the tokens' batch (short) and one
    // of replays beside it; the next run takes the rest.
    expect(await h.app.admin.prune({ batchSize: 10, maxBatches: 5 })).toStrictEqual({ ...ZERO, refreshTokens: 5, complete: false });
    expect(calls).toEqual(["deleteExpired 10", "dropReplays 360000 10"]);
    expect(await replays()).toHaveLength(18);
    calls.length = 0;
    expect(await h.app.admin.prune({ batchSize: 10 })).toStrictEqual(ZERO);
    expect(calls).toEqual(["deleteExpired 10", "dropReplays 360000 10", "dropReplays 360000 10"]);
    // The rotated rows stay, and the three within the window keep their replays.
    expect(await replays()).toEqual(["rt-25", "rt-26", "rt-27"]);
    expect(await storage.refreshTokens.findByHash("rt-0")).toMatchObject({ consumedAt: now - 420_000, replay: null });

    // Expired tokens that outgrow the budget run after run do not keep the replays from their batch
    // beside the tokens' first (in the first design they were dropped only once the tokens came back short).
    await storage.refreshTokens.create(rotated(300, now - 420_000));
    for (let run = 0; run < 3; run++) {
      for (let i = 0; i < 40; i++) await storage.refreshTokens.create(expired(1000 + run * 100 + i));
      calls.length = 0;
      const counts = await h.app.admin.prune({ batchSize: 10, maxBatches: 5 });
      expect(counts, `run ${run}`).toStrictEqual({ ...ZERO, refreshTokens: 10, complete: false });
      expect(calls, `run ${run}`).toEqual(["deleteExpired 10", "dropReplays 360000 10"]);
      expect((await storage.refreshTokens.findByHash("rt-300"))?.replay, `run ${run}`).toBeNull();
    }
    // Drain the expired tokens left.
    await h.app.admin.prune({ batchSize: 10 });

    // A failing dropReplays: named refreshReplays, the tokens' count kept, the other stores pruned.
    for (let i = 0; i < 4; i++) await storage.refreshTokens.create({ ...rotated(200 + i, 0), consumedAt: null, replay: null, expiresAt: now - 1 });
    for (let i = 0; i < 3; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - DAY, expiresAt: now - 1 });
    const outage = new StorageError("memory storage failed during refreshTokens.dropReplays");
    storage.refreshTokens.dropReplays = () => Promise.reject(outage);
    await expect(h.app.admin.prune({ batchSize: 10 })).rejects.toBe(outage);
    expect(errors).toStrictEqual([
      [
        "prune: some stores failed; the others were pruned",
        {
          failed: [{ store: "refreshReplays", name: "StorageError", message: "memory storage failed during refreshTokens.dropReplays" }],
          counts: { ...ZERO, refreshTokens: 4, sessions: 3, complete: false },
        },
      ],
    ]);
  });

  it("an abort during the refresh tokens' first batch: the replays' batch beside it is not made (no storage call after the abort), and the run is not complete", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const now = h.clock.now();
    await storage.refreshTokens.create({
      tokenHash: "rt-old", familyId: "f", clientId: "c", accountId: "a", scope: [], createdAt: now - DAY, expiresAt: now + DAY,
      familyExpiresAt: now + 30 * DAY, consumedAt: now - 420_000, revokedAt: null, replay: "v1.sealed", graceUses: 0,
    });
    const stop = new AbortController();
    const calls: string[] = [];
    const deleteExpired = storage.refreshTokens.deleteExpired.bind(storage.refreshTokens);
    storage.refreshTokens.deleteExpired = async (at, limit) => {
      calls.push("deleteExpired");
      const n = await deleteExpired(at, limit);
      stop.abort();
      return n;
    };
    const drop = storage.refreshTokens.dropReplays!.bind(storage.refreshTokens);
    storage.refreshTokens.dropReplays = (before, limit) => (calls.push("dropReplays"), drop(before, limit));
    expect(await h.app.admin.prune({ batchSize: 10, signal: stop.signal })).toStrictEqual({ ...ZERO, complete: false });
    expect(calls).toEqual(["deleteExpired"]);
    expect((await storage.refreshTokens.findByHash("rt-old"))?.replay).toBe("v1.sealed");
  });

  it("without maxBatches each store is drained to its end in one run, as before budgets existed", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const now = h.clock.now();
    for (let i = 0; i < 25; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - DAY, expiresAt: now - 1 });
    for (let i = 0; i < 25; i++) await storage.revokedTokens.add(`jti-${i}`, now - 1);
    expect(await h.app.admin.prune({ batchSize: 10 })).toStrictEqual({ ...ZERO, sessions: 25, revokedTokens: 25, complete: true });
  });

  it("an aborted signal ends the run at the next batch boundary (the batch under way finishes) with the counts so far, complete false; aborted before the call, no storage call at all", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const now = h.clock.now();
    for (let i = 0; i < 25; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - DAY, expiresAt: now - 1 });
    for (let i = 0; i < 25; i++) await storage.revokedTokens.add(`jti-${i}`, now - 1);
    const stop = new AbortController();
    const calls: string[] = [];
    const sessions = storage.sessions.deleteExpired.bind(storage.sessions);
    storage.sessions.deleteExpired = async (at, limit) => {
      calls.push("sessions");
      // Aborted while the second batch is under way: it finishes and is counted, no third is made.
      if (calls.length === 2) stop.abort();
      return sessions(at, limit);
    };
    const revoked = storage.revokedTokens.deleteExpired.bind(storage.revokedTokens);
    storage.revokedTokens.deleteExpired = async (at, limit) => {
      calls.push("revokedTokens");
      return revoked(at, limit);
    };
    expect(await h.app.admin.prune({ batchSize: 10, signal: stop.signal })).toStrictEqual({ ...ZERO, sessions: 20, complete: false });
    expect(calls).toEqual(["sessions", "sessions"]);
    // Aborted before the call: nothing looked at, nothing deleted.
    calls.length = 0;
    let keysRead = 0;
    const list = storage.signingKeys.list.bind(storage.signingKeys);
    storage.signingKeys.list = async () => (keysRead++, list());
    expect(await h.app.admin.prune({ batchSize: 10, signal: stop.signal })).toStrictEqual({ ...ZERO, complete: false });
    expect({ calls, keysRead }).toEqual({ calls: [], keysRead: 0 });
    // Not aborted: the rest is drained, complete.
    expect(await h.app.admin.prune({ batchSize: 10, signal: new AbortController().signal })).toStrictEqual({ ...ZERO, sessions: 5, revokedTokens: 25, complete: true });
  });

  it("an aborted signal stops the signing keys between two deletes too: the delete under way finishes and is counted, the rest wait (complete false), and no store is called", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const now = h.clock.now();
    // 12 keys rotated a second apart ten days ago: the newest signs, the 11 before it are prunable.
    const t0 = now - 10 * DAY;
    for (let i = 0; i < 12; i++) await storage.signingKeys.create(await generateKeyRecord("ES256", t0 + i * 1000, t0 + i * 1000));
    const oldestFirst = (await storage.signingKeys.list()).sort((a, b) => a.activatesAt - b.activatesAt).map((k) => k.kid);
    for (let i = 0; i < 5; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - DAY, expiresAt: now - 1 });
    // The run's signal, aborted while the first delete is under way (a shutdown's stop()).
    let stop: AbortController | undefined;
    const calls: string[] = [];
    const realDelete = storage.signingKeys.delete.bind(storage.signingKeys);
    storage.signingKeys.delete = async (kid) => (calls.push(`delete ${kid}`), stop?.abort(), realDelete(kid));
    const sessions = storage.sessions.deleteExpired.bind(storage.sessions);
    storage.sessions.deleteExpired = async (at, limit) => (calls.push("sessions"), sessions(at, limit));
    for (const options of [{ batchSize: 10 }, { batchSize: 10, maxBatches: 20 }]) {
      const first = (await storage.signingKeys.list()).sort((a, b) => a.activatesAt - b.activatesAt)[0]!.kid;
      calls.length = 0;
      stop = new AbortController();
      expect(await h.app.admin.prune({ ...options, signal: stop.signal }), JSON.stringify(options)).toStrictEqual({ ...ZERO, signingKeys: 1, complete: false });
      expect(calls, JSON.stringify(options)).toEqual([`delete ${first}`]);
    }
    expect((await storage.signingKeys.list()).map((k) => k.kid).sort()).toEqual(oldestFirst.slice(2).sort());
    // Not aborted: the other 9 prunable keys and the sessions go, complete.
    calls.length = 0;
    stop = undefined;
    expect(await h.app.admin.prune({ batchSize: 10, signal: new AbortController().signal })).toStrictEqual({ ...ZERO, signingKeys: 9, sessions: 5, complete: true });
    expect(calls).toEqual([...oldestFirst.slice(2, 11).map((kid) => `delete ${kid}`), "sessions"]);
    expect((await storage.signingKeys.list()).map((k) => k.kid)).toEqual([oldestFirst[11]]);
  });

  it("refuses a maxBatches that is not a positive integer", async () => {
    const h = await harness();
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(h.app.admin.prune({ maxBatches: bad }), String(bad)).rejects.toThrow(new TypeError("maxBatches must be a positive integer"));
    }
  });

  it("refuses a batch size that is not a positive integer", async () => {
    const h = await harness();
    await expect(h.app.admin.prune({ batchSize: 0 })).rejects.toThrow("batchSize must be a positive integer");
    await expect(h.app.admin.prune({ batchSize: 1.5 })).rejects.toThrow("batchSize must be a positive integer");
  });
});

describe("PLANTGATE_PRUNE_INTERVAL_SECONDS", () => {
  it("defaults to 3600, 0 turns it off, anything else must be whole seconds that a timer can hold", () => {
    expect(pruneIntervalFromEnv({})).toBe(3600);
    expect(pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "" })).toBe(3600);
    expect(pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "0" })).toBe(0);
    expect(pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "60" })).toBe(60);
    expect(pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "2147483" })).toBe(2_147_483);
    for (const bad of ["-1", "1.5", "1h", "2147484", " 60"]) {
      expect(() => pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: bad }), bad).toThrow(ConfigError);
    }
    expect(() => pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "soon" })).toThrow(
      'PLANTGATE_PRUNE_INTERVAL_SECONDS must be 0 (off) or a number of seconds up to 2147483, got "soon"',
    );
  });
});
