/**
 * The example servers refuse a start for a variable whose value core's options would refuse, naming
 * the variable and before the store is made (until 2026-12-01 createPlantgate refused later, after
 * ./data/plantgate.db was made and migrated, naming the option: `scopePrefix must be ...`), and a
 * HOST they cannot listen on is named as HOST (it was blamed on PORT, which cannot fail at 0).
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
  const cwd = mkdtempSync(join(tmpdir(), "plantgate-start-env-"));
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

describe("a start refused for a variable names it, before the store is made", () => {
  it.each([
    ["node", { PLANTGATE_SCOPE_PREFIX: "my scope" }, node, "PLANTGATE_SCOPE_PREFIX must be a non-empty scope token\n"],
    ["node", { PLANTGATE_ISSUER: "https://auth.example.com/#x" }, node, "PLANTGATE_ISSUER must be a URL without a query or fragment (RFC 8414 §2)\n"],
    ["Express", { PLANTGATE_ISSUER: "https://auth.example.com " }, express, "PLANTGATE_ISSUER must not begin or end with white space\n"],
    ["Express", { PLANTGATE_MOUNT_PATH: "/auth/.." }, express, `PLANTGATE_MOUNT_PATH must not have '.' or '..' segments, got "/auth/.."\n`],
    // Too long for its scopes to fit maxScopeLength (more than 106 characters by default): until
    // 2026-12-01 only its characters were checked here, and createPlantgate refused it after the
    // store was made and the port bound, naming the option.
    ["node", { PLANTGATE_SCOPE_PREFIX: "P".repeat(107) }, node, "PLANTGATE_SCOPE_PREFIX is 107 characters, so its scope <prefix>_AllAppsServerCommands is longer than maxScopeLength (128); shorten the prefix or raise maxScopeLength\n"],
    ["Express", { PLANTGATE_SCOPE_PREFIX: "P".repeat(107) }, express, "PLANTGATE_SCOPE_PREFIX is 107 characters, so its scope <prefix>_AllAppsServerCommands is longer than maxScopeLength (128); shorten the prefix or raise maxScopeLength\n"],
  ] as const)("%s: %j", { timeout: 60_000 }, async (_server, env, entry, message) => {
    expect(await run(entry, env)).toEqual({ code: 1, err: message, storeMade: false });
  });

  it.each([
    ["node", node],
    ["Express", express],
  ] as const)("%s: a HOST that does not resolve is named as HOST, not PORT", { timeout: 60_000 }, async (_server, entry) => {
    expect(await run(entry, { HOST: "bogus.invalid", PLANTGATE_DB: ":memory:" })).toEqual({
      code: 1,
      err: "HOST bogus.invalid: the server could not listen (getaddrinfo ENOTFOUND bogus.invalid)\n",
      storeMade: false,
    });
  });
});
