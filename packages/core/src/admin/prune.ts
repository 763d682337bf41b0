import type { Context } from "../context.js";
import { pruneKeys } from "../tokens/keys.js";

/** Options of {@link prune}. */
export interface PruneOptions {
  /**
   * Rows deleted per storage call (default 1000). Each call is one short statement (a transaction
   * of its own), so a backlog of millions is worked off in many short steps, never one long lock.
   */
  batchSize?: number;
}

/** How many records one prune deleted, per aggregate. */
export interface PruneCounts {
  refreshTokens: number;
  sessions: number;
  attempts: number;
  revokedTokens: number;
  /** `private_key_jwt` assertion jtis past their assertion's expiry. */
  assertionJtis: number;
  signingKeys: number;
  /** Audit events older than the retention (`auditRetentionDays`); 0 without an audit store. */
  auditEvents: number;
}

/** Default rows per storage call of {@link prune}. */
export const PRUNE_BATCH_SIZE = 1000;

/**
 * Deletes what can never matter again, as of one instant (`ctx.clock()` at the start):
 *
 * - refresh tokens of a family past its absolute expiry, and unconsumed ones past their sliding
 *   expiry; a consumed (rotated) token stays until its family expires, since presenting it again
 *   is what detects reuse;
 * - console sessions past their expiry;
 * - brute-force counters whose window has ended (`now - window`; all of them with the throttle off);
 * - revoked access-token jtis past their token's expiry;
 * - client-assertion jtis past their assertion's expiry;
 * - signing keys that are `prunable` (see `describeKeys`);
 * - audit events older than `auditRetentionDays` (when the storage has an audit store).
 *
 * Each store is called in batches of `batchSize` until a batch comes back short. Two instances
 * pruning at once are safe: the stores delete each row once, so their counts add up.
 */
export async function prune(ctx: Context, options: PruneOptions = {}): Promise<PruneCounts> {
  const batch = options.batchSize ?? PRUNE_BATCH_SIZE;
  if (!Number.isSafeInteger(batch) || batch < 1) throw new TypeError("batchSize must be a positive integer");
  // One instant for the whole run: rows that expire while it runs wait for the next one, so the
  // loops end even while traffic keeps creating rows.
  const now = ctx.clock();
  const drain = async (deleteBatch: (limit: number) => Promise<number>): Promise<number> => {
    let total = 0;
    for (;;) {
      const n = await deleteBatch(batch);
      total += n;
      // A store that ignores the limit deletes everything at once: its next call returns 0.
      if (n < batch) return total;
    }
  };
  const { storage } = ctx;
  const refreshTokens = await drain((limit) => storage.refreshTokens.deleteExpired(now, limit));
  const sessions = await drain((limit) => storage.sessions.deleteExpired(now, limit));
  const attempts = await drain((limit) => storage.attempts.deleteExpired(now - ctx.throttle.windowMs, limit));
  const revokedTokens = await drain((limit) => storage.revokedTokens.deleteExpired(now, limit));
  const assertionJtis = await drain((limit) => storage.assertionJtis.deleteExpired(now, limit));
  // Only a configured key needs naming: otherwise the newest stored key is the one that signs.
  // (Asking the keyring on a fresh store would create a key, which pruning has no business doing.)
  const activeKid = ctx.keyring.configured ? (await ctx.keyring.signingKey()).kid : undefined;
  const deletedKeys = await pruneKeys(storage.signingKeys, now, await ctx.maxAccessTokenTtlMs(), activeKid);
  if (deletedKeys.length > 0) ctx.keyring.invalidate();
  const audit = storage.audit;
  const auditEvents = audit ? await drain((limit) => audit.deleteExpired(now - ctx.auditRetentionMs, limit)) : 0;
  return { refreshTokens, sessions, attempts, revokedTokens, assertionJtis, signingKeys: deletedKeys.length, auditEvents };
}
