import { redactConnectionUrl } from "@plantgate/core";
import { Kysely, MysqlDialect, PostgresDialect, sql, SqliteDialect } from "kysely";
import { malformedUrl, StorageConfigError } from "./config-error.js";
import { toStorageError } from "./errors.js";
import { pendingMigrations } from "./migrations.js";
import { CLOSE_WAIT_MS, destroyPgSocket, pgClientCache, settlesWithin, type ListenClientConstructor, type PgClientCache, type PgClientCacheOptions } from "./pg-client-cache.js";
import type { Database, SqlFamily } from "./schema.js";
import type { CheckpointFailure, CheckpointRecovery, PragmaTarget, SqliteCheckpointer } from "./sqlite-checkpointer.js";
import { sqliteFastPath, type SqliteFastPath } from "./sqlite-fast.js";
import { gateOnSessionPooling, TransactionPoolingError, type ProbePool } from "./pooler-probe.js";
import { createSqlStorage, type CreateSqlStorageOptions, type SqlStorage } from "./storage.js";

/**
 * Options of {@link openSqlStorage}.
 *
 * @example
 * // Deployments that migrate in a separate release step:
 * const storage = await openSqlStorage(url, { migrate: false });
 */
export interface OpenSqlStorageOptions {
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
  /** Keep security events in an audit store (see `CreateSqlStorageOptions.audit`). Default false. */
  audit?: boolean;
  /**
   * PostgreSQL only (default on): keep clients in memory (a token request then reads no client row)
   * and drop one the moment the database reports it changed. Triggers on `pg_clients` (migration
   * 0009) NOTIFY every committed change, whoever made it (another instance, the CLI, SQL by hand),
   * and one extra connection per storage LISTENs, so a rotated or revoked secret or a deleted
   * client is refused everywhere within a few ms. While that connection is down or the triggers
   * are missing (a database not yet migrated), client reads go to the database. `false`: no cache
   * and no extra connection. An object: on, with these settings. SQLite has its own cache
   * (validated by `PRAGMA data_version`); MySQL has none.
   */
  clientCache?: boolean | PgClientCacheOptions;
  /**
   * SQLite files only: who runs the WAL checkpoints. `"thread"` (default): a second connection on a
   * worker thread, started a second after opening, so the event loop never waits for the copy or
   * its disk flushes (the writing connection still checkpoints itself past 10000 WAL pages, or
   * from 1000 as SQLite does when the worker is gone). `"inline"`: the writing connection, every
   * 1000 pages (SQLite's default), e.g. where threads are not wanted.
   */
  sqliteCheckpoints?: "thread" | "inline";
  /**
   * Told of a failure the storage recovers from by itself but an operator should know of: a SQLite
   * file's checkpoint worker that ended with an error (it is started again, after 1 s, then up to
   * 5 minutes apart while it keeps failing; meanwhile the writing connection checkpoints itself),
   * or whose checkpoints fail with SQLITE_FULL or SQLITE_IOERR (a full disk: tried again every
   * 100 ms; said once per run of failures, with SQLite's code, and once more when one works again;
   * until 2026-12-02 never); on PostgreSQL and MySQL/MariaDB, a start that has waited 5 s for the migration lock of its
   * schema or database (another instance migrating it), or for Kysely's default lock it also
   * takes while migrating (an instance from before 2026-12-02, another Kysely migrator); it waits
   * up to 15 minutes in all, then fails. On PostgreSQL opened with `migrate: false` while the
   * server could not be reached: a pooler in transaction mode found at the first connection (every
   * call then fails; see `TransactionPoolingError`).
   * Default: the message as a line on stderr (`console.warn`). The example servers give their
   * logger's `warn`.
   */
  onWarning?: (message: string) => void;
  /**
   * PostgreSQL and MySQL/MariaDB: how long one statement may wait for its answer, in ms (default
   * 30000; `0`: no bound). Past it the call fails (`StorageError`, so 503) and its connection is
   * dropped, not handed to the next caller: a server that stops answering (a network cut where
   * packets vanish) cost a request forever before 2026-11-29, and left the pool's connections stuck
   * after it came back. Migrations run on a connection of their own without this bound. MySQL: also
   * how long a call waits for a free connection of the pool (PostgreSQL waits 10 s).
   */
  queryTimeoutMs?: number;
  /** {@link CreateSqlStorageOptions.migrationLock}: for tests. @internal */
  migrationLock?: CreateSqlStorageOptions["migrationLock"];
  /** {@link CreateSqlStorageOptions.firstKeyLock}: for tests. @internal */
  firstKeyLock?: CreateSqlStorageOptions["firstKeyLock"];
}

