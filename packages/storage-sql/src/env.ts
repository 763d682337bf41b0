import { auditFromEnv as coreAuditFromEnv, ConfigError, redactConnectionUrl } from "@plantgate/core";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { DEFAULT_QUERY_TIMEOUT_MS, openSqlStorage, type SqlStorage } from "./index.js";

/** Thrown when the storage environment is malformed or the database cannot be opened. */
export class StorageConfigError extends Error {
  override readonly name = "StorageConfigError";
}

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
 * Why the driver would refuse a `postgres://` or `mysql://` URL before contacting anything, read as
 * the driver reads it, or null: `pg` (pg-connection-string) encodes spaces and malformed escapes,
 * then parses it with `URL` and decodes the user, password, host and database; `mysql2` parses it
 * with `URL` and decodes those parts with decodeURIComponent. Never quotes the URL (it may hold a
 * password).
 */
function malformedUrl(url: string): string | null {
  const mysql = /^(mysql|mariadb):/i.test(url);
  let text = url;
  if (!mysql && / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(text)) text = encodeURI(text).replace(/%25(\d\d)/g, "%$1");
  let parsed: URL;
  try {
    if (mysql) parsed = new URL(text);
    else {
      try {
        parsed = new URL(text, "postgres://base");
      } catch {
        // pg reads `user:pw@/db` (no host) with a stand-in host.
        parsed = new URL(text.replace("@/", "@___DUMMY___/"), "postgres://base");
      }
    }
  } catch {
    return "is not a valid URL: check the host and the port (a number up to 65535), and percent-encode any @ : / ? # in the user name or password";
  }
  // pg takes `?user=`, `?password=` and `?host=` (when not empty) in place of those parts and then
  // never decodes the part; with `?host=`, a URL-encoded socket path as the host goes in front of
  // the database name, which it decodes. mysql2 decodes the four parts whatever the query says.
  const given = (name: string) => !mysql && Boolean(parsed.searchParams.get(name));
  const database = given("host") && /^%2f/i.test(parsed.hostname) ? `/${parsed.hostname}${parsed.pathname}` : parsed.pathname;
  const parts: [string, string, (s: string) => string][] = [
    ...(given("user") ? [] : [["user name", parsed.username, decodeURIComponent] as [string, string, (s: string) => string]]),
    ...(given("password") ? [] : [["password", parsed.password, decodeURIComponent] as [string, string, (s: string) => string]]),
    ...(given("host") ? [] : [["host", parsed.hostname, decodeURIComponent] as [string, string, (s: string) => string]]),
    ["database name", database.slice(1), mysql ? decodeURIComponent : decodeURI],
  ];
  for (const [part, value, decode] of parts) {
    try {
      decode(value);
    } catch {
      return `(${redactUrl(url)}) has a malformed percent-escape in its ${part}: % must be followed by two hexadecimal digits, and the escapes must spell UTF-8 (write a literal % as %25)`;
    }
  }
  return null;
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
 * An unreachable database is a `StorageConfigError` naming the (password-free) URL.
 *
 * @example
 * const storage = await openStorageFromEnv(process.env, { cwd: process.cwd() });
 */
export async function openStorageFromEnv(
  env: Record<string, string | undefined>,
  options: { cwd: string; migrate?: boolean; clientCache?: boolean },
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
    const storage = await openSqlStorage(url, { migrate: options.migrate ?? true, audit, clientCache, sqliteCheckpoints, queryTimeoutMs });
    return Object.assign(storage, { display });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new StorageConfigError(`cannot open the store at ${display}: ${reason}`, { cause: error });
  }
}
