import * as z from "zod/mini";
import type { GrantType } from "../storage/types.js";
import { ASSERTION_ALGS } from "../oauth/client-keys.js";
import { meta } from "./meta.js";

const scope = meta(z.optional(z.string()), {
  description: "Space-separated scopes. Omitted: the client's allowed scopes minus offline_access.",
  examples: ["Platform_UserAPIs"],
});
// client_secret_post (RFC 6749 §2.3.1); with client_secret_basic both are left out.
const clientId = meta(z.optional(z.string()), {
  description: "client_secret_post: the client id (never together with HTTP Basic); private_key_jwt: optional, must equal the assertion's sub.",
});
const clientSecret = meta(z.optional(z.string()), { description: "client_secret_post only: the client secret." });
// private_key_jwt (RFC 7523 §2.2, RFC 7521 §4.2).
const clientAssertionType = meta(z.optional(z.literal("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")), {
  description: "private_key_jwt only (RFC 7523 §2.2): the assertion type, with client_assertion.",
});
const clientAssertion = meta(z.optional(z.string()), {
  description:
    "private_key_jwt only: a JWT signed with a key of the client's registered JWK Set (ES256, ES384, RS256, PS256, EdDSA or Ed25519); iss = sub = client id, aud = the issuer or the token endpoint URL, exp at most 300 s ahead, a jti used once.",
});
const clientAuth = { client_id: clientId, client_secret: clientSecret, client_assertion_type: clientAssertionType, client_assertion: clientAssertion };

/** The token request of each grant (`application/x-www-form-urlencoded`, RFC 6749 §4.3.2, §4.4.2, §6). */
export const TOKEN_REQUESTS = {
  client_credentials: meta(z.object({ grant_type: z.literal("client_credentials"), scope, ...clientAuth }), {
    title: "client_credentials",
    description: "RFC 6749 §4.4: a token for the client itself; never a refresh token.",
  }),
  password: meta(
    z.object({
      grant_type: z.literal("password"),
      username: z.string(),
      password: meta(z.string(), { format: "password" }),
      scope,
      ...clientAuth,
    }),
    {
      title: "password",
      description: "RFC 6749 §4.3 (legacy, RFC 9700 §2.4): a token for a user; add offline_access to the scope for a refresh token.",
    },
  ),
  refresh_token: meta(z.object({ grant_type: z.literal("refresh_token"), refresh_token: z.string(), scope, ...clientAuth }), {
    title: "refresh_token",
    description: "RFC 6749 §6: rotates the refresh token; a spent one revokes its family.",
  }),
} satisfies Record<GrantType, z.ZodMiniObject>;

/** The token request body: one of the grants, told apart by `grant_type`. */
export const TokenRequestSchema = meta(
  z.discriminatedUnion("grant_type", [TOKEN_REQUESTS.client_credentials, TOKEN_REQUESTS.password, TOKEN_REQUESTS.refresh_token]),
  { description: "A token request. Every parameter at most once; the client authenticates with HTTP Basic, client_secret_post or private_key_jwt (one of them)." },
);

/**
 * The parameters a grant requires besides `grant_type`, read off its schema, in schema order.
 * The grants check these (missing -> `invalid_request`) after client authentication, as RFC 6749 orders it.
 *
 * @example
 * requiredParameters("password"); // ["username", "password"]
 */
export function requiredParameters(grantType: GrantType): string[] {
  const shape = TOKEN_REQUESTS[grantType].shape as Record<string, z.core.$ZodType>;
  return Object.keys(shape).filter((name) => name !== "grant_type" && !z.safeParse(shape[name]!, undefined).success);
}

/** The RFC 6749 §5.1 success body. */
export const TokenResponseSchema = meta(
  z.object({
    access_token: meta(z.string(), { description: "A JWT access token (RFC 9068)." }),
    token_type: z.literal("Bearer"),
    expires_in: meta(z.int().check(z.minimum(1)), { description: "Seconds until the access token expires." }),
    scope: meta(z.string(), { description: "The granted scopes, space-separated." }),
    refresh_token: meta(z.optional(z.string()), { description: "Only for the password grant with offline_access, and on refresh." }),
  }),
  { description: "A successful token response (RFC 6749 §5.1)." },
);

