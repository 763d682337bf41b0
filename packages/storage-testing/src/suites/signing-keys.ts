import { generateKeyRecord, type SigningKeyRecord, type SigningKeyStore } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { byCodeUnit, expectRecords, inParallel, MAX_DATE_MS, RACES_TIMEOUT, signingKeyRecord, T0, withOtherInstance } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

export function signingKeysSuite(s: SuiteContext): void {
  describe("signingKeys", () => {
    const keys = () => s.storage().signingKeys;
    /** list() has no defined order; compare by kid. */
    const expectKeys = async (expected: SigningKeyRecord[]) => {
      const sort = (l: SigningKeyRecord[]) => [...l].sort((a, b) => byCodeUnit(a.kid, b.kid));
      expectRecords(sort(await keys().list()), sort(expected), "signing keys");
    };

    it("list returns [] on an empty store", async () => {
      expect(await keys().list()).toEqual([]);
    });

    it("create returns true and list round-trips every key exactly (JWK texts of several kB)", async () => {
      const a = signingKeyRecord({ kid: "kid-a" });
      const b = signingKeyRecord({ kid: "kid-b", alg: "ES256", createdAt: MAX_DATE_MS });
      expect(await keys().create(a)).toBe(true);
      expect(await keys().create(b)).toBe(true);
      expect(a.privateJwk.length).toBeGreaterThan(4000);
      await expectKeys([a, b]);
    });

    it("a real generated key round-trips byte for byte", async () => {
      const record = await generateKeyRecord("ES256", T0);
      expect(await keys().create(record)).toBe(true);
      await expectKeys([record]);
    });

    it("create returns false for an existing kid and leaves the first key unchanged", async () => {
      const first = signingKeyRecord({ kid: "same" });
      expect(await keys().create(first)).toBe(true);
      expect(await keys().create(signingKeyRecord({ kid: "same", alg: "ES256", privateJwk: "{}", publicJwk: "{}", createdAt: T0 + 1 }))).toBe(false);
      await expectKeys([first]);
    });

    it("delete removes the key and returns true; again, or for an unknown kid, false", async () => {
      const keep = signingKeyRecord({ kid: "keep" });
      await keys().create(signingKeyRecord({ kid: "old" }));
      await keys().create(keep);
      expect(await keys().delete("old")).toBe(true);
      await expectKeys([keep]);
      expect(await keys().delete("old")).toBe(false);
      expect(await keys().delete("never")).toBe(false);
      await expectKeys([keep]);
    });

    it("kids are case-sensitive", async () => {
      const lower = signingKeyRecord({ kid: "kid-x" });
      const upper = signingKeyRecord({ kid: "KID-X" });
      expect(await keys().create(lower)).toBe(true);
      expect(await keys().create(upper)).toBe(true);
      expect(await keys().delete("Kid-X")).toBe(false);
      await expectKeys([lower, upper]);
    });

    it("activatesAt round-trips independently of createdAt (a key published before it signs)", async () => {
      const next = signingKeyRecord({ kid: "next", createdAt: T0, activatesAt: T0 + 360_000 });
      const far = signingKeyRecord({ kid: "far", createdAt: T0 + 1, activatesAt: MAX_DATE_MS });
      expect(await keys().create(next)).toBe(true);
      expect(await keys().create(far)).toBe(true);
      await expectKeys([next, far]);
    });

    it("replacePrivateJwk replaces only when the stored value is still the expected one, and nothing else of the record", async () => {
      const a = signingKeyRecord({ kid: "a", activatesAt: T0 + 5 });
      const b = signingKeyRecord({ kid: "b" });
      await keys().create(a);
      await keys().create(b);
      const sealed = `enc:A256GCM:AAAAAAAAAAA:${"i".repeat(16)}:${"c".repeat(6000)}`;
      expect(await keys().replacePrivateJwk("a", a.privateJwk, sealed)).toBe(true);
      await expectKeys([{ ...a, privateJwk: sealed }, b]);
      // The old value is no longer there: a second writer that read it changes nothing.
      expect(await keys().replacePrivateJwk("a", a.privateJwk, "other")).toBe(false);
      expect(await keys().replacePrivateJwk("missing", a.privateJwk, "other")).toBe(false);
      expect(await keys().replacePrivateJwk("A", sealed, "other")).toBe(false);
      await expectKeys([{ ...a, privateJwk: sealed }, b]);
    });

    it("replacePrivateJwk returns false when the stored value is not the expected one, even when it already is the replacement", async () => {
      const a = signingKeyRecord({ kid: "a" });
      await keys().create(a);
      const sealed = `enc:A256GCM:AAAAAAAAAAA:${"i".repeat(16)}:${"c".repeat(64)}`;
      expect(await keys().replacePrivateJwk("a", a.privateJwk, sealed)).toBe(true);
      expect(await keys().replacePrivateJwk("a", a.privateJwk, sealed), "a second writer with the same replacement: replaced nothing").toBe(false);
      await expectKeys([{ ...a, privateJwk: sealed }]);
    });

    it("replacePrivateJwk: of 20 racing writers that read the same value, exactly one replaces it", async () => {
      const a = signingKeyRecord({ kid: "race" });
      await keys().create(a);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => keys().replacePrivateJwk("race", a.privateJwk, `writer-${i}`)));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.indexOf(true);
      await expectKeys([{ ...a, privateJwk: `writer-${winner}` }]);
    });

    it("stores copies: mutating the record passed to create, or one returned, changes nothing stored", async () => {
      const input = signingKeyRecord({ kid: "iso" });
      const expected = structuredClone(input);
      await keys().create(input);
      input.alg = "mutated";
      (await keys().list())[0]!.privateJwk = "mutated";
      await expectKeys([expected]);
    });
  });

  /**
   * `signingKeys.createIfEmpty(record)` (optional in the type, so an older backend still runs;
   * without it instances starting together on an empty store may each make a first key). Each case
   * fails until it is there.
   */
  describe("signingKeys.createIfEmpty", { timeout: RACES_TIMEOUT }, () => {
    type WithFirst = Required<Pick<SigningKeyStore, "createIfEmpty">> & SigningKeyStore;
    const first = (store: SigningKeyStore = s.storage().signingKeys): WithFirst => {
      if (typeof store.createIfEmpty !== "function") {
        throw new Error("signingKeys.createIfEmpty is missing: without it instances starting together on an empty store may each make a first signing key (see the README's storage section)");
      }
      return store as WithFirst;
    };
    const sorted = (l: SigningKeyRecord[]) => [...l].sort((a, b) => byCodeUnit(a.kid, b.kid));

    it("on an empty store it stores the record exactly and returns true; a second call returns false and stores nothing", async () => {
      const record = signingKeyRecord({ kid: "first", activatesAt: T0 + 7 });
      expect(await first().createIfEmpty(record)).toBe(true);
      expectRecords(await s.storage().signingKeys.list(), [record], "signing keys");
      expect(await first().createIfEmpty(signingKeyRecord({ kid: "second" }))).toBe(false);
      expect(await first().createIfEmpty(signingKeyRecord({ kid: "first", alg: "ES256", privateJwk: "{}" }))).toBe(false);
      expectRecords(await s.storage().signingKeys.list(), [record], "signing keys");
    });

    it("returns false and stores nothing while any key is stored (one made by create, several, a next key); true again once all are deleted", async () => {
      const a = signingKeyRecord({ kid: "a" });
      const next = signingKeyRecord({ kid: "next", createdAt: T0 + 1, activatesAt: MAX_DATE_MS });
      expect(await s.storage().signingKeys.create(a)).toBe(true);
      expect(await first().createIfEmpty(signingKeyRecord({ kid: "b" }))).toBe(false);
      expectRecords(await s.storage().signingKeys.list(), [a], "signing keys");
      expect(await s.storage().signingKeys.create(next)).toBe(true);
      expect(await first().createIfEmpty(signingKeyRecord({ kid: "c" }))).toBe(false);
      expectRecords(sorted(await s.storage().signingKeys.list()), sorted([a, next]), "signing keys");
      await s.storage().signingKeys.delete("a");
      await s.storage().signingKeys.delete("next");
      const c = signingKeyRecord({ kid: "c" });
      expect(await first().createIfEmpty(c)).toBe(true);
      expectRecords(await s.storage().signingKeys.list(), [c], "signing keys");
    });

    it("returns false and stores nothing while the only key stored is one not yet active (a next key made before any signs)", async () => {
      const next = signingKeyRecord({ kid: "next", activatesAt: MAX_DATE_MS });
      expect(await s.storage().signingKeys.create(next)).toBe(true);
      expect(await first().createIfEmpty(signingKeyRecord({ kid: "second" }))).toBe(false);
      expectRecords(await s.storage().signingKeys.list(), [next], "signing keys");
    });

    it("30 concurrent calls with distinct records on an empty store (two instances where the target gives connect), 5 rounds: exactly one returns true and only its record is stored", async () => {
      await withOtherInstance(s, async (other) => {
        const stores = [first(), first(other.signingKeys)];
        for (let round = 0; round < 5; round++) {
          const records = Array.from({ length: 30 }, (_, i) => signingKeyRecord({ kid: `r${round}-racer-${i}`, createdAt: T0 + i }));
          const results = await inParallel(30, (i) => stores[i % 2]!.createIfEmpty(records[i]!));
          const stored = await s.storage().signingKeys.list();
          expect(stored.map((k) => k.kid), `round ${round}: exactly one first key stored`).toHaveLength(1);
          expect(results.filter(Boolean), `round ${round}: exactly one call returned true`).toHaveLength(1);
          const winner = records[results.indexOf(true)]!;
          expectRecords(stored, [winner], "signing keys");
          expectRecords(await other.signingKeys.list(), [winner], "signing keys seen by the other instance");
          expect(await s.storage().signingKeys.delete(winner.kid)).toBe(true);
        }
      });
    });

    it("stores a copy: mutating the record passed in changes nothing stored", async () => {
      const input = signingKeyRecord({ kid: "iso-first" });
      const expected = structuredClone(input);
      expect(await first().createIfEmpty(input)).toBe(true);
      input.privateJwk = "mutated";
      expectRecords(await s.storage().signingKeys.list(), [expected], "signing keys");
    });
  });

  /**
   * `signingKeys.markSigning(kid, at)` (optional in the type, so an older backend still runs;
   * without it a configured key is retired when the key after it activates, and an instance pinned
   * to a new key refuses a gradual deployment's old-version tokens once the token lifetime passed,
   * see the README's storage section). Each case fails until it is there.
   */
  describe("signingKeys.markSigning", { timeout: RACES_TIMEOUT }, () => {
    type WithMark = Required<Pick<SigningKeyStore, "markSigning">> & SigningKeyStore;
    const marking = (store: SigningKeyStore = s.storage().signingKeys): WithMark => {
      if (typeof store.markSigning !== "function") {
        throw new Error("signingKeys.markSigning is missing: without it a configured key is retired when the key after it activates, whatever instance still signs with it (see the README's storage section)");
      }
      return store as WithMark;
    };
    const sorted = (l: SigningKeyRecord[]) => [...l].sort((a, b) => byCodeUnit(a.kid, b.kid));

    it("stamps lastSignedAt, which list returns; a key never stamped has none (the member absent); nothing else of the record changes, nor another key", async () => {
      const a = signingKeyRecord({ kid: "a", activatesAt: T0 + 3 });
      const b = signingKeyRecord({ kid: "b", createdAt: T0 + 1 });
      expect(await s.storage().signingKeys.create(a)).toBe(true);
      expect(await s.storage().signingKeys.create(b)).toBe(true);
      expectRecords(sorted(await s.storage().signingKeys.list()), [a, b], "signing keys never stamped");
      await marking().markSigning("a", T0 + 60_000);
      expectRecords(sorted(await s.storage().signingKeys.list()), [{ ...a, lastSignedAt: T0 + 60_000 }, b], "signing keys");
      await marking().markSigning("a", MAX_DATE_MS);
      expectRecords(sorted(await s.storage().signingKeys.list()), [{ ...a, lastSignedAt: MAX_DATE_MS }, b], "signing keys");
    });

    it("keeps the later time: an earlier stamp (an instance whose clock is behind) moves nothing back; a later one moves it on", async () => {
      const a = signingKeyRecord({ kid: "a" });
      expect(await s.storage().signingKeys.create(a)).toBe(true);
      await marking().markSigning("a", T0 + 120_000);
      await marking().markSigning("a", T0 + 60_000);
      await marking().markSigning("a", T0 + 120_000);
      expectRecords(await s.storage().signingKeys.list(), [{ ...a, lastSignedAt: T0 + 120_000 }], "signing keys");
      await marking().markSigning("a", T0 + 180_000);
      expectRecords(await s.storage().signingKeys.list(), [{ ...a, lastSignedAt: T0 + 180_000 }], "signing keys");
    });

    it("an absent kid: nothing stored, no error; a kid differing in case is another key", async () => {
      const a = signingKeyRecord({ kid: "a" });
      expect(await s.storage().signingKeys.create(a)).toBe(true);
      await marking().markSigning("missing", T0 + 60_000);
      await marking().markSigning("A", T0 + 60_000);
      expectRecords(await s.storage().signingKeys.list(), [a], "signing keys");
    });

    it("a record created with lastSignedAt (create and createIfEmpty) round-trips it; replacePrivateJwk keeps it", async () => {
      const a = signingKeyRecord({ kid: "a", lastSignedAt: T0 + 5 });
      if (typeof s.storage().signingKeys.createIfEmpty === "function") expect(await s.storage().signingKeys.createIfEmpty!(a)).toBe(true);
      else expect(await s.storage().signingKeys.create(a)).toBe(true);
      const b = signingKeyRecord({ kid: "b", createdAt: T0 + 1, lastSignedAt: T0 + 6 });
      expect(await s.storage().signingKeys.create(b)).toBe(true);
      expectRecords(sorted(await s.storage().signingKeys.list()), [a, b], "signing keys");
      expect(await s.storage().signingKeys.replacePrivateJwk("a", a.privateJwk, "enc:A256GCM:x")).toBe(true);
      expectRecords(sorted(await s.storage().signingKeys.list()), [{ ...a, privateJwk: "enc:A256GCM:x" }, b], "signing keys");
    });

    it("30 concurrent stamps of one key with distinct times (two instances where the target gives connect): the latest is kept", async () => {
      const a = signingKeyRecord({ kid: "a" });
      expect(await s.storage().signingKeys.create(a)).toBe(true);
      await withOtherInstance(s, async (other) => {
        const stores = [marking(), marking(other.signingKeys)];
        // The latest in the middle, so neither the first nor the last call alone decides.
        const times = Array.from({ length: 30 }, (_, i) => T0 + 1_000 * ((i * 7) % 30));
        await inParallel(30, (i) => stores[i % 2]!.markSigning("a", times[i]!));
        expectRecords(await s.storage().signingKeys.list(), [{ ...a, lastSignedAt: T0 + 29_000 }], "signing keys");
        expectRecords(await other.signingKeys.list(), [{ ...a, lastSignedAt: T0 + 29_000 }], "signing keys seen by the other instance");
      });
    });
  });
}
