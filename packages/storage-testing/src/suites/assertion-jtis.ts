import type { Storage } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { DAY, fakeHash, inParallel, MAX_DATE_MS, pause, RACES_TIMEOUT, T0, withOtherInstance } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

/** A key as the core makes them: SHA-256 (base64url, 43 characters) of client id and jti. */
const key = (n: number) => `k${String(n).padStart(4, "0")}-${"x".repeat(37)}`;

/** The prune's instant in the races below; a live jti expires a minute after it. */
const NOW = T0 + 40 * DAY;
const LIVE = NOW + 60_000;
/** Rounds of each race, uses of the contested key and expired bystanders per round. */
const ROUNDS = 30;
const USES = 8;
const EXPIRED = 6;

/** deleteExpired(NOW) in batches of `limit` until one comes back short, as `prune` calls it; the counts. */
async function drain(storage: Storage, limit: number | undefined): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await storage.assertionJtis.deleteExpired(NOW, limit);
    total += n;
    if (limit === undefined || n < limit) return total;
  }
}

/** Where the three pruners sit among the racers (between uses, so timer turns interleave them). */
const PRUNERS: readonly (number | undefined)[] = [1, 2, undefined];

/**
 * One round of a contested key: `USES` uses of it with a live expiry and three pruners (batches of
 * 1 and of 2, and one unbounded call), spread over two instances, the pruners started among the
 * uses and the uses at 0 to 2 ms (varied by round), so a use can land between one pruner's pick
 * and its delete; the bystanders (expired entries of other keys) keep the pruners busy meanwhile.
 * Returns how many uses got true and how many entries the pruners deleted.
 */
async function contest(stores: [Storage, Storage], contested: string, round: number): Promise<{ accepted: number; deleted: number }> {
  const calls = await inParallel<{ used: boolean } | { deleted: number }>(USES + PRUNERS.length, async (i) => {
    const store = stores[Math.floor(i / 2) % 2]!;
    if (i % 2 === 0 && i / 2 < PRUNERS.length) return { deleted: await drain(store, PRUNERS[i / 2]) };
    await pause((round + i) % 3);
    return { used: await store.assertionJtis.use(contested, LIVE) };
  });
  let accepted = 0;
  let deleted = 0;
  for (const c of calls) {
    if ("used" in c) accepted += c.used ? 1 : 0;
    else deleted += c.deleted;
  }
  return { accepted, deleted };
}

