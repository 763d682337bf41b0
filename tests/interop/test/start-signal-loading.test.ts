/**
 * SIGTERM while an example server's modules still load (plantgate, the drivers: seconds under tsx
 * on a loaded machine, 8 s seen): exit 0, nothing opened. Until 2026-12-02 the entries imported the
 * server statically, so those modules loaded before the entry's first line set the signal
 * handlers, and such a signal ended the process by the default action (signal SIGTERM, exit 143),
 * while the README said exit 0.
 *
 * Where the signal comes is made certain by a module hook of the test's (`--import`, through
 * NODE_OPTIONS): it holds the resolution of the entry's `./server.js` (the custom-storage entry's
 * `@plantgate/core`) for a few seconds and writes a
 * marker file once it has begun.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, expect, it } from "vitest";
import { killRunning, spawnEntry, type Entry } from "./entries.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const running = new Set<ChildProcess>();
afterEach(() => killRunning(running));

/** The hook: holds the entry's first module past its own (see `held`), the marker written first. */
function holdingHook(dir: string, marker: string): string {
  const hooks = join(dir, "hooks.mjs");
  writeFileSync(
    hooks,
    `import { writeFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  // The node and Express entries' "./server.js" (tsx, whose hook runs first, asks for its .ts), the
  // custom-storage entry's first import.
  const parent = String(context.parentURL);
  const held = ((specifier === "./server.js" || specifier === "./server.ts") && parent.endsWith("/src/main.ts")) || (specifier === "@plantgate/core" && parent.endsWith("/custom-storage/src/server.ts"));
  if (held) {
    writeFileSync(${JSON.stringify(marker)}, "loading");
    await new Promise((resolve) => setTimeout(resolve, 3000));
  }
  return next(specifier, context);
}
`,
  );
  const register = join(dir, "register.mjs");
  writeFileSync(register, `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  return pathToFileURL(register).href;
}

it.each(["node", "express", "custom"] satisfies Entry[])("SIGTERM while the %s example's modules load: exit 0, nothing opened", async (entry) => {
  const cwd = mkdtempSync(join(tmpdir(), "plantgate-signal-loading-"));
  dirs.push(cwd);
  const marker = join(cwd, "loading");
  const run = spawnEntry(entry, cwd, { NODE_OPTIONS: `--import=${holdingHook(cwd, marker)}` }, running);
  const deadline = Date.now() + 20_000;
  while (!existsSync(marker)) {
    if (Date.now() > deadline) throw new Error(`the entry never asked for its modules\n${run.stdout()}\n${run.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  run.child.kill("SIGTERM");
  expect({ exit: await run.exited, stdout: run.stdout(), stderr: run.stderr() }).toEqual({ exit: { code: 0, signal: null }, stdout: "", stderr: "" });
  // No store was opened: ./data was never made.
  expect(readdirSync(cwd).sort()).toEqual(["hooks.mjs", "loading", "register.mjs"]);
});
