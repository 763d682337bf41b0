import { ApiError, ApiErrorCode } from "../errors/index.js";
import type { Context, ProtectedRoute, Urls } from "../context.js";
import type { AccessTokenClaims } from "../tokens/access-token.js";
import { isRevoked } from "../oauth/grant-revocation.js";

const REALM = 'realm="plantgate"';

/**
 * A 401 with its challenge's RFC 6750 §3.1 error: `invalid_token` for a token that does not pass,
 * `invalid_request` for a header naming the scheme without being `Bearer <token>` (no token, two
 * tokens), so a client that renews on `invalid_token` does not loop on its own header's fault. The
 * status stays 401 (where the RFC suggests 400 for `invalid_request`): the spec answers any missing
 * or invalid token with 401.
 */
const invalid = (code: typeof ApiErrorCode.invalidToken | typeof ApiErrorCode.invalidAuthorizationHeader, message: string) =>
  new ApiError(401, code, message, {
    "www-authenticate": `Bearer ${REALM}, error="${code === ApiErrorCode.invalidToken ? "invalid_token" : "invalid_request"}", error_description="${message.replace(/"/g, "'")}"`,
  });
const revoked = () => invalid(ApiErrorCode.invalidToken, "The access token is invalid or expired.");

/** The token's claims after the header and the signature checks (not yet revocation or scope). */
async function verifiedClaims(ctx: Context, urls: Urls, request: Request): Promise<AccessTokenClaims> {
  const header = request.headers.get("authorization");
  if (header === null || !/^bearer(?:\s|$)/i.test(header)) {
    throw new ApiError(401, ApiErrorCode.missingToken, "An access token is required.", { "www-authenticate": `Bearer ${REALM}` });
  }
  const m = /^bearer +(\S+) *$/i.exec(header);
  if (!m) throw invalid(ApiErrorCode.invalidAuthorizationHeader, "The Authorization header must be 'Bearer <token>'.");
  // Full verification, or a remembered one re-checked for expiry and key trust (ctx.verifyToken).
  const claims = await ctx.verifyToken(m[1]!, { issuer: urls.issuer, audience: urls.audience, now: ctx.clock() });
  if (!claims) throw invalid(ApiErrorCode.invalidToken, "The access token is invalid or expired.");
  return claims;
}

/** The route's scope error, or null when the token holds one of the route's scopes. */
function scopeError(ctx: Context, route: ProtectedRoute, claims: AccessTokenClaims): ApiError | null {
  const needed = ctx.requiredScopes[route];
  if (needed.length > 0 && !needed.some((s) => claims.scope.includes(s))) {
    return new ApiError(403, ApiErrorCode.insufficientScope, `This operation needs one of the scopes: ${needed.join(" ")}.`, {
      "www-authenticate": `Bearer ${REALM}, error="insufficient_scope", scope="${needed.join(" ")}"`,
    });
  }
  return null;
}

/**
 * Checks the bearer token of an API request (RFC 6750): none -> 401 with a bare challenge; a
 * malformed header -> 401 `invalid_request`; invalid, expired or revoked -> 401 `invalid_token`; valid but lacking the route's
 * scope -> 403 `insufficient_scope`. Runs before the body is read.
 */
export async function requireBearer(ctx: Context, urls: Urls, request: Request, route: ProtectedRoute): Promise<AccessTokenClaims> {
  const claims = await verifiedClaims(ctx, urls, request);
  // RFC 7009: a revoked token is refused from the next request on (one read per API call; the
  // entry lives only until the token would have expired anyway).
  if (await isRevoked(ctx, claims)) throw revoked();
  const denied = scopeError(ctx, route, claims);
  if (denied) throw denied;
  return claims;
}

/**
 * {@link requireBearer} for a route that only reads: the revocation lookup and `read` go to
 * storage together, so a remote store costs one wait instead of two in a row. The answers are
 * those of `requireBearer` first and `read` after: a revoked token gets 401 and a token without
 * the scope 403 whatever `read` did (its result is dropped, never sent; a token without the scope
 * starts no read at all). `read` must not write.
 */
export async function withBearerRead<T>(ctx: Context, urls: Urls, request: Request, route: ProtectedRoute, read: () => Promise<T>): Promise<T> {
  const claims = await verifiedClaims(ctx, urls, request);
  const revokedNow = isRevoked(ctx, claims);
  const denied = scopeError(ctx, route, claims);
  if (denied) {
    if (await revokedNow) throw revoked();
    throw denied;
  }
  const result = read();
  // Settled below only when the token is still valid; until then a failed read is not unhandled.
  result.catch(() => {});
  if (await revokedNow) throw revoked();
  return result;
}
