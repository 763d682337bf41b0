import type { Context } from "../context.js";
import { describeError } from "../http/respond.js";
import { SWEEP_LIMIT } from "../security/throttle.js";
import type { AccessTokenClaims } from "../tokens/access-token.js";

/**
 * The revoked-token entry that stands for every access token of one refresh family (the tokens
 * whose `sid` is that family): kept in `revokedTokens` beside revoked `jti`s, which are base64url
 * and never hold a colon.
 */
export const familyEntry = (familyId: string): string => `sid:${familyId}`;

/**
 * Revokes a refresh family and, with it, every access token issued with the family (RFC 7009 §2.1:
 * revoking a refresh token "SHOULD also invalidate all access tokens based on the same
 * authorization grant"): one `revokedTokens` entry for the family, kept for the longest access-token
 * lifetime in force (a lifetime lowered since leaves tokens issued under the longer one uncovered
 * once the entry is swept, as a retired signing key's trust window does). Until 2026-12-01 only the
 * refresh tokens were revoked, and the grant's access tokens worked on until they expired (a client
 * signing out by revoking its refresh token kept a working access token for up to its whole
 * lifetime).
 *
 * The entry is written first, and the family is revoked whether or not it could be: the family's
 * revocation is what a retry cannot redo on the reuse path (a revoked family's tokens are refused
 * before reuse is looked at), so a failure of the family's step leaves the access tokens refused and
 * the refresh tokens usable, and the 503's retry or the next reuse finishes it (`add` is
 * idempotent). A failure of the entry's step (the revoked tokens in a Redis that is down while the
 * SQL store answers) still revokes the family and then rejects (503): until 2026-12-01 it revoked
 * nothing, and on the reuse path whoever held the family's newest token (the thief, when the victim
 * presented the stolen one) kept rotating it until someone presented a spent token again after the
 * outage, for up to the family's lifetime. The grant's access tokens then stay valid until they
 * expire (at most the longest access-token lifetime), as they all did before 2026-12-01: a retry
 * finds the family revoked and writes nothing.
 *
 * Resolves to the entry's failure (`entryFailed`), or null, so a caller acts once the family is
 * revoked even when the entry's step failed (reuse detection's event and warn line, a revocation's
 * `token.revoked`: a retry finds the family revoked, no reuse any more, so the theft would never be
 * reported) and then throws it (the 503); rejects when the family's step fails (nothing recorded
 * then but the entry). `familyRevoked` is what `revokeFamily` answered: true when this call
 * revoked the family, false when it was revoked already, undefined from a store written before
 * the contract change of 2026-12-02 (it cannot tell).
 *
 * Once the entry is written, the expired entries are swept (a bounded batch; best-effort, a failure
 * only logged: the revocation stands and `prune` clears any backlog), as an access token's
 * revocation does: until 2026-12-02 only that branch swept, so the entries of logouts and reuse
 * detections piled up until `prune` (the Redis index `r:i`, the SQL table).
 */
export async function revokeGrantSteps(ctx: Context, familyId: string, now: number): Promise<{ entryFailed: { error: unknown } | null; familyRevoked: boolean | undefined }> {
  let entryFailed: { error: unknown } | null = null;
  try {
    await ctx.storage.revokedTokens.add(familyEntry(familyId), now + (await ctx.maxAccessTokenTtlMs()));
  } catch (error) {
    entryFailed = { error };
  }
  const familyRevoked = await ctx.storage.refreshTokens.revokeFamily(familyId, now);
  if (entryFailed === null) await sweepRevoked(ctx, now);
  return { entryFailed, familyRevoked: typeof familyRevoked === "boolean" ? familyRevoked : undefined };
}

/**
 * Deletes a bounded batch of revoked-token entries past their token's expiry, after a revocation
 * has written one: entries are useless once their token has expired, and revocations are rare, so
 * each sweeps (`prune` clears any backlog). Best-effort: a failure is logged, the revocation stands.
 */
export async function sweepRevoked(ctx: Context, now: number): Promise<void> {
  try {
    await ctx.storage.revokedTokens.deleteExpired(now, SWEEP_LIMIT);
  } catch (error) {
    ctx.logger.warn("revoked-token sweep failed after a revocation (the revocation stands; prune clears the backlog)", describeError(error));
  }
}

/**
 * Whether an access token is revoked: its own `jti`, or its refresh family (`sid`). A token without
 * a family (client credentials, a password grant without offline_access) costs the one lookup it
 * always did; one with a family asks for both at once (one wait).
 */
export function isRevoked(ctx: Context, claims: AccessTokenClaims): Promise<boolean> {
  const revoked = ctx.storage.revokedTokens;
  if (claims.sid === undefined) return revoked.has(claims.jti);
  return Promise.all([revoked.has(claims.jti), revoked.has(familyEntry(claims.sid))]).then(([jti, family]) => jti || family);
}
