import type { Context, Urls } from "../context.js";
import { ASSERTION_ALGS } from "./client-keys.js";
import { GRANT_TYPES, TOKEN_PATH } from "./token-endpoint.js";

export { TOKEN_PATH };

/** Path of the RFC 7009 revocation endpoint, relative to the base path. */
export const REVOCATION_PATH = "/UserService/connect/revocation";

/** Path of the RFC 7662 introspection endpoint, relative to the base path. */
export const INTROSPECTION_PATH = "/UserService/connect/introspect";

const CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"];

/** The RFC 8414 authorization server metadata document. */
export function metadata(ctx: Context, urls: Urls) {
  return {
    issuer: urls.issuer,
    token_endpoint: `${urls.baseUrl}${TOKEN_PATH}`,
    jwks_uri: `${urls.baseUrl}/.well-known/jwks.json`,
    grant_types_supported: GRANT_TYPES,
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGS],
    revocation_endpoint: `${urls.baseUrl}${REVOCATION_PATH}`,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGS],
    introspection_endpoint: `${urls.baseUrl}${INTROSPECTION_PATH}`,
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    introspection_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGS],
    scopes_supported: ctx.scopes.all,
    // REQUIRED by RFC 8414 §2; empty because there is no authorization endpoint.
    response_types_supported: [] as string[],
  };
}
