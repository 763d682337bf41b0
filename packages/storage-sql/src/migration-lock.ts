import { StorageError } from "@plantgate/core";
import { sql, type DialectAdapter, type Kysely } from "kysely";

/**
 * The first key of the PostgreSQL advisory lock (two-int form) `migrate()` takes, the second being
 * the oid of the current schema: "pgmg" in ASCII. Documented in the README so nobody else's
 * advisory locks collide with it.
 */
export const MIGRATION_LOCK = 0x70676d67;

/** How a migrator waits for the migration lock (see {@link scopedMigrationLock}). */
export interface MigrationLockOptions {
  /** Told once when the lock was not free within `warnAfterMs`. Default `console.warn`. */
  warn?: (message: string) => void;
  /** Default 5000. For tests. @internal */
  warnAfterMs?: number;
  /** The longest wait in all, in ms; then `migrate()` fails. Default 15 minutes. For tests. @internal */
  waitMs?: number;
}

/** The longest a migrator waits for another's lock (an index over millions of rows takes minutes); SQLite's too. */
export const MIGRATION_LOCK_WAIT_MS = 15 * 60_000;
const WARN_AFTER_MS = 5000;

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

interface Lock {
  /** What it locks, for messages: "this database", `schema "x"`. */
  readonly scope: string;
  /** Tries for up to `ms`; true once held. */
  take(db: Kysely<any>, ms: number): Promise<boolean>;
  /** The lock and who holds it, for the warning. */
  describe(db: Kysely<any>): Promise<string>;
  release(db: Kysely<any>): Promise<void>;
}

/** GET_LOCK names are server-wide: the name carries the database's, hashed (64 characters at most). */
function mysqlLock(): Lock {
  const name = sql`concat('plantgate.migrate.', md5(database()))`;
  return {
    scope: "this database",
    async take(db, ms) {
      // NULL (an error, a killed wait) is not the lock either.
      const { rows } = await sql<{ taken: unknown }>`select get_lock(${name}, ${sql.lit(Math.max(ms, 1) / 1000)}) as taken`.execute(db);
      return Number(rows[0]?.taken) === 1;
    },
    async describe(db) {
      const { rows } = await sql<{ name: string; holder: unknown }>`select ${name} as name, is_used_lock(${name}) as holder`.execute(db);
      const holder = rows[0]?.holder;
      return `GET_LOCK('${rows[0]?.name ?? "?"}')${holder == null ? "" : `, held by connection ${String(holder)}`}`;
    },
    async release(db) {
      await sql`do release_lock(${name})`.execute(db);
    },
  };
}

/**
 * A session-level advisory lock on (MIGRATION_LOCK, the schema's oid): advisory locks are per
 * database, and the oid tells the schemas of one apart.
 */
function postgresLock(schema: string): Lock {
  let key: number | undefined;
  // Read once, so the release names what was taken. A schema gone meanwhile would make the key
  // NULL, and pg_advisory_lock of a NULL is NULL without locking anything: refused here instead.
  const keyOf = async (db: Kysely<any>) => {
    if (key !== undefined) return key;
    const { rows } = await sql<{ key: number }>`select oid::int4 as key from pg_catalog.pg_namespace where nspname = ${schema}`.execute(db);
    if (rows[0] === undefined) throw new Error(`PostgreSQL has no schema "${schema}" to migrate`);
    return (key = Number(rows[0].key));
  };
  return {
    scope: `schema "${schema}"`,
    async take(db, ms) {
      const lock = sql`pg_advisory_lock(${sql.lit(MIGRATION_LOCK)}, ${sql.lit(await keyOf(db))})`;
      try {
        // lock_timeout set for this one statement (its own transaction: the migrator takes the lock
        // before its transaction begins), as Kysely's adapter does. 0 would mean no bound.
        await sql`with bound as (select set_config('lock_timeout', ${String(Math.max(Math.round(ms), 1))}, true) as ms) select ${lock} from bound`.execute(db);
        return true;
      } catch (e) {
        if ((e as { code?: unknown } | null)?.code === "55P03") return false;
        throw e;
      }
    },
    async describe(db) {
      const k = await keyOf(db);
      const { rows } = await sql<{ holder: number | null }>`
        select pid as holder from pg_catalog.pg_locks where locktype = 'advisory' and granted
          and database = (select oid from pg_catalog.pg_database where datname = current_database())
          and classid = ${sql.lit(MIGRATION_LOCK)} and objid = (${sql.lit(k)})::int4::oid and objsubid = 2 limit 1`.execute(db);
      const holder = rows[0]?.holder;
      return `pg_advisory_lock(${MIGRATION_LOCK}, ${k})${holder == null ? "" : `, held by backend ${holder}`}`;
    },
    async release(db) {
      await sql`select pg_advisory_unlock(${sql.lit(MIGRATION_LOCK)}, ${sql.lit(await keyOf(db))})`.execute(db);
    },
  };
}

/**
 * `base` (Kysely's adapter of the dialect) with a migration lock of plantgate's own instead of
 * Kysely's, for its Migrator: Kysely's is one GET_LOCK name for the whole MySQL server (and its
 * result unchecked: after an hour it migrated without the lock) and one advisory key for a whole
 * PostgreSQL database, so every migrator of another database or schema, plantgate's or any Kysely
 * application's, held up this one. This one covers plantgate's tables only (MySQL: this database;
 * PostgreSQL: the current schema), is waited for up to `waitMs` (a `warn` after `warnAfterMs`) and,
 * not taken by then, fails the migration with a `StorageError` before anything is migrated.
 * Kysely calls the release after a failed acquire too: it then releases nothing.
 */
export function scopedMigrationLock(base: DialectAdapter, family: "postgres" | "mysql", schema: string | undefined, options: MigrationLockOptions): DialectAdapter {
  const lock = family === "mysql" ? mysqlLock() : postgresLock(schema ?? "public");
  const waitMs = options.waitMs ?? MIGRATION_LOCK_WAIT_MS;
  const warnAfterMs = Math.min(options.warnAfterMs ?? WARN_AFTER_MS, waitMs);
  let held = false;
  const acquireMigrationLock = async (db: Kysely<any>) => {
    held = await lock.take(db, warnAfterMs);
    if (!held && waitMs > warnAfterMs) {
      const warn = options.warn ?? ((message: string) => console.warn(message));
      warn(`${family} storage: waiting for the migration lock of ${lock.scope} (${await lock.describe(db)}: another instance migrating it); waited ${seconds(warnAfterMs)}, waiting up to ${seconds(waitMs)} in all`);
      held = await lock.take(db, waitMs - warnAfterMs);
    }
    if (!held) {
      throw new StorageError(`${family} storage failed during migrate: the migration lock of ${lock.scope} was not free within ${seconds(waitMs)} (another instance is migrating it, or a session holds it); nothing was migrated`);
    }
  };
  const releaseMigrationLock = async (db: Kysely<any>) => {
    if (!held) return;
    held = false;
    await lock.release(db);
  };
  // Kysely's adapters keep no state of their own: its getters (supportsTransactionalDdl, ...) are
  // read through the prototype.
  return Object.assign(Object.create(base) as DialectAdapter, { acquireMigrationLock, releaseMigrationLock });
}
