import type { Context } from "../context.js";
import { timingSafeEqual } from "../crypto/index.js";
import { StorageError } from "../errors/index.js";
import { describeError } from "../http/respond.js";
import type { ClientRecord, ClientSecretRecord } from "../storage/types.js";

// A fixed hash to compare against when the client has no secret, so unknown ids cost the same.
const NO_SECRET_HASH = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

/** `lastUsedAt` is written at most this often per secret, so authentication rarely writes. */
export const SECRET_USE_RESOLUTION_MS = 60_000;

/**
 * The secret of `client` that `presented` is, or null. Hashes the presented secret once and
 * compares the hash with every secret of the client (expired ones too) without stopping at a
 * match, so the time depends only on how many secrets the client has, not on which one (if any)
 * matched. An expired secret never matches. Records the use (`touchSecret`) when the last one
 * recorded is older than a minute: best effort, so a store that reads but cannot write (a
 * read-only failover, a full disk) still authenticates; the failure is a `warn` line, at most one
 * a minute per app (until 2026-12-01 it answered 503, so no client could get a token while writes
 * failed, though nothing else of client credentials writes).
 */
export async function matchClientSecret(ctx: Context, client: ClientRecord | null, presented: string, now: number): Promise<ClientSecretRecord | null> {
  const hash = await ctx.sha256(presented);
  const secrets = client?.secrets ?? [];
  let found: ClientSecretRecord | null = null;
  let miss = true;
  for (const s of secrets) {
    const equal = timingSafeEqual(hash, s.hash);
    const live = s.expiresAt === null || s.expiresAt > now;
    // No early exit: every hash is compared whatever the outcome.
    if (equal && live) found = s;
    miss = miss && !equal;
  }
  if (secrets.length === 0) miss = !timingSafeEqual(hash, NO_SECRET_HASH);
  if (!client || !found || miss) return null;
  if (found.lastUsedAt === null || found.lastUsedAt <= now - SECRET_USE_RESOLUTION_MS) {
    try {
      await ctx.storage.clients.touchSecret(client.clientId, found.id, now);
    } catch (error) {
      if (!(error instanceof StorageError)) throw error;
      const last = touchWarnedAt.get(ctx);
      if (last === undefined || now - last >= SECRET_USE_RESOLUTION_MS) {
        touchWarnedAt.set(ctx, now);
        ctx.logger.warn("a client secret's last use could not be recorded; the client is authenticated, and later uses try again (this line at most once a minute)", describeError(error));
      }
    }
  }
  return found;
}

/** When each app last logged a failed `touchSecret`. */
const touchWarnedAt = new WeakMap<Context, number>();
