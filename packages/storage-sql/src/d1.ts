import type { Storage } from "@plantgate/core";
import type { D1DatabaseLike } from "./batch.js";
import { d1AuditStore } from "./d1/audit.js";
import { createD1Context } from "./d1/context.js";
import { migrateD1 } from "./d1/migrate.js";
import { d1AssertionJtiStore, d1ClientStore } from "./d1/clients.js";
import { d1AccountStore, d1PlantStore, d1SigningKeyStore } from "./d1/records.js";
import { d1AttemptStore, d1RefreshTokenStore, d1RevokedTokenStore, d1SessionStore } from "./d1/tokens.js";

export type { D1DatabaseLike, D1PreparedStatementLike } from "./batch.js";

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
  const ctx = createD1Context(database);
  let closed: Promise<void> | null = null;
  return {
    family: "sqlite",
    migrate: () => ctx.run("migrate", () => migrateD1(ctx)),
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
    ...(options.audit === true ? { audit: d1AuditStore(ctx) } : {}),
  };
}
