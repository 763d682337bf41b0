import type { RefreshTokenRecord } from "@plantgate/core";
import { beforeEach, describe, expect, it } from "vitest";
import { DAY, expectRecord, fakeHash, MAX_DATE_MS, refreshRecord, seedOwners, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

export function refreshTokensSuite(s: SuiteContext): void {
  describe("refreshTokens", () => {
    const tokens = () => s.storage().refreshTokens;
    // Every token points at a client and an account that exist, as the core's always do.
    beforeEach(() => seedOwners(s.storage()));

    const create = async (...records: RefreshTokenRecord[]) => {
      for (const r of records) await tokens().create(structuredClone(r));
    };
    /** Asserts each record is stored exactly as given. */
    const expectStored = async (...records: RefreshTokenRecord[]) => {
      for (const r of records) expectRecord(await tokens().findByHash(r.tokenHash), r, `token ${r.familyId}/${r.tokenHash.slice(0, 6)}`);
    };
    const expectAbsent = async (...hashes: string[]) => {
      for (const h of hashes) expect(await tokens().findByHash(h), `token ${h.slice(0, 6)} should be absent`).toBeNull();
    };

    it("findByHash returns null for an unknown hash", async () => {
      expect(await tokens().findByHash(fakeHash("unknown"))).toBeNull();
    });

    it("create then findByHash round-trips exactly: scope arrays in order, nulls, epoch ms beyond 32 bits", async () => {
      const a = refreshRecord();
      const b = refreshRecord({
        tokenHash: fakeHash("rt-2"),
        familyId: "family-2",
        clientId: "client-b",
        accountId: "acct-2",
        scope: ["offline_access", "Platform_AllAppsServerCommands", "Platform_UserAPIs"],
        createdAt: MAX_DATE_MS - 2,
        expiresAt: MAX_DATE_MS - 1,
        familyExpiresAt: MAX_DATE_MS,
        consumedAt: T0 + 1,
        revokedAt: MAX_DATE_MS - 3,
      });
      const c = refreshRecord({ tokenHash: fakeHash("rt-3"), scope: [] });
      await create(a, b, c);
      await expectStored(a, b, c);
    });

    it("clientGeneration (contract change, 2026-12-02) comes back as stored, through create and a consume's replacement; a record without one comes back without one", async () => {
      const a = refreshRecord({ tokenHash: fakeHash("rt-gen-a"), familyId: "family-gen", clientGeneration: "Zx-9_aB3cD4eF5gH" });
      const legacy = refreshRecord({ tokenHash: fakeHash("rt-gen-legacy"), familyId: "family-gen-legacy" });
      await create(a, legacy);
      await expectStored(a, legacy);
      const next = refreshRecord({ tokenHash: fakeHash("rt-gen-next"), familyId: "family-gen", createdAt: T0 + 5, clientGeneration: "zX-9_Ab3Cd4Ef5Gh" });
      expect(await tokens().consume(a.tokenHash, T0 + 5, structuredClone(next))).toBe(true);
      await expectStored(next, { ...a, consumedAt: T0 + 5 });
    });

    it("hashes are exact and case-sensitive", async () => {
      const lower = refreshRecord({ tokenHash: "abcdefghijklmnopqrstuvwxyz0123456789-_ABCDE" });
      await create(lower);
      await expectAbsent("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_abcde", "abcdefghijklmnopqrstuvwxyz0123456789-_ABCDe");
      await expectStored(lower);
    });

    it("keys of both forms are stored whole and told apart: 54 characters (issue time + SHA-256) and 43 (SHA-256 alone, tokens from before the time prefix)", async () => {
      // The core's keys (`refreshTokenKey`): 11 hex digits of the issue time, then the SHA-256.
      const hash = fakeHash("rt-timed");
      const timed = refreshRecord({ tokenHash: `19b7c8d0e00${hash}`, familyId: "family-timed" });
      const sameTime = refreshRecord({ tokenHash: `19b7c8d0e00${fakeHash("rt-timed-2")}`, familyId: "family-timed-2" });
      const legacy = refreshRecord({ tokenHash: hash, familyId: "family-legacy" });
      // Created out of time order: the store must not rely on keys arriving sorted.
      const earlier = refreshRecord({ tokenHash: `19b7c8d0dff${fakeHash("rt-earlier")}`, familyId: "family-earlier" });
      await create(timed, legacy, sameTime, earlier);
      await expectStored(timed, sameTime, legacy, earlier);
      // Neither a key's prefix nor one character more or less finds anything.
      await expectAbsent(timed.tokenHash.slice(0, 53), `${timed.tokenHash}A`, `19b7c8d0e01${hash}`, timed.tokenHash.slice(0, 11));
      const replacement = refreshRecord({ tokenHash: `19b7c8d0e05${fakeHash("rt-timed-next")}`, familyId: "family-timed", createdAt: T0 + DAY });
      expect(await tokens().consume(timed.tokenHash, T0 + DAY, structuredClone(replacement))).toBe(true);
      await expectStored({ ...timed, consumedAt: T0 + DAY }, replacement, legacy, sameTime, earlier);
    });

    it("consume returns true once: it marks the token consumed at `now` and stores the replacement exactly", async () => {
      const original = refreshRecord();
      const replacement = refreshRecord({ tokenHash: fakeHash("rt-next"), createdAt: T0 + DAY, expiresAt: T0 + 8 * DAY });
      await create(original);
      expect(await tokens().consume(original.tokenHash, T0 + DAY, structuredClone(replacement))).toBe(true);
      await expectStored({ ...original, consumedAt: T0 + DAY }, replacement);
    });

    it("consume of an already consumed token returns false, keeps the first consumedAt and does not store the replacement", async () => {
      const original = refreshRecord();
      const first = refreshRecord({ tokenHash: fakeHash("first") });
      const second = refreshRecord({ tokenHash: fakeHash("second") });
      await create(original);
      expect(await tokens().consume(original.tokenHash, T0 + 10, first)).toBe(true);
      expect(await tokens().consume(original.tokenHash, T0 + 20, second)).toBe(false);
      await expectStored({ ...original, consumedAt: T0 + 10 }, first);
      await expectAbsent(second.tokenHash);
    });

    it("consume of a token stored as consumed returns false and stores nothing", async () => {
      const consumed = refreshRecord({ consumedAt: T0 + 1 });
      const replacement = refreshRecord({ tokenHash: fakeHash("repl") });
      await create(consumed);
      expect(await tokens().consume(consumed.tokenHash, T0 + 2, replacement)).toBe(false);
      await expectStored(consumed);
      await expectAbsent(replacement.tokenHash);
    });

    it("consume of a revoked token returns false, changes nothing and does not store the replacement", async () => {
      const revoked = refreshRecord({ revokedAt: T0 + 1 });
      const replacement = refreshRecord({ tokenHash: fakeHash("repl") });
      await create(revoked);
      expect(await tokens().consume(revoked.tokenHash, T0 + 2, replacement)).toBe(false);
      await expectStored(revoked);
      await expectAbsent(replacement.tokenHash);
    });

    it("consume of an unknown hash returns false and does not store the replacement", async () => {
      const replacement = refreshRecord({ tokenHash: fakeHash("repl") });
      expect(await tokens().consume(fakeHash("unknown"), T0, replacement)).toBe(false);
      await expectAbsent(replacement.tokenHash, fakeHash("unknown"));
    });

    it("a rotation chain: each replacement can itself be consumed once", async () => {
      const hashes = ["r0", "r1", "r2", "r3"].map(fakeHash);
      const chain = hashes.map((tokenHash, i) => refreshRecord({ tokenHash, createdAt: T0 + i }));
      await create(chain[0]!);
      for (let i = 1; i < chain.length; i++) {
        expect(await tokens().consume(hashes[i - 1]!, T0 + i, chain[i]!), `consume r${i - 1}`).toBe(true);
        expect(await tokens().consume(hashes[i - 1]!, T0 + i, refreshRecord({ tokenHash: fakeHash(`spare${i}`) })), `again r${i - 1}`).toBe(false);
      }
      await expectStored(...chain.slice(0, -1).map((r, i) => ({ ...r, consumedAt: T0 + i + 1 })), chain[3]!);
      await expectAbsent(fakeHash("spare1"), fakeHash("spare2"), fakeHash("spare3"));
    });

    it("revokeFamily marks every token of that family revoked at `now`, and nothing else", async () => {
      const f1a = refreshRecord({ tokenHash: fakeHash("f1a"), familyId: "f1", consumedAt: T0 + 5 });
      const f1b = refreshRecord({ tokenHash: fakeHash("f1b"), familyId: "f1", clientId: "client-b" });
      const f2 = refreshRecord({ tokenHash: fakeHash("f2"), familyId: "f2" });
      const f10 = refreshRecord({ tokenHash: fakeHash("f10"), familyId: "f10" }); // a prefix match would hit it
      await create(f1a, f1b, f2, f10);
      await tokens().revokeFamily("f1", T0 + 100);
      await expectStored({ ...f1a, revokedAt: T0 + 100 }, { ...f1b, revokedAt: T0 + 100 }, f2, f10);
    });

    it("revokeFamily is idempotent: a second call keeps the first revokedAt; an unknown family is a no-op", async () => {
      const t = refreshRecord({ familyId: "f1" });
      await create(t);
      await tokens().revokeFamily("f1", T0 + 100);
      await tokens().revokeFamily("f1", T0 + 200);
      await tokens().revokeFamily("no-such-family", T0 + 300);
      await expectStored({ ...t, revokedAt: T0 + 100 });
    });

    it("revokeFamily (contract change, 2026-12-02) resolves to true when it revoked a token and to false when it revoked none (the family revoked already, or unknown)", async () => {
      const a = refreshRecord({ tokenHash: fakeHash("rf-a"), familyId: "f1", consumedAt: T0 + 5 });
      const b = refreshRecord({ tokenHash: fakeHash("rf-b"), familyId: "f1" });
      await create(a, b);
      expect(await tokens().revokeFamily("f1", T0 + 100), "first revocation").toBe(true);
      expect(await tokens().revokeFamily("f1", T0 + 100), "again, the same now").toBe(false);
      expect(await tokens().revokeFamily("f1", T0 + 200), "again, later").toBe(false);
      expect(await tokens().revokeFamily("F1", T0 + 300), "another family (case differs)").toBe(false);
      expect(await tokens().revokeFamily("no-such-family", T0 + 300), "an unknown family").toBe(false);
      await expectStored({ ...a, revokedAt: T0 + 100 }, { ...b, revokedAt: T0 + 100 });
    });

    it("after revokeFamily, consume of its live token returns false and stores nothing", async () => {
      const live = refreshRecord({ familyId: "f1" });
      const replacement = refreshRecord({ tokenHash: fakeHash("repl"), familyId: "f1" });
      await create(live);
      await tokens().revokeFamily("f1", T0 + 1);
      expect(await tokens().consume(live.tokenHash, T0 + 2, replacement)).toBe(false);
      await expectStored({ ...live, revokedAt: T0 + 1 });
      await expectAbsent(replacement.tokenHash);
    });

    it("revokeByAccount marks every token of that account revoked (across families and clients), and nothing else", async () => {
      const a1 = refreshRecord({ tokenHash: fakeHash("a1"), familyId: "f1", accountId: "acct-1" });
      const a2 = refreshRecord({ tokenHash: fakeHash("a2"), familyId: "f2", accountId: "acct-1", clientId: "client-b", consumedAt: T0 + 3 });
      const already = refreshRecord({ tokenHash: fakeHash("a3"), familyId: "f3", accountId: "acct-1", revokedAt: T0 + 7 });
      const other = refreshRecord({ tokenHash: fakeHash("b1"), familyId: "f4", accountId: "acct-2" });
      await create(a1, a2, already, other);
      await tokens().revokeByAccount("acct-1", T0 + 50);
      await expectStored({ ...a1, revokedAt: T0 + 50 }, { ...a2, revokedAt: T0 + 50 }, already, other);
      // Idempotent, and an account without tokens is a no-op.
      await tokens().revokeByAccount("acct-1", T0 + 60);
      await tokens().revokeByAccount("acct-none", T0 + 60);
      await expectStored({ ...a1, revokedAt: T0 + 50 }, { ...a2, revokedAt: T0 + 50 }, already, other);
    });

    it("revokeFamily and revokeByAccount compare ids exactly (code units: no case folding, no trailing-space padding)", async () => {
      // Family ids are mixed-case base64url: a case-insensitive collation would revoke another user's family.
      const upper = refreshRecord({ tokenHash: fakeHash("Fam-upper"), familyId: "Fam-A", accountId: "acct-1" });
      const lower = refreshRecord({ tokenHash: fakeHash("fam-lower"), familyId: "fam-a", accountId: "acct-2" });
      const padded = refreshRecord({ tokenHash: fakeHash("fam-padded"), familyId: "Fam-A ", accountId: "acct-2" });
      await create(upper, lower, padded);
      await tokens().revokeFamily("Fam-A", T0 + 10);
      await expectStored({ ...upper, revokedAt: T0 + 10 }, lower, padded);
      const mine = refreshRecord({ tokenHash: fakeHash("acct-upper"), familyId: "fx", accountId: "ACCT-9" });
      const theirs = refreshRecord({ tokenHash: fakeHash("acct-lower"), familyId: "fy", accountId: "acct-9" });
      const spaced = refreshRecord({ tokenHash: fakeHash("acct-spaced"), familyId: "fz", accountId: "ACCT-9 " });
      await create(mine, theirs, spaced);
      await tokens().revokeByAccount("ACCT-9", T0 + 20);
      await expectStored({ ...upper, revokedAt: T0 + 10 }, lower, padded, { ...mine, revokedAt: T0 + 20 }, theirs, spaced);
    });

    it("deleteExpired deletes exactly the tokens with familyExpiresAt <= now, or unconsumed with expiresAt <= now, and returns how many", async () => {
      const now = T0 + 10 * DAY;
      const token = (label: string, expiresAt: number, familyExpiresAt: number, extra: Partial<RefreshTokenRecord> = {}) =>
        refreshRecord({ tokenHash: fakeHash(label), familyId: `fam-${label}`, expiresAt, familyExpiresAt, ...extra });
      const gone = [
        token("sliding-past", now - 1, now + DAY),
        token("sliding-at-now", now, now + DAY),
        token("family-at-now", now + 5, now),
        token("family-past", now + 5, now - 1),
        token("both-past", now - DAY, now - DAY),
        token("revoked-expired", now - 1, now + DAY, { revokedAt: now - 2 }),
        token("consumed-family-at-now", now - DAY, now, { consumedAt: now - 2 * DAY }),
        token("consumed-revoked-family-past", now - DAY, now - 1, { consumedAt: now - 2 * DAY, revokedAt: now - DAY }),
      ];
      const kept = [
        token("sliding-just-after", now + 1, now + DAY),
        token("family-just-after", now + DAY, now + 1),
        token("consumed-live", now + DAY, now + 2 * DAY, { consumedAt: now - 1 }),
        // Rotated, past its own sliding expiry, family still live: presenting it again must still
        // be recognised as reuse (and revoke the family), so it stays until the family ends.
        token("consumed-expired-family-live", now - 1, now + 1, { consumedAt: now - 3 }),
        token("consumed-revoked-expired-family-live", now - DAY, now + DAY, { consumedAt: now - 2 * DAY, revokedAt: now - 1 }),
        token("revoked-live", now + DAY, now + 2 * DAY, { revokedAt: now - 1 }),
        token("far-future", MAX_DATE_MS, MAX_DATE_MS),
      ];
      await create(...gone, ...kept);
      expect(await tokens().deleteExpired(now)).toBe(gone.length);
      await expectAbsent(...gone.map((r) => r.tokenHash));
      await expectStored(...kept);
      expect(await tokens().deleteExpired(now), "a second run deletes nothing").toBe(0);
    });

    it("revokeByAccount and deleteExpired go by each token's own accountId and familyExpiresAt, also within one family and across a rotation that changes them", async () => {
      // The core keeps them per family; a backend that indexes tokens by family must still answer
      // for each token (plantgate's SQL store finds them through a table of families).
      const now = T0 + 10 * DAY;
      const mixed = (label: string, accountId: string, familyExpiresAt: number) =>
        refreshRecord({ tokenHash: fakeHash(label), familyId: "mixed", accountId, expiresAt: now + DAY, familyExpiresAt, consumedAt: now - DAY });
      const a = mixed("m-a", "acct-1", now + DAY);
      const b = mixed("m-b", "acct-2", now - 1);
      const c = mixed("m-c", "acct-1", now);
      const live = refreshRecord({ tokenHash: fakeHash("m-live"), familyId: "mixed", accountId: "acct-1", expiresAt: now + DAY, familyExpiresAt: now + DAY });
      // Its replacement in another family, of another account, with another absolute expiry.
      const moved = refreshRecord({ tokenHash: fakeHash("m-moved"), familyId: "elsewhere", accountId: "acct-2", expiresAt: now + DAY, familyExpiresAt: now - 2 });
      await create(a, b, c, live);
      expect(await tokens().consume(live.tokenHash, now - 5, structuredClone(moved))).toBe(true);
      await tokens().revokeByAccount("acct-2", now - 4);
      await expectStored(a, { ...b, revokedAt: now - 4 }, c, { ...live, consumedAt: now - 5 }, { ...moved, revokedAt: now - 4 });
      expect(await tokens().deleteExpired(now)).toBe(3);
      await expectAbsent(b.tokenHash, c.tokenHash, moved.tokenHash);
      await expectStored(a, { ...live, consumedAt: now - 5 });
      expect(await tokens().deleteExpired(now), "a second run deletes nothing").toBe(0);
      // The family's tokens left are still found by account.
      await tokens().revokeByAccount("acct-1", now + 1);
      await expectStored({ ...a, revokedAt: now + 1 }, { ...live, consumedAt: now - 5, revokedAt: now + 1 });
    });

    it("deleteExpired on a store without tokens returns 0", async () => {
      expect(await tokens().deleteExpired(MAX_DATE_MS)).toBe(0);
    });

    it("stores copies: mutating the records passed in, or one returned, changes nothing stored", async () => {
      const original = refreshRecord();
      const replacement = refreshRecord({ tokenHash: fakeHash("repl") });
      const input = structuredClone(original);
      const replacementInput = structuredClone(replacement);
      await tokens().create(input);
      input.scope.push("mutated");
      input.consumedAt = 1;
      (await tokens().findByHash(original.tokenHash))!.scope.push("mutated");
      expect(await tokens().consume(original.tokenHash, T0 + 1, replacementInput)).toBe(true);
      replacementInput.scope.length = 0;
      replacementInput.revokedAt = 1;
      await expectStored({ ...original, consumedAt: T0 + 1 }, replacement);
    });
  });
}
