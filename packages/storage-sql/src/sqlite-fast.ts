import { CompiledQuery, SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type Kysely, type QueryResult, type SqliteDatabase } from "kysely";
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
 * How long a statement waits in all for another connection's write lock (another process in a
 * transaction on the file) before its SQLITE_BUSY is thrown: what the connection's busy_timeout
 * was until 2026-12-02.
 */
export const SQLITE_LOCK_WAIT_MS = 5000;

/** SQLITE_BUSY and its extended codes (SQLITE_BUSY_RECOVERY, SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_TIMEOUT). */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_BUSY");
}

/** The pause before the attempt after `attempt` failed ones: 5, 10, 20, 40, then 50 ms. */
const lockPause = (attempt: number) => Math.min(5 << attempt, 50);

/**
 * `work` again after timers while it fails with SQLITE_BUSY, until {@link SQLITE_LOCK_WAIT_MS}
 * after `sent` (when the statement was handed over: by default now); then, or on any other failure,
 * its error. Called after a first attempt failed with `busy`. The event loop is free meanwhile (a
 * busy_timeout waits inside better-sqlite3, blocking it).
 */
async function afterLockWait<T>(work: () => T | Promise<T>, busy: unknown, sent = Date.now()): Promise<T> {
  const deadline = sent + SQLITE_LOCK_WAIT_MS;
  let error = busy;
  for (let attempt = 0; ; attempt++) {
    const pause = lockPause(attempt);
    if (Date.now() + pause > deadline) throw error;
    await new Promise((resolve) => setTimeout(resolve, pause));
    try {
      return await work();
    } catch (e) {
      if (!isBusy(e)) throw e;
      error = e;
    }
  }
}

/**
 * Kysely's SQLite driver, waiting for another connection's write lock with the event loop free
 * (see {@link afterLockWait}): a statement that fails with SQLITE_BUSY outside a transaction, or a
 * COMMIT (which SQLite lets one try again), runs again after a timer. Transactions begin with
 * BEGIN IMMEDIATE: the lock is taken, or waited for, before anything is read, so no statement
 * inside meets SQLITE_BUSY (one there cannot be run again alone; a deferred transaction that read
 * before another process committed could never write: SQLITE_BUSY_SNAPSHOT). Within the process
 * Kysely runs one transaction at a time on the one connection, so this costs nothing there.
 *
 * The wait keeps the one connection, so what Kysely queued behind a waiting statement waits with
 * it; the first statement run after an `acquireConnection` (a single statement, or a transaction's
 * BEGIN IMMEDIATE) therefore counts its 5 s from that call, which Kysely makes when the query is
 * handed to it, before its turn: each gives up 5 s after it was sent, not 5 s after the one before
 * it gave up (until 2026-12-02: a second queued write behind a lock held 12 s failed after 10 s).
 * Statements later on the same connection (a transaction's COMMIT) count from their own first attempt.
 */
class LockWaitingSqliteDialect extends SqliteDialect {
  readonly #raw: BetterSqlite3Like;
  readonly #database: SqliteDatabase;
  constructor(raw: BetterSqlite3Like, database: SqliteDatabase) {
    super({ database });
    this.#raw = raw;
    this.#database = database;
  }
  override createDriver(): Driver {
    const raw = this.#raw;
    // Kysely's own mutex for the one connection wakes every waiter at each release, and a caller
    // asking at that moment takes it before them. With one more await in acquireConnection over
    // it (to note when each asked), the audit suite's "four appenders and two pruners" case hung:
    // the pruners, looping in microtasks, always took it. Here the connection passes to the
    // waiters in the order they asked, each with when it asked, until its first statement runs.
    let connection: DatabaseConnection | undefined;
    let held = false;
    const waiting: Array<() => void> = [];
    let sent: number | undefined;
    return new (class extends SqliteDriver {
      override async acquireConnection(): Promise<DatabaseConnection> {
        const asked = Date.now();
        if (held) await new Promise<void>((resolve) => waiting.push(resolve));
        held = true;
        sent = asked;
        return connection!;
      }
      override async releaseConnection(): Promise<void> {
        const next = waiting.shift();
        if (next === undefined) held = false;
        else next();
      }
      override async beginTransaction(connection: DatabaseConnection): Promise<void> {
        await connection.executeQuery(CompiledQuery.raw("begin immediate"));
      }
    })({
      database: this.#database,
      onCreateConnection: async (created) => {
        connection = created;
        const execute = created.executeQuery.bind(created);
        created.executeQuery = (<R>(query: CompiledQuery<R>) => {
          const since = sent;
          sent = undefined;
          try {
            return execute(query);
          } catch (e) {
            if (isBusy(e) && (!raw.inTransaction || /^\s*commit\s*$/i.test(query.sql))) return afterLockWait(() => execute(query), e, since);
            return Promise.reject(e);
          }
        }) as typeof created.executeQuery;
      },
    });
  }
}

