import { describe, expect, it } from "vitest";
import { DAY, inParallel, MAX_DATE_MS, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

/** A key as the core makes them: SHA-256 (base64url, 43 characters) of client id and jti. */
const key = (n: number) => `k${String(n).padStart(4, "0")}-${"x".repeat(37)}`;

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

    it("deleteExpired with a limit deletes at most that many", async () => {
      for (let i = 0; i < 5; i++) await jtis().use(key(i), T0 + i);
      expect(await jtis().deleteExpired(T0 + DAY, 2)).toBe(2);
      expect(await jtis().deleteExpired(T0 + DAY, 2)).toBe(2);
      expect(await jtis().deleteExpired(T0 + DAY, 2)).toBe(1);
    });
  });
}
