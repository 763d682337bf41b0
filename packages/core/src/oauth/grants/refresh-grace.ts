import { decodeJwt, decodeProtectedHeader } from "jose";
import { openReplay } from "../../crypto/replay.js";
import type { Context, Urls } from "../../context.js";
import { StorageError } from "../../errors/index.js";
import { describeError } from "../../http/respond.js";
import type { ClientRecord } from "../../storage/types.js";
import { issueTokens, type TokenResponse } from "../issue.js";

/** `exp`, `jti` and `kid` of one of our own access tokens (read from a sealed answer, so not re-verified). */
function replayedClaims(jwt: string): { exp: number; jti: string; kid: string } | null {
  try {
    const { kid } = decodeProtectedHeader(jwt);
    const { exp, jti } = decodeJwt(jwt);
    return typeof kid === "string" && typeof exp === "number" && typeof jti === "string" ? { exp, jti, kid } : null;
  } catch {
    return null;
  }
}

/**
 * Whether the key that signed the replayed access token is still stored: `keys revoke` deletes a
 * key (after a `rotate --now`, a leak), and its tokens were replayed until 2026-12-01 though every
 * API refused them. Read from the store, not this instance's keyring, which may not have loaded a
 * key another instance rotated in a moment ago (a fresh token on each retry would break the
 * replay's sameness). A read that fails counts as stored: the token is ours, and a fresh one would
 * need the store too (a 503 here, after the grace use was counted, would make the retry reuse).
 */
async function keyStillStored(ctx: Context, kid: string): Promise<boolean> {
  try {
    return (await ctx.storage.signingKeys.list()).some((k) => k.kid === kid);
  } catch (error) {
    if (!(error instanceof StorageError)) throw error;
    return true;
  }
}

/**
 * Whether the replayed access token is revoked (RFC 7009), or could not be checked: the grace use is
 * already counted in storage when this runs, so a 503 here would spend it and tell the client to
 * retry, and with the grace uses spent (or the window over) that retry is reuse, which revokes the
 * family and signs the user out (a revoked-jti store in Redis failing while the refresh tokens' SQL
 * store answers, before 2026-11-30). A fresh access token is issued instead, as for a revoked one.
 */
async function revokedOrUnknown(ctx: Context, jti: string): Promise<boolean> {
  try {
    return await ctx.storage.revokedTokens.has(jti);
  } catch (error) {
    if (!(error instanceof StorageError)) throw error;
    ctx.logger.warn("revoked-token lookup failed at a refresh-token grace replay; a fresh access token is issued instead of the replayed one", describeError(error));
    return true;
  }
}

function isAnswer(value: unknown): value is TokenResponse & { refresh_token: string } {
  const v = value as Partial<TokenResponse> | null;
  return typeof v?.access_token === "string" && typeof v.scope === "string" && typeof v.refresh_token === "string";
}

/**
 * The answer to a grace use of a rotated refresh token: the rotation's own answer, opened with the
 * presented token. Its refresh token is always the one the rotation issued (one family, one head),
 * so retries are idempotent. Its access token is replayed too while it still fits: the same scope
 * as asked now, not expired, signed by a key still stored (not revoked since) and not revoked
 * itself (RFC 7009); otherwise a fresh access token is issued
 * for the scope asked now (also when whether it was revoked cannot be read: a storage failure then
 * costs no 503 after the grace use was counted). `expires_in` counts down by the whole seconds since the rotation, so a
 * retry within the same second gets a byte-identical answer (a loser of the race that started
 * before the winner counts no time at all).
 * Null when the sealed answer does not open (it was not sealed for this token).
 */
export async function replayAnswer(
  ctx: Context,
  urls: Urls,
  input: {
    client: ClientRecord;
    presented: string;
    tokenHash: string;
    sealed: string;
    /** When the rotation that sealed the answer happened (the token's `consumedAt`). */
    rotatedAt: number;
    subject: string;
    scope: string[];
    now: number;
    clientIp: string | undefined;
    familyId: string;
  },
): Promise<TokenResponse | null> {
  const text = await openReplay(input.presented, input.tokenHash, input.sealed, ctx.hkdfAesGcm);
  let answer: unknown;
  try {
    answer = text === null ? null : JSON.parse(text);
  } catch {
    answer = null;
  }
  if (!isAnswer(answer)) {
    ctx.logger.error("refresh token replay data does not open; refused", { clientId: input.client.clientId });
    return null;
  }
  const claims = replayedClaims(answer.access_token);
  const stillFits =
    claims !== null &&
    answer.scope === input.scope.join(" ") &&
    claims.exp * 1000 - input.now >= 1000 &&
    (await keyStillStored(ctx, claims.kid)) &&
    !(await revokedOrUnknown(ctx, claims.jti));
  if (stillFits) return { ...answer, expires_in: answer.expires_in - Math.floor(Math.max(0, input.now - input.rotatedAt) / 1000) };
  const fresh = await issueTokens(ctx, urls, { client: input.client, subject: input.subject, scope: input.scope, refresh: { kind: "none" }, now: input.now, grantType: "refresh_token", clientIp: input.clientIp, familyId: input.familyId });
  return { ...fresh, refresh_token: answer.refresh_token };
}
