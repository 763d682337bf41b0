import type { CompiledQuery, Kysely, QueryResult, SqliteDatabase } from "kysely";
import type { Runner } from "./prepared.js";
import { createReadCache, type ReadCache } from "./read-cache.js";
import type { Database } from "./schema.js";
import { cachingStatements } from "./statement-cache.js";

/** The part of a better-sqlite3 `Database` the fast path uses. */
export interface BetterSqlite3Like {
  prepare(sql: string): BetterSqlite3Statement;
  transaction(fn: (body: () => unknown) => unknown): { immediate(body: () => unknown): unknown };
  readonly inTransaction: boolean;
  close(): unknown;
}
interface BetterSqlite3Statement {
  readonly reader: boolean;
  readonly busy: boolean;
  all(parameters: ReadonlyArray<unknown>): unknown[];
  run(parameters: ReadonlyArray<unknown>): { changes: number; lastInsertRowid: number | bigint };
  get(...parameters: any[]): unknown;
  pluck(): BetterSqlite3Statement;
  iterate(parameters: ReadonlyArray<unknown>): IterableIterator<unknown>;
}

/**
 * Synchronous access to the one better-sqlite3 connection, beside Kysely's queue for it. Used only
 * while no transaction is open on the connection, so a statement run here is its own (autocommit)
 * transaction or one of `transaction`'s, never part of one Kysely opened and is still awaiting in.
 */
export interface DirectSqlite {
  /** False while a transaction (Kysely's) is open on the connection: go through Kysely then. */
  free(): boolean;
  /** Runs a compiled query now, as Kysely's SQLite driver would (same result shape). */
  execute<R>(query: CompiledQuery<R>): QueryResult<R>;
  /**
   * Group commit: runs `fn` (synchronous statements) at the end of this event-loop turn together
   * with every other `fn` queued in it inside one BEGIN IMMEDIATE ... COMMIT, and settles each
   * promise only after that COMMIT. One WAL commit then serves many concurrent writes, and nothing
   * is acknowledged before it. A throw undoes that `fn`'s statements only: the batch is then rolled
   * back and run again with each `fn` in a SAVEPOINT of its own, so `fn` may run twice and must do
   * nothing but its statements.
   */
  batched<T>(fn: () => T): Promise<T>;
}

/**
 * better-sqlite3 as plantgate's SQLite storage runs it: statements cached per SQL text, a read cache
 * validated by `PRAGMA data_version`, and a synchronous path for the hot statements.
 *
 * @example
 * const fast = sqliteFastPath(new BetterSqlite3("plantgate.db"));
 * const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: fast.database }) });
 * const storage = createSqlStorage(db, "sqlite", { sqlite: fast });
 */
export interface SqliteFastPath {
  /** Give this to Kysely's `SqliteDialect` as `database` (it tells the cache about every write). */
  readonly database: SqliteDatabase;
  readonly cache: ReadCache;
  readonly direct: DirectSqlite;
  /** Kysely's `executeQuery`, taking the synchronous path when the connection is free. */
  runner(db: Kysely<Database>): Runner;
}

/** Wraps one better-sqlite3 connection (see {@link SqliteFastPath}). */
export function sqliteFastPath(raw: BetterSqlite3Like, statements = 200): SqliteFastPath {
  const version = raw.prepare("PRAGMA data_version").pluck();
  const cache = createReadCache({ dataVersion: () => version.get() as number, bypass: () => raw.inTransaction });
  const database = cachingStatements(raw, statements, (sql) => cache.written(sql));
  const inTransaction = raw.transaction((fn: () => unknown) => fn()).immediate;

  const execute = <R>(query: CompiledQuery<R>): QueryResult<R> => {
    const stmt = database.prepare(query.sql) as unknown as BetterSqlite3Statement;
    if (stmt.reader) return { rows: stmt.all(query.parameters) as R[] };
    const { changes, lastInsertRowid } = stmt.run(query.parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  };
  // Group commit (see DirectSqlite.batched). better-sqlite3's transaction function rolls back and
  // rethrows when its body throws, and runs a transaction function called inside an open
  // transaction as a SAVEPOINT (released on return, rolled back to on a throw).
  // First pass: every job in one transaction, no SAVEPOINT (each costs two statements and a
  // sub-journal copy of every page its job touches; the A/B is in the README's performance section).
  // If a job throws, that pass is rolled back whole and the batch runs once more with a SAVEPOINT
  // per job, so one failing job costs its batch one extra pass, never a commit per job.
  type Job = { fn: () => unknown; resolve: (value: unknown) => void; reject: (error: unknown) => void };
  let queue: Job[] = [];
  const savepoint = raw.transaction((fn: () => unknown) => fn());
  const isolated = (jobs: Job[]) => {
    const outcomes: Array<{ ok: boolean; value: unknown }> = [];
    try {
      inTransaction(() => {
        for (const job of jobs) {
          // Some errors (I/O, disk full) make SQLite roll back the whole transaction: then stop
          // rather than run the rest in autocommit mode; COMMIT fails and every job is refused.
          if (!raw.inTransaction) break;
          try {
            outcomes.push({ ok: true, value: savepoint.immediate(job.fn) });
          } catch (error) {
            outcomes.push({ ok: false, value: error });
          }
        }
      });
    } catch (error) {
      for (const job of jobs) job.reject(error);
      return;
    }
    jobs.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.value);
    });
  };
  const flush = () => {
    // A Kysely transaction is open and awaiting: its statements and ours must not mix. Next turn.
    if (raw.inTransaction) return void setImmediate(flush);
    const jobs = queue;
    queue = [];
    const values: unknown[] = [];
    // Whether a job threw (then the batch runs again, isolated), as opposed to BEGIN or COMMIT
    // failing (busy past busy_timeout, disk full): then every job is refused at once.
    let jobThrew = false;
    try {
      inTransaction(() => {
        for (const job of jobs) {
          // A job that caught an error after SQLite rolled the transaction back on its own would
          // leave the rest to run in autocommit mode: refuse the batch instead.
          if (!raw.inTransaction) throw new Error("the group commit's transaction was rolled back by SQLite");
          try {
            values.push(job.fn());
          } catch (error) {
            jobThrew = true;
            throw error;
          }
        }
      });
    } catch (error) {
      // Nothing of this pass was kept.
      if (jobThrew && jobs.length > 1) isolated(jobs);
      else for (const job of jobs) job.reject(error);
      return;
    }
    jobs.forEach((job, i) => job.resolve(values[i]));
  };
  const direct: DirectSqlite = {
    free: () => !raw.inTransaction,
    execute,
    batched: <T>(fn: () => T) =>
      new Promise<T>((resolve, reject) => {
        if (queue.length === 0) setImmediate(flush);
        queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      }),
  };
  return {
    database,
    cache,
    direct,
    runner: (db) => ({
      executeQuery: ((query: CompiledQuery) => {
        if (raw.inTransaction) return db.executeQuery(query);
        try {
          return Promise.resolve(execute(query));
        } catch (e) {
          return Promise.reject(e);
        }
      }) as Runner["executeQuery"],
    }),
  };
}
