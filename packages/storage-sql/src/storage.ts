import type { Storage } from "@plantgate/core";
import type { Kysely } from "kysely";
import type { D1DatabaseLike } from "./batch.js";
import { createStoreContext } from "./context.js";
import { createD1Context } from "./d1/context.js";
import { migrateD1 } from "./d1/migrate.js";
import { migrateToLatest } from "./migrations.js";
import type { Database, SqlFamily } from "./schema.js";
import type { ClientCacheState, PgClientCache } from "./pg-client-cache.js";
import type { SqliteFastPath } from "./sqlite-fast.js";
import { accountStore } from "./stores/accounts.js";
import { assertionJtiStore } from "./stores/assertion-jtis.js";
import { attemptStore } from "./stores/attempts.js";
import { auditPruneStore, auditStore } from "./stores/audit.js";
import { clientStore } from "./stores/clients.js";
import { plantStore } from "./stores/plants.js";
import { refreshTokenStore } from "./stores/refresh-tokens.js";
import { revokedTokenStore } from "./stores/revoked-tokens.js";
import { sessionStore } from "./stores/sessions.js";
import { signingKeyStore, type FirstKeyLockTimes } from "./stores/signing-keys.js";

/**
 * A `Storage` on a SQL database through Kysely, plus what its owner needs around it.
 *
 * @example
 * const storage = await openSqlStorage("postgres://app@db.internal/app");
 * const app = createPlantgate({ storage });
 * // ... on shutdown:
 * await storage.close();
 */
export interface SqlStorage extends Storage {
  /** The engine family the queries are built for. */
  readonly family: SqlFamily;
  /** The Kysely instance underneath (for health checks or your own queries on the same pool). */
  readonly db: Kysely<Database>;
  /**
   * Applies pending migrations; refuses a newer schema with `SchemaTooNewError` before changing
   * anything. Idempotent and safe to run from several instances at once.
   */
  migrate(): Promise<void>;
  /**
   * PostgreSQL through `openSqlStorage` (unless `clientCache: false`): whether client reads are
   * served from memory right now (see `OpenSqlStorageOptions.clientCache`). Absent otherwise.
   */
  readonly clientCache?: ClientCacheState;
  /** Ends the client cache's listening connection, destroys the Kysely instance (ending its pool), then runs `onClose`. Idempotent. */
  close(): Promise<void>;
}

/**
 * Options of {@link createSqlStorage}.
 *
 * @example
 * createSqlStorage(db, "sqlite", { onClose: async () => console.log("storage closed") });
 */
export interface CreateSqlStorageOptions {
  /** Runs after `close()` has destroyed the Kysely instance, e.g. to close a driver it wraps. */
  onClose?: () => Promise<void>;
  /**
   * The Cloudflare D1 binding under `db` (family `"sqlite"` only), for a Kysely instance on D1 you
   * built yourself (kysely-d1). D1 rejects `BEGIN`, so with this set, each migration runs as one
   * `batch()` on this binding and `refreshTokens.consume` and `accounts.createMany` are made
   * atomic with one `batch()` instead. `createD1Storage` from `@plantgate/storage-sql/d1` needs
   * no Kysely at all.
   */
  d1?: D1DatabaseLike;
  /**
   * Keep security events in `pg_audit_events` (the `audit` store: the console's "Security events"
   * page, `plantgate events`, pruned by age). Default false: nothing new is written there, and
   * the rows written while it was true are still deleted by `prune` past the retention (the
   * storage's `auditPrune`).
   */
  audit?: boolean;
  /**
   * What `sqliteFastPath(database)` made of the better-sqlite3 database under `db` (whose
   * `SqliteDialect` must have been given its `database`): a read cache validated per read by
   * `PRAGMA data_version` and synchronous hot statements. `openSqlStorage` sets it for SQLite.
   */
  sqlite?: SqliteFastPath;
  /**
   * What `openSqlStorage` builds for PostgreSQL: the client read cache kept valid by the database's
   * notifications, and its listening connection (ended by `close()`). Family `"postgres"` only.
   */
  pgClientCache?: PgClientCache;
  /**
   * MySQL/MariaDB: run a transaction or statement whose row-lock wait timed out (ER_LOCK_WAIT_TIMEOUT,
   * 1205, after the server's `innodb_lock_wait_timeout`) again from the start, as deadlock victims
   * are: up to 8 attempts in all, its transaction rolled back whole first. Default true: with a pool
   * of your own, the lock-wait timeout is your server's setting, not a deadline of ours.
   * `openSqlStorage` sets it false when it gives each connection `innodb_lock_wait_timeout` as its
   * statement deadline (`queryTimeoutMs` over 0): that timeout then answers 503 in time.
   */
  lockWaitRetries?: boolean;
  /**
   * MySQL/MariaDB: the first-key lock's wait and its holder's idle bound, in seconds (default 10
   * and 5; see `signingKeys.createIfEmpty` in the README). For tests. @internal
   */
  firstKeyLock?: Partial<FirstKeyLockTimes>;
  /**
   * Told of what an operator should know but that fails nothing: on PostgreSQL and MySQL/MariaDB, a
   * `migrate()` that has waited 5 s for the migration lock of its database or schema (another
   * instance migrating it), or for Kysely's default lock it also takes while migrating (a
   * plantgate instance from before 2026-12-02, or another Kysely migrator). Default: the message as a line on stderr (`console.warn`).
   */
  onWarning?: (message: string) => void;
  /** How long `migrate()` waits for the migration lock before it warns, and in all (ms). For tests. @internal */
  migrationLock?: { warnAfterMs?: number; waitMs?: number };
}

