/**
 * A database that stops answering (a network cut where packets vanish), through a TCP proxy this
 * test can freeze: every statement fails within `queryTimeoutMs` (StorageError, so 503), its
 * connection is dropped rather than handed to the next caller, and once the network is back the
 * very next call is served. Before 2026-11-29 such a call never settled, and on PostgreSQL the pool
 * stayed stuck after the network came back.
 */
import { StorageError } from "@plantgate/core";
import { sql } from "kysely";
import mysql from "mysql2/promise";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { openStorageFromEnv } from "../src/env.js";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { freezableProxy } from "./freezable-proxy.js";
import { describeIfReachable, mysqlEngine, MYSQL_URL, postgresEngine, POSTGRES_URL, probeMysql, probePostgres, type Engine, type FreshDatabase } from "./support.js";

function unresponsiveSuite(engine: Engine): void {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => {});
  });
  /** A freezable proxy in front of `db`, and `db`'s URL through it. */
  const throughProxy = async (db: FreshDatabase) => {
    const proxy = await freezableProxy(new URL(db.url));
    cleanup.push(() => proxy.close());
    const viaProxy = new URL(db.url);
    viaProxy.hostname = "127.0.0.1";
    viaProxy.port = String(proxy.port);
    return { proxy, viaProxy };
  };

  it("a frozen server: each call fails within queryTimeoutMs as StorageError; back again, the next call is served (the timed-out connections dropped)", async () => {
    const db: FreshDatabase = await engine.fresh();
    cleanup.push(() => db.drop());
    const { proxy, viaProxy } = await throughProxy(db);
    const storage: SqlStorage = await openSqlStorage(viaProxy.toString(), { queryTimeoutMs: 600, clientCache: false });
    cleanup.push(() => storage.close());
    // Three connections open (the pool opens one per call waiting), so the frozen calls below each
    // have one and meet the statement bound, not the 10 s connect bound of a new connection.
    await Promise.all([storage.clients.get("nobody"), storage.accounts.findByUsername("nobody"), storage.revokedTokens.has("nothing")]);

    proxy.frozen = true;
    const started = performance.now();
    const calls = await Promise.allSettled([storage.clients.get("a"), storage.accounts.findByUsername("b"), storage.revokedTokens.has("c")]);
    const took = performance.now() - started;
    for (const call of calls) {
      expect(call.status).toBe("rejected");
      expect((call as PromiseRejectedResult).reason).toBeInstanceOf(StorageError);
    }
    expect(took).toBeGreaterThanOrEqual(550);
    expect(took).toBeLessThan(3000);

    proxy.frozen = false;
    // The connections that timed out are gone: fresh ones answer at once.
    const back = performance.now();
    expect(await storage.clients.get("nobody")).toBeNull();
    expect(await storage.accounts.list(0, 1)).toEqual({ items: [], total: 0 });
    expect(performance.now() - back).toBeLessThan(2000);
  }, 30_000);

  it("close() of a storage whose server stopped answering returns, and every connection of its is closed (dropped after the polite end's wait)", async () => {
    const db: FreshDatabase = await engine.fresh();
    cleanup.push(() => db.drop());
    const { proxy, viaProxy } = await throughProxy(db);
    // On PostgreSQL the client cache on (the default): one more connection, LISTENing.
    const storage: SqlStorage = await openSqlStorage(viaProxy.toString(), { queryTimeoutMs: 600 });
    await Promise.all([storage.clients.get("nobody"), storage.accounts.findByUsername("nobody")]);
    expect(proxy.openClients).toBeGreaterThanOrEqual(engine.family === "postgres" ? 2 : 1);
    proxy.frozen = true;
    // One call still waiting on the frozen server when close() starts.
    const pending = storage.clients.get("late").catch((e: unknown) => e);
    const started = performance.now();
    await storage.close();
    expect(performance.now() - started).toBeLessThan(9000);
    // Each dropped socket's end reaches the proxy a moment after close() returns.
    await expect.poll(() => proxy.openClients, { timeout: 1000 }).toBe(0);
    expect(await pending).toBeInstanceOf(StorageError);
  }, 30_000);

  it("each connection carries the server's own bounds (read back): statements and lock waits a second under queryTimeoutMs, a session idle in a transaction ended after 15 s", async () => {
    const db: FreshDatabase = await engine.fresh();
    cleanup.push(() => db.drop());
    const storage: SqlStorage = await openSqlStorage(db.url, { queryTimeoutMs: 3000, clientCache: false });
    cleanup.push(() => storage.close());
    if (engine.family === "postgres") {
      const { rows } = await sql<Record<string, string>>`select current_setting('statement_timeout') as statement, current_setting('lock_timeout') as lock, current_setting('idle_in_transaction_session_timeout') as idle`.execute(storage.db);
      expect(rows).toEqual([{ statement: "2s", lock: "2s", idle: "15s" }]);
    } else {
      const { rows } = await sql<Record<string, unknown>>`select @@session.innodb_lock_wait_timeout as lockWait, @@session.max_statement_time as statement, @@session.idle_transaction_timeout as idle`.execute(storage.db);
      expect(rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])))).toEqual([{ lockWait: 2, statement: 2, idle: 15 }]);
    }
  });

  it("openStorageFromEnv gives each connection PLANTGATE_QUERY_TIMEOUT_MS (its server bound read back); 0 sets none", async () => {
    const db: FreshDatabase = await engine.fresh();
    cleanup.push(() => db.drop());
    const read = async (value: string) => {
      const storage = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: db.url, PLANTGATE_QUERY_TIMEOUT_MS: value, PLANTGATE_CLIENT_CACHE: "0" }, { cwd: process.cwd() });
      try {
        const query = engine.family === "postgres" ? sql<{ bound: string }>`select current_setting('statement_timeout') as bound` : sql<{ bound: string }>`select @@session.innodb_lock_wait_timeout as bound`;
        return String((await query.execute(storage.db)).rows[0]?.bound);
      } finally {
        await storage.close();
      }
    };
    expect(await read("5000")).toBe(engine.family === "postgres" ? "4s" : "4");
    // No bound of ours: the server's own defaults (PostgreSQL none, MariaDB's 50 s lock wait).
    expect(await read("0")).toBe(engine.family === "postgres" ? "0" : "50");
  });

  it("a statement waiting on a lock is cancelled by the server under the client's deadline: StorageError, and nothing commits after it", async () => {
    const db: FreshDatabase = await engine.fresh();
    cleanup.push(() => db.drop());
    const storage: SqlStorage = await openSqlStorage(db.url, { queryTimeoutMs: 3000, clientCache: false });
    cleanup.push(() => storage.close());
    const now = Date.now();
    expect(await storage.attempts.increment("locked", now, 60_000)).toEqual({ key: "locked", count: 1, windowStart: now });
    // Another session holds the row for 4.5 s.
    const holder = await lockRow(engine, db.url);
    try {
      const started = performance.now();
      const error = await storage.attempts.increment("locked", now, 60_000).then(() => null, (e: unknown) => e);
      const took = performance.now() - started;
      expect(error).toBeInstanceOf(StorageError);
      // The server's bound (2 s) ended it, not the client's (3 s), so the connection is still good.
      expect(took).toBeGreaterThanOrEqual(1800);
      expect(took).toBeLessThan(2900);
    } finally {
      await holder.release();
    }
    // Nothing committed late: the count is still 1, and the next increment makes it 2.
    expect(await storage.attempts.get("locked")).toEqual({ key: "locked", count: 1, windowStart: now });
    expect(await storage.attempts.increment("locked", now, 60_000)).toEqual({ key: "locked", count: 2, windowStart: now });
  }, 30_000);
}

