import type { SigningKeyStore } from "@plantgate/core";
import { sql, type Kysely } from "kysely";
import type { StoreContext } from "../context.js";
import { affected } from "../prepared.js";
import { keyRecord, keyRow } from "../rows.js";
import { TABLES, type Database } from "../schema.js";

/**
 * The first key of PostgreSQL's advisory lock (the two-int form) `createIfEmpty` takes, the second
 * being the oid of `pg_signing_keys`: "pgfk" in ASCII. Documented in the README (Failures and
 * atomicity) so nobody else's advisory locks collide with it.
 */
const FIRST_KEY_LOCK = 0x7067666b;

/**
 * MySQL/MariaDB's first-key lock: how long (s) `createIfEmpty` waits for it, and the idle bound
 * (s) of the session holding it (its `wait_timeout` meanwhile). The bound is under the wait, so
 * the lock of an instance cut off while holding it (the server keeps such a session until its
 * `wait_timeout`, 8 h by default) is freed before a caller that waits for it gives up.
 */
export interface FirstKeyLockTimes {
  waitS: number;
  idleS: number;
}

const FIRST_KEY_LOCK_TIMES: FirstKeyLockTimes = { waitS: 10, idleS: 5 };

/** `pg_signing_keys` as core's {@link SigningKeyStore}. */
export function signingKeyStore(ctx: StoreContext, lockTimes: Partial<FirstKeyLockTimes> = {}): SigningKeyStore {
  const { db, family, run, storableKey, insertOrFalse } = ctx;
  const table = sql.table(TABLES.signingKeys);
  // PostgreSQL types a bare parameter in a SELECT list as text, which a bigint column refuses.
  const int = (v: number) => (family === "postgres" ? sql`cast(${v} as bigint)` : sql`${v}`);
  const times = { ...FIRST_KEY_LOCK_TIMES, ...lockTimes };

  return {
    list: () =>
      run("signingKeys.list", async () => {
        const rows = await db.selectFrom(TABLES.signingKeys).selectAll().orderBy("created_at").orderBy("kid").execute();
        return rows.map(keyRecord);
      }),
    create: (record) =>
      run("signingKeys.create", async () => {
        const row = keyRow(ctx, record);
        // InnoDB: creates, deletes and replacePrivateJwk of one kid racing each other deadlock (the
        // INSERTs share-lock the record a DELETE just removed, then ask for an exclusive lock): each
        // is one statement that commits alone, so a victim changed nothing and is run again.
        return insertOrFalse(() => ctx.again(() => db.insertInto(TABLES.signingKeys).values(row).execute()));
      }),
    createIfEmpty: (record) =>
      run("signingKeys.createIfEmpty", async () => {
        const row = keyRow(ctx, record);
        // One INSERT ... SELECT ... WHERE NOT EXISTS. Alone it is atomic only where writers are
        // serialized (SQLite, D1): under PostgreSQL's READ COMMITTED, and InnoDB's READ COMMITTED,
        // racing statements each see no row and each insert (the conformance kit's 30-way race
        // stored 20 keys on PostgreSQL without the lock). So there it runs under a lock of its own.
        const stamp = record.lastSignedAt !== undefined ? int(record.lastSignedAt) : family === "postgres" ? sql`cast(null as bigint)` : sql`null`;
        const insert = sql`insert into ${table} (kid, alg, private_jwk, public_jwk, created_at, activates_at, last_signed_at)
          select ${row.kid}, ${row.alg}, ${row.private_jwk}, ${row.public_jwk}, ${int(record.createdAt)}, ${int(record.activatesAt)}, ${stamp}
          ${family === "mysql" ? sql`from dual` : sql``} where not exists (select 1 from ${table})`;
        if (family === "postgres") {
          // A transaction-scoped advisory lock on (FIRST_KEY_LOCK, the table's oid): held to the
          // commit, so the next caller's INSERT, a statement of its own under READ COMMITTED, sees
          // this one's row. Only instances on the same table (schema) wait for each other. READ
          // COMMITTED said here, whatever the server's default_transaction_isolation: in REPEATABLE
          // READ the snapshot is taken by the lock's SELECT, before the wait, and the INSERT after
          // it did not see the key committed meanwhile (9 of 30 racing calls stored one); in
          // SERIALIZABLE the losers failed with 40001 (test/first-key.test.ts).
          return ctx.again(() =>
            db.transaction().setIsolationLevel("read committed").execute(async (trx) => {
              await sql`select pg_advisory_xact_lock(${sql.lit(FIRST_KEY_LOCK)}, ${TABLES.signingKeys}::text::regclass::oid::int4)`.execute(trx);
              return affected(await insert.execute(trx)) > 0n;
            }),
          );
        }
        if (family === "mysql") {
          // A named lock per database (GET_LOCK is server-wide), taken on one connection around the
          // INSERT, which commits alone. Without it the outcome hung on the pool's isolation level:
          // under READ COMMITTED InnoDB takes no gap lock and racing INSERTs each inserted (3 of
          // 30, test/first-key.test.ts); under REPEATABLE READ their gap locks deadlocked them.
          return db.connection().execute((conn) => underFirstKeyLock(conn, times, async () => affected(await ctx.again(() => insert.execute(conn))) > 0n));
        }
        return affected(await insert.execute(db)) > 0n;
      }),
    delete: (kid) =>
      run("signingKeys.delete", async () => {
        if (!storableKey(kid)) return false;
        // A deadlock victim beside creates of the same kid (see create): again.
        const result = await ctx.again(() => db.deleteFrom(TABLES.signingKeys).where("kid", "=", kid).executeTakeFirst());
        return result.numDeletedRows > 0n;
      }),
    replacePrivateJwk: (kid, expected, replacement) =>
      run("signingKeys.replacePrivateJwk", async () => {
        if (!storableKey(kid)) return false;
        const privateJwk = ctx.text(replacement, "privateJwk");
        // One conditional UPDATE: atomic on every engine, and a no-op when another writer got there
        // first. A deadlock victim beside a delete and create of the same kid (see create): again.
        const result = await ctx.again(() =>
          db
            .updateTable(TABLES.signingKeys)
            .set({ private_jwk: privateJwk })
            .where("kid", "=", kid)
            .where("private_jwk", "=", expected)
            .executeTakeFirst(),
        );
        return result.numUpdatedRows > 0n;
      }),
    markSigning: (kid, at) =>
      run("signingKeys.markSigning", async () => {
        if (!storableKey(kid)) return;
        // One conditional UPDATE (atomic on every engine): a stamp earlier than the stored one
        // changes nothing. A deadlock victim beside a delete and create of the same kid: again.
        await ctx.again(() =>
          db
            .updateTable(TABLES.signingKeys)
            .set({ last_signed_at: at })
            .where("kid", "=", kid)
            .where((eb) => eb.or([eb("last_signed_at", "is", null), eb("last_signed_at", "<", at)]))
            .execute(),
        );
      }),
  };
}

