import type { SqliteDatabase, SqliteStatement } from "kysely";

/** The part of a better-sqlite3 `Database` that {@link cachingStatements} wraps. */
export interface PreparingDatabase<S extends SqliteStatement> {
  prepare(sql: string): S;
  close(): unknown;
}

/** The part of a better-sqlite3 `Statement` the cache needs besides what Kysely uses. */
interface CachableStatement extends SqliteStatement {
  /** True while an `iterate()` over this statement is open; better-sqlite3 refuses to run it meanwhile. */
  readonly busy: boolean;
}

/**
 * Wraps a better-sqlite3 database for Kysely's `SqliteDialect` so that `prepare(sql)` hands back
 * one cached statement per SQL text (least recently used first out, `size` at most) instead of
 * compiling the SQL again on every execution, which is what Kysely's SQLite driver asks for.
 *
 * A better-sqlite3 statement can run any number of times; its bindings are per call. The one
 * thing it cannot do is run while an `iterate()` over it is still open (Kysely's `stream()`), so a
 * statement that is busy that way is not handed out again: the caller gets a fresh, uncached one.
 * SQLite itself re-prepares a cached statement when the schema changed under it (migrations).
 * `close()` closes the database, which finalizes every statement, cached or not. `onPrepare` is
 * told the SQL of every `prepare` (the read cache of `sqliteFastPath` learns of writes this way).
 *
 * @example
 * const database = new BetterSqlite3("plantgate.db");
 * const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cachingStatements(database) }) });
 */
export function cachingStatements<S extends CachableStatement>(database: PreparingDatabase<S>, size = 200, onPrepare?: (sql: string) => void): SqliteDatabase {
  const cache = new Map<string, S>();
  return {
    prepare(sql: string): S {
      // Kysely prepares right before it runs, so this sees every statement just before it runs.
      onPrepare?.(sql);
      const cached = cache.get(sql);
      if (cached !== undefined) {
        if (cached.busy) return database.prepare(sql);
        // Map order is insertion order: moving a hit to the end keeps the eldest first in line.
        cache.delete(sql);
        cache.set(sql, cached);
        return cached;
      }
      const statement = database.prepare(sql);
      cache.set(sql, statement);
      if (cache.size > size) cache.delete(cache.keys().next().value!);
      return statement;
    },
    close(): void {
      cache.clear();
      database.close();
    },
  };
}
