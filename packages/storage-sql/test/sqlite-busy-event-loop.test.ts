/**
 * SQLite: another process holding the file's write lock (an operator's sqlite3 shell in a
 * transaction, a VACUUM, a second server's long statement) must not freeze the server's event
 * loop. Until 2026-12-02 the serving connection's busy_timeout (5 s) was waited out synchronously
 * inside better-sqlite3 by the group commit's BEGIN IMMEDIATE and by every write statement: every
 * request of the process, reads included, waited (a metadata GET took 4.6 s). Now the connection
 * waits for no lock itself; a write that finds the file locked is tried again on a timer until the
 * same 5 s deadline, then fails with StorageError (503) as before.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import { StorageError } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { clientRecord } from "./support.js";

const client = (clientId: string) => clientRecord({ clientId, name: clientId, secrets: [{ id: "s1", hash: `hash-${clientId}`, createdAt: 1_700_000_000_000, expiresAt: null, lastUsedAt: null }] });

const dirs: string[] = [];
const opened: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function setup(): Promise<{ storage: SqlStorage; other: BetterSqlite3.Database }> {
  const dir = mkdtempSync(join(tmpdir(), "plantgate-sqlite-busy-"));
  dirs.push(dir);
  const path = join(dir, "db.sqlite");
  const storage = await openSqlStorage(`sqlite:${path}`, { sqliteCheckpoints: "inline" });
  opened.push(storage);
  expect(await storage.plants.create({ id: 1n, name: "a", tag: null })).toBe(true);
  // Another connection, as another process would: it takes the write lock.
  const other = new BetterSqlite3(path);
  opened.push(other);
  other.exec("BEGIN IMMEDIATE");
  return { storage, other };
}

/** The latest a 20 ms timer fired (its lateness, ms) while `work` ran, and what each write gave. */
async function lateness(work: Promise<unknown[]>): Promise<{ maxLateMs: number; outcomes: unknown[]; ms: number }> {
  const started = Date.now();
  let maxLateMs = 0;
  let done = false;
  const ticking = (async () => {
    while (!done) {
      const due = Date.now() + 20;
      await new Promise((r) => setTimeout(r, 20));
      maxLateMs = Math.max(maxLateMs, Date.now() - due);
    }
  })();
  const outcomes = await work;
  const ms = Date.now() - started;
  done = true;
  await ticking;
  return { maxLateMs, outcomes, ms };
}

const outcome = (p: Promise<unknown>) => p.then((v) => v, (e: unknown) => (e instanceof StorageError ? "StorageError" : String(e)));

describe("SQLite write lock held by another process", () => {
  it("writes wait for it with the event loop free, and go through once it is released (after 1.5 s)", async () => {
    const { storage, other } = await setup();
    const started = Date.now();
    setTimeout(() => other.exec("COMMIT"), 1500);
    const result = await lateness(
      Promise.all([
        // A group commit (BEGIN IMMEDIATE), a hot single statement, a statement through Kysely.
        outcome(storage.plants.create({ id: 2n, name: "b", tag: null })),
        outcome(storage.revokedTokens.add("jti-1", Date.now() + 60_000)),
        outcome(storage.clients.create(client("c1"))),
        // A transaction through Kysely (its BEGIN IMMEDIATE waits).
        outcome(storage.db.transaction().execute(async (trx) => {
          await trx.insertInto("pg_plants").values({ id: "4", name: "d", tag: null }).execute();
          return true;
        })),
        // A read meanwhile is answered at once.
        outcome(storage.plants.get(1n).then((p) => ({ read: p, at: Date.now() }))),
      ]),
    );
    const read = result.outcomes[4] as { read: unknown; at: number };
    expect({ outcomes: result.outcomes.slice(0, 4), read: read.read }).toEqual({ outcomes: [true, true, true, true], read: { id: 1n, name: "a", tag: null } });
    // The read did not wait for the lock.
    expect(read.at - started).toBeLessThan(500);
    expect(result.ms).toBeGreaterThanOrEqual(1400);
    expect(result.maxLateMs).toBeLessThan(500);
    expect(await storage.plants.get(2n)).toEqual({ id: 2n, name: "b", tag: null });
    expect(await storage.revokedTokens.has("jti-1")).toBe(true);
    expect((await storage.clients.get("c1"))?.clientId).toBe("c1");
    expect(await storage.plants.get(4n)).toEqual({ id: 4n, name: "d", tag: null });
  }, 20_000);

  it("a write still waiting after 5 s answers StorageError (503), the event loop free all along", async () => {
    const { storage, other } = await setup();
    const release = setTimeout(() => other.exec("COMMIT"), 7000);
    try {
      const result = await lateness(
        Promise.all([
          outcome(storage.plants.create({ id: 2n, name: "b", tag: null })),
          outcome(storage.revokedTokens.add("jti-1", Date.now() + 60_000)),
          outcome(storage.clients.create(client("c1"))),
        ]),
      );
      expect(result.outcomes).toEqual(["StorageError", "StorageError", "StorageError"]);
      expect(result.ms).toBeGreaterThanOrEqual(4500);
      expect(result.ms).toBeLessThan(6900);
      expect(result.maxLateMs).toBeLessThan(500);
    } finally {
      clearTimeout(release);
      other.exec("COMMIT");
    }
    // Nothing of them was written, and the store writes again once the lock is gone.
    expect(await storage.plants.get(2n)).toBeNull();
    expect(await storage.plants.create({ id: 3n, name: "c", tag: null })).toBe(true);
  }, 20_000);
});

