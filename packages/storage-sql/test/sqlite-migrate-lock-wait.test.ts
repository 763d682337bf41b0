/**
 * SQLite: an instance starting while another process holds the file's write lock (its migration
 * running, say an index built over millions of rows) waits for it, however long, without blocking
 * its event loop, then finds the schema current or migrates it. Until 2026-12-01 the wait was the
 * connection's busy_timeout (5 s), spent blocking the thread, and then the start failed with
 * `sqlite storage failed during migrate (SQLITE_BUSY)` (the storage-sql README says migrate() is
 * safe to run from several instances at once).
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "plantgate-migrate-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("an open that must migrate waits for another connection's write lock held 6 s, with its event loop free, then migrates", { timeout: 60_000 }, async () => {
  const file = join(dir, "store.db");
  // Another process's migration: a connection of its own holding BEGIN IMMEDIATE on the new file.
  const other = new Database(file);
  other.pragma("journal_mode = WAL");
  other.exec("begin immediate");
  const started = performance.now();
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 100);
  setTimeout(() => other.exec("commit"), 6_000);
  try {
    const opened = await openSqlStorage(file).then(
      (storage) => ({ storage, error: null }),
      (error: unknown) => ({ storage: null, error: String(error) }),
    );
    const waited = performance.now() - started;
    expect(opened.error).toBeNull();
    // It waited for the commit (6 s), and timers ran meanwhile (the thread was not blocked).
    expect(waited).toBeGreaterThanOrEqual(6_000);
    expect(ticks).toBeGreaterThanOrEqual(30);
    expect(await opened.storage!.clients.get("nobody")).toBeNull();
    await opened.storage!.close();
  } finally {
    clearInterval(ticker);
    other.close();
  }
});
