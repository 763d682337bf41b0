/**
 * SQLite: the -wal file after a burst. While another process holds a read snapshot (a slow
 * listing, a backup, an operator's sqlite3 shell), no checkpoint can reset the WAL, so a burst of
 * writes grows it; once the reader is gone the checkpoints catch up, but until 2026-12-02 the file
 * kept its high-water size for the life of the process (no journal_size_limit): years of running
 * kept the largest burst's WAL on disk. Now the writing connection's journal_size_limit (16 MiB)
 * truncates it at the WAL's next reset.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { autocheckpoint, until } from "./sqlite-checkpoints.js";

const MiB = 1024 * 1024;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("SQLite WAL size after a reader-held burst", () => {
  it("the -wal file shrinks to journal_size_limit (16 MiB) once the reader is gone and the WAL resets", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plantgate-wal-limit-"));
    dirs.push(dir);
    const path = join(dir, "db.sqlite");
    const storage = await openSqlStorage(`sqlite:${path}`);
    try {
      // The checkpoint worker runs (the writer's own threshold raised to 10000 pages).
      expect(await until(async () => (await autocheckpoint(storage)) === 10_000, 5000)).toBe(true);
      const reader = new BetterSqlite3(path);
      reader.exec("BEGIN");
      reader.prepare("select count(*) from pg_plants").get();
      // Rows of 4000 bytes: each its own pages in the WAL, so the burst passes the limit quickly.
      const name = "n".repeat(4000);
      for (let turn = 0; turn < 60; turn++) {
        await Promise.all(Array.from({ length: 100 }, (_, i) => storage.plants.create({ id: BigInt(turn * 100 + i + 1), name, tag: null })));
      }
      const peak = statSync(`${path}-wal`).size;
      expect(peak).toBeGreaterThan(20 * MiB);
      reader.exec("COMMIT");
      reader.close();
      // Quiet traffic afterwards: a write every 150 ms for 3 s (the worker checkpoints every 100 ms).
      for (let i = 0; i < 20; i++) {
        await storage.plants.create({ id: BigInt(100_000 + i), name: "x", tag: null });
        await new Promise((r) => setTimeout(r, 150));
      }
      const after = statSync(`${path}-wal`).size;
      expect({ peak: peak > 20 * MiB, after: after <= 16 * MiB }).toEqual({ peak: true, after: true });
      expect(await storage.plants.get(6000n)).toEqual({ id: 6000n, name, tag: null });
    } finally {
      await storage.close();
    }
  }, 60_000);
});