/** Default of {@link OpenSqlStorageOptions.queryTimeoutMs}. */
export const DEFAULT_QUERY_TIMEOUT_MS = 30_000;

type Target = { family: "postgres" | "mysql"; url: string } | { family: "sqlite"; path: string };

/**
 * Reads the URL forms of `openSqlStorage`. One it cannot read (an unsupported scheme, an empty URL,
 * `sqlite:` without a path, `postgres:`/`postgresql:`/`mysql:`/`mariadb:` without `//`) is a
 * `StorageConfigError` whose message names the argument (`name`) and shows the URL only without its
 * password, or not at all (a TypeError until 2026-11-30; the last, until then, a SQLite file path).
 */
export function parseStorageUrl(url: string, name = "the database URL"): Target {
  const refuse = (reason: string) => new StorageConfigError(`${name} ${reason}; nothing was opened`);
  if (/^postgres(ql)?:\/\//i.test(url)) return { family: "postgres", url };
  // mysql2 reads host, user, password, database and options from the URL itself, whatever the scheme.
  if (/^(mysql|mariadb):\/\//i.test(url)) return { family: "mysql", url: url.replace(/^mariadb:/i, "mysql:") };
  if (/^sqlite:/i.test(url)) {
    const rest = url.slice("sqlite:".length);
    // sqlite:///abs/path.db and sqlite://rel.db as well as sqlite:path.db
    const path = rest.startsWith("//") ? rest.slice(2) : rest;
    if (path === "") throw refuse("is sqlite: without a path (use sqlite::memory: for an in-memory database)");
    return { family: "sqlite", path };
  }
  // A server's scheme without its "//" (postgres:user:pw@host, a slash lost in a template) is a
  // typo, never a SQLite file: until 2026-11-30 it opened (and made) one named after the URL, its
  // password in the file name. Not echoed: it did not parse as a URL, so no part of it is known safe.
  const server = /^(postgres(?:ql)?|mysql|mariadb):/i.exec(url)?.[1];
  if (server !== undefined) throw refuse(`starts with "${server}:" but not "${server}://" (write ${server}://user:password@host:port/database)`);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1];
  if (scheme !== undefined) {
    throw refuse(`(${redactConnectionUrl(url)}) has an unsupported scheme "${scheme}:" (use postgres:, postgresql:, mysql:, mariadb: or sqlite:, or a SQLite file path)`);
  }
  if (url === "") throw refuse("is empty (give a postgres:, postgresql:, mysql:, mariadb: or sqlite: URL, a SQLite file path or :memory:)");
  return { family: "sqlite", path: url };
}

/**
 * pg's `query_timeout` fails the query but leaves its connection as it is, and Kysely hands it back
 * to the pool: the next statement on it waits behind the stuck one and times out too, for as long
 * as the server stays silent, and after. The socket is destroyed instead, so the pool drops that
 * connection at its release and opens a fresh one.
 */
function dropOnReadTimeout(client: { query: (...args: never[]) => unknown }): void {
  const query = client.query;
  client.query = function (this: unknown, ...args: never[]) {
    const result = query.apply(this, args);
    if (result !== null && typeof result === "object" && typeof (result as Promise<unknown>).then === "function") {
      (result as Promise<unknown>).then(undefined, (error: unknown) => {
        if (error instanceof Error && error.message === "Query read timeout") {
          // Runs before Kysely's release (this handler was attached first): marked unusable now,
          // so pg-pool removes it at that release rather than hand it out again.
          (client as { _queryable?: boolean })._queryable = false;
          destroyPgSocket(client);
        }
      });
    }
    return result;
  } as typeof client.query;
}

/**
 * A close that a server gone silent cannot hold: pg-pool's `end()` waits for every connection's
 * polite end, which such a server never acknowledges (the example servers' SIGTERM then never
 * exited). Past the wait, the pool's sockets are dropped (pg-pool's private `_clients`).
 */
function boundPgClose(storage: SqlStorage, pool: unknown): void {
  const close = storage.close.bind(storage);
  let closing: Promise<void> | undefined;
  storage.close = () =>
    (closing ??= (async () => {
      const done = close();
      if (await settlesWithin(done, CLOSE_WAIT_MS * 2)) return;
      for (const client of (pool as { _clients?: unknown[] })._clients ?? []) destroyPgSocket(client);
      // Ends once the dropped connections report it; not waited for past one more wait.
      await settlesWithin(done, CLOSE_WAIT_MS);
    })());
}

/** The server-side statement bound for a client deadline: a second under it (half of a short one). */
function serverBoundMs(queryTimeoutMs: number): number {
  return queryTimeoutMs > 2000 ? queryTimeoutMs - 1000 : Math.max(1, Math.floor(queryTimeoutMs / 2));
}

/** The part of a mysql2 callback pool Kysely's MysqlDialect calls. */
interface MysqlCallbackPool {
  getConnection(callback: (error: unknown, connection: MysqlCallbackConnection) => void): void;
  end(callback: (error: unknown) => void): void;
}
interface MysqlCallbackConnection {
  query(...args: unknown[]): unknown;
  release(): void;
  destroy?(): void;
}
/** What of a mysql2 connection a bounded close looks at: its socket. */
interface MysqlSocketHolder {
  stream?: { destroyed?: boolean; once(event: "close", listener: () => void): unknown; destroy(): void };
}

/**
 * A mysql2 pool whose `end` a server gone silent cannot hold (always), with deadlines when
 * `timeoutMs` is over 0: a free connection within `timeoutMs` (mysql2 queues callers without end;
 * a connection that comes later goes straight back), and each statement within `timeoutMs`
 * (mysql2's per-query `timeout`; on its expiry the connection is destroyed here, so the pool opens
 * another).
 */
function boundedMysqlPool(pool: unknown, timeoutMs: number): MysqlCallbackPool {
  const inner = pool as MysqlCallbackPool;
  const timed = new WeakSet<object>();
  return {
    getConnection(callback) {
      if (timeoutMs === 0) return inner.getConnection(callback);
      let settled = false;
      const timer = setTimeout(() => {
        settled = true;
        callback(new Error(`no free MySQL connection within ${timeoutMs} ms`), undefined as never);
      }, timeoutMs);
      inner.getConnection((error, connection) => {
        if (settled) {
          if (!error) connection.release();
          return;
        }
        settled = true;
        clearTimeout(timer);
        if (error) return callback(error, connection);
        if (!timed.has(connection)) {
          timed.add(connection);
          const query = connection.query.bind(connection);
          connection.query = (sql: unknown, ...rest: unknown[]) => {
            // A timed-out connection is taken out of the pool (mysql2 would hand it out again, and
            // the next statement on it would wait without end), before the caller releases it.
            const last = rest.length - 1;
            const done = rest[last];
            if (typeof done === "function") {
              rest[last] = (error: unknown, ...results: unknown[]) => {
                if ((error as { code?: unknown } | null)?.code === "PROTOCOL_SEQUENCE_TIMEOUT") (connection as { destroy?: () => void }).destroy?.();
                return (done as (...args: unknown[]) => unknown)(error, ...results);
              };
            }
            return query(typeof sql === "string" ? { sql, timeout: timeoutMs } : sql, ...rest);
          };
        }
        callback(null, connection);
      });
    },
    end: (callback) => void boundedMysqlEnd(pool, callback),
  };
}

/**
 * mysql2's `end()` sends each connection a QUIT and calls back once every QUIT has started, which
 * behind a statement the server never answers is never, and then leaves each socket open until the
 * server closes it, which a server gone silent never does: the process could not exit (the example
 * servers' SIGTERM). Here the pool's end waits 4 s, then every socket still open gets 2 s more to
 * close and is dropped after; the callback runs once all are closed.
 */
async function boundedMysqlEnd(pool: unknown, callback: (error: unknown) => void): Promise<void> {
  const all = (pool as { _allConnections?: { length: number; get(i: number): unknown } })._allConnections;
  const connections: MysqlSocketHolder[] = [];
  for (let i = 0; i < (all?.length ?? 0); i++) connections.push(all!.get(i) as MysqlSocketHolder);
  let outcome: unknown = null;
  const ended = new Promise<void>((resolve) =>
    (pool as MysqlCallbackPool).end((error) => {
      outcome = error;
      resolve();
    }),
  );
  const polite = await settlesWithin(ended, CLOSE_WAIT_MS * 2);
  await Promise.all(
    connections.map(async ({ stream }) => {
      if (stream === undefined || stream.destroyed === true) return;
      const closed = new Promise<void>((resolve) => stream.once("close", resolve));
      if (!polite || !(await settlesWithin(closed, CLOSE_WAIT_MS))) stream.destroy();
      await closed;
    }),
  );
  callback(polite ? outcome : null);
}

class DriverMissingError extends Error {
  override readonly name = "DriverMissingError";
}

/** Drivers are optional peer dependencies; a missing one gets a message saying what to install. */
async function importDriver<T>(name: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (e) {
    throw new DriverMissingError(`@plantgate/storage-sql needs the "${name}" package for this URL: install it next to @plantgate/storage-sql.`, { cause: e });
  }
}

interface Opened {
  db: Kysely<Database>;
  sqlite?: SqliteFastPath;
  /** PostgreSQL: `pg.Client`, for the client cache's listening connection. */
  listenClient?: ListenClientConstructor;
  /**
   * PostgreSQL: the pool, whose sockets a close past its wait drops, and bare connections for the
   * pooler probe (`probe`), outside the pool: none of the pool's connect-time SETs runs on them, so
   * a probe through a transaction pooler leaves no setting on a server connection other clients of
   * the pooler are handed next.
   */
  pg?: { pool: ProbePool & { end(): Promise<void> }; probe: ProbePool };
  /** A SQLite file (not `:memory:`): its path and the writing connection, for the checkpoint worker. */
  sqliteFile?: { path: string; writer: PragmaTarget };
}

async function openKysely(target: Target, queryTimeoutMs: number): Promise<Opened> {
  switch (target.family) {
    case "postgres": {
      const { default: pg } = await importDriver("pg", () => import("pg"));
      // Without a timeout a black-holed server would hang requests forever instead of failing
      // them with 503: connecting (10 s; a connect_timeout in the URL still wins), and each
      // statement (queryTimeoutMs, its connection then dropped, see dropOnReadTimeout). keepAlive
      // lets the kernel find a dead peer of an idle connection. A transaction its instance left
      // open (its network cut mid-way) would hold its row locks for every other instance: the
      // server ends a session idle in a transaction after 15 s (none of ours waits that long).
      // The pool's connections and the pooler probe's bare ones are made from the same options (the
      // URL's TLS and timeouts included).
      const connection = { connectionString: target.url, connectionTimeoutMillis: 10_000, ...(queryTimeoutMs > 0 ? { query_timeout: queryTimeoutMs } : {}) };
      const pool = new pg.Pool({ ...connection, keepAlive: true });
      // An idle client whose server went away emits 'error' on the pool; unhandled, that would
      // crash the process. The pool has already dropped the client and connects afresh next time.
      pool.on("error", () => {});
      // A client that is checked out but between queries (e.g. inside a transaction while the app
      // awaits) emits 'error' on itself, not on the pool; without a listener that crashes the
      // process when the database goes away. The pending or next query fails with the same error,
      // which the storage turns into a StorageError (503), and pg discards the broken client.
      pool.on("connect", (client) => {
        client.on("error", () => {});
        // SET rather than startup parameters, which PgBouncer refuses; queued before the caller's
        // first statement on this connection. READ COMMITTED whatever the server's
        // default_transaction_isolation says: the stores' atomic statements (consume, graceUse,
        // increment, revokeFamily) are written for it, and under REPEATABLE READ or SERIALIZABLE
        // a statement that waited on a row a racing transaction changed fails with 40001 instead
        // of reading the row as it now is: until 2026-12-01 lost races on such a database were
        // 503s (a grace-window retry of a refresh, racing password attempts, a revocation racing
        // a rotation) where the contract answers false, null or the next count
        // (test/pg-isolation-races.test.ts). A session left idle in a transaction ends after 15 s.
        let settings = "SET default_transaction_isolation = 'read committed'; SET idle_in_transaction_session_timeout = 15000";
        if (queryTimeoutMs > 0) {
          dropOnReadTimeout(client);
          // The server's own bounds, under the client's: a statement that is slow or waits on a
          // lock is cancelled by the server (its connection stays usable, nothing commits after
          // the caller got its 503), and only a server gone silent meets the client's deadline.
          const serverMs = serverBoundMs(queryTimeoutMs);
          settings += `; SET statement_timeout = ${serverMs}; SET lock_timeout = ${serverMs}`;
        }
        client.query(settings).catch(() => {});
      });
      const probeConnections: ProbePool = {
        async connect() {
          const client = new pg.Client(connection);
          client.on("error", () => {});
          try {
            await client.connect();
            // A SET, as the pool's connections begin with: a proxy that keeps a client on one
            // server connection once it has sent a SET (AWS RDS Proxy's "pinning", per its
            // documentation; not tried here) does so for the probe as for the pool, and is not
            // taken for a transaction pooler. Of a placeholder only plantgate reads: through a
            // transaction pooler, where it lands on a shared server connection and stays, it
            // changes nothing for anyone else (an empty `plantgate.pooler_probe`).
            await client.query("SET plantgate.pooler_probe = ''");
          } catch (e) {
            await client.end().catch(() => {});
            throw e;
          }
          return {
            query: (text: string, values?: unknown[]) => client.query(text, values),
            release: () => void client.end().catch(() => {}),
          };
        },
      };
      return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), listenClient: pg.Client as unknown as ListenClientConstructor, pg: { pool: pool as unknown as ProbePool & { end(): Promise<void> }, probe: probeConnections } };
    }
    case "mysql": {
      const mysql = await importDriver("mysql2", () => import("mysql2"));
      // bigNumberStrings: BIGINT comes back as exact text, never a rounded number. Broken
      // connections are dropped from the pool by mysql2 itself.
      const pool = mysql.createPool({ uri: target.url, supportBigNumbers: true, bigNumberStrings: true });
      if (queryTimeoutMs > 0) {
        // The server's own bounds, under the client's deadline (see PostgreSQL above): lock waits
        // (whole seconds) and, on MariaDB, any statement (max_statement_time) and a session left
        // idle in a transaction for 15 s (idle_transaction_timeout: an instance cut off
        // mid-transaction no longer holds its row locks until wait_timeout). MySQL has neither
        // variable and refuses them: ignored. Queued before the connection's first use.
        const serverMs = serverBoundMs(queryTimeoutMs);
        pool.on("connection", (connection) => {
          connection.query(`SET SESSION innodb_lock_wait_timeout = ${Math.max(1, Math.floor(serverMs / 1000))}`, () => {});
          connection.query(`SET SESSION max_statement_time = ${serverMs / 1000}`, () => {});
          connection.query("SET SESSION idle_transaction_timeout = 15", () => {});
        });
      }
      // The wrapper hands out mysql2's own connections, only their query bounded, and bounds end().
      const bounded = boundedMysqlPool(pool, queryTimeoutMs) as unknown as typeof pool;
      return { db: new Kysely<Database>({ dialect: new MysqlDialect({ pool: bounded }) }) };
    }
    case "sqlite": {
      const { default: BetterSqlite3 } = await importDriver("better-sqlite3", () => import("better-sqlite3"));
      const memory = target.path === ":memory:";
      const database = new BetterSqlite3(target.path);
      // WAL lets other processes read while we write; busy_timeout waits for their locks.
      if (!memory) {
        database.pragma("journal_mode = WAL");
        // NORMAL: a commit appends to the WAL without fsync; the WAL is synced at checkpoints. The
        // database cannot corrupt, but a power loss or OS crash (not a process crash) may undo the
        // last commits. better-sqlite3's SQLite (SQLITE_DEFAULT_WAL_SYNCHRONOUS=1) mostly runs WAL
        // databases at NORMAL already, but not a connection whose file was not yet written in WAL
        // mode, nor other SQLite builds, which default to FULL: an fsync per commit that blocks the
        // event loop for the length of a disk flush. Said here, it holds for every connection.
        database.pragma("synchronous = NORMAL");
        // A WAL that a held reader (a backup, a slow listing, an operator's sqlite3 shell) kept
        // from resetting grows with every commit meanwhile, and SQLite keeps the file at that size
        // once it resets (until 2026-12-02 for the life of the process): at the reset after such a
        // burst this connection truncates it to 16 MiB. Well above the WAL's working size (the
        // checkpoint worker copies it back every 100 ms, and the writer then starts it over; the
        // writer's own fallback comes at 10000 pages, 40 MiB), so a normal reset truncates nothing and the file is not shrunk and
        // grown again on every cycle; small enough that what a burst leaves on disk stays bounded.
        database.pragma(`journal_size_limit = ${16 * 1024 * 1024}`);
      }
      // Another connection's write lock (another process in a transaction on the file) is never
      // waited for inside better-sqlite3, which would block the event loop, every request of the
      // process with it: SQLITE_BUSY comes back at once, and the fast path's statements, its group
      // commit and Kysely's statements (sqlite.dialect) try again on timers for up to 5 s. Until
      // 2026-12-02 busy_timeout was 5000 here: a write behind another process's 7 s transaction
      // held a metadata GET for 4.6 s.
      database.pragma("busy_timeout = 0");
      // Kysely's SQLite driver prepares the SQL on every execution; the wrapper reuses statements,
      // tells the read cache of every write, and runs the hot statements without Kysely's queue.
      const sqlite = sqliteFastPath(database);
      return {
        db: new Kysely<Database>({ dialect: sqlite.dialect }),
        sqlite,
        // Absolute: the worker opens it a second later, whatever the working directory is by then.
        ...(memory ? {} : { sqliteFile: { path: (await import("node:path")).resolve(target.path), writer: database } }),
      };
    }
  }
}

