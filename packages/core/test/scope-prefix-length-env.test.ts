/**
 * PLANTGATE_SCOPE_PREFIX is held to the prefix's length rule in optionsFromEnv, naming the variable:
 * until 2026-12-01 only its characters were checked there, and a prefix too long for its scopes to
 * fit maxScopeLength was refused by createPlantgate, naming the option, after a server had opened
 * its store (tests/interop/test/start-scope-prefix-length.test.ts).
 */
import { describe, expect, it } from "vitest";
import { ConfigError, optionsFromEnv } from "../src/index.js";

const message = (length: number, max: number) =>
  `PLANTGATE_SCOPE_PREFIX is ${length} characters, so its scope <prefix>_AllAppsServerCommands is longer than maxScopeLength (${max}); shorten the prefix or raise maxScopeLength`;

describe("PLANTGATE_SCOPE_PREFIX longer than its scopes may be", () => {
  it("is a ConfigError naming the variable, against the default maxScopeLength (128: at most 106 characters)", () => {
    expect(() => optionsFromEnv({ PLANTGATE_SCOPE_PREFIX: "P".repeat(107) })).toThrow(new ConfigError(message(107, 128)));
    expect(() => optionsFromEnv({ PLANTGATE_SCOPE_PREFIX: "x".repeat(5000) })).toThrow(new ConfigError(message(5000, 128)));
    expect(optionsFromEnv({ PLANTGATE_SCOPE_PREFIX: "P".repeat(106) })).toEqual({ scopePrefix: "P".repeat(106) });
  });

  it("against the maxScopeLength the code gives beside the environment", () => {
    expect(optionsFromEnv({ PLANTGATE_SCOPE_PREFIX: "P".repeat(200) }, { maxScopeLength: 256 })).toEqual({ scopePrefix: "P".repeat(200) });
    expect(() => optionsFromEnv({ PLANTGATE_SCOPE_PREFIX: "Acme" }, { maxScopeLength: 25 })).toThrow(new ConfigError(message(4, 25)));
    // One the options refuse themselves is left to them (createPlantgate names it): the default applies here.
    expect(() => optionsFromEnv({ PLANTGATE_SCOPE_PREFIX: "P".repeat(107) }, { maxScopeLength: 0 })).toThrow(new ConfigError(message(107, 128)));
  });
});
