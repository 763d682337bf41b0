/**
 * SQLite: checkpoints that fail with SQLITE_IOERR (a write the file system refuses) are tried again
 * and reported through `onWarning` once per run of failures, with SQLite's code, and once more when
 * a checkpoint works again (until 2026-12-02 the worker retried every 100 ms without a word). The
 * refusal is real: this process's file-size limit (RLIMIT_FSIZE, set with util-linux's `prlimit`,
 * no root needed) just above the database file, so the checkpoint that would grow the file gets
 * EFBIG (SQLITE_IOERR_WRITE) while the WAL, rewritten from its start, still takes the commits. The
 * limit is this test process's own (vitest's forks pool: a process per file), put back after.
 * sqlite-checkpoint-disk-full.test.ts does the same with SQLITE_FULL on a full tmpfs (root only).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { autocheckpoint, checkpointWarnings, until } from "./sqlite-checkpoints.js";

const dir = mkdtempSync(join(tmpdir(), "plantgate-checkpoint-fsize-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** This process's file-size limits as `prlimit` reads them ("unlimited" or bytes), or undefined without prlimit. */
function fsizeLimits(): { soft: string; hard: string } | undefined {
  try {
    const [soft, hard] = execFileSync("prlimit", ["--pid", String(process.pid), "--fsize", "--raw", "--noheadings", "--output", "SOFT,HARD"], { encoding: "utf8" }).trim().split(/\s+/);
    return { soft: soft!, hard: hard! };
  } catch {
    return undefined;
  }
}
const setSoftLimit = (soft: string, hard: string) => execFileSync("prlimit", ["--pid", String(process.pid), `--fsize=${soft}:${hard}`]);

describe("SQLite checkpoint worker across refused writes", () => {
  it("a run of SQLITE_IOERR_WRITE checkpoints is said once through onWarning, and once more when a checkpoint works again (needs prlimit, skipped without; only in a process of its own)", async (ctx) => {
    const limits = fsizeLimits();
    // Not in a process of its own (vitest's threads pool: no IPC channel): the limit would reach other files' tests.
    if (limits === undefined || process.send === undefined) ctx.skip();
    const { soft, hard } = limits!;
    const path = join(dir, "db.sqlite");
    const warnings: string[] = [];
    const storage = await openSqlStorage(`sqlite:${path}`, { onWarning: (message) => warnings.push(message) });
    let limited = false;
    try {
      expect(await until(async () => (await autocheckpoint(storage)) === 10_000, 5000)).toBe(true);
      // About 1 MiB of rows, checkpointed into the database file by the worker.
      const name = "n".repeat(1024);
      for (let i = 1; i <= 1000; i++) await storage.plants.create({ id: BigInt(i), name, tag: null });
      await new Promise((r) => setTimeout(r, 500));
      const size = statSync(path).size;
      expect(size).toBeGreaterThan(1024 * 1024);
      // Files may grow to 16 KiB past the database file: its next checkpoint of new rows cannot.
      setSoftLimit(String(size + 16 * 1024), hard);
      limited = true;
      for (let i = 1001; i <= 1100; i++) await storage.plants.create({ id: BigInt(i), name, tag: null });
      const said = checkpointWarnings(warnings, path, "SQLITE_IOERR_WRITE", "disk I/O error");
      await said.failing();
      // The limit back: the next checkpoint works, one more line, with the run's count and length.
      setSoftLimit(soft, hard);
      limited = false;
      await said.recovered();
      // Every row is there, and the worker still runs.
      expect(await storage.plants.get(1100n)).toEqual({ id: 1100n, name, tag: null });
      expect(await autocheckpoint(storage)).toBe(10_000);
    } finally {
      if (limited) setSoftLimit(soft, hard);
      await storage.close();
    }
  }, 30_000);
});
