import { StorageError } from "@plantgate/core";
import { sql, type DialectAdapter, type Kysely, type RawBuilder } from "kysely";

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
  /** The lock, for messages: "the migration lock of this database". */
  readonly title: string;
  /** Who holds it when it is not free, for the warning: "another instance migrating it". */
  readonly holder: string;
  /** The same, for the failure: "another instance is migrating it, or a session holds it". */
  readonly busy: string;
  /** Tries for up to `ms`; true once held, false when not free by then. */
  take(db: Kysely<any>, ms: number): Promise<boolean>;
  /** The lock and who holds it, for the warning. */
  describe(db: Kysely<any>): Promise<string>;
  release(db: Kysely<any>): Promise<void>;
}

const OWN = { holder: "another instance migrating it", busy: "another instance is migrating it, or a session holds it" };

/**
 * What holds Kysely's default lock when plantgate's was free: an instance of a release from before
 * 2026-12-02 (it takes only that one) migrating, or another Kysely application's migrator (the lock
 * covers the whole MySQL server, the whole PostgreSQL database).
 */
const LEGACY = {
  holder: "a plantgate instance from before 2026-12-02 migrating, or another Kysely application's migrator",
  busy: "a plantgate instance from before 2026-12-02 is migrating, or another Kysely application's migrator or a session holds it",
};

/** Kysely's MySQL adapter's GET_LOCK name (kysely dist/esm/dialect/mysql/mysql-adapter.js). */
export const KYSELY_MYSQL_MIGRATION_LOCK = "ea586330-2c93-47c8-908d-981d9d270f9d";
/** Kysely's PostgreSQL adapter's advisory key, one bigint (kysely dist/esm/dialect/postgres/postgres-adapter.js). */
export const KYSELY_POSTGRES_MIGRATION_LOCK = 3853314791062309107n;

