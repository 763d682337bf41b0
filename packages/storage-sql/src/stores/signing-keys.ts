import type { SigningKeyStore } from "@plantgate/core";
import { sql } from "kysely";
import type { StoreContext } from "../context.js";
import { affected } from "../prepared.js";
import { keyRecord, keyRow } from "../rows.js";
import { TABLES } from "../schema.js";

/**
 * The first key of PostgreSQL's advisory lock (the two-int form) `createIfEmpty` takes, the second
 * being the oid of `pg_signing_keys`: "pgfk" in ASCII. Documented in the README (Failures and
 * atomicity) so nobody else's advisory locks collide with it.
 */
const FIRST_KEY_LOCK = 0x7067666b;

/** How long (s) MySQL/MariaDB's `createIfEmpty` waits for its named lock (held for one INSERT). */
const FIRST_KEY_LOCK_WAIT_S = 10;

/** `pg_signing_keys` as core's {@link SigningKeyStore}. */
export function signingKeyStore(ctx: StoreContext): SigningKeyStore {
  const { db, family, run, storableKey, insertOrFalse } = ctx;
  const table = sql.table(TABLES.signingKeys);
  // PostgreSQL types a bare parameter in a SELECT list as text, which a bigint column refuses.
  const int = (v: number) => (family === "postgres" ? sql`cast(${v} as bigint)` : sql`${v}`);

  return {
    list: () =>
      run("signingKeys.list", async () => {
        const rows = await db.selectFrom(TABLES.signingKeys).selectAll().orderBy("created_at").orderBy("kid").execute();
        return rows.map(keyRecord);
      }),
    create: (record) =>
      run("signingKeys.create", async () => {
        const row = keyRow(ctx, record);
        return insertOrFalse(() => db.insertInto(TABLES.signingKeys).values(row).execute());
      }),
    createIfEmpty: (record) =>
      run("signingKeys.createIfEmpty", async () => {
        const row = keyRow(ctx, record);
        // One INSERT ... SELECT ... WHERE NOT EXISTS. Alone it is atomic only where writers are
        // serialized (SQLite, D1): under PostgreSQL's READ COMMITTED, and InnoDB's READ COMMITTED,
        // racing statements each see no row and each insert (the conformance kit's 30-way race
        // stored 20 keys on PostgreSQL without the lock). So there it runs under a lock of its own.
        const insert = sql`insert into ${table} (kid, alg, private_jwk, public_jwk, created_at, activates_at)
          select ${row.kid}, ${row.alg}, ${row.private_jwk}, ${row.public_jwk}, ${int(record.createdAt)}, ${int(record.activatesAt)}
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
          return db.connection().execute(async (conn) => {
            const name = sql`concat('plantgate.first_signing_key.', md5(database()))`;
            const taken = (await sql<{ taken: unknown }>`select get_lock(${name}, ${sql.lit(FIRST_KEY_LOCK_WAIT_S)}) as taken`.execute(conn)).rows[0]?.taken;
            if (Number(taken) !== 1) throw new Error(`the lock of the first signing key was not taken within ${FIRST_KEY_LOCK_WAIT_S} s`);
            try {
              return affected(await ctx.again(() => insert.execute(conn))) > 0n;
            } finally {
              await sql`select release_lock(${name})`.execute(conn);
            }
          });
        }
        return affected(await insert.execute(db)) > 0n;
      }),
    delete: (kid) =>
      run("signingKeys.delete", async () => {
        if (!storableKey(kid)) return false;
        const result = await db.deleteFrom(TABLES.signingKeys).where("kid", "=", kid).executeTakeFirst();
        return result.numDeletedRows > 0n;
      }),
    replacePrivateJwk: (kid, expected, replacement) =>
      run("signingKeys.replacePrivateJwk", async () => {
        if (!storableKey(kid)) return false;
        const privateJwk = ctx.text(replacement, "privateJwk");
        // One conditional UPDATE: atomic on every engine, and a no-op when another writer got there first.
        const result = await db
          .updateTable(TABLES.signingKeys)
          .set({ private_jwk: privateJwk })
          .where("kid", "=", kid)
          .where("private_jwk", "=", expected)
          .executeTakeFirst();
        return result.numUpdatedRows > 0n;
      }),
  };
}
