import { describe, expect, it } from "vitest";
import { DAY, MAX_DATE_MS, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

/** A `jti` as the core makes them: 43 base64url characters (or any id up to 64 characters). */
const jti = (n: number) => `jti-${String(n).padStart(4, "0")}-${"x".repeat(34)}`;

export function revokedTokensSuite(s: SuiteContext): void {
  describe("revokedTokens", () => {
    const revoked = () => s.storage().revokedTokens;

    it("has returns false for a jti never added", async () => {
      expect(await revoked().has(jti(1))).toBe(false);
    });

    it("add then has: true for that jti only (exact and case-sensitive); 64-character jtis work", async () => {
      const long = "J".repeat(64);
      await revoked().add(jti(1), T0 + DAY);
      await revoked().add(long, MAX_DATE_MS);
      expect(await revoked().has(jti(1))).toBe(true);
      expect(await revoked().has(long)).toBe(true);
      expect(await revoked().has(jti(2))).toBe(false);
      expect(await revoked().has(jti(1).toUpperCase())).toBe(false);
      expect(await revoked().has(long.slice(0, 63))).toBe(false);
      expect(await revoked().has(`${jti(1)} `)).toBe(false);
    });

    it("a revoked grant's entry (`sid:` and a refresh family id, since 2026-12-01) is a key like a jti: kept, told apart, swept at its expiresAt", async () => {
      const family = "sid:Fam1ly-Id_0123456789ab";
      await revoked().add(family, T0 + 100);
      await revoked().add(jti(1), T0 + 200);
      expect([await revoked().has(family), await revoked().has("sid:Fam1ly-Id_0123456789aB"), await revoked().has("Fam1ly-Id_0123456789ab")]).toEqual([true, false, false]);
      expect(await revoked().deleteExpired(T0 + 100)).toBe(1);
      expect([await revoked().has(family), await revoked().has(jti(1))]).toEqual([false, true]);
    });

    it("add (contract change, 2026-12-02) resolves to true when it records the jti and to false when the jti is recorded already, whatever the expiresAt; true again once an expired entry is swept", async () => {
      expect(await revoked().add(jti(1), T0 + 100), "first add").toBe(true);
      expect(await revoked().add(jti(1), T0 + 100), "the same again").toBe(false);
      expect(await revoked().add(jti(1), T0 + 10 * DAY), "a later expiresAt").toBe(false);
      expect(await revoked().add(jti(1), T0 + 1), "an earlier expiresAt").toBe(false);
      expect(await revoked().add(jti(1).toUpperCase(), T0 + 100), "another jti (case differs)").toBe(true);
      expect(await revoked().add("sid:Fam1ly-Id_0123456789ab", T0 + 100), "a grant's entry").toBe(true);
      expect(await revoked().add("sid:Fam1ly-Id_0123456789ab", T0 + 100), "the grant's entry again").toBe(false);
      expect(await revoked().deleteExpired(T0 + 100)).toBe(3);
      expect(await revoked().add(jti(1), T0 + DAY), "added again after the sweep").toBe(true);
      expect(await revoked().has(jti(1))).toBe(true);
    });

    it("add is idempotent and keeps the first expiresAt (a later, longer one does not extend it)", async () => {
      await revoked().add(jti(1), T0 + 100);
      await revoked().add(jti(1), T0 + 10 * DAY);
      expect(await revoked().has(jti(1))).toBe(true);
      expect(await revoked().deleteExpired(T0 + 100), "deleted at the first expiresAt").toBe(1);
      expect(await revoked().has(jti(1))).toBe(false);
    });

    it("add is idempotent and keeps the first expiresAt (a later, shorter one does not cut it)", async () => {
      await revoked().add(jti(1), T0 + 10 * DAY);
      await revoked().add(jti(1), T0 + 100);
      expect(await revoked().deleteExpired(T0 + 100), "still kept until the first expiresAt").toBe(0);
      expect(await revoked().has(jti(1))).toBe(true);
      expect(await revoked().deleteExpired(T0 + 10 * DAY)).toBe(1);
    });

    it("deleteExpired deletes exactly the entries with expiresAt <= now, and returns how many", async () => {
      const now = T0 + 10 * DAY;
      const gone = [
        [jti(1), T0],
        [jti(2), now - 1],
        [jti(3), now],
      ] as const;
      const kept = [
        [jti(4), now + 1],
        [jti(5), MAX_DATE_MS],
      ] as const;
      for (const [id, exp] of [...gone, ...kept]) await revoked().add(id, exp);
      expect(await revoked().deleteExpired(now)).toBe(gone.length);
      for (const [id] of gone) expect(await revoked().has(id), id).toBe(false);
      for (const [id] of kept) expect(await revoked().has(id), id).toBe(true);
      expect(await revoked().deleteExpired(now), "a second run deletes nothing").toBe(0);
    });

    it("deleteExpired without a limit deletes every expired entry (30), not a batch of them", async () => {
      for (let i = 0; i < 30; i++) await revoked().add(jti(100 + i), T0 + i);
      await revoked().add(jti(200), T0 + DAY + 1);
      expect(await revoked().deleteExpired(T0 + DAY), "without a limit: all").toBe(30);
      expect(await revoked().deleteExpired(T0 + DAY), "a second run deletes nothing").toBe(0);
      expect(await revoked().has(jti(200))).toBe(true);
    });

    it("deleteExpired on an empty store returns 0", async () => {
      expect(await revoked().deleteExpired(MAX_DATE_MS)).toBe(0);
    });

    it("a jti deleted as expired can be added again", async () => {
      await revoked().add(jti(1), T0);
      expect(await revoked().deleteExpired(T0)).toBe(1);
      await revoked().add(jti(1), T0 + DAY);
      expect(await revoked().has(jti(1))).toBe(true);
      expect(await revoked().deleteExpired(T0 + DAY - 1)).toBe(0);
    });
  });
}