/**
 * The URL read as `parseStorageUrl` does, after refusing one its driver cannot parse: a
 * configuration error, before any driver sees it (the driver's own refusal was a StorageError, an
 * outage; pg's only at the first statement, until 2026-11-30). The message names the argument
 * (`name`) and never quotes a password; no driver error as its cause (Node's "Invalid URL" carries
 * the whole URL). openStorageFromEnv names its variable.
 */
function checkedTarget(url: string, name: string): Target {
  const target = parseStorageUrl(url, name);
  if (target.family !== "sqlite") {
    const malformed = malformedUrl(url);
    if (malformed !== null) throw new StorageConfigError(`${name} ${malformed}; nothing was opened`);
  }
  return target;
}

/**
 * {@link pendingMigrations} of the database at `url` (the URL forms of {@link openSqlStorage}),
 * read on a connection of its own that writes nothing, closed before it resolves: a SQLite file
 * must exist, and its journal mode is left as it is (`openSqlStorage` puts a file in WAL mode at
 * open, which writes its first page: a zero-byte file became 4096 bytes). For
 * a check before opening a store that must not be touched when the check fails (the CLI's
 * commands other than `migrate`). A newer schema is refused with `SchemaTooNewError`; a database
 * that cannot be reached or opened with core's `StorageError` (operation "open"); a URL its
 * driver cannot parse, or one of no supported form, with `StorageConfigError`.
 *
 * @example
 * const pending = await pendingMigrationsAt("sqlite:/var/lib/plantgate/plantgate.db");
 * if (pending.length > 0) throw new Error(`run the migrations first (${pending.length} pending)`);
 */
