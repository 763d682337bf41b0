import type { PlantRecord } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { expectRecord, INT64_MAX, INT64_MIN, plantRecord } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

/** Ids at every boundary a backend could trip on: int64, 2^53 (JS number), int32, sign. */
const EDGE_IDS = [
  INT64_MIN,
  INT64_MIN + 1n,
  -9007199254740993n,
  -2147483649n,
  -1n,
  0n,
  1n,
  2147483647n,
  2147483648n,
  4294967296n,
  9007199254740991n,
  9007199254740992n,
  9007199254740993n, // === 2^53 + 1: as a JS number it would collide with 2^53
  INT64_MAX - 1n,
  INT64_MAX,
];

export function plantsSuite(s: SuiteContext): void {
  describe("plants", () => {
    const plants = () => s.storage().plants;

    const expectPlant = async (expected: PlantRecord) => {
      const got = await plants().get(expected.id);
      expect(typeof got?.id, `id of plant ${expected.id} should be a bigint`).toBe("bigint");
      expectRecord(got, expected, `plant ${expected.id}`);
    };

    it("get returns null for an absent id, including the int64 extremes", async () => {
      for (const id of [0n, INT64_MIN, INT64_MAX]) expect(await plants().get(id), String(id)).toBeNull();
    });

    it("int64 extremes -9223372036854775808n and 9223372036854775807n round-trip exactly as bigint", async () => {
      const min = plantRecord({ id: INT64_MIN, name: "min" });
      const max = plantRecord({ id: INT64_MAX, name: "max" });
      expect(await plants().create(min)).toBe(true);
      expect(await plants().create(max)).toBe(true);
      await expectPlant(min);
      await expectPlant(max);
    });

    it("ids around 2^31, 2^32 and 2^53 are distinct plants and round-trip exactly", async () => {
      const records = EDGE_IDS.map((id) => plantRecord({ id, name: `plant ${id}` }));
      for (const r of records) expect(await plants().create(r), `create ${r.id}`).toBe(true);
      for (const r of records) await expectPlant(r);
      expect(await plants().get(9007199254740994n)).toBeNull();
    });

    it("tag: null, empty string and text are stored as given", async () => {
      const records = [
        plantRecord({ id: 1n, name: "no tag", tag: null }),
        plantRecord({ id: 2n, name: "empty tag", tag: "" }),
        plantRecord({ id: 3n, name: "tagged", tag: "indoor" }),
        plantRecord({ id: 4n, name: "null text", tag: "null" }),
      ];
      for (const r of records) expect(await plants().create(r)).toBe(true);
      for (const r of records) await expectPlant(r);
    });

    it("create returns false for an existing id and leaves the first plant unchanged", async () => {
      const first = plantRecord({ id: 42n, name: "first", tag: "a" });
      expect(await plants().create(first)).toBe(true);
      expect(await plants().create(plantRecord({ id: 42n, name: "second", tag: null }))).toBe(false);
      expect(await plants().create(plantRecord({ id: 42n, name: "third", tag: "b" }))).toBe(false);
      await expectPlant(first);
      const big = plantRecord({ id: INT64_MAX, name: "big" });
      await plants().create(big);
      expect(await plants().create(plantRecord({ id: INT64_MAX, name: "bigger" }))).toBe(false);
      await expectPlant(big);
    });

    it("unicode names and tags round-trip exactly (astral characters, combining marks, RTL, 256 UTF-16 units)", async () => {
      const records = [
        plantRecord({ id: 10n, name: "Monstera deliciosa \u{1F33F}", tag: "\u{1F331}\u{1F335}" }),
        plantRecord({ id: 11n, name: "\u91d1\u306e\u306a\u308b\u6728", tag: "\u591a\u8089" }),
        plantRecord({ id: 12n, name: "Pile\u0301a pe\u0301peromio\u0308ides", tag: "Pil\u00e9a" }),
        plantRecord({ id: 13n, name: "\u0646\u0628\u0627\u062a \u0627\u0644\u0635\u0628\u0627\u0631", tag: null }),
        plantRecord({ id: 14n, name: "\u{1F335}".repeat(128), tag: "\u00e9".repeat(256) }),
        plantRecord({ id: 15n, name: "quotes ' \" ` backslash \\ percent % underscore _ semicolon ;", tag: "-- not a comment" }),
        plantRecord({ id: 16n, name: "  spaces kept  ", tag: " " }),
      ];
      for (const r of records) expect(await plants().create(r), `create ${r.id}`).toBe(true);
      for (const r of records) await expectPlant(r);
    });

    it("control characters round-trip exactly (core rejects U+0000 and lone surrogates before storage)", async () => {
      const record = plantRecord({ id: 20n, name: "bell\u0007byte\ttab\nnewline\u001f", tag: "\u0001" });
      expect(await plants().create(record)).toBe(true);
      await expectPlant(record);
    });

    it("a leading U+FEFF (byte order mark) is kept, in name and tag: text is not decoded as a file", async () => {
      const records = [plantRecord({ id: 21n, name: "\uFEFF", tag: "\uFEFFtag" }), plantRecord({ id: 22n, name: "\uFEFF\uFEFFtwo", tag: "mid\uFEFF" })];
      for (const r of records) expect(await plants().create(r), `create ${r.id}`).toBe(true);
      for (const r of records) await expectPlant(r);
    });

    it("stores copies: mutating the record passed to create, or one returned, changes nothing stored", async () => {
      const input = plantRecord({ id: 7n, name: "original", tag: "t" });
      await plants().create(input);
      input.name = "mutated";
      input.tag = null;
      const read = await plants().get(7n);
      read!.name = "mutated";
      await expectPlant(plantRecord({ id: 7n, name: "original", tag: "t" }));
    });
  });
}