/** A public JWK Set (RFC 7517 §5): public members only. */
export const JwksSchema = meta(
  z.object({
    keys: z.array(
      meta(
        z.object({
          kty: z.string(),
          kid: z.string(),
          alg: z.optional(z.string()),
          use: z.optional(z.string()),
          crv: z.optional(z.string()),
          x: z.optional(z.string()),
          y: z.optional(z.string()),
          n: z.optional(z.string()),
          e: z.optional(z.string()),
        }),
        { description: "A public JWK; private members (d, p, q, dp, dq, qi, k) never appear." },
      ),
    ),
  }),
  { description: "The public keys that verify access tokens." },
);

/** The RFC 8414 authorization server metadata; members beyond these are allowed (RFC 8414 §2). */
/** One of the metadata's `*_signing_alg_values_supported` members (RFC 8414 §2), for `endpoint`. */
const signingAlgs = (endpoint: string) =>
  meta(z.array(z.string()), {
    description: `The JWS algorithms a private_key_jwt client assertion (RFC 7523 §2.2) may be signed with at the ${endpoint} endpoint (RFC 8414 §2): ${ASSERTION_ALGS.join(", ")}; never none or an HMAC algorithm.`,
    examples: [[...ASSERTION_ALGS]],
  });

export const AuthorizationServerMetadataSchema = meta(
  z.looseObject({
    // RFC 8414 §2 asks for an https URL; the issuer option may be any string (a URN, a name), and
    // the metadata then carries it as it is (documented as a URI until 2026-12-02).
    issuer: meta(z.string(), { description: "The issuer, as tokens' `iss` carry it: an http(s) URL when configured as one (RFC 8414 §2), else the configured string." }),
    token_endpoint: meta(z.string(), { format: "uri" }),
    jwks_uri: meta(z.string(), { format: "uri" }),
    grant_types_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    token_endpoint_auth_signing_alg_values_supported: signingAlgs("token"),
    revocation_endpoint: meta(z.string(), { format: "uri" }),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_signing_alg_values_supported: signingAlgs("revocation"),
    introspection_endpoint: meta(z.string(), { format: "uri" }),
    introspection_endpoint_auth_methods_supported: z.array(z.string()),
    introspection_endpoint_auth_signing_alg_values_supported: signingAlgs("introspection"),
    scopes_supported: z.array(z.string()),
    response_types_supported: z.array(z.string()),
  }),
  { description: "OAuth 2.0 Authorization Server Metadata (RFC 8414)." },
);

// A string, not an enum: RFC 7009 §2.1 lets the server ignore hints it does not know, and it does.
const tokenTypeHint = meta(z.optional(z.string()), {
  description:
    "Where to look first (RFC 7009 §2.1, RFC 7662 §2.1). Known values: access_token and refresh_token; any other value is accepted and ignored, and a token not found under the hinted kind is looked for under the other.",
});

/** The RFC 7009 revocation request (`application/x-www-form-urlencoded`). */
export const RevocationRequestSchema = meta(z.object({ token: z.string(), token_type_hint: tokenTypeHint, ...clientAuth }), {
  description: "A token to revoke (RFC 7009 §2.1).",
});

/** The RFC 7662 introspection request (`application/x-www-form-urlencoded`). */
export const IntrospectionRequestSchema = meta(z.object({ token: z.string(), token_type_hint: tokenTypeHint, ...clientAuth }), {
  description: "A token to introspect (RFC 7662 §2.1).",
});

/** The RFC 7662 §2.2 response; only `active` when the token is not active. */
export const IntrospectionResponseSchema = meta(
  z.looseObject({
    active: z.boolean(),
    scope: z.optional(z.string()),
    client_id: z.optional(z.string()),
    username: z.optional(z.string()),
    token_type: z.optional(z.string()),
    exp: z.optional(z.int()),
    iat: z.optional(z.int()),
    sub: z.optional(z.string()),
    aud: z.optional(z.string()),
    iss: z.optional(z.string()),
    jti: z.optional(z.string()),
  }),
  { description: "Token introspection (RFC 7662 §2.2); an inactive token is only `{\"active\": false}`." },
);
