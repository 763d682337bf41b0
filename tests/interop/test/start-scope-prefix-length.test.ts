/**
 * A PLANTGATE_SCOPE_PREFIX too long for its scopes to fit maxScopeLength (more than 106 characters
 * by default: README, `scopePrefix`) stops the example servers' start naming the variable, before
 * the store is made, as every other variable whose value core's options refuse
 * (start-env-refusals.test.ts). Until 2026-12-01 optionsFromEnv checked only its characters, and
 * createPlantgate refused it after ./data/plantgate.db was made and migrated and the port was bound,
 * naming the option (`scopePrefix is 107 characters, ...`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const tsx = join(repoRoot, "node_modules/.bin/tsx");
const node = join(repoRoot, "examples/node-server/src/main.ts");
const express = join(repoRoot, "examples/express-server/src/main.ts");

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Starts an example in a fresh folder with only `env` (and PORT 0) of plantgate's variables; its exit code, stderr and whether the SQLite file was made. */
async function run(entry: string, env: Record<string, string>) {
  const cwd = mkdtempSync(join(tmpdir(), "plantgate-start-scope-prefix-"));
  dirs.push(cwd);
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(childEnv)) if (name.startsWith("PLANTGATE_") || name === "HOST" || name === "PORT") delete childEnv[name];
  Object.assign(childEnv, { PORT: "0" }, env);
  const proc = spawn(tsx, [entry], { cwd, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  children.push(proc);
  let err = "";
  proc.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
  const code = await new Promise<number | null>((resolve) => proc.once("exit", resolve));
  return { code, err, storeMade: existsSync(join(cwd, "data", "plantgate.db")) };
}

describe("a PLANTGATE_SCOPE_PREFIX longer than its scopes may be", () => {
  it.each([
    ["node", node],
    ["Express", express],
  ] as const)("%s: refused naming PLANTGATE_SCOPE_PREFIX, before the store is made", { timeout: 60_000 }, async (_server, entry) => {
    expect(await run(entry, { PLANTGATE_SCOPE_PREFIX: "P".repeat(107) })).toEqual({
      code: 1,
      err: "PLANTGATE_SCOPE_PREFIX is 107 characters, so its scope <prefix>_AllAppsServerCommands is longer than maxScopeLength (128); shorten the prefix or raise maxScopeLength\n",
      storeMade: false,
    });
  });
});
