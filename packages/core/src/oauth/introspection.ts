import { json, NO_STORE } from "../http/respond.js";
import { CLIENT_SUBJECT_PREFIX } from "../tokens/access-token.js";
import { isLiveRefresh, issuedTo, presentedTokenEndpoint } from "./token-lookup.js";
import { isRevoked } from "./grant-revocation.js";

/** The RFC 7662 §2.2 response; only `active` when the token is not active. */
export interface IntrospectionResponse {
  active: boolean;
  scope?: string;
  client_id?: string;
  username?: string;
  token_type?: string;
  exp?: number;
  iat?: number;
  sub?: string;
  aud?: string;
  iss?: string;
  jti?: string;
}

const INACTIVE: IntrospectionResponse = { active: false };

/**
 * `POST /UserService/connect/introspect` (RFC 7662). The client authenticates exactly as at the
 * token endpoint. A client may introspect only tokens issued to it: anyone else's token, like an
 * unknown, expired, revoked or consumed one, is `{"active":false}` (RFC 7662 §2.2 lets the server
 * hide why). A token of an account that is disabled or deleted is inactive too, and so is a token
 * of a deleted client presented by a new client re-created under the same id.
 *
 * Access tokens: `token_type` `Bearer`, with the JWT's `iss`, `aud`, `sub`, `jti`, `iat`, `exp`.
 * Refresh tokens: no `token_type` (RFC 6749 §7.1 types describe access tokens), `exp` is the
 * earlier of the sliding and the family expiry, `iat` its issue time.
 * `username` is present for tokens of the password grant (and their refreshes).
 */
export const introspectionEndpoint = presentedTokenEndpoint(async (ctx, urls, client, found, now) => {
  const answer = (body: IntrospectionResponse) => json(200, body, { ...NO_STORE });
  if (!found || !issuedTo(found, client)) return answer(INACTIVE);

  let accountId: string | null;
  let body: IntrospectionResponse;
  if (found.kind === "access_token") {
    const c = found.claims;
    if (await isRevoked(ctx, c)) return answer(INACTIVE);
    accountId = c.sub.startsWith(CLIENT_SUBJECT_PREFIX) ? null : c.sub;
    body = {
      active: true,
      scope: c.scope.join(" "),
      client_id: c.clientId,
      token_type: "Bearer",
      exp: c.exp,
      iat: c.iat,
      sub: c.sub,
      aud: found.audience,
      iss: found.issuer,
      jti: c.jti,
    };
  } else {
    const r = found.record;
    if (!isLiveRefresh(r, now)) return answer(INACTIVE);
    const expiresAt = Math.min(r.expiresAt, r.familyExpiresAt);
    accountId = r.accountId;
    body = {
      active: true,
      scope: r.scope.join(" "),
      client_id: r.clientId,
      // Rounded up: the token is active until expiresAt, so a floored exp read as passed in its
      // last (part of a) second while the answer said active (until 2026-12-01).
      exp: Math.ceil(expiresAt / 1000),
      iat: Math.floor(r.createdAt / 1000),
      sub: r.accountId,
      iss: urls.issuer,
    };
  }
  if (accountId !== null) {
    const account = await ctx.storage.accounts.get(accountId);
    if (!account || !account.enabled) return answer(INACTIVE);
    body = { ...body, username: account.username };
  }
  return answer(body);
});