/**
 * Runs `work` on `conn` (one MySQL/MariaDB connection) holding the first-key lock of its database,
 * with the session's `wait_timeout` cut to `times.idleS` from before `GET_LOCK` to after
 * `RELEASE_LOCK`: an instance cut off in between (no close reaches the server, which keeps the
 * session and its lock until `wait_timeout`) holds it that long, not 8 h. The session is put back
 * as it was (the lock released, its own `wait_timeout` restored, kept meanwhile in a user variable
 * then cleared), so the pool never hands out a connection with the short bound. Failing that, the
 * session is ended ({@link endSession}): a connection that may still hold the lock never goes
 * back to the pool. `work`'s own failure is what the caller sees, never the cleanup's after it;
 * a cleanup that fails after `work` succeeded does not undo its result (the lock goes with the
 * session).
 */
async function underFirstKeyLock<T>(conn: Kysely<Database>, times: FirstKeyLockTimes, work: () => Promise<T>): Promise<T> {
  const name = sql`concat('plantgate.first_signing_key.', md5(database()))`;
  let outcome: { value: T } | { error: unknown };
  try {
    await sql`set @plantgate_wait_timeout = @@session.wait_timeout, session wait_timeout = ${sql.lit(times.idleS)}`.execute(conn);
    const taken = (await sql<{ taken: unknown }>`select get_lock(${name}, ${sql.lit(times.waitS)}) as taken`.execute(conn)).rows[0]?.taken;
    if (Number(taken) !== 1) throw new Error(`the lock of the first signing key was not taken within ${times.waitS} s`);
    outcome = { value: await work() };
  } catch (error) {
    outcome = { error };
  }
  try {
    // Also after a lock not taken: RELEASE_LOCK of a lock held by another session releases nothing.
    await sql`do release_lock(${name})`.execute(conn);
    await sql`set session wait_timeout = @plantgate_wait_timeout, @plantgate_wait_timeout = null`.execute(conn);
  } catch {
    await endSession(conn);
  }
  if ("error" in outcome) throw outcome.error;
  return outcome.value;
}

/**
 * Ends the server session of `conn` (its named locks go with it) and returns once mysql2 has seen
 * the connection close, which takes it out of its pool: the release that follows hands it to no
 * one. A connection already dropped (a timed-out statement, a reset) fails both at once. A session
 * the server cannot be told of (a network gone silent), or one a proxy between kept alive, is
 * ended by the server once idle for the short bound it still has.
 */
async function endSession(conn: Kysely<Database>): Promise<void> {
  await sql`kill connection_id()`.execute(conn).catch(() => {});
  await sql`select 1`.execute(conn).catch(() => {});
}
