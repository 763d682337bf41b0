import { auditFromEnv as coreAuditFromEnv, ConfigError, redactConnectionUrl } from "@plantgate/core";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { malformedUrl, StorageConfigError } from "./config-error.js";
import { DEFAULT_QUERY_TIMEOUT_MS, openSqlStorage, type SqlStorage } from "./index.js";

export { StorageConfigError } from "./config-error.js";

/** The default SQLite file, relative to the working directory. */
export const DEFAULT_SQLITE_PATH = "./data/plantgate.db";

/**
 * The connection URL as it may be printed: the password (in the userinfo or a query parameter) replaced
 * by `***`, and an unparsable URL shown as its scheme only (core's `redactConnectionUrl`).
 */
export const redactUrl: (url: string) => string = redactConnectionUrl;

/**
 * Where the store lives, from the environment: `PLANTGATE_DATABASE_URL` (`postgres://…`,
 * `mysql://…`, `mariadb://…`) wins; else `PLANTGATE_DB`, a SQLite file (default
 * `./data/plantgate.db`, its folder created) or `:memory:`.
 */
export function storageUrlFromEnv(env: Record<string, string | undefined>, cwd: string): { url: string; display: string } {
  const url = env.PLANTGATE_DATABASE_URL;
  if (url) {
    if (!/^(postgres|postgresql|mysql|mariadb):\/\//.test(url)) {
      throw new StorageConfigError("PLANTGATE_DATABASE_URL must start with postgres://, postgresql://, mysql:// or mariadb://");
    }
    const malformed = malformedUrl(url);
    // Refused before any driver sees it: the driver's own refusal came out of the open as a
    // StorageError, read as an outage (the CLI's exit 3, "try again") until 2026-11-30.
    if (malformed !== null) throw new StorageConfigError(`PLANTGATE_DATABASE_URL ${malformed}; nothing was opened`);
    return { url, display: redactUrl(url) };
  }
  const file = env.PLANTGATE_DB || DEFAULT_SQLITE_PATH;
  if (file === ":memory:") return { url: ":memory:", display: "SQLite in memory (nothing is kept)" };
  const path = isAbsolute(file) ? file : resolve(cwd, file);
  return { url: `sqlite:${path}`, display: `SQLite ${path}` };
}

/**
 * Whether the store keeps the audit trail (`audit` store): `PLANTGATE_AUDIT`, `1` (default) or `0`
 * (`true`/`false` too). Core's `auditFromEnv`, the Worker's reader too, with its refusal as a
 * `StorageConfigError`.
 */
export function auditFromEnv(env: Record<string, string | undefined>): boolean {
  try {
    return coreAuditFromEnv(env);
  } catch (error) {
    throw error instanceof ConfigError ? new StorageConfigError(error.message) : error;
  }
}

/**
 * Whether a PostgreSQL store keeps clients in memory, invalidated by the database's notifications
 * (`openSqlStorage`'s `clientCache`): `PLANTGATE_CLIENT_CACHE`, `1` or `true` (default), `0` or `false`,
 * as every other flag of the servers (until 2026-11-29 `true` and `false` were refused here).
 */
export function clientCacheFromEnv(env: Record<string, string | undefined>): boolean {
  const v = env.PLANTGATE_CLIENT_CACHE;
  if (v === undefined || v === "" || v === "1" || v === "true") return true;
  if (v === "0" || v === "false") return false;
  throw new StorageConfigError("PLANTGATE_CLIENT_CACHE must be 1 or true (cache clients, PostgreSQL), or 0 or false");
}

/**
 * Who runs a SQLite file's WAL checkpoints (`openSqlStorage`'s `sqliteCheckpoints`):
 * `PLANTGATE_SQLITE_CHECKPOINTS`, `thread` (default: a worker thread) or `inline`.
 */
export function sqliteCheckpointsFromEnv(env: Record<string, string | undefined>): "thread" | "inline" {
  const v = env.PLANTGATE_SQLITE_CHECKPOINTS;
  if (v === undefined || v === "" || v === "thread") return "thread";
  if (v === "inline") return "inline";
  throw new StorageConfigError("PLANTGATE_SQLITE_CHECKPOINTS must be thread (a worker thread checkpoints the WAL) or inline");
}

/**
 * Each PostgreSQL/MySQL statement's deadline in milliseconds (`openSqlStorage`'s `queryTimeoutMs`):
 * `PLANTGATE_QUERY_TIMEOUT_MS`, default 30000; `0` turns it off; digits only, at most 2147483647.
 */
export function queryTimeoutFromEnv(env: Record<string, string | undefined>): number {
  const v = env.PLANTGATE_QUERY_TIMEOUT_MS;
  if (v === undefined || v === "") return DEFAULT_QUERY_TIMEOUT_MS;
  const ms = /^[0-9]{1,10}$/.test(v) ? Number(v) : NaN;
  if (!(ms <= 2_147_483_647)) throw new StorageConfigError("PLANTGATE_QUERY_TIMEOUT_MS must be a whole number of milliseconds from 0 (no deadline) to 2147483647");
  return ms;
}

/**
 * Opens (and migrates) the store the environment names; see {@link storageUrlFromEnv}. It keeps
 * the audit trail unless `PLANTGATE_AUDIT=0` (see {@link auditFromEnv}); on PostgreSQL it caches
 * clients unless `PLANTGATE_CLIENT_CACHE=0` (see {@link clientCacheFromEnv}); a SQLite file's WAL
 * is checkpointed on a worker thread unless `PLANTGATE_SQLITE_CHECKPOINTS=inline`; PostgreSQL and
 * MySQL statements get `PLANTGATE_QUERY_TIMEOUT_MS` (see {@link queryTimeoutFromEnv}).
 * `onWarning`: see `OpenSqlStorageOptions.onWarning` (default a line on stderr).
 * An unreachable database is a `StorageConfigError` naming the (password-free) URL.
 *
 * @example
 * const storage = await openStorageFromEnv(process.env, { cwd: process.cwd() });
 */
export async function openStorageFromEnv(
  env: Record<string, string | undefined>,
  options: { cwd: string; migrate?: boolean; clientCache?: boolean; onWarning?: (message: string) => void },
): Promise<SqlStorage & { display: string }> {
  const { url, display } = storageUrlFromEnv(env, options.cwd);
  const audit = auditFromEnv(env);
  // A one-shot process (the CLI) passes false: nothing to cache, no listening connection to open.
  const clientCache = options.clientCache ?? clientCacheFromEnv(env);
  const sqliteCheckpoints = sqliteCheckpointsFromEnv(env);
  const queryTimeoutMs = queryTimeoutFromEnv(env);
  try {
    if (url.startsWith("sqlite:")) {
      const file = url.slice("sqlite:".length);
      // A new folder and a new database for this user only: the file holds the secrets' hashes and,
      // without keyEncryptionKeys, the private signing keys. SQLite gives the -wal and -shm files the
      // database's own mode. An existing file keeps the mode it has.
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      closeSync(openSync(file, "a", 0o600));
    }
    const storage = await openSqlStorage(url, { migrate: options.migrate ?? true, audit, clientCache, sqliteCheckpoints, queryTimeoutMs, ...(options.onWarning ? { onWarning: options.onWarning } : {}) });
    return Object.assign(storage, { display });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new StorageConfigError(`cannot open the store at ${display}: ${reason}`, { cause: error });
  }
}
