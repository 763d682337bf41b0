/**
 * Housekeeping: the `deleteExpired` batch limit of every store, two pruners at once, and the core's
 * `admin.prune()` over the store (what goes, what stays, counts per aggregate).
 */
import { createPlantgate, type PruneCounts, type Storage } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { attemptKey, DAY, expectRecord, fakeHash, inParallel, refreshRecord, seedOwners, sessionRecord, RACES_TIMEOUT, signingKeyRecord, T0, withOtherInstance } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

const NOW = T0 + 40 * DAY;
const WINDOW_MS = 15 * 60 * 1000;

/** One store's expired/live seeding and its batched delete, so every case runs over all four. */
interface Prunable {
  name: string;
  /** Stores `expired` records that deleteExpired(NOW) must remove and `live` ones it must keep. */
  seed(storage: Storage, expired: number, live: number, tag: string): Promise<void>;
  deleteBatch(storage: Storage, limit?: number): Promise<number>;
  /** How many of the seeded live records are still there (all of them must be). */
  countLive(storage: Storage, live: number, tag: string): Promise<number>;
}

const refreshTokens: Prunable = {
  name: "refreshTokens",
  async seed(storage, expired, live, tag) {
    for (let i = 0; i < expired; i++) {
      // Alternate the two rules, so a batch spans both.
      const record =
        i % 2 === 0
          ? refreshRecord({ tokenHash: fakeHash(`${tag}-x${i}`), familyId: `${tag}-fx${i}`, expiresAt: NOW + DAY, familyExpiresAt: NOW, consumedAt: NOW - DAY })
          : refreshRecord({ tokenHash: fakeHash(`${tag}-x${i}`), familyId: `${tag}-fx${i}`, expiresAt: NOW - 1, familyExpiresAt: NOW + DAY });
      await storage.refreshTokens.create(record);
    }
    for (let i = 0; i < live; i++) {
      await storage.refreshTokens.create(
        refreshRecord({ tokenHash: fakeHash(`${tag}-l${i}`), familyId: `${tag}-fl${i}`, expiresAt: NOW - 1, familyExpiresAt: NOW + 1, consumedAt: NOW - DAY }),
      );
    }
  },
  deleteBatch: (storage, limit) => storage.refreshTokens.deleteExpired(NOW, limit),
  async countLive(storage, live, tag) {
    let n = 0;
    for (let i = 0; i < live; i++) if (await storage.refreshTokens.findByHash(fakeHash(`${tag}-l${i}`))) n++;
    return n;
  },
};

const sessions: Prunable = {
  name: "sessions",
  async seed(storage, expired, live, tag) {
    for (let i = 0; i < expired; i++) await storage.sessions.create(sessionRecord({ idHash: fakeHash(`${tag}-x${i}`), expiresAt: NOW - i }));
    for (let i = 0; i < live; i++) await storage.sessions.create(sessionRecord({ idHash: fakeHash(`${tag}-l${i}`), expiresAt: NOW + 1 + i }));
  },
  deleteBatch: (storage, limit) => storage.sessions.deleteExpired(NOW, limit),
  async countLive(storage, live, tag) {
    let n = 0;
    for (let i = 0; i < live; i++) if (await storage.sessions.get(fakeHash(`${tag}-l${i}`))) n++;
    return n;
  },
};

const attempts: Prunable = {
  name: "attempts",
  async seed(storage, expired, live, tag) {
    for (let i = 0; i < expired; i++) await storage.attempts.increment(attemptKey(`${tag}-x${i}`), NOW - WINDOW_MS - i, WINDOW_MS);
    for (let i = 0; i < live; i++) await storage.attempts.increment(attemptKey(`${tag}-l${i}`), NOW - WINDOW_MS + 1 + i, WINDOW_MS);
  },
  deleteBatch: (storage, limit) => storage.attempts.deleteExpired(NOW - WINDOW_MS, limit),
  async countLive(storage, live, tag) {
    let n = 0;
    for (let i = 0; i < live; i++) if (await storage.attempts.get(attemptKey(`${tag}-l${i}`))) n++;
    return n;
  },
};

const revokedTokens: Prunable = {
  name: "revokedTokens",
  async seed(storage, expired, live, tag) {
    for (let i = 0; i < expired; i++) await storage.revokedTokens.add(`${tag}-x${i}`, NOW - i);
    for (let i = 0; i < live; i++) await storage.revokedTokens.add(`${tag}-l${i}`, NOW + 1 + i);
  },
  deleteBatch: (storage, limit) => storage.revokedTokens.deleteExpired(NOW, limit),
  async countLive(storage, live, tag) {
    let n = 0;
    for (let i = 0; i < live; i++) if (await storage.revokedTokens.has(`${tag}-l${i}`)) n++;
    return n;
  },
};

