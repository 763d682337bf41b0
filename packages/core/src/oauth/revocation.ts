import { OAuthError } from "../errors/index.js";
import { describeError, NO_STORE, plain } from "../http/respond.js";
import { isLiveRefresh, issuedTo, presentedTokenEndpoint } from "./token-lookup.js";
import { SWEEP_LIMIT } from "../security/throttle.js";
import { isRevoked, revokeGrantSteps } from "./grant-revocation.js";
import { CLIENT_SUBJECT_PREFIX } from "../tokens/access-token.js";

/**
 * `POST /UserService/connect/revocation` (RFC 7009). The client authenticates exactly as at the
 * token endpoint (and under the same brute-force throttle).
 *
 * - A refresh token revokes its whole family (every token descending from the same password grant)
 *   and the access tokens issued with it (RFC 7009 §2.1; see revokeGrantSteps).
 * - An access token's `jti` is recorded as revoked until the token's `exp`; the bearer check refuses it.
 * - An unknown, malformed or already expired token: 200, nothing changes (RFC 7009 §2.2).
 * - A valid token issued to another client: 400 `invalid_request`, nothing changes. RFC 7009 §2.1
 *   says such a request "is refused and the client is informed of the error"; the refusal tells the
 *   caller nothing it could not learn by using the token it already holds. Another client's refresh
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
      // Reported once the family is revoked, also when only its access tokens' entry failed (the
      // 503 then), as reuse is: until 2026-12-01 that 503 came before the event, and a logout sent
      // once (fire and forget) left a revoked family without a token.revoked or an audit record.
      const entryFailed = await revokeGrantSteps(ctx, found.record.familyId, now);
      ctx.events.emit({ type: "token.revoked", client_id: client.clientId, account_id: found.record.accountId, token_type: "refresh_token", jti: null, family_id: found.record.familyId, client_ip: clientIp ?? null });
      if (entryFailed) throw entryFailed.error;
    } else {
      await ctx.storage.revokedTokens.add(found.claims.jti, found.claims.exp * 1000);
      const sub = found.claims.sub;
      ctx.events.emit({ type: "token.revoked", client_id: client.clientId, account_id: sub.startsWith(CLIENT_SUBJECT_PREFIX) ? null : sub, token_type: "access_token", jti: found.claims.jti, family_id: null, client_ip: clientIp ?? null });
      // Entries are useless once their token has expired; revocations are rare, so sweep here
      // (a bounded batch: `prune` clears any backlog).
      try {
        await ctx.storage.revokedTokens.deleteExpired(now, SWEEP_LIMIT);
      } catch (error) {
        ctx.logger.warn("revoked-token sweep failed after a revocation (the revocation stands; prune clears the backlog)", describeError(error));
      }
    }
  }
  // RFC 7009 §2.2: the body is ignored by clients; an empty one is what the RFC shows.
  return plain(200, null, { ...NO_STORE });
}, { lookNow: true });
