import { generateKeyRecord, type SigningKeyRecord } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { byCodeUnit, expectRecords, MAX_DATE_MS, signingKeyRecord, T0 } from "../fixtures.js";
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
}