/**
 * better-sqlite3 as plantgate's SQLite storage runs it: statements cached per SQL text, a read cache
 * validated by `PRAGMA data_version`, and a synchronous path for the hot statements. Another
 * connection's write lock is waited for on timers, never inside better-sqlite3: open `raw` with a
 * busy_timeout of 0 (`openSqlStorage` does) and give Kysely `dialect`.
 *
 * @example
 * const raw = new BetterSqlite3("plantgate.db");
 * raw.pragma("busy_timeout = 0");
 * const fast = sqliteFastPath(raw);
 * const db = new Kysely<Database>({ dialect: fast.dialect });
 * const storage = createSqlStorage(db, "sqlite", { sqlite: fast });
 */
export interface SqliteFastPath {
  /** Give this to Kysely's `SqliteDialect` as `database` (it tells the cache about every write). */
  readonly database: SqliteDatabase;
  /** A `SqliteDialect` on `database` that waits for another connection's write lock on timers (see {@link LockWaitingSqliteDialect}). */
  readonly dialect: SqliteDialect;
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
  const isolated = (jobs: Job[], deadline: number | undefined, attempt: number) => {
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
      // Its BEGIN found another connection's write lock (taken between the two passes): the
      // batch waits for it as the first pass does, and starts over from that pass.
      if (isBusy(error) && laterAgain(jobs, error, deadline, attempt)) return;
      for (const job of jobs) job.reject(error);
      return;
    }
    jobs.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) job.resolve(outcome.value);
      else job.reject(outcome.value);
    });
  };
  /**
   * Another connection holds the write lock (BEGIN IMMEDIATE or COMMIT failed with SQLITE_BUSY):
   * `jobs` run again after a timer, the event loop free meanwhile, until SQLITE_LOCK_WAIT_MS after
   * their first attempt. False past that: then they are refused with `error`.
   */
  const laterAgain = (jobs: Job[], error: unknown, deadline: number | undefined, attempt: number): boolean => {
    const pause = lockPause(attempt);
    const end = deadline ?? Date.now() + SQLITE_LOCK_WAIT_MS;
    if (Date.now() + pause > end) return false;
    setTimeout(() => commit(jobs, end, attempt + 1), pause);
    return true;
  };
  const flush = () => {
    // A Kysely transaction is open and awaiting: its statements and ours must not mix. Next turn.
    if (raw.inTransaction) return void setImmediate(flush);
    const jobs = queue;
    queue = [];
    commit(jobs, undefined, 0);
  };
  /** One pass over `jobs` in one transaction (see flush); `deadline` once they met the write lock. */
  const commit = (jobs: Job[], deadline: number | undefined, attempt: number): void => {
    if (raw.inTransaction) return void setImmediate(() => commit(jobs, deadline, attempt));
    const values: unknown[] = [];
    // Whether a job threw (then the batch runs again, isolated), as opposed to BEGIN or COMMIT
    // failing (another connection's write lock: the batch waits for it, see laterAgain; a full
    // disk: every job is refused at once).
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
      if (jobThrew && jobs.length > 1) isolated(jobs, deadline, attempt);
      else if (jobThrew || !isBusy(error) || !laterAgain(jobs, error, deadline, attempt)) for (const job of jobs) job.reject(error);
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
    dialect: new LockWaitingSqliteDialect(raw, database),
    cache,
    direct,
    runner: (db) => ({
      executeQuery: ((query: CompiledQuery) => {
        if (raw.inTransaction) return db.executeQuery(query);
        try {
          return Promise.resolve(execute(query));
        } catch (e) {
          // Another connection's write lock (a statement in autocommit mode did nothing): tried
          // again on timers, through Kysely should a transaction have opened meanwhile.
          if (isBusy(e)) return afterLockWait(() => (raw.inTransaction ? db.executeQuery(query) : execute(query)), e);
          return Promise.reject(e);
        }
      }) as Runner["executeQuery"],
    }),
  };
}
