import { OAuthError } from "../../errors/index.js";
import { issueTokens } from "../issue.js";
import { refreshTokenKey } from "../refresh-key.js";
import { parseScope, UNKNOWN_SCOPE } from "../scopes.js";
import { requiredParameters } from "../../schemas/oauth.js";
import { replayAnswer } from "./refresh-grace.js";
import { revokeGrantSteps } from "../grant-revocation.js";
import { issuedTo } from "../token-lookup.js";
import type { Grant } from "./types.js";

const invalid = () => new OAuthError("invalid_grant", "The refresh token is invalid, expired or revoked.");

/**
 * RFC 6749 §6. Rotates on every use. A rotated token presented again within the client's grace
 * window is answered with the rotation's own answer (see `refresh-grace.ts`); after it, that is
 * reuse and revokes the whole family (RFC 9700 §4.14.2). The token is bound to the client it was
 * issued to; scope, client binding and the family's absolute lifetime hold for replays too.
 */
export const refreshTokenGrant: Grant = {
  grantType: "refresh_token",
  required: requiredParameters("refresh_token"),
  async handle({ ctx, urls, client, params, now, clientIp }) {
    const presented = params.get("refresh_token")!;
    if (presented.length > 512) throw invalid();
    const tokenHash = await refreshTokenKey(ctx.sha256, presented);
    const record = await ctx.storage.refreshTokens.findByHash(tokenHash);
    // Bound to the client it was issued to: the same id, and not a client of that id deleted and
    // re-created since (by generation; by time for a record or client without one: see issuedTo).
    if (!record || !issuedTo({ kind: "refresh_token", record }, client)) throw invalid();
    if (record.revokedAt !== null) throw invalid();
    const graceMs = ctx.refreshGrace.windowMs(client.clientId);
    const reuse = async (): Promise<never> => {
      // The family's access tokens too (the thief's among them): see revokeGrantSteps. Reported once the
      // family is revoked, also when only the access tokens' entry failed (the 503 then): a retry
      // finds the family revoked, no reuse any more, and the theft went unreported (2026-12-01).
      const { entryFailed } = await revokeGrantSteps(ctx, record.familyId, now);
      ctx.logger.warn(
        entryFailed ? "refresh token reuse detected; family revoked, but its access tokens could not be revoked (they work until they expire)" : "refresh token reuse detected; family revoked",
        { clientId: client.clientId, familyId: record.familyId },
      );
      ctx.events.emit({ type: "refresh_token.reuse_detected", family_id: record.familyId, client_id: client.clientId, account_id: record.accountId, client_ip: clientIp ?? null });
      if (entryFailed) throw entryFailed.error;
      throw invalid();
    };
    // An ended family's tokens are refused alike, used or not: until 2026-12-02 a used one went to
    // the reuse path first (a reuse event and warning for a family already dead), and was silent
    // once prune had deleted it, so the same request's report hung on housekeeping's timing.
    if (now >= record.familyExpiresAt) throw invalid();
    if (record.consumedAt !== null && now - record.consumedAt >= graceMs) return reuse();
    // A used token's own sliding expiry no longer matters within the grace window: it was live when
    // it was rotated, and a grace use only hands back its successor (live). Until 2026-12-02 a retry
    // of a rotation made in the token's last seconds, its answer lost, was refused once the old
    // token's expiry passed: the successor live and held by nobody, the user signed out.
    if (record.consumedAt === null && now >= record.expiresAt) throw invalid();

    // RFC 6749 §6: a narrower scope may be asked for; never a broader one.
    const requested = parseScope(params.get("scope"));
    if (requested) {
      for (const s of requested) {
        // Named only when it is a scope this server knows (an unknown one may be a credential in
        // the wrong parameter: see grantScope).
        if (!record.scope.includes(s)) throw new OAuthError("invalid_scope", ctx.scopes.all.includes(s) ? `The scope '${s}' was not granted to this refresh token.` : UNKNOWN_SCOPE);
      }
    }
    const scope = requested ?? record.scope;
    for (const s of record.scope) {
      if (!client.scopes.includes(s)) throw new OAuthError("invalid_scope", `The scope '${s}' is no longer allowed for this client.`);
    }
    const account = await ctx.storage.accounts.get(record.accountId);
    if (!account || !account.enabled) throw invalid();

    // A grace use: counted atomically, refused (as reuse) past the bound or once the family is revoked.
    // `lost`: this request read the token unconsumed and then lost the rotation to another, so the
    // two ran in parallel however long the winner took: the window's cutoff does not apply (the
    // winner stamps `consumedAt` with its own request's start, which a rotation slower than the
    // window, waiting on a pool or a lock, leaves behind: a parallel refresh then read as reuse and
    // signed the user out). And either may have lost to a revocation since the token was read (a
    // logout by RFC 7009, an account disabled): that is no reuse (until 2026-12-01 a grace use
    // refused so was reported and logged as reuse when the token had been read consumed).
    const grace = async (lost: boolean) => {
      const used = graceMs === 0 ? null : await ctx.storage.refreshTokens.graceUse(tokenHash, lost ? 0 : now - graceMs, ctx.refreshGrace.maxUses);
      if (!used || used.replay === null) {
        const current = await ctx.storage.refreshTokens.findByHash(tokenHash);
        if (current === null || current.revokedAt !== null) throw invalid();
        return reuse();
      }
      const answer = await replayAnswer(ctx, urls, { client, presented, tokenHash, sealed: used.replay, rotatedAt: used.consumedAt!, subject: account.id, scope, now, clientIp, familyId: record.familyId });
      if (!answer) throw invalid();
      ctx.events.emit({ type: "token.refreshed", client_id: client.clientId, account_id: account.id, family_id: record.familyId, scope: answer.scope, replay: true, client_ip: clientIp ?? null });
      return answer;
    };
    if (record.consumedAt !== null) return grace(false);
    return issueTokens(ctx, urls, {
      client,
      subject: account.id,
      scope,
      refresh: {
        kind: "rotate",
        accountId: account.id,
        scope: record.scope,
        familyId: record.familyId,
        familyExpiresAt: record.familyExpiresAt,
        presented,
        presentedHash: tokenHash,
        graceMs,
        onLost: () => grace(true),
      },
      now,
      grantType: "refresh_token",
      clientIp,
    });
  },
};
