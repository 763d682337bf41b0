import { describe, expect, it } from "vitest";
import { isoTimestamp } from "../src/api/accounts.js";

// GetAccountList formats createdAt without Date#toISOString; it must give exactly the same text.
describe("isoTimestamp", () => {
  it("equals Date#toISOString on every day from 1970 to 9999 and at the edges", () => {
    const mismatches: number[] = [];
    const check = (ms: number) => {
      if (isoTimestamp(ms) !== new Date(ms).toISOString()) mismatches.push(ms);
    };
    for (let day = 0; day < 2_932_897; day += 7) check(day * 86_400_000 + ((day * 7_919_993) % 86_400_000));
    for (const ms of [0, 1, 999, 1000, 59_999, 86_399_999, 86_400_000, 951_782_400_000, 951_868_800_000, 4_107_542_400_000, 253_402_300_799_999]) check(ms);
    let seed = 20261123;
    for (let i = 0; i < 100_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      check(Math.floor((seed / 2_147_483_648) * 253_402_300_800_000));
    }
    expect(mismatches).toEqual([]);
  });

  it("falls back to Date outside 1970-9999 and for fractional values", () => {
    for (const ms of [-1, -62_198_755_200_000, 253_402_300_800_000, 1.5]) expect(isoTimestamp(ms)).toBe(new Date(ms).toISOString());
    expect(isoTimestamp(951_782_400_000)).toBe("2000-02-29T00:00:00.000Z");
  });
});
