/** The environment's storage options that are not secrets: how each value is read, and what is refused. */
import { describe, expect, it } from "vitest";
import { DEFAULT_QUERY_TIMEOUT_MS } from "../src/index.js";
import { clientCacheFromEnv, queryTimeoutFromEnv, StorageConfigError } from "../src/env.js";

describe("storage env: PLANTGATE_QUERY_TIMEOUT_MS", () => {
  it("unset or empty is the default (30 s); digits are milliseconds, 0 turns the deadline off", () => {
    expect(DEFAULT_QUERY_TIMEOUT_MS).toBe(30_000);
    expect(queryTimeoutFromEnv({})).toBe(30_000);
    expect(queryTimeoutFromEnv({ PLANTGATE_QUERY_TIMEOUT_MS: "" })).toBe(30_000);
    expect(queryTimeoutFromEnv({ PLANTGATE_QUERY_TIMEOUT_MS: "0" })).toBe(0);
    expect(queryTimeoutFromEnv({ PLANTGATE_QUERY_TIMEOUT_MS: "5000" })).toBe(5000);
    expect(queryTimeoutFromEnv({ PLANTGATE_QUERY_TIMEOUT_MS: "2147483647" })).toBe(2_147_483_647);
  });

  it("anything but whole milliseconds up to 2147483647 is a StorageConfigError naming the variable", () => {
    for (const bad of ["2147483648", "9999999999", "-1", "1.5", "1e4", " 100", "100 ", "0x10", "30s", "Infinity", "NaN"]) {
      const error = (() => {
        try {
          queryTimeoutFromEnv({ PLANTGATE_QUERY_TIMEOUT_MS: bad });
          return null;
        } catch (e) {
          return e;
        }
      })();
      expect(error, bad).toBeInstanceOf(StorageConfigError);
      expect((error as Error).message).toBe("PLANTGATE_QUERY_TIMEOUT_MS must be a whole number of milliseconds from 0 (no deadline) to 2147483647");
    }
  });
});

describe("storage env: PLANTGATE_CLIENT_CACHE", () => {
  it("1 or true (and unset or empty) keep the client cache, 0 or false turn it off, as every other flag; anything else is refused naming the variable", () => {
    for (const on of [undefined, "", "1", "true"]) expect(clientCacheFromEnv({ PLANTGATE_CLIENT_CACHE: on }), String(on)).toBe(true);
    for (const off of ["0", "false"]) expect(clientCacheFromEnv({ PLANTGATE_CLIENT_CACHE: off }), off).toBe(false);
    for (const bad of ["yes", "TRUE", "2", " 1"]) {
      expect(() => clientCacheFromEnv({ PLANTGATE_CLIENT_CACHE: bad }), bad).toThrow(new StorageConfigError("PLANTGATE_CLIENT_CACHE must be 1 or true (cache clients, PostgreSQL), or 0 or false"));
    }
  });
});