/**
 * Kysely runs its statements one at a time on the one connection, so those queued behind one that
 * waits for the lock wait with it. Until 2026-12-02 each then began its own 5 s only when its turn
 * came (two queued writes behind a lock held 12 s failed at about 5 and 10 s after they were sent):
 * now each gives up 5 s after it was handed to Kysely, wherever it waited meanwhile.
 */
describe("SQLite write lock held by another process, statements queued behind Kysely's one connection", () => {
  /** What `write` gave and how long after it was sent it settled. */
  const timed = (write: () => Promise<unknown>) => {
    const sent = Date.now();
    return outcome(write()).then((result) => ({ result, afterMs: Date.now() - sent }));
  };
  // Two sent at once, and one a second later (clients.create runs through Kysely).
  const send = (storage: SqlStorage) =>
    Promise.all([
      timed(() => storage.clients.create(client("c1"))),
      timed(() => storage.clients.create(client("c2"))),
      new Promise((resolve) => setTimeout(resolve, 1000)).then(() => timed(() => storage.clients.create(client("c3")))),
    ]);

  it("each fails with StorageError about 5 s after it was sent while the lock is held for 12 s", async () => {
    const { storage, other } = await setup();
    const release = setTimeout(() => other.exec("COMMIT"), 12_000);
    try {
      const settled = await send(storage);
      expect(settled.map((s) => s.result)).toEqual(["StorageError", "StorageError", "StorageError"]);
      for (const { afterMs } of settled) {
        expect(afterMs).toBeGreaterThanOrEqual(4500);
        expect(afterMs).toBeLessThan(6500);
      }
    } finally {
      clearTimeout(release);
      if (other.inTransaction) other.exec("COMMIT");
    }
    expect(await storage.clients.get("c1")).toBeNull();
    expect(await storage.clients.get("c3")).toBeNull();
  }, 30_000);

  it("each goes through once the lock is released at 3 s", async () => {
    const { storage, other } = await setup();
    setTimeout(() => other.exec("COMMIT"), 3000);
    const settled = await send(storage);
    expect(settled.map((s) => s.result)).toEqual([true, true, true]);
    for (const { afterMs } of settled.slice(0, 2)) {
      expect(afterMs).toBeGreaterThanOrEqual(2900);
      expect(afterMs).toBeLessThan(4000);
    }
    expect(settled[2]!.afterMs).toBeGreaterThanOrEqual(1900);
    expect(settled[2]!.afterMs).toBeLessThan(3000);
    expect((await storage.clients.list()).map((c) => c.clientId)).toEqual(["c1", "c2", "c3"]);
  }, 30_000);
});