export async function pendingMigrationsAt(url: string, options: Pick<OpenSqlStorageOptions, "queryTimeoutMs"> = {}): Promise<string[]> {
  const target = checkedTarget(url, "pendingMigrationsAt's url");
  let db: Kysely<Database>;
  try {
    if (target.family === "sqlite") {
      const { default: BetterSqlite3 } = await importDriver("better-sqlite3", () => import("better-sqlite3"));
      const memory = target.path === ":memory:";
      // No journal mode set (the store's open sets WAL, which writes the first page of a file not
      // yet in WAL mode), and only read: nothing written; a file that is not there is not created.
      // Not a read-only connection: on a WAL file without its -wal and -shm (no server running) that
      // made both and left them behind; this one removes them at its close, as the last connection.
      const database = new BetterSqlite3(target.path, memory ? {} : { fileMustExist: true });
      database.pragma("busy_timeout = 5000");
      db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
    } else {
      db = (await openKysely(target, options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS)).db;
    }
  } catch (e) {
    if (e instanceof DriverMissingError) throw e;
    throw toStorageError(e, target.family, "open");
  }
  try {
    return await pendingMigrations({ db, family: target.family });
  } finally {
    await db.destroy().catch(() => {});
  }
}

/**
 * Opens a SQL storage by URL and (unless `migrate: false`) brings its schema up to date.
 *
 * - `postgres://user:pass@host:5432/db` or `postgresql://…`: a `pg` pool; `?options=-c%20search_path%3Dschema`
 *   puts the tables in another schema (not through PgBouncer, which refuses `options`). Through a
 *   pooler, session mode only: one in transaction or statement mode is found at open (two of the
 *   pool's connections sharing a server session) and refused with `TransactionPoolingError`, a
 *   `StorageConfigError`, nothing migrated.
 * - `mysql://user:pass@host:3306/db` or `mariadb://…`: a `mysql2` pool.
 * - `sqlite:path/to/file.db`, a plain file path, or `:memory:`: `better-sqlite3`. A file is put in
 *   WAL mode with `synchronous = NORMAL` (durable against a crash of the process, though a power
 *   loss may undo the last commits); statements are prepared once and cached (200 at most).
 *
 * The driver packages are optional peer dependencies: install the one you use. An unreachable
 * server fails with core's `StorageError`; a database migrated by a newer version of this package
 * with `SchemaTooNewError`; a `postgres://` or `mysql://` URL its driver cannot parse (a port that
 * is not a number, a malformed percent-escape the driver decodes) with `StorageConfigError`, before
 * anything is contacted, its message naming "openSqlStorage's url" without the password; so is a
 * URL of no supported form (another scheme, an empty URL, `sqlite:` without a path, a server
 * scheme without its `//`).
 *
 * @example
 * import { createPlantgate } from "@plantgate/core";
 * import { openSqlStorage } from "@plantgate/storage-sql";
 *
 * const storage = await openSqlStorage(process.env.DATABASE_URL ?? "plantgate.db");
 * const app = createPlantgate({ storage });
 */
