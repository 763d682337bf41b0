/** The environment variables of the hardening options (optionsFromEnv). */
import { describe, expect, it } from "vitest";
import { ConfigError, optionsFromEnv } from "../src/index.js";

describe("optionsFromEnv: security settings", () => {
  it("maps PLANTGATE_TRUSTED_PROXIES, PLANTGATE_BRUTE_FORCE_*, PLANTGATE_SIGNING_KEY_MAX_AGE", () => {
    expect(
      optionsFromEnv({
        PLANTGATE_TRUSTED_PROXIES: " 10.0.0.0/8, 192.168.1.7 ,, fd00::/8",
        PLANTGATE_BRUTE_FORCE_MAX_FAILURES: "5",
        PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: "600",
        PLANTGATE_SIGNING_KEY_MAX_AGE: "2592000",
      }),
    ).toEqual({
      trustedProxies: ["10.0.0.0/8", "192.168.1.7", "fd00::/8"],
      bruteForce: { maxFailures: 5, windowSeconds: 600 },
      signingKeyMaxAgeSeconds: 2_592_000,
    });
    expect(optionsFromEnv({ PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: "60" })).toEqual({ bruteForce: { windowSeconds: 60 } });
    expect(optionsFromEnv({ PLANTGATE_TRUSTED_PROXIES: "" })).toEqual({});
  });

  it("rejects malformed values naming the variable", () => {
    expect(() => optionsFromEnv({ PLANTGATE_TRUSTED_PROXIES: "10.0.0.0/40" })).toThrow(
      new ConfigError('PLANTGATE_TRUSTED_PROXIES: "10.0.0.0/40" has a bad prefix length'),
    );
    expect(() => optionsFromEnv({ PLANTGATE_BRUTE_FORCE_MAX_FAILURES: "0" })).toThrow('PLANTGATE_BRUTE_FORCE_MAX_FAILURES must be a positive integer, got "0"');
    expect(() => optionsFromEnv({ PLANTGATE_SIGNING_KEY_MAX_AGE: "1d" })).toThrow('PLANTGATE_SIGNING_KEY_MAX_AGE must be a positive integer, got "1d"');
  });
});