/** Another session that locks the attempts row `locked` until released (at most 4.5 s). */
async function lockRow(engine: Engine, url: string): Promise<{ release(): Promise<void> }> {
  if (engine.family === "postgres") {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query("begin");
    await client.query("select * from pg_attempts where attempt_key = 'locked' for update");
    const timer = setTimeout(() => void client.query("rollback").catch(() => {}), 4500);
    return {
      release: async () => {
        clearTimeout(timer);
        await client.query("rollback").catch(() => {});
        await client.end();
      },
    };
  }
  const connection = await mysql.createConnection(url);
  await connection.query("begin");
  await connection.query("select * from pg_attempts where attempt_key = 'locked' for update");
  const timer = setTimeout(() => void connection.query("rollback").catch(() => {}), 4500);
  return {
    release: async () => {
      clearTimeout(timer);
      await connection.query("rollback").catch(() => {});
      await connection.end();
    },
  };
}

const pgProblem = await probePostgres();
describeIfReachable("PostgreSQL stops answering", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => {
  describe("PostgreSQL stops answering", () => unresponsiveSuite(postgresEngine()));
});
const mysqlProblem = await probeMysql();
describeIfReachable("MySQL/MariaDB stops answering", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", mysqlProblem, () => {
  describe("MySQL/MariaDB stops answering", () => unresponsiveSuite(mysqlEngine()));
});