export async function openSqlStorage(url: string, options: OpenSqlStorageOptions = {}): Promise<SqlStorage> {
  const target = checkedTarget(url, "openSqlStorage's url");
  const family: SqlFamily = target.family;
  const queryTimeoutMs = options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
  if (!Number.isSafeInteger(queryTimeoutMs) || queryTimeoutMs < 0 || queryTimeoutMs > 2_147_483_647) {
    throw new RangeError("queryTimeoutMs must be an integer from 0 to 2147483647 (milliseconds)");
  }
  let opened: Opened;
  try {
    opened = await openKysely(target, queryTimeoutMs);
  } catch (e) {
    // e.g. a SQLite file in a missing directory; a missing driver package is not an outage.
    if (e instanceof DriverMissingError) throw e;
    throw toStorageError(e, family, "open");
  }
  if (opened.pg !== undefined) {
    // Before anything is migrated or cached: a pooler in transaction mode is refused (see
    // TransactionPoolingError). With `migrate: false` a server that cannot be reached now does not
    // fail the open (as before): the pool's first connection checks, and each after it until one
    // could. Kysely has not used the pool yet, so it is ended here directly.
    const pool = opened.pg.pool;
    // Told only of a refusal after the open (the open's own throws it).
    let opening = true;
    const warn = options.onWarning ?? ((message: string) => console.warn(message));
    const check = gateOnSessionPooling(pool, "openSqlStorage's url", (message) => opening || warn(message), opened.pg.probe);
    try {
      await check();
    } catch (e) {
      if (e instanceof TransactionPoolingError || options.migrate !== false) {
        await pool.end().catch(() => {});
        throw e instanceof TransactionPoolingError ? e : toStorageError(e, family, "open");
      }
    } finally {
      opening = false;
    }
  }
  const clientCache = options.clientCache ?? true;
  let cache: PgClientCache | undefined;
  if (target.family === "postgres" && opened.listenClient !== undefined && clientCache !== false) {
    try {
      cache = pgClientCache(opened.listenClient, target.url, clientCache === true ? {} : clientCache);
    } catch (e) {
      await opened.db.destroy().catch(() => {});
      throw e;
    }
  }
  const migrationOptions = {
    ...(options.onWarning !== undefined ? { onWarning: options.onWarning } : {}),
    ...(options.migrationLock !== undefined ? { migrationLock: options.migrationLock } : {}),
  };
  const storage = createSqlStorage(opened.db, family, {
    ...(opened.sqlite ? { sqlite: opened.sqlite } : {}),
    ...(cache ? { pgClientCache: cache } : {}),
    ...(options.audit === true ? { audit: true } : {}),
    ...(options.firstKeyLock !== undefined ? { firstKeyLock: options.firstKeyLock } : {}),
    ...migrationOptions,
    // The lock wait this sets (queryTimeoutMs over 0, a second under it) is the deadline: a
    // timeout then answers 503 in time instead of waiting again up to 7 times.
    lockWaitRetries: !(target.family === "mysql" && queryTimeoutMs > 0),
  });
  if (options.migrate !== false) {
    try {
      if (target.family !== "sqlite" && queryTimeoutMs > 0) {
        // A migration may rightly run longer than any one request's statement (an index built over
        // millions of rows): on a pool of its own without the statement bound, closed after.
        const unbounded = await openKysely(target, 0).catch((e: unknown) => {
          throw e instanceof DriverMissingError ? e : toStorageError(e, family, "open");
        });
        try {
          await createSqlStorage(unbounded.db, family, migrationOptions).migrate();
        } finally {
          await unbounded.db.destroy().catch(() => {});
        }
        // The storage's own pool, used once here: Kysely sets up its driver on first use, and a
        // close() before that would leave later calls free to set up a new pool and succeed.
        await sql`select 1`.execute(opened.db).catch((e: unknown) => {
          throw toStorageError(e, family, "open");
        });
      } else {
        await storage.migrate();
      }
    } catch (e) {
      await storage.close().catch(() => {});
      throw e;
    }
  }
  // After migrating, so the first check finds the triggers; a failure only leaves it bypassed.
  await cache?.start();
  if (opened.pg !== undefined) boundPgClose(storage, opened.pg.pool);
  const file = opened.sqliteFile;
  if (file !== undefined && (options.sqliteCheckpoints ?? "thread") === "thread") return withCheckpointThread(storage, file, options.onWarning ?? ((message) => console.warn(message)));
  return storage;
}

