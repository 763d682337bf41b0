/**
 * WAL checkpoints on a worker thread (sqlite-checkpointer.ts): the writing connection's own
 * threshold goes up once the worker runs, the worker copies the WAL into the database file, and
 * closing the storage stops it and closes its connection (the writer's close, the last, then
 * checkpoints and removes the WAL, as SQLite does).
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStorageFromEnv, sqliteCheckpointsFromEnv, StorageConfigError } from "../src/env.js";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { autocheckpoint, until } from "./sqlite-checkpoints.js";

const dirs: string[] = [];
const opened: SqlStorage[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function open(options: { sqliteCheckpoints?: "thread" | "inline" } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "plantgate-checkpoint-"));
  dirs.push(dir);
  const path = join(dir, "db.sqlite");
  const storage = await openSqlStorage(`sqlite:${path}`, options);
  opened.push(storage);
  return { storage, path };
}



/** 2000 plants with 1 KiB names (about 2 MiB of pages), in turns of 100 (one group commit each). */
async function writeMuch(s: SqlStorage) {
  const name = "n".repeat(1024);
  for (let turn = 0; turn < 20; turn++) {
    const created = await Promise.all(Array.from({ length: 100 }, (_, i) => s.plants.create({ id: BigInt(turn * 100 + i + 1), name, tag: null })));
    expect(created.every(Boolean)).toBe(true);
  }
}

describe("sqlite WAL checkpoints on a worker thread", () => {
  it("the worker starts after a second and raises the writer's threshold; it copies the WAL into the database file", async () => {
    const { storage, path } = await open();
    expect(await autocheckpoint(storage)).toBe(1000);
    expect(await until(async () => (await autocheckpoint(storage)) === 10_000, 3000)).toBe(true);
    const before = statSync(path).size;
    await writeMuch(storage);
    // Far below the writer's 10000 pages: only the worker can have copied 2 MiB into the file.
    expect(await until(() => statSync(path).size >= before + 2 * 1024 * 1024, 3000)).toBe(true);
    expect(await storage.plants.get(2000n)).toEqual({ id: 2000n, name: "n".repeat(1024), tag: null });
  });

  it("closing the storage stops the worker and closes its connection: the writer's close is the last and removes the WAL", async () => {
    const { storage, path } = await open();
    expect(await until(async () => (await autocheckpoint(storage)) === 10_000, 3000)).toBe(true);
    await writeMuch(storage);
    expect(existsSync(`${path}-wal`)).toBe(true);
    await storage.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
    // The same file again: what was written is in the database file itself, the WAL gone.
    const again = await openSqlStorage(`sqlite:${path}`);
    opened.push(again);
    expect([await again.plants.get(1n), await again.plants.get(2000n), await again.plants.get(2001n)]).toEqual([
      { id: 1n, name: "n".repeat(1024), tag: null },
      { id: 2000n, name: "n".repeat(1024), tag: null },
      null,
    ]);
  });

  it('"inline" keeps SQLite\'s own checkpoints in the writing connection (threshold 1000 pages)', async () => {
    const { storage, path } = await open({ sqliteCheckpoints: "inline" });
    await new Promise((r) => setTimeout(r, 1300));
    expect(await autocheckpoint(storage)).toBe(1000);
    await writeMuch(storage);
    expect(await storage.plants.get(1n)).toEqual({ id: 1n, name: "n".repeat(1024), tag: null });
    await storage.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it("a storage closed before the second is up never starts a worker, and closes at once", async () => {
    const { storage, path } = await open();
    const started = Date.now();
    await storage.close();
    expect(Date.now() - started).toBeLessThan(500);
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it("PLANTGATE_SQLITE_CHECKPOINTS: thread (default) or inline, anything else refused; openStorageFromEnv honours it", async () => {
    expect(sqliteCheckpointsFromEnv({})).toBe("thread");
    expect(sqliteCheckpointsFromEnv({ PLANTGATE_SQLITE_CHECKPOINTS: "" })).toBe("thread");
    expect(sqliteCheckpointsFromEnv({ PLANTGATE_SQLITE_CHECKPOINTS: "thread" })).toBe("thread");
    expect(sqliteCheckpointsFromEnv({ PLANTGATE_SQLITE_CHECKPOINTS: "inline" })).toBe("inline");
    expect(() => sqliteCheckpointsFromEnv({ PLANTGATE_SQLITE_CHECKPOINTS: "off" })).toThrow(
      new StorageConfigError("PLANTGATE_SQLITE_CHECKPOINTS must be thread (a worker thread checkpoints the WAL) or inline"),
    );
    const dir = mkdtempSync(join(tmpdir(), "plantgate-checkpoint-"));
    dirs.push(dir);
    const inline = await openStorageFromEnv({ PLANTGATE_DB: join(dir, "inline.db"), PLANTGATE_SQLITE_CHECKPOINTS: "inline" }, { cwd: dir });
    opened.push(inline);
    const threaded = await openStorageFromEnv({ PLANTGATE_DB: join(dir, "thread.db") }, { cwd: dir });
    opened.push(threaded);
    expect(await until(async () => (await autocheckpoint(threaded)) === 10_000, 3000)).toBe(true);
    expect(await autocheckpoint(inline)).toBe(1000);
  });
});
