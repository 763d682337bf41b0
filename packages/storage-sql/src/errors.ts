import { StorageError, UnstorableValueError } from "@plantgate/core";
import type { SqlFamily } from "./schema.js";

/**
 * The database was migrated by a newer `@plantgate/storage-sql` than this one: it holds a
 * migration this code does not know. Nothing was changed; upgrade the package (or point it at
 * another database). Rolling the schema back is deliberately not automatic.
 *
 * @example
 * try {
 *   await openSqlStorage(process.env.DATABASE_URL!);
 * } catch (e) {
 *   if (e instanceof SchemaTooNewError) console.error(`upgrade @plantgate/storage-sql: ${e.message}`);
 *   throw e;
 * }
 */
export class SchemaTooNewError extends Error {
  override readonly name = "SchemaTooNewError";
  constructor(
    /** Highest schema version recorded in the database. */
    readonly databaseVersion: number,
    /** Highest schema version this code knows (`LATEST_SCHEMA_VERSION`). */
    readonly supportedVersion: number,
    /** Migrations recorded in the database that this code does not know. */
    readonly unknownMigrations: string[],
  ) {
    super(
      `The database schema is at version ${databaseVersion}, newer than version ${supportedVersion}, the latest this ` +
        `@plantgate/storage-sql knows (unknown migrations: ${unknownMigrations.join(", ")}). ` +
        `Upgrade @plantgate/storage-sql; nothing was changed.`,
    );
  }
}

/**
 * A value that the engine cannot store exactly (a lone UTF-16 surrogate anywhere, U+0000 in a
 * PostgreSQL text column). Thrown before any query, so nothing is written; not an outage, so not
 * a `StorageError`. The message names the field, never the value. The class is core's (since
 * 2026-11-30, when the memory store began refusing client ids with a lone surrogate too): one
 * `instanceof` check covers both.
 *
 * @example
 * // On PostgreSQL, whose text type cannot hold U+0000:
 * await storage.accounts.create({ ...record, username: "a\u0000b" }); // rejects with UnstorableValueError
 */
export { UnstorableValueError };

/** A row that no write of ours produces (edited by hand, or a driver setting we cannot read). */
export class CorruptRowError extends Error {
  override readonly name = "CorruptRowError";
}

interface DriverError {
  code?: unknown;
  errno?: unknown;
  message?: unknown;
}

/**
 * True for a duplicate-key error of any supported engine: PostgreSQL SQLSTATE 23505, MySQL and
 * MariaDB ER_DUP_ENTRY (1062), better-sqlite3's extended codes, and the bare SQLite message that
 * drivers without codes (D1) pass on.
 */
export function isUniqueViolation(e: unknown): boolean {
  if (typeof e !== "object" || e === null) return false;
  const { code, errno, message } = e as DriverError;
  if (code === "23505") return true;
  if (code === "ER_DUP_ENTRY" || errno === 1062) return true;
  if (code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "SQLITE_CONSTRAINT_UNIQUE") return true;
  return typeof message === "string" && /UNIQUE constraint failed/.test(message);
}

/**
 * True when the server rolled the transaction back to break a deadlock: MySQL/MariaDB
 * ER_LOCK_DEADLOCK (1213), PostgreSQL deadlock_detected (SQLSTATE 40P01). Nothing of it was
 * applied, so running it again is safe. (PostgreSQL's serialization failures, 40001, do not arise
 * at READ COMMITTED, which the stores use.)
 */
export function isDeadlock(e: unknown): boolean {
  if (typeof e !== "object" || e === null) return false;
  const { code, errno } = e as DriverError;
  return code === "ER_LOCK_DEADLOCK" || errno === 1213 || code === "40P01";
}

/**
 * True when MySQL/MariaDB gave up waiting for a row lock: ER_LOCK_WAIT_TIMEOUT (1205), after
 * `innodb_lock_wait_timeout` seconds. Unlike a deadlock, InnoDB rolls back only the statement that
 * waited (unless the server runs with `innodb_rollback_on_timeout`): the transaction around it is
 * still open, holding what its earlier statements did. Run again only whole, after a rollback of
 * the whole transaction (Kysely's `transaction().execute` rolls back on any error it sees).
 */
export function isLockWaitTimeout(e: unknown): boolean {
  if (typeof e !== "object" || e === null) return false;
  const { code, errno } = e as DriverError;
  return code === "ER_LOCK_WAIT_TIMEOUT" || errno === 1205;
}

/** How many times {@link againOnDeadlock} runs its work in all before the deadlock (or lock-wait timeout) is thrown. */
export const DEADLOCK_ATTEMPTS = 8;

/** How many lock-wait timeouts {@link againOnDeadlock} takes before it throws the last one (each waited the server's whole lock wait). */
export const LOCK_WAIT_ATTEMPTS = 2;

/**
 * The wait after the `attempt`th deadlock: a random time up to 2^attempt ms, at most 100 ms (full
 * jitter). Run again at once, the victim (InnoDB picks the transaction that changed least, the
 * same one each time) took its locks back while the winner was still between two of its
 * statements and was picked again; 5 quick attempts in a row all lost on a loaded machine.
 */