const assertionJtis: Prunable = {
  name: "assertionJtis",
  async seed(storage, expired, live, tag) {
    for (let i = 0; i < expired; i++) await storage.assertionJtis.use(`${tag}-x${i}`, NOW - i);
    for (let i = 0; i < live; i++) await storage.assertionJtis.use(`${tag}-l${i}`, NOW + 1 + i);
  },
  deleteBatch: (storage, limit) => storage.assertionJtis.deleteExpired(NOW, limit),
  async countLive(storage, live, tag) {
    let n = 0;
    // A recorded key refuses a second use; a missing one would be recorded (and is not counted).
    for (let i = 0; i < live; i++) if (!(await storage.assertionJtis.use(`${tag}-l${i}`, NOW + 1 + i))) n++;
    return n;
  },
};

const STORES = [refreshTokens, sessions, attempts, revokedTokens, assertionJtis];

/** The counts of a prune that finds nothing to delete. */
const NOTHING_PRUNED: PruneCounts = { refreshTokens: 0, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: true };

/** Calls deleteBatch until a batch comes back short, as `prune` does; returns every batch's count. */
async function drain(p: Prunable, storage: Storage, limit: number): Promise<number[]> {
  const counts: number[] = [];
  for (;;) {
    const n = await p.deleteBatch(storage, limit);
    counts.push(n);
    if (n < limit) return counts;
  }
}

