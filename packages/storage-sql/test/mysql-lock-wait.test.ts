/**
 * MariaDB/MySQL lock-wait timeouts (ER_LOCK_WAIT_TIMEOUT, 1205), made for real: the store's
 * connections wait at most 1 s for a row lock (`SET SESSION innodb_lock_wait_timeout = 1`, as a
 * server configured with a short lock wait has), and a second connection holds a row with
 * `SELECT ... FOR UPDATE` in an open transaction until the store's call has timed out once. InnoDB
 * then rolls back the waiting statement only, not its transaction; the store rolls back the whole
 * transaction and runs it again, which succeeds once the row is free. Before, the first timeout
 * was the caller's `StorageError`: a refresh answered 503.
 */
import { createPlantgate, refreshTokenKey, sha256, StorageError, type AccountRecord, type RefreshTokenRecord } from "@plantgate/core";
import { Kysely, MysqlDialect } from "kysely";
import mysql from "mysql2";
import mysqlPromise from "mysql2/promise";
import { afterEach, expect, it } from "vitest";
import { createSqlStorage, type Database, type SqlStorage } from "../src/index.js";
import { TABLES } from "../src/schema.js";
import { describeIfReachable, MYSQL_URL, mysqlEngine, probeMysql, type FreshDatabase } from "./support.js";

const problem = await probeMysql();
const T0 = 1_767_225_600_000;
const LOCK_WAIT_TIMEOUT = "ER_LOCK_WAIT_TIMEOUT";

