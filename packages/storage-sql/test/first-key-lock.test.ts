/**
 * MySQL/MariaDB's first-key lock (`GET_LOCK` around `signingKeys.createIfEmpty`'s INSERT) when the
 * instance holding it is cut off. A network cut is no close: the server keeps the session, and
 * with it the named lock, until the session's `wait_timeout` (8 h by default), and until
 * 2026-11-30 every other instance starting on the empty store waited its 10 s for the lock and
 * failed (503) all that time. The lock's connection now has a short idle bound while it holds the
 * lock, put back after; a connection whose release failed is ended, never handed out again; and the
 * caller sees its INSERT's own failure, not the release's that followed it.
 */
import { StorageError, type SigningKeyRecord } from "@plantgate/core";
import { Kysely, MysqlDialect, sql, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, type QueryResult, type RootOperationNode, type UnknownRow } from "kysely";
import mysql from "mysql2";
import { afterEach, expect, it } from "vitest";
import { createSqlStorage, openSqlStorage, type Database, type SqlStorage } from "../src/index.js";
import { freezableProxy, type FreezableProxy } from "./freezable-proxy.js";
import { describeIfReachable, MYSQL_URL, mysqlEngine, probeMysql, type FreshDatabase } from "./support.js";

const problem = await probeMysql();
const T0 = 1_767_225_600_000;
const key = (kid: string): SigningKeyRecord => ({ kid, alg: "ES256", privateJwk: "{}", publicJwk: "{}", createdAt: T0, activatesAt: T0 });

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
});