export function pruneSuite(s: SuiteContext): void {
  describe("housekeeping (deleteExpired batches, prune)", { timeout: RACES_TIMEOUT }, () => {
    for (const p of STORES) {
      it(`${p.name}.deleteExpired(now, limit) deletes at most limit per call, the live records stay`, async () => {
        await seedOwners(s.storage());
        await p.seed(s.storage(), 7, 3, "b");
        expect(await p.deleteBatch(s.storage(), 3), "first batch").toBe(3);
        expect(await p.deleteBatch(s.storage(), 3), "second batch").toBe(3);
        expect(await p.deleteBatch(s.storage(), 3), "a short batch: the backlog is done").toBe(1);
        expect(await p.deleteBatch(s.storage(), 3), "nothing left").toBe(0);
        expect(await p.countLive(s.storage(), 3, "b"), "live records kept").toBe(3);
        expect(await p.deleteBatch(s.storage()), "without a limit: nothing left either").toBe(0);
      });

      it(`${p.name}: two pruners at once delete each expired record once (their counts add up), the live records stay`, async () => {
        await seedOwners(s.storage());
        await p.seed(s.storage(), 40, 5, "c");
        // One pruner per instance where the target can open a second one (README: two instances may prune at once).
        const runs = await withOtherInstance(s, (other) => inParallel(2, (i) => drain(p, i === 0 ? s.storage() : other, 4)));
        const total = runs.flat().reduce((a, b) => a + b, 0);
        expect(total, `deleted by both (batches: ${JSON.stringify(runs)})`).toBe(40);
        expect(await p.deleteBatch(s.storage(), 4), "nothing expired is left").toBe(0);
        expect(await p.countLive(s.storage(), 5, "c"), "live records kept").toBe(5);
      });
    }

    it("refreshTokens.deleteExpired(now, limit) counts a token that meets both rules once: a batch spanning the rules is full while tokens are left", async () => {
      const store = s.storage().refreshTokens;
      await seedOwners(s.storage());
      const token = (label: string, expiresAt: number, familyExpiresAt: number, consumedAt: number | null = null) =>
        refreshRecord({ tokenHash: fakeHash(`o-${label}`), familyId: `o-f-${label}`, expiresAt, familyExpiresAt, consumedAt });
      // Of the family rule only (consumed); of both rules (unused, past both expiries, the earliest
      // sliding expiries); of the sliding rule only (live families). A store that picks a batch from
      // both rules at once (SQLite, D1: one statement) must not pick a token twice and so delete
      // fewer than `limit` while tokens are left: prune would take that short batch for the last.
      const gone = [
        token("family", NOW + DAY, NOW, NOW - DAY),
        ...[0, 1, 2].map((i) => token(`both-${i}`, NOW - 3 * DAY + i, NOW - DAY)),
        ...[0, 1, 2].map((i) => token(`sliding-${i}`, NOW - DAY + i, NOW + DAY)),
      ];
      const kept = [token("consumed-live-family", NOW - 1, NOW + 1, NOW - DAY), token("live", NOW + 1, NOW + DAY)];
      for (const t of [...gone, ...kept]) await store.create(t);
      expect(await drain(refreshTokens, s.storage(), 5)).toEqual([5, 2]);
      expect(await store.deleteExpired(NOW, 5), "nothing left").toBe(0);
      for (const t of gone) expect(await store.findByHash(t.tokenHash), t.tokenHash).toBeNull();
      for (const t of kept) expect(await store.findByHash(t.tokenHash), t.tokenHash).toEqual(t);
    });

    /** Seeds every store; an app whose clock says NOW prunes it. */
    const seedAll = async (storage: Storage, expired: number) => {
      await seedOwners(storage);
      for (const p of STORES) await p.seed(storage, expired, 2, "p");
      // The older key was replaced at T0 + DAY, longer ago than any token lives: prunable.
      await storage.signingKeys.create(signingKeyRecord({ kid: "old", createdAt: T0 }));
      await storage.signingKeys.create(signingKeyRecord({ kid: "new", createdAt: T0 + DAY }));
      // Replaced only a moment ago: still verifies tokens it signed.
      await storage.signingKeys.create(signingKeyRecord({ kid: "newest", createdAt: NOW - 1000 }));
    };
    const appAt = (storage: Storage) =>
      createPlantgate({ storage, clock: () => NOW, bruteForce: { windowSeconds: WINDOW_MS / 1000 }, logger: { error() {}, warn() {} } });

    it("admin.prune() deletes what can never matter again, in batches, and returns the counts per aggregate", async () => {
      await seedAll(s.storage(), 25);
      const counts = await appAt(s.storage()).admin.prune({ batchSize: 10 });
      expect(counts).toStrictEqual({ refreshTokens: 25, sessions: 25, attempts: 25, revokedTokens: 25, assertionJtis: 25, signingKeys: 1, auditEvents: 0, complete: true } satisfies PruneCounts);
      for (const p of STORES) expect(await p.countLive(s.storage(), 2, "p"), `${p.name}: live records kept`).toBe(2);
      expect((await s.storage().signingKeys.list()).map((k) => k.kid).sort()).toEqual(["new", "newest"]);
      expectRecord(await s.storage().attempts.get(attemptKey("p-l0")), { key: attemptKey("p-l0"), count: 1, windowStart: NOW - WINDOW_MS + 1 });
      expect(await appAt(s.storage()).admin.prune(), "a second prune finds nothing").toStrictEqual(NOTHING_PRUNED);
    });

    it("admin.prune({ maxBatches }) serves the stores in turn, one batch each per round, and says whether work was left", async () => {
      await seedAll(s.storage(), 25);
      const app = appAt(s.storage());
      // The prunable signing key's delete is a batch of the 7 (since 2026-12-02; it was outside the
      // budget), then round 1 gives each store a batch of 10 (the family rows a batch where the
      // store keeps them) while the budget lasts; 7 batches end the run inside round 2 at most,
      // whatever order. With 7 stores (the family rows and an audit store) the audit events, last
      // in the round, wait for the next run.
      const first = await app.admin.prune({ batchSize: 10, maxBatches: 7 });
      expect(first.complete, JSON.stringify(first)).toBe(false);
      // Every store made progress, none was drained alone: at least 10 and at most 20 each.
      for (const k of ["refreshTokens", "sessions", "attempts", "revokedTokens", "assertionJtis"] as const) {
        expect(first[k], `${k} after the first run: ${JSON.stringify(first)}`).toBeGreaterThanOrEqual(10);
        expect(first[k], `${k} after the first run: ${JSON.stringify(first)}`).toBeLessThanOrEqual(20);
      }
      expect(first.signingKeys, "the signing keys go first, a delete a batch of the budget").toBe(1);
      // Later runs finish the rest; the total is what one unbounded run deletes.
      const totals = { ...first };
      let runs = 1;
      for (let last = first; !last.complete; runs++) {
        expect(runs, "the backlog is worked off in a few runs").toBeLessThan(10);
        last = await app.admin.prune({ batchSize: 10, maxBatches: 7 });
        for (const k of ["refreshTokens", "sessions", "attempts", "revokedTokens", "assertionJtis", "signingKeys", "auditEvents"] as const) totals[k] += last[k];
      }
      expect({ ...totals, complete: true }).toStrictEqual({ refreshTokens: 25, sessions: 25, attempts: 25, revokedTokens: 25, assertionJtis: 25, signingKeys: 1, auditEvents: 0, complete: true } satisfies PruneCounts);
      for (const p of STORES) expect(await p.countLive(s.storage(), 2, "p"), `${p.name}: live records kept`).toBe(2);
      expect(await app.admin.prune({ batchSize: 10, maxBatches: 7 }), "a run after finds nothing").toStrictEqual(NOTHING_PRUNED);
    });

    it("admin.prune({ maxBatches }): the ended families' rows take no batch while the tokens have work and none of their families has ended", async () => {
      await seedOwners(s.storage());
      // 100 unused tokens past their sliding expiry in live families: each token batch frees no family row.
      for (let i = 0; i < 100; i++) await s.storage().refreshTokens.create(refreshRecord({ tokenHash: fakeHash(`s-x${i}`), familyId: `s-f${i}`, expiresAt: NOW - 1, familyExpiresAt: NOW + DAY }));
      const storage = s.storage();
      // Round 1: a batch per store (tokens, family rows where kept, sessions, counters, revoked jtis,
      // assertion jtis, audit events where kept or pruned); the family rows' comes back empty, so the rest of
      // the budget is the tokens'.
      const round = 5 + (storage.refreshTokens.deleteEndedFamilies ? 1 : 0) + (storage.audit ?? storage.auditPrune ? 1 : 0);
      const counts = await appAt(storage).admin.prune({ batchSize: 10, maxBatches: 10 });
      expect(counts).toStrictEqual({ ...NOTHING_PRUNED, refreshTokens: 10 * (1 + 10 - round), complete: false });
    });

    it("refreshTokens.deleteEndedFamilies (optional): at most limit rows per call, only families past their absolute expiry with no token left", async (ctx) => {
      const store = s.storage().refreshTokens;
      if (store.deleteEndedFamilies === undefined) return ctx.skip();
      await seedOwners(s.storage());
      // 13 families past their absolute expiry, each with one token; 2 live families.
      for (let i = 0; i < 13; i++) await store.create(refreshRecord({ tokenHash: fakeHash(`f-x${i}`), familyId: `f-fx${i}`, expiresAt: NOW + DAY, familyExpiresAt: NOW, consumedAt: NOW - DAY }));
      for (let i = 0; i < 2; i++) await store.create(refreshRecord({ tokenHash: fakeHash(`f-l${i}`), familyId: `f-fl${i}`, expiresAt: NOW + DAY, familyExpiresAt: NOW + 1 }));
      expect(await store.deleteEndedFamilies(NOW, 5), "their tokens are still there: nothing to delete").toBe(0);
      expect(await drain(refreshTokens, s.storage(), 5)).toEqual([5, 5, 3]);
      const rows: number[] = [];
      do rows.push(await store.deleteEndedFamilies(NOW, 5));
      while (rows.at(-1) === 5);
      expect(rows).toEqual([5, 5, 3]);
      expect(await store.deleteEndedFamilies(NOW, 5), "nothing left").toBe(0);
      // The live families' rows are there: revoking the account (which starts from them) reaches their tokens.
      await store.revokeByAccount("acct-1", NOW);
      for (let i = 0; i < 2; i++) expect((await store.findByHash(fakeHash(`f-l${i}`)))?.revokedAt, `f-l${i}`).toBe(NOW);
      await expect(store.deleteEndedFamilies(NOW, 0)).rejects.toThrow(TypeError);
    });

    it("two apps pruning one store at once: each record is deleted once and the counts add up", async () => {
      await seedAll(s.storage(), 20);
      // The two apps on two instances of the store where the target can open a second one.
      const [a, b] = await withOtherInstance(s, (other) => inParallel(2, (i) => appAt(i === 0 ? s.storage() : other).admin.prune({ batchSize: 3 })));
      const sum = (k: Exclude<keyof PruneCounts, "complete">) => a![k] + b![k];
      expect({
        refreshTokens: sum("refreshTokens"),
        sessions: sum("sessions"),
        attempts: sum("attempts"),
        revokedTokens: sum("revokedTokens"),
        assertionJtis: sum("assertionJtis"),
        signingKeys: sum("signingKeys"),
      }).toStrictEqual({ refreshTokens: 20, sessions: 20, attempts: 20, revokedTokens: 20, assertionJtis: 20, signingKeys: 1 });
      for (const p of STORES) expect(await p.countLive(s.storage(), 2, "p"), `${p.name}: live records kept`).toBe(2);
    });
  });
}