const token = (tokenHash: string, overrides: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord => ({
  tokenHash,
  familyId: "family-1",
  clientId: "client-a",
  accountId: "acct-1",
  scope: ["offline_access"],
  createdAt: T0,
  expiresAt: T0 + 60_000,
  familyExpiresAt: T0 + 120_000,
  consumedAt: null,
  revokedAt: null,
  replay: null,
  graceUses: 0,
  ...overrides,
});

/** Polls `condition` every 10 ms until it holds; fails after `timeoutMs`. */
async function until(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describeIfReachable("mysql: lock-wait timeouts are run again", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", problem, () => {
  const engine = mysqlEngine();
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });

  /**
   * A migrated fresh database and a storage on it whose connections wait 1 s for a row lock, built
   * as a deployment with its own pool would (`createSqlStorage`). `errors` holds the driver error
   * code of every statement that failed, in order (Kysely's error log).
   */
  const open = async (options: { lockWaitRetries?: boolean; audit?: boolean } = {}) => {
    const db: FreshDatabase = await engine.fresh();
    cleanups.push(() => db.drop());
    const pool = mysql.createPool({ uri: db.url, supportBigNumbers: true, bigNumberStrings: true });
    pool.on("connection", (connection) => void connection.query("SET SESSION innodb_lock_wait_timeout = 1", () => {}));
    const errors: string[] = [];
    const kysely = new Kysely<Database>({
      dialect: new MysqlDialect({ pool }),
      log: (event) => {
        if (event.level === "error") errors.push(String((event.error as { code?: unknown }).code));
      },
    });
    const storage: SqlStorage = createSqlStorage(kysely, "mysql", options);
    cleanups.push(() => storage.close());
    await storage.migrate();
    return { db, storage, errors };
  };

  /** Another session holding the rows `select` picks (FOR UPDATE) in an open transaction, until released. */
  const hold = async (db: FreshDatabase, select: string, params: unknown[] = []) => {
    const connection = await mysqlPromise.createConnection(db.url);
    await connection.query("begin");
    await connection.query(`${select} for update`, params);
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await connection.query("rollback");
      await connection.end();
    };
    cleanups.push(release);
    return release;
  };

  /** Releases the held rows once `errors` shows the store's call has met a lock-wait timeout. */
  const releaseAfterFirstTimeout = async (errors: string[], release: () => Promise<void>) => {
    await until(() => errors.includes(LOCK_WAIT_TIMEOUT), "the store's first lock-wait timeout");
    await release();
  };

  it("a refresh grant whose rotation waits past the lock-wait timeout mid-transaction (on the family row) is rolled back whole, run again and answered 200", { timeout: 60_000 }, async () => {
    const { db, storage, errors } = await open();
    const logged: unknown[] = [];
    const app = createPlantgate({ storage, passwordHashIterations: 1000, logger: { error: (message, context) => logged.push({ message, context }), warn() {} } });
    const { clientSecret } = await app.admin.createClient({ clientId: "app-1" });
    await app.admin.createAccount({ username: "alice", password: "alice-password-1" });
    const tokenRequest = (params: Record<string, string>) =>
      app.fetch(
        new Request("https://as.example.test/UserService/connect/token", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`app-1:${clientSecret}`) },
          body: new URLSearchParams(params).toString(),
        }),
      );
    const granted = await tokenRequest({ grant_type: "password", username: "alice", password: "alice-password-1", scope: "Platform_UserAPIs offline_access" });
    expect(granted.status).toBe(200);
    const refresh = ((await granted.json()) as { refresh_token: string }).refresh_token;
    const hash = await refreshTokenKey(sha256, refresh);

    // MySQL's rotation: the conditional UPDATE of the token (which succeeds), then the upsert of
    // the family row, which waits for the holder and times out. InnoDB undoes that statement only:
    // the token stays consumed inside the still-open transaction until it is rolled back.
    const release = await hold(db, `select * from ${TABLES.refreshFamilies}`);
    const answer = tokenRequest({ grant_type: "refresh_token", refresh_token: refresh });
    await releaseAfterFirstTimeout(errors, release);
    const response = await answer;
    const body = (await response.json()) as Record<string, unknown>;
    expect({ status: response.status, body }).toEqual({
      status: 200,
      body: { access_token: expect.any(String), token_type: "Bearer", expires_in: expect.any(Number), scope: "Platform_UserAPIs offline_access", refresh_token: expect.any(String) },
    });
    expect(logged).toEqual([]);
    expect(errors[0]).toBe(LOCK_WAIT_TIMEOUT);
    // Consumed once, by the attempt that committed; its replacement stored once, in the same family.
    const original = await storage.refreshTokens.findByHash(hash);
    const replacement = await storage.refreshTokens.findByHash(await refreshTokenKey(sha256, body.refresh_token as string));
    expect(original?.consumedAt).toEqual(expect.any(Number));
    expect(replacement).toMatchObject({ familyId: original!.familyId, consumedAt: null, revokedAt: null });
    const count = async (table: string) => Number((await engine.exec(db, `select count(*) as n from ${table}`))[0]?.n);
    expect([await count(TABLES.refreshTokens), await count(TABLES.refreshFamilies)]).toEqual([2, 1]);
    // The replacement rotates in turn: the family is intact.
    expect((await tokenRequest({ grant_type: "refresh_token", refresh_token: body.refresh_token as string })).status).toBe(200);
  });

  it("attempts.increment (the throttle's count) waiting past the lock-wait timeout is run again and counts once", { timeout: 60_000 }, async () => {
    const { db, storage, errors } = await open();
    expect(await storage.attempts.increment("user:alice", T0, 60_000)).toEqual({ key: "user:alice", count: 1, windowStart: T0 });
    const release = await hold(db, `select * from ${TABLES.attempts} where attempt_key = 'user:alice'`);
    const counted = storage.attempts.increment("user:alice", T0 + 1, 60_000);
    await releaseAfterFirstTimeout(errors, release);
    expect(await counted).toEqual({ key: "user:alice", count: 2, windowStart: T0 });
    expect(await storage.attempts.get("user:alice")).toEqual({ key: "user:alice", count: 2, windowStart: T0 });
  });

  it("refreshTokens.graceUse (MySQL: the UPDATE and its read-back in one transaction) waiting past the lock-wait timeout is run again and counts one use", { timeout: 60_000 }, async () => {
    const { db, storage, errors } = await open();
    await storage.refreshTokens.create(token("original"));
    expect(await storage.refreshTokens.consume("original", T0 + 10, token("next"), "sealed-replay")).toBe(true);
    const release = await hold(db, `select * from ${TABLES.refreshTokens} where token_hash = ?`, ["original"]);
    const used = storage.refreshTokens.graceUse("original", T0, 3);
    await releaseAfterFirstTimeout(errors, release);
    const expected = token("original", { consumedAt: T0 + 10, replay: "sealed-replay", graceUses: 1 });
    expect(await used).toEqual(expected);
    expect(await storage.refreshTokens.findByHash("original")).toEqual(expected);
  });

  it("accounts.create and createMany behind an import holding the accounts counter past the lock-wait timeout are run again: each stored once at consecutive places; a taken username is still false, a conflicting batch still its index", { timeout: 60_000 }, async () => {
    const { db, storage, errors } = await open();
    const account = (id: string, username: string): AccountRecord => ({ id, username, displayName: null, email: null, roles: [], enabled: true, createdAt: T0, passwordHash: `$pbkdf2-sha256$i=1000,l=32$salt$${id}` });
    expect(await storage.accounts.create(account("a-alice", "alice"))).toBe(true);
    // What an import (accounts.createMany) holds from its first statement to its commit: the
    // accounts counter's row, which every create advances first.
    const release = await hold(db, `select * from ${TABLES.counters} where name = 'accounts'`);
    const calls = Promise.allSettled([
      storage.accounts.create(account("a-bob", "bob")),
      storage.accounts.createMany([account("a-carol", "carol"), account("a-dave", "dave")]),
      storage.accounts.create(account("a-alice-2", "alice")),
      storage.accounts.createMany([account("a-erin", "erin"), account("a-alice-3", "alice")]),
    ]);
    await releaseAfterFirstTimeout(errors, release);
    const outcomes = (await calls).map((o) => (o.status === "fulfilled" ? o.value : String((o.reason as Error).message)));
    expect(outcomes).toEqual([true, null, false, 1]);
    expect(errors[0]).toBe(LOCK_WAIT_TIMEOUT);
    const page = await storage.accounts.list(0, 10);
    const names = page.items.map((a) => a.username);
    expect({ total: page.total, names: [...names].sort() }).toEqual({ total: 4, names: ["alice", "bob", "carol", "dave"] });
    expect(names[0]).toBe("alice");
    expect(names.indexOf("dave") - names.indexOf("carol")).toBe(1);
    expect(await storage.accounts.findByUsername("erin")).toBeNull();
  });

  it("a row held through every attempt: StorageError naming the operation, the code and the 2 attempts (a lock wait is run again once only), nothing counted", { timeout: 60_000 }, async () => {
    const { db, storage, errors } = await open();
    await storage.attempts.increment("user:bob", T0, 60_000);
    const release = await hold(db, `select * from ${TABLES.attempts} where attempt_key = 'user:bob'`);
    const error = await storage.attempts.increment("user:bob", T0 + 1, 60_000).then(
      () => null,
      (e: unknown) => e,
    );
    await release();
    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toBe("mysql storage failed during attempts.increment (ER_LOCK_WAIT_TIMEOUT, 2 attempts)");
    expect((error as Error).cause).toMatchObject({ code: LOCK_WAIT_TIMEOUT, errno: 1205 });
    expect(errors).toEqual(Array(2).fill(LOCK_WAIT_TIMEOUT));
    expect(await storage.attempts.get("user:bob")).toEqual({ key: "user:bob", count: 1, windowStart: T0 });
  });

  it("lockWaitRetries: false (what openSqlStorage sets when the lock wait is its statement deadline): the first timeout is the StorageError", { timeout: 60_000 }, async () => {
    const { db, storage, errors } = await open({ lockWaitRetries: false });
    await storage.attempts.increment("user:carol", T0, 60_000);
    const release = await hold(db, `select * from ${TABLES.attempts} where attempt_key = 'user:carol'`);
    const error = await storage.attempts.increment("user:carol", T0 + 1, 60_000).then(
      () => null,
      (e: unknown) => e,
    );
    await release();
    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toBe("mysql storage failed during attempts.increment (ER_LOCK_WAIT_TIMEOUT)");
    expect(errors).toEqual([LOCK_WAIT_TIMEOUT]);
    expect(await storage.attempts.get("user:carol")).toEqual({ key: "user:carol", count: 1, windowStart: T0 });
  });
});