/** The longest pause before a failed checkpoint worker is started again. */
const CHECKPOINTER_RESTART_MAX_MS = 5 * 60_000;

/**
 * Starts the checkpoint worker a second after opening (a storage that lives shorter, a test or a
 * CLI command, never starts one) and stops it, last checkpoint included, before the storage closes.
 * A worker that ends with an error is reported to `warn` and started again after 1 s, then up to
 * {@link CHECKPOINTER_RESTART_MAX_MS} apart while it keeps failing within a minute of its start
 * (until 2026-12-02 it was gone for the life of the process, without a word). Checkpoints that
 * fail with SQLITE_FULL or SQLITE_IOERR, which the worker keeps trying, are reported to `warn` once
 * per run of them, and the first that works after them with one more line.
 */
function withCheckpointThread(storage: SqlStorage, file: { path: string; writer: PragmaTarget }, warn: (message: string) => void): SqlStorage {
  let checkpointer: Promise<SqliteCheckpointer | undefined> | undefined;
  let closing = false;
  let pause = 1000;
  let startedAt = 0;
  let timer: ReturnType<typeof setTimeout>;
  const say = (message: string) => {
    try {
      warn(message);
    } catch {
      // A logger that throws changes nothing here (nor stops a restart).
    }
  };
  const failing = ({ code, message }: CheckpointFailure) =>
    say(
      `plantgate: the SQLite checkpoint worker of ${file.path} cannot checkpoint (${code}${message === "" ? "" : `: ${message}`}); it tries again every 100 ms, and the WAL file keeps growing until a checkpoint works (said once, until one does)`,
    );
  const recovered = ({ code, failures, durationMs }: CheckpointRecovery) =>
    say(`plantgate: the SQLite checkpoint worker of ${file.path} checkpoints again, after ${failures} failed ${failures === 1 ? "attempt" : "attempts"} (${code}) over ${(durationMs / 1000).toFixed(1)} s`);
  const failed = (error: unknown) => {
    checkpointer = undefined;
    if (closing) return;
    // One that ran a minute before failing starts over from the shortest pause.
    if (Date.now() - startedAt > 60_000) pause = 1000;
    // A worker's error comes over as a clone: better-sqlite3's SqliteError as a plain object
    // holding only its code (SQLITE_CANTOPEN), an Error with its name and message.
    const { code, name, message } = (typeof error === "object" && error !== null ? error : {}) as { code?: unknown; name?: unknown; message?: unknown };
    const kind = typeof code === "string" ? code : typeof name === "string" ? name : "Error";
    const reason = typeof message === "string" ? `${kind}: ${message}` : typeof code === "string" ? code : String(error);
    say(`plantgate: the SQLite checkpoint worker of ${file.path} ended (${reason}); the writing connection checkpoints itself meanwhile, and the worker starts again in ${pause / 1000} s`);
    schedule(pause);
    pause = Math.min(pause * 2, CHECKPOINTER_RESTART_MAX_MS);
  };
  // Loaded only here: the module needs node:worker_threads, which nothing else of this entry does.
  const start = () => import("./sqlite-checkpointer.js").then(({ startSqliteCheckpointer }) => startSqliteCheckpointer({ ...file, onError: failed, onFailing: failing, onRecovered: recovered }));
  const schedule = (ms: number) => {
    timer = setTimeout(() => {
      startedAt = Date.now();
      // No worker threads here: the connection checkpoints itself, as SQLite does by default.
      checkpointer = start().catch(() => undefined);
    }, ms);
    timer.unref();
  };
  schedule(1000);
  const close = storage.close.bind(storage);
  storage.close = async () => {
    closing = true;
    clearTimeout(timer);
    await (await checkpointer)?.stop();
    return close();
  };
  return storage;
}
