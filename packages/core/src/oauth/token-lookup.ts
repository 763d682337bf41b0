import type { Context, Urls } from "../context.js";
import { OAuthError } from "../errors/index.js";
import type { PlainResponse } from "../http/respond.js";
import type { ClientRecord, RefreshTokenRecord } from "../storage/types.js";
import { verifyAccessToken, type AccessTokenClaims } from "../tokens/access-token.js";
import { refreshTokenKey } from "./refresh-key.js";
import { authenticateClient, type ClientFormEndpoint } from "./token-endpoint.js";

/** A token presented to revocation or introspection, as we know it. */
export type LocatedToken =
  | { kind: "access_token"; claims: AccessTokenClaims; /** The `iss` and `aud` it was verified with. */ issuer: string; audience: string }
  | { kind: "refresh_token"; record: RefreshTokenRecord };

// Longer than any token we issue (access tokens are capped at 8192 by the verifier; refresh
// tokens are 54 characters, see newRefreshToken), so anything longer is simply not ours.
const MAX_TOKEN_LENGTH = 8192;

/**
 * Finds what a presented token is: one of our access tokens (signature, issuer and audience
 * verified; expired ones count as unknown) or a stored refresh token. `hint` (RFC 7009 §2.1,
 * RFC 7662 §2.1) only picks which kind is tried first; an unknown hint is ignored, and a token not
 * found under the hinted kind is looked for under the other (RFC 7009 §2.1: "MUST extend its search").
 */
export async function locateToken(ctx: Context, urls: Urls, token: string, hint: string | undefined, now: number, keys: { lookNow?: boolean } = {}): Promise<LocatedToken | null> {
  if (token.length > MAX_TOKEN_LENGTH) return null;
  const asAccess = async (): Promise<LocatedToken | null> => {
    const claims = await verifyAccessToken(ctx.keyring, token, { issuer: urls.issuer, audience: urls.audience, now }, keys);
    if (claims) return { kind: "access_token", claims, issuer: urls.issuer, audience: urls.audience };
    // With no issuer and no baseUrl configured, `iss` follows the Host the token was issued on. A
    // token issued on host A is still ours (our signature, our jti) when it is revoked or
    // introspected on host B (finding 3 of the security review), so try the issuer it names, if
    // that is an origin of ours in form (origin + base path).
    const named = hostDerivedIssuer(ctx, token);
    if (named === undefined || named === urls.issuer) return null;
    const audience = ctx.audience ?? named;
    const other = await verifyAccessToken(ctx.keyring, token, { issuer: named, audience, now }, keys);
    return other && { kind: "access_token", claims: other, issuer: named, audience };
  };
  const asRefresh = async (): Promise<LocatedToken | null> => {
    const record = await ctx.storage.refreshTokens.findByHash(await refreshTokenKey(ctx.sha256, token));
    return record && { kind: "refresh_token", record };
  };
  const order = hint === "refresh_token" ? [asRefresh, asAccess] : [asAccess, asRefresh];
  for (const attempt of order) {
    const found = await attempt();
    if (found) return found;
  }
  return null;
}

/** The client id a located token was issued to. */
export function tokenClientId(token: LocatedToken): string {
  return token.kind === "access_token" ? token.claims.clientId : token.record.clientId;
}

/**
 * Whether a stored refresh token could still be used: not revoked, not consumed, not past its
 * sliding or absolute expiry. Introspection answers `active` by it; revocation treats any other
 * record as the RFC's invalid token.
 */
export function isLiveRefresh(record: { revokedAt: number | null; consumedAt: number | null; expiresAt: number; familyExpiresAt: number }, now: number): boolean {
  return record.revokedAt === null && record.consumedAt === null && now < Math.min(record.expiresAt, record.familyExpiresAt);
}

/**
 * Whether a located token was issued to this client record: the same id, and the same client, not
 * an earlier one of that id (deleted and re-created: a new client, which must not inherit the old
 * one's tokens). Told by the client's `generation`, which the token carries (the access token's
 * `cgen`, the refresh record's `clientGeneration`), compared for equality whenever both sides have
 * one. Only when either lacks it (a token or client from before 2026-12-02, a backend that does not
 * keep the field) is it told by time, as before: issued no earlier than the client was created (an
 * access token's `iat` against the second of creation). That compares clocks of different
 * processes (the instance or CLI that created the client, the instance that issued the token):
 * skewed, a new client's own tokens were refused for their whole life, and within one second a
 * re-created client took the old one's access tokens as its own (2026-12-02).
 */
export function issuedTo(token: LocatedToken, client: ClientRecord): boolean {
  if (tokenClientId(token) !== client.clientId) return false;
  const generation = token.kind === "access_token" ? token.claims.generation : token.record.clientGeneration;
  if (generation !== undefined && client.generation !== undefined) return generation === client.generation;
  return token.kind === "access_token" ? token.claims.iat >= Math.floor(client.createdAt / 1000) : token.record.createdAt >= client.createdAt;
}

/** What revocation and introspection do once the client is known and the token looked up. */
export type PresentedTokenHandler = (
  ctx: Context,
  urls: Urls,
  client: ClientRecord,
  /** The token as we know it; null when unknown, malformed or expired. Not yet checked against `client`. */
  found: LocatedToken | null,
  now: number,
  /** The client's address as resolved for the throttle (for events). */
  clientIp: string | undefined,
) => Promise<PlainResponse>;

/**
 * The one shape of the endpoints a client presents a token to (revocation, RFC 7009 §2.1;
 * introspection, RFC 7662 §2.1): the client authenticates exactly as at the token endpoint (same
 * methods, same brute-force throttle), `token` is required, `token_type_hint` only orders the
 * lookup, and `handle` decides what to do with what was found.
 */
export function presentedTokenEndpoint(handle: PresentedTokenHandler, keys: { lookNow?: boolean } = {}): ClientFormEndpoint {
  return async (ctx, urls, form, authorization, clientIp) => {
    const client = await authenticateClient(ctx, urls, form, authorization, clientIp);
    const token = form.get("token");
    if (token === undefined) throw new OAuthError("invalid_request", "The token parameter is required.");
    const now = ctx.clock();
    const found = await locateToken(ctx, urls, token, form.get("token_type_hint"), now, keys);
    return handle(ctx, urls, client, found, now, clientIp);
  };
}

/**
 * The `iss` an access token names (unverified), when the app derives its issuer from each request
 * and the value has the shape such an issuer has (an http(s) origin followed by the base path);
 * otherwise undefined. The caller still verifies the signature against it.
 */
function hostDerivedIssuer(ctx: Context, token: string): string | undefined {
  if (ctx.issuer !== undefined || ctx.baseUrl !== undefined) return undefined;
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  let iss: unknown;
  try {
    const text = atob(parts[1]!.replace(/-/g, "+").replace(/_/g, "/"));
    iss = (JSON.parse(text) as { iss?: unknown }).iss;
  } catch {
    return undefined;
  }
  if (typeof iss !== "string" || iss.length > 2048) return undefined;
  let url: URL;
  try {
    url = new URL(iss);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  return iss === `${url.origin}${ctx.basePath}` ? iss : undefined;
}
