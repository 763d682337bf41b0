import type { Kysely } from "kysely";
import { maxParamsOf, type D1DatabaseLike } from "./batch.js";
import { againOnDeadlock, CorruptRowError, isUniqueViolation, toStorageError, UnstorableValueError } from "./errors.js";
import type { Runner } from "./prepared.js";
import { noReadCache, type ReadCache } from "./read-cache.js";
import type { Database, SqlFamily } from "./schema.js";
import type { SqliteFastPath, DirectSqlite } from "./sqlite-fast.js";
import { valueGuards, type ValueGuards } from "./values.js";

/**
 * What every store of a SQL storage works over: one per `createSqlStorage` call, built before the
 * stores, shared by all of them. A store file is `xStore(ctx)`: it builds its prepared queries
 * once and returns the methods of its core interface, each wrapped in {@link StoreContext.run}.
 */
export interface StoreContext extends ValueGuards {
  readonly db: Kysely<Database>;
  readonly family: SqlFamily;
  /** The D1 binding when the database is D1 (no SQL transactions: atomic writes use its `batch()`). */
  readonly d1: D1DatabaseLike | undefined;
  /** What prepared queries run on outside transactions: `db`, or the synchronous SQLite path. */
  readonly runner: Runner;
  /**
   * Hot reads remembered while no commit invalidates them: SQLite's fast path (validated by
   * data_version), PostgreSQL's client cache (invalidated by notifications), else none.
   */
  readonly cache: ReadCache;
  /** Synchronous statements and transactions on the one SQLite connection (fast path only). */
  readonly direct: DirectSqlite | undefined;
  /** The most parameters one statement may bind on this engine (see `chunks`). */
  readonly maxParams: number;
  /**
   * Runs `work` (one statement that commits alone, or one whole transaction) again while the server
   * picks it as a deadlock victim and, where the lock-wait timeout is not the storage's own deadline
   * (see `CreateSqlStorageOptions.lockWaitRetries`), while MySQL/MariaDB's lock wait times out:
   * {@link againOnDeadlock}, up to 8 attempts.
   */
  again<T>(work: () => Promise<T>): Promise<T>;
  /** Runs one storage operation; every failure but our own typed ones becomes StorageError. */
  run<T>(operation: string, fn: () => Promise<T>): Promise<T>;
  /** An INSERT whose duplicate key means "false"; being one statement, it never half-writes. */
  insertOrFalse(insert: () => Promise<unknown>): Promise<boolean>;
  /**
   * Whether an UPDATE found its row. MySQL reports *changed* rows unless the connection sets
   * CLIENT_FOUND_ROWS (mysql2 does by default, a pool you built may not), so on MySQL a 0 is
   * double-checked.
   */
  updated(count: bigint, exists: () => Promise<boolean>): Promise<boolean>;
}

/** The {@link StoreContext} of one database. */
export function createStoreContext(db: Kysely<Database>, family: SqlFamily, d1: D1DatabaseLike | undefined, fast?: SqliteFastPath, pgCache?: ReadCache, lockWaitRetries = true): StoreContext {
  if (d1 !== undefined && family !== "sqlite") throw new TypeError('createSqlStorage: the d1 option needs family "sqlite"');
  if (fast !== undefined && (family !== "sqlite" || d1 !== undefined)) throw new TypeError('createSqlStorage: the sqlite option needs family "sqlite" on better-sqlite3');

  const run = async <T>(operation: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof CorruptRowError || e instanceof UnstorableValueError) throw e;
      throw toStorageError(e, family, operation);
    }
  };

  const retry = { lockWaitTimeouts: lockWaitRetries };
  const again = <T>(work: () => Promise<T>): Promise<T> => againOnDeadlock(work, retry);

  const insertOrFalse = async (insert: () => Promise<unknown>): Promise<boolean> => {
    try {
      await insert();
      return true;
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  };

  const updated = async (count: bigint, exists: () => Promise<boolean>): Promise<boolean> => {
    if (count > 0n) return true;
    return family === "mysql" ? exists() : false;
  };

  if (pgCache !== undefined && family !== "postgres") throw new TypeError('createSqlStorage: the pgClientCache option needs family "postgres"');
  const speed = fast === undefined ? { runner: db, cache: pgCache ?? noReadCache, direct: undefined } : { runner: fast.runner(db), cache: fast.cache, direct: fast.direct };
  return { db, family, d1, ...speed, maxParams: maxParamsOf(family), again, run, insertOrFalse, updated, ...valueGuards(family) };
}
