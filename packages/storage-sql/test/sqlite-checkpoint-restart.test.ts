/**
 * SQLite: a checkpoint worker that ends with an error is reported (openSqlStorage's onWarning) and
 * started again, 1 s later, then 2 s, doubling up to 5 minutes while it keeps failing. Until
 * 2026-12-02 it was gone for the life of the process, without a word, and the writing connection
 * checkpointed inline (its event loop stalled for each copy and its disk flushes). Here the worker
 * cannot open the file (moved away for a while, the writing connection keeping its own open file).
 */
import { existsSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { autocheckpoint, until } from "./sqlite-checkpoints.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

it("a checkpoint worker that fails is reported and started again (after 1 s, then 2 s), and runs once it can", async () => {
  const dir = mkdtempSync(join(tmpdir(), "plantgate-checkpoint-restart-"));
  dirs.push(dir);
  const path = join(dir, "db.sqlite");
  const warnings: string[] = [];
  const storage = await openSqlStorage(`sqlite:${path}`, { onWarning: (message) => warnings.push(message) });
  try {
    // Before the worker's start (a second after opening): the file is not where it opens it.
    renameSync(path, `${path}.away`);
    expect(await until(() => warnings.length >= 2, 5000)).toBe(true);
    const shape = (w: string) => w.replace(path, "<file>").replace(/\(.*\)/, "(<error>)");
    expect(warnings.slice(0, 2).map(shape)).toEqual([
      "plantgate: the SQLite checkpoint worker of <file> ended (<error>); the writing connection checkpoints itself meanwhile, and the worker starts again in 1 s",
      "plantgate: the SQLite checkpoint worker of <file> ended (<error>); the writing connection checkpoints itself meanwhile, and the worker starts again in 2 s",
    ]);
    expect(warnings[0]).toContain("ended (SQLITE_CANTOPEN)");
    // Meanwhile the writer checkpoints itself (SQLite's 1000 pages) and writes go on.
    expect(await autocheckpoint(storage)).toBe(1000);
    expect(await storage.plants.create({ id: 1n, name: "a", tag: null })).toBe(true);
    renameSync(`${path}.away`, path);
    // The next start (2 s after the second failure) finds it: the writer's threshold is raised.
    expect(await until(async () => (await autocheckpoint(storage)) === 10_000, 5000)).toBe(true);
    expect(warnings).toHaveLength(2);
    expect(await storage.plants.get(1n)).toEqual({ id: 1n, name: "a", tag: null });
  } finally {
    if (existsSync(`${path}.away`)) renameSync(`${path}.away`, path);
    await storage.close();
  }
}, 20_000);