/** Fails (before sending) every statement whose SQL mentions `text` while `armed`: a client-side failure on a live connection. */
class FailStatements implements KyselyPlugin {
  armed = true;
  constructor(readonly text: string) {}
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (this.armed && JSON.stringify(args.node).includes(this.text)) throw new Error(`${this.text} failed (injected)`);
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

describeIfReachable("mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", problem, () => {
  const engine = mysqlEngine();

  /** A fresh migrated database and a storage on it over a direct connection (the lock wait its default 10 s). */
  async function database(): Promise<{ db: FreshDatabase; direct: SqlStorage }> {
    const db = await engine.fresh();
    cleanups.push(() => db.drop());
    const direct = await openSqlStorage(db.url);
    cleanups.push(() => direct.close());
    return { db, direct };
  }

  /** A storage on `db` through a freezable proxy, holding the lock at most 2 s idle, each statement bounded by `queryTimeoutMs`. */
  async function throughProxy(db: FreshDatabase, queryTimeoutMs: number): Promise<{ proxy: FreezableProxy; storage: SqlStorage }> {
    const proxy = await freezableProxy(new URL(db.url));
    cleanups.push(() => proxy.close());
    const url = new URL(db.url);
    url.hostname = "127.0.0.1";
    url.port = String(proxy.port);
    const storage = await openSqlStorage(url.toString(), { migrate: false, queryTimeoutMs, firstKeyLock: { idleS: 2 } });
    cleanups.push(() => storage.close());
    // One connection open before the cut, so the call below does not wait on connecting.
    expect(await storage.signingKeys.list()).toEqual([]);
    return { proxy, storage };
  }

  /** The id of the session holding `db`'s first-key lock, or null. */
  const lockHolder = async (db: FreshDatabase) =>
    (await engine.exec(db, "select is_used_lock(concat('plantgate.first_signing_key.', md5(database()))) as holder"))[0]!.holder;

  const failure = (call: Promise<unknown>) => call.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

  it("an instance cut off while it holds the lock (its session left open on the server): another instance stores the first key within the idle bound, one key in the end; the cut one sees its INSERT's timeout", { timeout: 30_000 }, async () => {
    const { db, direct } = await database();
    const { proxy, storage } = await throughProxy(db, 4000);
    // The network goes the moment the INSERT is sent: the lock is taken, the INSERT never arrives.
    proxy.freezeOn("insert into");
    const cut = failure(storage.signingKeys.createIfEmpty!(key("cut")));
    await expect.poll(() => proxy.frozen).toBe(true);
    expect(await lockHolder(db)).not.toBeNull();

    const started = performance.now();
    const stored = await failure(direct.signingKeys.createIfEmpty!(key("direct")));
    const took = performance.now() - started;
    expect(stored).toEqual({ value: true });
    // Within the cut session's idle bound (2 s) and well under the 10 s lock wait.
    expect(took).toBeLessThan(6000);
    expect((await direct.signingKeys.list()).map((k) => k.kid)).toEqual(["direct"]);

    // The cut instance's INSERT met its 4 s deadline; its RELEASE_LOCK then failed on the dropped
    // connection, and that second failure is not what the caller is told.
    const { error } = (await cut) as { error: StorageError };
    expect(error).toBeInstanceOf(StorageError);
    expect(error.message).toBe("mysql storage failed during signingKeys.createIfEmpty (PROTOCOL_SEQUENCE_TIMEOUT)");
    expect((error.cause as { code?: unknown }).code).toBe("PROTOCOL_SEQUENCE_TIMEOUT");
  });

  it("an INSERT that fails, then a RELEASE_LOCK cut off by the network: the caller sees the INSERT's error, and the lock is free within the idle bound", { timeout: 30_000 }, async () => {
    const { db, direct } = await database();
    const { proxy, storage } = await throughProxy(db, 1500);
    await engine.exec(db, "rename table pg_signing_keys to pg_signing_keys_away");
    proxy.freezeOn("release_lock");
    const outcome = (await failure(storage.signingKeys.createIfEmpty!(key("cut")))) as { error: StorageError };
    expect(proxy.frozen).toBe(true);
    expect(outcome.error).toBeInstanceOf(StorageError);
    expect(outcome.error.message).toBe("mysql storage failed during signingKeys.createIfEmpty (ER_NO_SUCH_TABLE)");
    await engine.exec(db, "rename table pg_signing_keys_away to pg_signing_keys");

    const started = performance.now();
    expect(await failure(direct.signingKeys.createIfEmpty!(key("direct")))).toEqual({ value: true });
    expect(performance.now() - started).toBeLessThan(6000);
    expect((await direct.signingKeys.list()).map((k) => k.kid)).toEqual(["direct"]);
  });

  it("over a pool of one connection: a call puts the session back as it was (wait_timeout read back); a RELEASE_LOCK that fails on a live connection after a failed INSERT ends that session (the lock free at once, a new connection next) and the caller sees the INSERT's error", { timeout: 30_000 }, async () => {
    const { db } = await database();
    const pool = mysql.createPool({ uri: db.url, connectionLimit: 1, supportBigNumbers: true, bigNumberStrings: true });
    const plugin = new FailStatements("release_lock");
    plugin.armed = false;
    const storage = createSqlStorage(new Kysely<Database>({ dialect: new MysqlDialect({ pool }) }).withPlugin(plugin), "mysql");
    cleanups.push(() => storage.close());
    const session = async () =>
      (await sql<{ id: string; idle: string }>`select connection_id() as id, @@session.wait_timeout as idle, @plantgate_wait_timeout as saved`.execute(storage.db)).rows[0]!;
    const before = await session();

    expect(await storage.signingKeys.createIfEmpty!(key("first"))).toBe(true);
    expect(await storage.signingKeys.createIfEmpty!(key("second"))).toBe(false);
    expect(await session()).toEqual(before);
    expect(await lockHolder(db)).toBeNull();

    await storage.signingKeys.delete("first");
    await engine.exec(db, "rename table pg_signing_keys to pg_signing_keys_away");
    plugin.armed = true;
    const outcome = (await failure(storage.signingKeys.createIfEmpty!(key("third")))) as { error: StorageError };
    expect(outcome.error).toBeInstanceOf(StorageError);
    expect(outcome.error.message).toBe("mysql storage failed during signingKeys.createIfEmpty (ER_NO_SUCH_TABLE)");
    // Not left held by a connection back in the pool.
    expect(await lockHolder(db)).toBeNull();
    plugin.armed = false;
    await engine.exec(db, "rename table pg_signing_keys_away to pg_signing_keys");
    const after = await session();
    expect(after.id).not.toBe(before.id);
    expect(after.idle).toEqual(before.idle);
    expect(await storage.signingKeys.createIfEmpty!(key("fourth"))).toBe(true);
    expect((await storage.signingKeys.list()).map((k) => k.kid)).toEqual(["fourth"]);
  });
});
