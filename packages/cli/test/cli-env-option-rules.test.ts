/**
 * Variables whose values core's options refuse are refused by the CLI as configuration (exit 2),
 * naming the variable, before the store is opened: a PLANTGATE_SCOPE_PREFIX too long for its scopes
 * to fit maxScopeLength (until 2026-12-01 createPlantgate's TypeError, naming the option: exit 1),
 * and a PLANTGATE_SIGNING_KEY_MAX_AGE the activation delay cannot keep (taken until 2026-12-01;
 * the servers now refuse it too, and the CLI reads the servers' environment).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../src/cli.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-env-rules-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function cli(argv: string[], env: Record<string, string>) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...env }, cwd: dir, readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("plantgate CLI: variables held to their options' rules", () => {
  it("a PLANTGATE_SCOPE_PREFIX longer than its scopes may be (107 characters) is exit 2 naming the variable, nothing made", async () => {
    expect(await cli(["migrate"], { PLANTGATE_SCOPE_PREFIX: "P".repeat(107) })).toEqual({
      code: 2,
      stdout: "",
      stderr: "plantgate: PLANTGATE_SCOPE_PREFIX is 107 characters, so its scope <prefix>_AllAppsServerCommands is longer than maxScopeLength (128); shorten the prefix or raise maxScopeLength\n",
    });
    expect(existsSync(join(dir, "data", "plantgate.db"))).toBe(false);
  });

  it("a PLANTGATE_SIGNING_KEY_MAX_AGE below PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY + 60 is exit 2 naming both", async () => {
    expect(await cli(["migrate"], { PLANTGATE_SIGNING_KEY_MAX_AGE: String(7 * 86_400), PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: String(14 * 86_400) })).toEqual({
      code: 2,
      stdout: "",
      stderr:
        "plantgate: PLANTGATE_SIGNING_KEY_MAX_AGE must be at least PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY + 60 (1209660): a new key is published that long before it signs, so a key cannot be replaced any younger; got 604800\n",
    });
    expect(existsSync(join(dir, "data", "plantgate.db"))).toBe(false);
  });
});
