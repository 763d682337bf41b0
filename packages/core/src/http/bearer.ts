import { ApiError, ApiErrorCode } from "../errors/index.js";
import type { Context, ProtectedRoute, Urls } from "../context.js";
import type { AccessTokenClaims } from "../tokens/access-token.js";

const REALM = 'realm="plantgate"';

/**
 * Checks the bearer token of an API request (RFC 6750): none -> 401 with a bare challenge;
 * malformed, invalid or expired -> 401 `invalid_token`; valid but lacking the route's scope -> 403
 * `insufficient_scope`. Runs before the body is read.
 */
export async function requireBearer(ctx: Context, urls: Urls, request: Request, route: ProtectedRoute): Promise<AccessTokenClaims> {
  const header = request.headers.get("authorization");
  if (header === null || !/^bearer(?:\s|$)/i.test(header)) {
    throw new ApiError(401, ApiErrorCode.missingToken, "An access token is required.", { "www-authenticate": `Bearer ${REALM}` });
  }
  const invalid = (code: typeof ApiErrorCode.invalidToken | typeof ApiErrorCode.invalidAuthorizationHeader, message: string) =>
    new ApiError(401, code, message, {
      "www-authenticate": `Bearer ${REALM}, error="invalid_token", error_description="${message.replace(/"/g, "'")}"`,
    });
  const m = /^bearer +(\S+) *$/i.exec(header);
  if (!m) throw invalid(ApiErrorCode.invalidAuthorizationHeader, "The Authorization header must be 'Bearer <token>'.");
  // Full verification, or a remembered one re-checked for expiry and key trust (ctx.verifyToken).
  const claims = await ctx.verifyToken(m[1]!, { issuer: urls.issuer, audience: urls.audience, now: ctx.clock() });
  if (!claims) throw invalid(ApiErrorCode.invalidToken, "The access token is invalid or expired.");
  // RFC 7009: a revoked token is refused from the next request on (one read per API call; the
  // entry lives only until the token would have expired anyway).
  if (await ctx.storage.revokedTokens.has(claims.jti)) throw invalid(ApiErrorCode.invalidToken, "The access token is invalid or expired.");
  const needed = ctx.requiredScopes[route];
  if (needed.length > 0 && !needed.some((s) => claims.scope.includes(s))) {
    throw new ApiError(403, ApiErrorCode.insufficientScope, `This operation needs one of the scopes: ${needed.join(" ")}.`, {
      "www-authenticate": `Bearer ${REALM}, error="insufficient_scope", scope="${needed.join(" ")}"`,
    });
  }
  return claims;
}