/** A GET_LOCK of `name` (an expression): GET_LOCK names are server-wide. */
function mysqlLock(name: RawBuilder<unknown>, title: string, texts: typeof OWN): Lock {
  return {
    title,
    ...texts,
    async take(db, ms) {
      const { rows } = await sql<{ taken: unknown }>`select get_lock(${name}, ${sql.lit(Math.max(ms, 1) / 1000)}) as taken`.execute(db);
      const taken = rows[0]?.taken;
      // NULL is no timeout: the wait was killed (KILL QUERY) or failed. Waiting again would hide it.
      if (taken == null) throw new StorageError(`mysql storage failed during migrate: GET_LOCK for ${title} returned NULL (the wait was killed, or the server failed it); nothing was migrated`);
      return Number(taken) === 1;
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

/** The name carries the database's, hashed (64 characters at most). */
const mysqlOwnLock = (): Lock => mysqlLock(sql`concat('plantgate.migrate.', md5(database()))`, "the migration lock of this database", OWN);

/** Kysely's own, the same name for every database of the server. */
const mysqlLegacyLock = (): Lock => mysqlLock(sql`${sql.lit(KYSELY_MYSQL_MIGRATION_LOCK)}`, "Kysely's migration lock of the whole MySQL server", LEGACY);

/**
 * A session-level PostgreSQL advisory lock: `args` are pg_advisory_lock's, `held` tells its rows of
 * pg_locks (in this database) apart from others'.
 */
function postgresAdvisoryLock(
  title: string,
  texts: typeof OWN,
  key: (db: Kysely<any>) => Promise<{ args: RawBuilder<unknown>; held: RawBuilder<unknown>; label: string }>,
): Lock {
  return {
    title,
    ...texts,
    async take(db, ms) {
      const { args } = await key(db);
      try {
        // lock_timeout set for this one statement (its own transaction: the migrator takes the lock
        // before its transaction begins), as Kysely's adapter does. 0 would mean no bound.
        await sql`with bound as (select set_config('lock_timeout', ${String(Math.max(Math.round(ms), 1))}, true) as ms) select pg_advisory_lock(${args}) from bound`.execute(db);
        return true;
      } catch (e) {
        if ((e as { code?: unknown } | null)?.code === "55P03") return false;
        throw e;
      }
    },
    async describe(db) {
      const { held, label } = await key(db);
      const { rows } = await sql<{ holder: number | null }>`
        select pid as holder from pg_catalog.pg_locks where locktype = 'advisory' and granted
          and database = (select oid from pg_catalog.pg_database where datname = current_database())
          and ${held} limit 1`.execute(db);
      const holder = rows[0]?.holder;
      return `pg_advisory_lock(${label})${holder == null ? "" : `, held by backend ${holder}`}`;
    },
    async release(db) {
      await sql`select pg_advisory_unlock(${(await key(db)).args})`.execute(db);
    },
  };
}

/**
 * (MIGRATION_LOCK, the schema's oid), two-int form: advisory locks are per database, and the oid
 * tells the schemas of one apart.
 */
function postgresOwnLock(schema: string): Lock {
  let oid: number | undefined;
  // Read once, so the release names what was taken. A schema gone meanwhile would make the key
  // NULL, and pg_advisory_lock of a NULL is NULL without locking anything: refused here instead.
  return postgresAdvisoryLock(`the migration lock of schema "${schema}"`, OWN, async (db) => {
    if (oid === undefined) {
      const { rows } = await sql<{ key: number }>`select oid::int4 as key from pg_catalog.pg_namespace where nspname = ${schema}`.execute(db);
      if (rows[0] === undefined) throw new Error(`PostgreSQL has no schema "${schema}" to migrate`);
      oid = Number(rows[0].key);
    }
    return {
      args: sql`${sql.lit(MIGRATION_LOCK)}, ${sql.lit(oid)}`,
      held: sql`classid = ${sql.lit(MIGRATION_LOCK)} and objid = (${sql.lit(oid)})::int4::oid and objsubid = 2`,
      label: `${MIGRATION_LOCK}, ${oid}`,
    };
  });
}

/** Kysely's key, one bigint for the whole database: in pg_locks its high and low halves, objsubid 1. */
function postgresLegacyLock(): Lock {
  const key = KYSELY_POSTGRES_MIGRATION_LOCK;
  const parts = {
    args: sql`${sql.lit(String(key))}::int8`,
    held: sql`classid = ${sql.lit(String(key >> 32n))}::oid and objid = ${sql.lit(String(key & 0xffffffffn))}::oid and objsubid = 1`,
    label: String(key),
  };
  return postgresAdvisoryLock("Kysely's migration lock of the whole PostgreSQL database", LEGACY, async () => parts);
}

/**
 * `base` (Kysely's adapter of the dialect) with a migration lock of plantgate's own in front of
 * Kysely's, for its Migrator. Kysely's is one GET_LOCK name for the whole MySQL server (and its
 * result unchecked: after an hour it migrated without the lock) and one advisory key for a whole
 * PostgreSQL database, and until 2026-12-02 plantgate took it at every start, so every migrator of
 * another database or schema, plantgate's or any Kysely application's, held up every start. Now
 * the Migrator is only run when a migration is pending (an up-to-date start takes no lock at all),
 * and then takes plantgate's lock, which covers plantgate's tables only (MySQL: this database;
 * PostgreSQL: the current schema), and after it Kysely's as well: instances of a release from
 * before 2026-12-02 take only Kysely's, and during a rolling upgrade (or an old CLI `migrate`
 * beside new instances) one of them and a newer one must not migrate at once (they did, with
 * plantgate's lock alone: duplicate index / pg_type errors; test/migration-lock-mixed-version.test.ts).
 * Taking Kysely's lock can be dropped in a later release, once no deployment upgrades straight from
 * one before 2026-12-02. Both are waited for within one budget, `waitMs` in all (one `warn` after
 * `warnAfterMs`, naming the lock waited for); either not taken by then fails the migration with a
 * `StorageError` before anything is migrated, as does a MySQL GET_LOCK answering NULL. Released
 * Kysely's first, on every path: Kysely calls the release after a failed acquire too, and it then
 * releases what was taken.
 */
export function scopedMigrationLock(base: DialectAdapter, family: "postgres" | "mysql", schema: string | undefined, options: MigrationLockOptions): DialectAdapter {
  const own = family === "mysql" ? mysqlOwnLock() : postgresOwnLock(schema ?? "public");
  const legacy = family === "mysql" ? mysqlLegacyLock() : postgresLegacyLock();
  const waitMs = options.waitMs ?? MIGRATION_LOCK_WAIT_MS;
  const warnAfterMs = Math.min(options.warnAfterMs ?? WARN_AFTER_MS, waitMs);
  const warn = options.warn ?? ((message: string) => console.warn(message));
  const held = new Set<Lock>();
  const acquireMigrationLock = async (db: Kysely<any>) => {
    const started = Date.now();
    let warned = false;
    const take = async (lock: Lock) => {
      let taken = warned ? false : await lock.take(db, started + warnAfterMs - Date.now());
      if (!taken && waitMs > warnAfterMs) {
        if (!warned) {
          warned = true;
          const message = `${family} storage: waiting for ${lock.title} (${await lock.describe(db)}: ${lock.holder}); waited ${seconds(warnAfterMs)}, waiting up to ${seconds(waitMs)} in all`;
          try {
            warn(message);
          } catch {
            // A reporter that throws fails nothing (as `onWarning` promises): the wait goes on.
          }
        }
        taken = await lock.take(db, started + waitMs - Date.now());
      }
      if (!taken) {
        throw new StorageError(`${family} storage failed during migrate: ${lock.title} was not free within ${seconds(waitMs)} (${lock.busy}); nothing was migrated`);
      }
      held.add(lock);
    };
    await take(own);
    await take(legacy);
  };
  const releaseMigrationLock = async (db: Kysely<any>) => {
    const release = async (lock: Lock) => {
      if (!held.delete(lock)) return;
      await lock.release(db);
    };
    try {
      await release(legacy);
    } finally {
      await release(own);
    }
  };
  // Kysely's adapters keep no state of their own: its getters (supportsTransactionalDdl, ...) are
  // read through the prototype.
  return Object.assign(Object.create(base) as DialectAdapter, { acquireMigrationLock, releaseMigrationLock });
}
