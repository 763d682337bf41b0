/**
 * `maxConcurrentPasswordChecks` is held to the bound its variable has had
 * (PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS, 1-1000). Until 2026-12-02 the option had none: a
 * million was taken, which is no cap at all (each check keeps a core busy ~100 ms).
 */
import { describe, expect, it } from "vitest";
import { ConfigError, createPlantgate, optionsFromEnv } from "../src/index.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };

describe("maxConcurrentPasswordChecks is 1-1000, as its variable", () => {
  it.each([1001, 1_000_000, Number.MAX_SAFE_INTEGER])("%d is a TypeError naming the option and the bound", (n) => {
    expect(() => createPlantgate({ ...quiet, maxConcurrentPasswordChecks: n })).toThrow(new TypeError("maxConcurrentPasswordChecks must be at most 1000"));
    // The variable's own refusal of the same value, as before.
    expect(() => optionsFromEnv({ PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS: String(n) })).toThrow(ConfigError);
  });

  it("1 and 1000 are taken by both", () => {
    for (const n of [1, 1000]) {
      expect(() => createPlantgate({ ...quiet, maxConcurrentPasswordChecks: n })).not.toThrow();
      expect(optionsFromEnv({ PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS: String(n) })).toEqual({ maxConcurrentPasswordChecks: n });
    }
  });
});