/**
 * Wraps an existing Kysely instance as plantgate `Storage`: for D1, a pool you configure yourself,
 * or a database shared with your application. Does not migrate; call `migrate()` once first.
 * Duplicate keys make `create` return false; any other database failure is thrown as core's
 * `StorageError` (plantgate answers 503) with the driver's error as `cause`.
 *
 * @example
 * import Database from "better-sqlite3";
 * import { Kysely, SqliteDialect } from "kysely";
 * import { createSqlStorage, type Database as Tables } from "@plantgate/storage-sql";
 *
 * const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: new Database("plantgate.db") }) });
 * const storage = createSqlStorage(db, "sqlite");
 * await storage.migrate();
 */
export function createSqlStorage(db: Kysely<Database>, family: SqlFamily, options: CreateSqlStorageOptions = {}): SqlStorage {
  const ctx = createStoreContext(db, family, options.d1, options.sqlite, options.pgClientCache?.cache, options.lockWaitRetries ?? true);
  const clientCache = options.pgClientCache;
  let closed: Promise<void> | null = null;
  const audit = options.audit === true ? auditStore(ctx, options.onWarning ?? ((message) => console.warn(message))) : undefined;

  return {
    family,
    db,
    ...(clientCache !== undefined ? { clientCache: { live: () => clientCache.live() } } : {}),

    async migrate() {
      const lock = { ...options.migrationLock, ...(options.onWarning ? { warn: options.onWarning } : {}) };
      // D1 rejects BEGIN: its migrations run as batches on the binding (the D1 storage's runner).
      const d1 = ctx.d1;
      await ctx.run("migrate", () => (d1 !== undefined ? migrateD1(createD1Context(d1)) : migrateToLatest(db as Kysely<any>, family, lock)));
    },

    close() {
      closed ??= (async () => {
        try {
          // Records still waiting for the audit table (past the events flush's bound) are not
          // written to a store that is closing: one warning, instead of a failed append each.
          audit?.discard();
          await clientCache?.close();
          await db.destroy();
        } finally {
          await options.onClose?.();
        }
      })();
      return closed;
    },

    clients: clientStore(ctx),
    accounts: accountStore(ctx),
    refreshTokens: refreshTokenStore(ctx),
    plants: plantStore(ctx),
    signingKeys: signingKeyStore(ctx, options.firstKeyLock),
    attempts: attemptStore(ctx),
    revokedTokens: revokedTokenStore(ctx),
    assertionJtis: assertionJtiStore(ctx),
    sessions: sessionStore(ctx),
    // Off: nothing new is kept, and what was kept while it was on is still pruned by the retention.
    ...(audit !== undefined ? { audit: { append: audit.append, list: audit.list, deleteExpired: audit.deleteExpired } } : { auditPrune: auditPruneStore(ctx) }),
  };
}