export function deadlockPause(attempt: number): Promise<void> {
  const ms = Math.random() * Math.min(100, 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The driver errors {@link againOnDeadlock} gave up on, with its number of attempts (for the StorageError's message). */
const gaveUpAfter = new WeakMap<object, number>();

/** Which failures {@link againOnDeadlock} runs the work again after, besides deadlocks. */
export interface RetryOptions {
  /** Between attempts (default {@link deadlockPause}). */
  pause?: (attempt: number) => Promise<void>;
  /**
   * Also run it again after a MySQL/MariaDB lock-wait timeout (1205). Off where that timeout is the
   * caller's deadline (`openSqlStorage` with `queryTimeoutMs` over 0 sets `innodb_lock_wait_timeout`
   * a second under it): there it answers 503 in time, and 8 attempts would wait 8 times as long.
   */
  lockWaitTimeouts?: boolean;
}

/**
 * Runs `work` (one statement that commits alone, or one whole transaction: never a statement
 * inside a transaction the caller goes on with) again, up to {@link DEADLOCK_ATTEMPTS} times in
 * all, while the server (MySQL/MariaDB, PostgreSQL) picks it as a deadlock victim (rolled back
 * whole, so nothing of it was applied) or, with `lockWaitTimeouts`, while MySQL/MariaDB's lock
 * wait times out (the statement rolled back; a transaction's `execute` then rolls back the rest).
 * Between attempts it waits `pause(attempt)` ({@link deadlockPause}: about 230 ms at most in all).
 * Any other error, and the last deadlock or timeout, is thrown.
 */
export async function againOnDeadlock<T>(work: () => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const pause = options.pause ?? deadlockPause;
  let lockWaits = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (e) {
      const lockWait = options.lockWaitTimeouts === true && isLockWaitTimeout(e);
      if (!isDeadlock(e) && !lockWait) throw e;
      // A lock wait lasts the server's innodb_lock_wait_timeout (50 s by default): run again once
      // only, so a call waits at most twice that, not 8 times.
      if (lockWait) lockWaits++;
      if (attempt >= DEADLOCK_ATTEMPTS || lockWaits >= LOCK_WAIT_ATTEMPTS) {
        if (typeof e === "object" && e !== null) gaveUpAfter.set(e, attempt);
        throw e;
      }
      await pause(attempt);
    }
  }
}

/**
 * MariaDB's names for its error numbers that a login can get where mysql2, which names a server's
 * errno from MySQL's list, has another error under the same number (MySQL's bulk loader's):
 * errno -> [mysql2's name, MariaDB's name]. MariaDB's 4150 is an account blocked after
 * `max_password_errors` failed logins (until `FLUSH PRIVILEGES` or `ALTER USER`), 4151 a locked
 * account (`ACCOUNT LOCK`). plantgate never bulk-loads, so on a MySQL server neither number comes
 * with MySQL's meaning. MariaDB's numbers below 4150 that mysql2 misnames are no login's (a backup
 * stage, a sequence, a compressed table).
 */
const MARIADB_LOGIN_ERRORS: ReadonlyMap<number, readonly [mysql2: string, mariadb: string]> = new Map([
  [4150, ["ER_BULK_PARSER_UNEXPECTED_CHAR_AFTER_COLUMN_TERMINATOR", "ER_USER_IS_BLOCKED"]],
  [4151, ["ER_BULK_PARSER_INCOMPLETE_ESCAPE_SEQUENCE", "ER_ACCOUNT_HAS_BEEN_LOCKED"]],
]);

/**
 * A driver error's `code` as {@link toStorageError}'s message names it: the driver's own, but
 * MariaDB's name where mysql2 gives MySQL's name of another error under the same errno (4150
 * `ER_USER_IS_BLOCKED`, 4151 `ER_ACCOUNT_HAS_BEEN_LOCKED`). Until 2026-12-02 a locked MariaDB
 * account's StorageError said `(ER_BULK_PARSER_INCOMPLETE_ESCAPE_SEQUENCE)`.
 *
 * @example
 * driverErrorCode(mysql2Error); // "ER_ACCOUNT_HAS_BEEN_LOCKED" for MariaDB's errno 4151
 */
export function driverErrorCode(e: unknown): unknown {
  if (typeof e !== "object" || e === null) return undefined;
  const { code, errno } = e as DriverError;
  const names = typeof errno === "number" ? MARIADB_LOGIN_ERRORS.get(errno) : undefined;
  return names !== undefined && code === names[0] ? names[1] : code;
}

/** Errors of ours that already say what they mean and must pass through unchanged. */
function isOwn(e: unknown): boolean {
  return e instanceof StorageError || e instanceof SchemaTooNewError || e instanceof UnstorableValueError;
}

/**
 * Turns a driver failure into core's `StorageError` (answered with 503). The message names the
 * engine, the operation and the driver's error code only (and, for a deadlock or lock-wait timeout
 * that {@link againOnDeadlock} gave up on, its number of attempts): driver messages can quote parameter
 * values (hashes, usernames), so they stay in `cause`, which is logged, never sent.
 */
export function toStorageError(e: unknown, family: SqlFamily, operation: string): unknown {
  if (isOwn(e)) return e;
  const code = driverErrorCode(e);
  const attempts = typeof e === "object" && e !== null ? gaveUpAfter.get(e) : undefined;
  const safeCode = typeof code === "string" && /^[A-Za-z0-9_]{1,64}$/.test(code) ? ` (${code}${attempts === undefined ? "" : `, ${attempts} attempts`})` : attempts === undefined ? "" : ` (${attempts} attempts)`;
  return new StorageError(`${family} storage failed during ${operation}${safeCode}`, { cause: e });
}