export function assertionJtisSuite(s: SuiteContext): void {
  describe("assertionJtis", () => {
    const jtis = () => s.storage().assertionJtis;

    it("use returns true the first time and false for the same key after (exact, case-sensitive keys)", async () => {
      expect(await jtis().use(key(1), T0 + DAY)).toBe(true);
      expect(await jtis().use(key(1), T0 + DAY)).toBe(false);
      expect(await jtis().use(key(1), MAX_DATE_MS), "a later expiry does not make it new").toBe(false);
      expect(await jtis().use(key(1).toUpperCase(), T0 + DAY)).toBe(true);
      expect(await jtis().use(`${key(1)} `, T0 + DAY)).toBe(true);
      expect(await jtis().use(key(2), MAX_DATE_MS)).toBe(true);
    });

    it("a repeated use changes nothing, not even the expiry: the key outlives a deleteExpired at the repeat's earlier expiry", async () => {
      const store = s.storage().assertionJtis;
      expect(await store.use(key(31), T0 + 60_000)).toBe(true);
      expect(await store.use(key(31), T0 + 1_000), "the repeat").toBe(false);
      expect(await store.deleteExpired(T0 + 1_000), "nothing of the repeat's expiry to delete").toBe(0);
      // Overwriting the expiry with the repeat's would let the assertion be replayed after this prune.
      expect(await store.use(key(31), T0 + 60_000), "still recorded").toBe(false);
    });

    it("a repeated use with a later expiry changes nothing either: the key is deleted at its first expiry", async () => {
      const store = s.storage().assertionJtis;
      expect(await store.use(key(32), T0 + 1_000)).toBe(true);
      expect(await store.use(key(32), T0 + DAY), "the repeat").toBe(false);
      expect(await store.deleteExpired(T0 + 1_000), "deleted at the first use's expiry").toBe(1);
      expect(await store.use(key(32), T0 + DAY), "a use after the sweep").toBe(true);
    });

    it("50 concurrent uses of one key: exactly one gets true", async () => {
      const results = await inParallel(50, () => jtis().use(key(7), T0 + DAY));
      expect(results.filter((r) => r === true)).toHaveLength(1);
    });

    it("deleteExpired deletes exactly the entries with expiresAt <= now, returns how many, and a deleted key can be used again", async () => {
      const now = T0 + 10 * DAY;
      for (const [k, exp] of [[key(1), T0], [key(2), now - 1], [key(3), now], [key(4), now + 1], [key(5), MAX_DATE_MS]] as const) await jtis().use(k, exp);
      expect(await jtis().deleteExpired(now)).toBe(3);
      expect(await jtis().deleteExpired(now), "a second run deletes nothing").toBe(0);
      expect(await jtis().use(key(4), now + 1), "kept").toBe(false);
      expect(await jtis().use(key(5), now + 1), "kept").toBe(false);
      expect(await jtis().use(key(2), now + DAY), "deleted, so new again").toBe(true);
    });

    // A jti not yet expired is never accepted twice, whatever deleteExpired calls run meanwhile
    // (README, "Writing a storage backend"): a sweep that deleted a row it picked as expired after
    // the key was recorded again (pick, then delete by key) would let the assertion be replayed.
    describe("use racing deleteExpired", { timeout: RACES_TIMEOUT }, () => {
      it(`a live jti used ${USES} times at once while three pruners sweep expired entries: exactly one use accepts it, in each of ${ROUNDS} rounds, and no sweep takes it`, async () => {
        await withOtherInstance(s, async (other) => {
          const stores: [Storage, Storage] = [s.storage(), other];
          for (let round = 0; round < ROUNDS; round++) {
            const contested = fakeHash(`live-${round}`);
            for (let i = 0; i < EXPIRED; i++) expect(await s.storage().assertionJtis.use(fakeHash(`live-${round}-x${i}`), NOW - i)).toBe(true);
            const { accepted, deleted } = await contest(stores, contested, round);
            expect(accepted, `round ${round}: uses that got true`).toBe(1);
            expect(deleted, `round ${round}: entries the pruners deleted (each expired one once)`).toBe(EXPIRED);
            expect(await drain(s.storage(), undefined), `round ${round}: nothing expired left, the live key not taken`).toBe(0);
            expect(await other.assertionJtis.use(contested, LIVE), `round ${round}: still recorded`).toBe(false);
          }
        });
      });

      it(`a jti whose expired entry is being swept, used again at once with a live expiry: one use accepts it over the race and a use after it, in each of ${ROUNDS} rounds`, async () => {
        // While the expired entry is there a use may still be refused (the store need not look at
        // expiries); once the sweep took it, exactly one use records the key again, and no sweep
        // running at the same time may delete that new, live entry.
        await withOtherInstance(s, async (other) => {
          const stores: [Storage, Storage] = [s.storage(), other];
          for (let round = 0; round < ROUNDS; round++) {
            const contested = fakeHash(`again-${round}`);
            expect(await s.storage().assertionJtis.use(contested, NOW - 1)).toBe(true);
            for (let i = 0; i < EXPIRED; i++) expect(await s.storage().assertionJtis.use(fakeHash(`again-${round}-x${i}`), NOW - i)).toBe(true);
            const { accepted, deleted } = await contest(stores, contested, round);
            expect(accepted, `round ${round}: uses that got true in the race`).toBeLessThanOrEqual(1);
            // The contested key's old entry is swept, unless a use took its place first (a store
            // may treat an expired entry as free): each expired entry once, never the live one.
            expect(deleted, `round ${round}: entries the pruners deleted (each expired one once)`).toBeGreaterThanOrEqual(EXPIRED);
            expect(deleted, `round ${round}: entries the pruners deleted (each expired one once, the contested key's old one at most)`).toBeLessThanOrEqual(EXPIRED + 1);
            expect(await drain(other, undefined), `round ${round}: nothing expired left, the live key not taken`).toBe(0);
            const after = (await s.storage().assertionJtis.use(contested, LIVE)) ? 1 : 0;
            expect(accepted + after, `round ${round}: uses that got true, the race's and the one after`).toBe(1);
            expect(await other.assertionJtis.use(contested, LIVE), `round ${round}: still recorded`).toBe(false);
          }
        });
      });
    });

    it("deleteExpired with a limit deletes at most that many", async () => {
      for (let i = 0; i < 5; i++) await jtis().use(key(i), T0 + i);
      expect(await jtis().deleteExpired(T0 + DAY, 2)).toBe(2);
      expect(await jtis().deleteExpired(T0 + DAY, 2)).toBe(2);
      expect(await jtis().deleteExpired(T0 + DAY, 2)).toBe(1);
    });
  });
}
