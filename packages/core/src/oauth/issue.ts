import { OAuthError } from "../errors/index.js";
import { randomToken } from "../crypto/index.js";
import type { Context, Urls } from "../context.js";
import { sealReplay } from "../crypto/replay.js";
import type { ClientRecord, GrantType, RefreshTokenRecord } from "../storage/types.js";
import { issueAccessToken } from "../tokens/access-token.js";
import { inSpan, quietly } from "../telemetry/spans.js";
import { newRefreshToken, refreshTokenKey } from "./refresh-key.js";

/** The RFC 6749 §5.1 success body. */
export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

/** How the refresh token of a response comes about: none, a new family, or the next in a family. */
export type RefreshPlan =
  | { kind: "none" }
  | { kind: "new-family"; accountId: string; scope: string[] }
  | {
      kind: "rotate";
      accountId: string;
      scope: string[];
      familyId: string;
      familyExpiresAt: number;
      /** The refresh token presented, in clear: the answer is sealed under a key derived from it. */
      presented: string;
      presentedHash: string;
      /** The client's grace window; 0 = strict one-time use (nothing is sealed). */
      graceMs: number;
      /** Answers a caller that lost the rotation race (the token was consumed since it was read). */
      onLost: () => Promise<TokenResponse>;
    };

/** Whether the account is still there and enabled, read now (after a password check that took a while). */
async function accountStillEnabled(ctx: Context, accountId: string): Promise<boolean> {
  const account = await ctx.storage.accounts.get(accountId);
  return account !== null && account.enabled;
}

/**
 * Issues the access token (and, per plan, a refresh token) of a successful grant.
 * The refresh token is stored (by hash) before it is returned, so a response never carries a token
 * the store does not know; on rotation the old token is consumed and the new one stored in one
 * atomic storage call, so a failure leaves the old token usable rather than the session lost.
 * With a grace window, that same call stores the answer sealed for the holder of the old token
 * (see `sealReplay`), so a retry within the window can be answered with it.
 */
export async function issueTokens(
  ctx: Context,
  urls: Urls,
  input: { client: ClientRecord; subject: string; scope: string[]; refresh: RefreshPlan; now: number; grantType: GrantType; clientIp: string | undefined; familyId?: string },
): Promise<TokenResponse> {
  const ttl = input.client.accessTokenTtl ?? ctx.accessTokenTtl;
  const jti = randomToken(ctx.random, 16);
  const plan = input.refresh;
  // The refresh token and its family are drawn before the access token is signed (in the order
  // they always were: jti, token, family), so the access token can name its family (`sid`, which
  // revoking the family's refresh token revokes it by). A grace replay's fresh access token goes
  // with the rotation's refresh token: that family.
  const drawn = plan.kind === "none" ? null : { token: newRefreshToken(ctx.random, input.now), familyId: plan.kind === "rotate" ? plan.familyId : randomToken(ctx.random, 16) };
  const familyId: string | null = drawn?.familyId ?? input.familyId ?? null;
  // The span names the algorithm of the key that signs (the token's JWS header `alg`): a configured
  // `signingKey`, a `signer`'s key or a stored key made before a `signingAlg` change signs with its
  // own. Until 2026-12-02 it named the `signingAlg` option (the algorithm of generated keys) instead.
  const accessToken = await inSpan(ctx.tracer, "plantgate.sign", undefined, async (span) => {
    const signing = await ctx.keyring.signingKey();
    if (span !== undefined) quietly(() => span.setAttribute("plantgate.signing_alg", signing.alg));
    return issueAccessToken(signing, {
      issuer: urls.issuer,
      audience: urls.audience,
      subject: input.subject,
      clientId: input.client.clientId,
      scope: input.scope,
      now: input.now,
      ttl,
      random: ctx.random,
      sign: ctx.sign,
      jti,
      sid: familyId ?? undefined,
      generation: input.client.generation,
    });
  });
  const body: TokenResponse = { access_token: accessToken, token_type: "Bearer", expires_in: ttl, scope: input.scope.join(" ") };
  if (plan.kind !== "none" && drawn !== null) {
    const sliding = (input.client.refreshTokenTtl ?? ctx.refreshTokenTtl) * 1000;
    const familyExpiresAt =
      plan.kind === "rotate" ? plan.familyExpiresAt : input.now + (input.client.refreshTokenAbsoluteTtl ?? ctx.refreshTokenAbsoluteTtl) * 1000;
    const token = drawn.token;
    const record: RefreshTokenRecord = {
      tokenHash: await refreshTokenKey(ctx.sha256, token),
      familyId: drawn.familyId,
      clientId: input.client.clientId,
      accountId: plan.accountId,
      scope: plan.scope,
      createdAt: input.now,
      expiresAt: Math.min(input.now + sliding, familyExpiresAt),
      familyExpiresAt,
      consumedAt: null,
      revokedAt: null,
      replay: null,
      graceUses: 0,
      ...(input.client.generation !== undefined ? { clientGeneration: input.client.generation } : {}),
    };
    body.refresh_token = token;
    if (plan.kind === "new-family") {
      await ctx.storage.refreshTokens.create(record);
      // The account as it is now, after the family is stored: disabled while its password was
      // checked, it gets nothing. Disabling writes the flag before it revokes the account's refresh
      // tokens, so a family stored after that revocation is caught here; before 2026-11-29 it
      // stayed live, and worked again once the account was enabled. (A rotation needs no such
      // check: its consume is refused once the family is revoked, and a family revoked after it
      // includes the new token.)
      if (!(await accountStillEnabled(ctx, plan.accountId))) {
        await ctx.storage.refreshTokens.revokeFamily(record.familyId, input.now);
        throw new OAuthError("invalid_grant", "The username or password is incorrect.");
      }
    } else {
      const replay = plan.graceMs > 0 ? await sealReplay(plan.presented, plan.presentedHash, JSON.stringify(body), ctx.random, ctx.hkdfAesGcm) : null;
      // Lost the race: someone exchanged it between our read and now. Within the grace window
      // that is a concurrent refresh, answered with the winner's answer; else reuse (onLost decides).
      if (!(await ctx.storage.refreshTokens.consume(plan.presentedHash, input.now, record, replay))) return plan.onLost();
      ctx.events.emit({ type: "token.refreshed", client_id: input.client.clientId, account_id: plan.accountId, family_id: record.familyId, scope: body.scope, replay: false, client_ip: input.clientIp ?? null });
    }
  }
  // A password grant without a refresh token checks the account as it is now as well, after the
  // access token is signed: disabled while its password was checked, it gets nothing. Until
  // 2026-12-01 only a new family was checked, and such a grant answered with a token minted after
  // the disable had completed (usable on the APIs for its whole lifetime).
  if (plan.kind === "none" && input.grantType === "password" && !(await accountStillEnabled(ctx, input.subject))) {
    throw new OAuthError("invalid_grant", "The username or password is incorrect.");
  }
  // Every token request passes here: the event object is only built when something listens.
  if (ctx.events.enabled) ctx.events.emit({ type: "token.issued", grant_type: input.grantType, client_id: input.client.clientId, subject: input.subject, scope: body.scope, jti, expires_at: (Math.floor(input.now / 1000) + ttl) * 1000, family_id: familyId, client_ip: input.clientIp ?? null });
  return body;
}
