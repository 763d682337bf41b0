import type { Storage } from "@plantgate/core";
import type { D1DatabaseLike } from "./batch.js";
import { d1AuditPruneStore, d1AuditStore } from "./d1/audit.js";
import { createD1Context } from "./d1/context.js";
import { migrateD1 } from "./d1/migrate.js";
import { d1AssertionJtiStore, d1ClientStore } from "./d1/clients.js";
import { d1AccountStore, d1PlantStore, d1SigningKeyStore } from "./d1/records.js";
import { d1AttemptStore, d1RefreshTokenStore, d1RevokedTokenStore, d1SessionStore } from "./d1/tokens.js";

export type { D1DatabaseLike, D1PreparedStatementLike } from "./batch.js";
/** What `migrate()` refuses a database migrated by a newer version with (the Worker entry tells it from an outage). */
export { SchemaTooNewError } from "./errors.js";

/**
 * plantgate `Storage` on a Cloudflare D1 binding, plus what its owner needs around it.
 *
 * @example
 * const storage = createD1Storage(env.DB);
 * await storage.migrate();
 */
export interface D1Storage extends Storage {
  /** The engine family: D1 is SQLite. */
  readonly family: "sqlite";
  /**
   * Applies pending migrations (each one a D1 batch, so all of it or none); refuses a newer schema
   * with `SchemaTooNewError` before changing anything. Idempotent and safe from several isolates at once.
   */
  migrate(): Promise<void>;
  /** Runs `onClose`; D1 bindings need no closing. Idempotent. */
  close(): Promise<void>;
}

/**
 * Options of {@link createD1Storage}.
 *
 * @example
 * const storage = createD1Storage(env.DB, { onClose: async () => {} });
 */
export interface CreateD1StorageOptions {
  /** Runs after `close()`; D1 bindings need no closing. */
  onClose?: () => Promise<void>;
  /** Keep security events in an audit store (see `CreateSqlStorageOptions.audit`). Default false. */
  audit?: boolean;
  /**
   * How long (ms) one storage operation (`clients.get`, `refreshTokens.consume`, ...: every
   * statement and batch it sends) may take; past it the operation fails with core's
   * `StorageError` (503 with `Retry-After`), on one timer per operation. Default `0`: no bound
   * (`createWorker` sets 15 000, its `d1TimeoutMs`). D1 cannot cancel a call: a write given up on
   * may still be done after its caller was told it failed (its outcome is unknown). `migrate()`
   * has no bound (a migration may rightly take longer than any one request's call).
   */
  operationTimeoutMs?: number;
}

/**
 * plantgate `Storage` on a Cloudflare D1 binding. It sends the binding plain SQL (the statements
 * the Kysely stores compile to on SQLite) and bundles neither Kysely nor any Node driver, so a
 * Worker stays small. D1 has no SQL transactions, so the two multi-statement writes
 * (`refreshTokens.consume`, `accounts.createMany`) and each migration run as one atomic D1
 * `batch()`. Does not migrate; call `migrate()` once (e.g. from a deploy step) before serving.
 *
 * @example
 * import { createD1Storage } from "@plantgate/storage-sql/d1";
 *
 * export default {
 *   async fetch(request: Request, env: { DB: D1Database }) {
 *     const storage = createD1Storage(env.DB);
 *     return createPlantgate({ storage }).fetch(request);
 *   },
 * };
 */
export function createD1Storage(database: D1DatabaseLike, options: CreateD1StorageOptions = {}): D1Storage {
  const operationTimeoutMs = options.operationTimeoutMs ?? 0;
  // As openSqlStorage checks queryTimeoutMs: past 2^31-1 ms setTimeout fires at once; NaN never compares.
  if (!Number.isSafeInteger(operationTimeoutMs) || operationTimeoutMs < 0 || operationTimeoutMs > 2_147_483_647) {
    throw new RangeError("operationTimeoutMs must be an integer from 0 to 2147483647 (milliseconds)");
  }
  const ctx = createD1Context(database, { timeoutMs: operationTimeoutMs });
  let closed: Promise<void> | null = null;
  return {
    family: "sqlite",
    migrate: () => ctx.run("migrate", () => migrateD1(ctx), 0),
    close() {
      closed ??= (async () => {
        await options.onClose?.();
      })();
      return closed;
    },
    clients: d1ClientStore(ctx),
    accounts: d1AccountStore(ctx),
    refreshTokens: d1RefreshTokenStore(ctx),
    plants: d1PlantStore(ctx),
    signingKeys: d1SigningKeyStore(ctx),
    attempts: d1AttemptStore(ctx),
    revokedTokens: d1RevokedTokenStore(ctx),
    sessions: d1SessionStore(ctx),
    assertionJtis: d1AssertionJtiStore(ctx),
    // Off: nothing new is kept, and what was kept while it was on is still pruned (see storage.ts).
    ...(options.audit === true ? { audit: d1AuditStore(ctx) } : { auditPrune: d1AuditPruneStore(ctx) }),
  };
}
