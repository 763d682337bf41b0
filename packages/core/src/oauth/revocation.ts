import { OAuthError } from "../errors/index.js";
import { NO_STORE, plain } from "../http/respond.js";
import { isLiveRefresh, issuedTo, presentedTokenEndpoint } from "./token-lookup.js";
import { isRevoked, revokeGrantSteps, sweepRevoked } from "./grant-revocation.js";
import { CLIENT_SUBJECT_PREFIX } from "../tokens/access-token.js";
import type { Context } from "../context.js";
import type { RefreshTokenRecord } from "../storage/types.js";

/**
 * `POST /UserService/connect/revocation` (RFC 7009). The client authenticates exactly as at the
 * token endpoint (and under the same brute-force throttle).
 *
 * - A refresh token revokes its whole family (every token descending from the same password grant)
 *   and the access tokens issued with it (RFC 7009 §2.1; see revokeGrantSteps).
 * - An access token's `jti` is recorded as revoked until the token's `exp`; the bearer check refuses it.
 * - An unknown, malformed or already expired token: 200, nothing changes (RFC 7009 §2.2).
 * - A valid token issued to another client: 400 `invalid_request`, nothing changes. RFC 7009 §2.1
 *   says such a request "is refused and the client is informed of the error". For an access token
 *   the refusal tells the caller nothing it could not learn by using the token it holds; for
 *   another client's refresh token it tells that the family is live, which the token endpoint and
 *   introspection do not (README: kept, as the RFC asks). Another client's refresh
 *   token that is revoked, consumed or expired, or access token that is revoked, is an invalid token:
 *   200, as an unknown string (the 400 told its holder the string was, or had been, a token of some
 *   other client, where introspection answers `{"active":false}`).
 * - An access token signed by a key this instance has not loaded yet (another instance stored it
 *   with `rotateSigningKey({ now: true })` less than a second ago, within the unknown-kid re-read
 *   interval) is looked for in the stored keys at once, so it is revoked, not taken for an unknown
 *   token: until 2026-11-30 that answered 200 and revoked nothing, and the token kept working on the
 *   instance that issued it. A made-up kid costs one read of the key rows per revocation (as a
 *   made-up refresh token costs its lookup); a failed read, or one (or the reload after it) past
 *   signingKeyLoadTimeoutMs, is a 503, never a 200.
 * - `token.revoked` is recorded only when the call revoked a live token of the client's (an access
 *   token not already revoked, a refresh token whose family was live); a token revoked again, or
 *   past its expiry, answers 200 and records nothing (each such call recorded one until 2026-12-02).
 *   Of concurrent revocations of one token, the one the store says recorded it (`revokedTokens.add`
 *   or `revokeFamily` resolving to true) records it; until later on 2026-12-02 each recorded one
 *   (for a refresh token, those in the same millisecond).
 * - The revocation stands once stored: a failure of the sweep of old revoked jtis after it is
 *   logged, not answered 503 (RFC 7009 §2.2.1: a client told 503 must assume the token still valid).
 */
export const revocationEndpoint = presentedTokenEndpoint(async (ctx, _urls, client, found, now, clientIp) => {
  if (found) {
    // Another client's token, or one of a deleted client whose id was re-used: not this client's.
    if (!issuedTo(found, client)) {
      if (found.kind === "refresh_token" ? !isLiveRefresh(found.record, now) : await isRevoked(ctx, found.claims)) return plain(200, null, { ...NO_STORE });
      throw new OAuthError("invalid_request", "The token was not issued to this client.");
    }
    if (found.kind === "refresh_token") {
      const record = found.record;
      // The steps run whatever the family's state (each is idempotent, and a retry after a 503 whose
      // entry failed writes the entry then), but `token.revoked` is recorded only when this call
      // revoked a live family (see familyRevokedHere): until 2026-12-02 a logout sent twice, or the
      // token of a family reuse detection had already revoked, recorded a revocation each time.
      const live = familyLive(record, now);
      // Reported once the family is revoked, also when only its access tokens' entry failed (the
      // 503 then), as reuse is: until 2026-12-01 that 503 came before the event, and a logout sent
      // once (fire and forget) left a revoked family without a token.revoked or an audit record.
      const { entryFailed, familyRevoked } = await revokeGrantSteps(ctx, record.familyId, now);
      if (live && (familyRevoked ?? (await familyRevokedHere(ctx, record.tokenHash, now)))) {
        ctx.events.emit({ type: "token.revoked", client_id: client.clientId, account_id: record.accountId, token_type: "refresh_token", jti: null, family_id: record.familyId, client_ip: clientIp ?? null });
      }
      if (entryFailed) throw entryFailed.error;
    } else {
      // Already revoked (its jti, or its family): recorded again (`add` is idempotent), but it was
      // not live, so no `token.revoked` (RFC 7009 §2.2: an invalid token; 200 all the same). Of
      // concurrent revocations that all read it live, the one whose `add` recorded the jti (true)
      // records it; a store that does not say (written before 2026-12-02) leaves it to the read,
      // and each of them records one, as every store did until then.
      const wasRevoked = await isRevoked(ctx, found.claims);
      const added = await ctx.storage.revokedTokens.add(found.claims.jti, found.claims.exp * 1000);
      const sub = found.claims.sub;
      if (!wasRevoked && added !== false) ctx.events.emit({ type: "token.revoked", client_id: client.clientId, account_id: sub.startsWith(CLIENT_SUBJECT_PREFIX) ? null : sub, token_type: "access_token", jti: found.claims.jti, family_id: null, client_ip: clientIp ?? null });
      await sweepRevoked(ctx, now);
    }
  }
  // RFC 7009 §2.2: the body is ignored by clients; an empty one is what the RFC shows.
  return plain(200, null, { ...NO_STORE });
}, { lookNow: true });

/**
 * Whether a refresh token's family could still be used when it was read: not revoked, not past its
 * absolute expiry, and the token either live itself or consumed (rotated: its successors may be
 * live, and revoking it revokes them, RFC 7009 §2.1). A token neither consumed nor live is past its
 * sliding expiry and the last of its family: nothing of the family is left to use.
 */
function familyLive(record: RefreshTokenRecord, now: number): boolean {
  return isLiveRefresh(record, now) || (record.consumedAt !== null && record.revokedAt === null && now < record.familyExpiresAt);
}

/**
 * For a store whose `revokeFamily` does not say whether it revoked the family (written before the
 * contract change of 2026-12-02): whether the family was revoked by this call, read back after
 * `revokeFamily(familyId, now)`: that marks every token of the family with `now` and keeps an
 * earlier `revokedAt` (the storage contract), so a token whose `revokedAt` is another time was
 * revoked by someone else meanwhile (a concurrent revocation of the same token, reuse detection,
 * the account's disabling). Two revocations in the same millisecond both count. A read that fails
 * or finds nothing (pruned since) counts as this call's: the family was live when read, and a
 * revocation is not left out of the audit trail for a failed read.
 */
async function familyRevokedHere(ctx: Context, tokenHash: string, now: number): Promise<boolean> {
  try {
    const after = await ctx.storage.refreshTokens.findByHash(tokenHash);
    return after === null || after.revokedAt === null || after.revokedAt === now;
  } catch {
    return true;
  }
}
