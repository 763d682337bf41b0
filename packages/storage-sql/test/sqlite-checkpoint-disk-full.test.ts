/**
 * SQLite: a full disk for a moment must not cost the server its checkpoint worker for the rest of
 * its life. Until 2026-12-02 a checkpoint that failed with SQLITE_FULL ended the worker for good
 * (silently: openSqlStorage only forgot it); once space was back the writing connection
 * checkpointed inline every 1000 pages, the event-loop stalls the worker exists to avoid, until the
 * process restarted. Now SQLITE_FULL and SQLITE_IOERR are tried again at the next tick, as
 * SQLITE_BUSY. Until 2026-12-02 too those retries said nothing: a disk that stayed full went
 * unreported through `onWarning`; now the first failure of a run says so (with SQLite's code), and
 * the first checkpoint that works after it. Needs root (mounts a 3 MiB tmpfs); skipped otherwise,
 * as the test's name says.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { autocheckpoint, checkpointWarnings, until } from "./sqlite-checkpoints.js";

let dir = "";
let mounted = false;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-checkpoint-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", dir], { stdio: "ignore" });
    mounted = true;
  } catch {
    mounted = false;
  }
});
afterAll(() => {
  if (mounted) execFileSync("umount", ["-l", dir], { stdio: "ignore" });
  rmSync(dir, { recursive: true, force: true });
});


describe("SQLite checkpoint worker across a full disk", () => {
  it("keeps running across SQLITE_FULL, said once through onWarning, and once more when it checkpoints again (writer threshold 10000 again once space is freed; needs root to mount a tmpfs, skipped without)", async (ctx) => {
    if (!mounted) ctx.skip();
    const path = join(dir, "db.sqlite");
    const warnings: string[] = [];
    const storage = await openSqlStorage(`sqlite:${path}`, { onWarning: (message) => warnings.push(message) });
    try {
      expect(await until(async () => (await autocheckpoint(storage)) === 10_000, 5000)).toBe(true);
      // Fill the disk, then write until the store refuses (SQLITE_FULL) and the worker's checkpoint meets it too.
      const filler = join(dir, "filler");
      try {
        writeFileSync(filler, Buffer.alloc(3 * 1024 * 1024));
      } catch {
        // ENOSPC: the filler took what was left
      }
      const name = "n".repeat(1024);
      let refused = 0;
      for (let i = 1; i <= 400 && refused < 20; i++) {
        await storage.plants.create({ id: BigInt(i), name, tag: null }).catch(() => refused++);
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(refused).toBeGreaterThan(0);
      // The worker's checkpoint meets the full disk: one line, however many ticks fail after it.
      const said = checkpointWarnings(warnings, path, "SQLITE_FULL", "database or disk is full");
      await said.failing();
      // Space is back.
      rmSync(filler, { force: true });
      for (let i = 1000; i < 1010; i++) await storage.plants.create({ id: BigInt(i), name: "after", tag: null });
      expect(await storage.plants.get(1009n)).toEqual({ id: 1009n, name: "after", tag: null });
      // The worker runs again (or never stopped): the writer's own threshold is the raised one.
      expect(await until(async () => (await autocheckpoint(storage)) === 10_000, 5000)).toBe(true);
      // One line when a checkpoint works again, with the run's count and length.
      await said.recovered();
    } finally {
      await storage.close();
    }
  }, 30_000);
});
