import { OAuthError } from "../../errors/index.js";
import { CLIENT_SUBJECT_PREFIX } from "../../tokens/access-token.js";
import { issueTokens } from "../issue.js";
import { OFFLINE_ACCESS } from "../../scope-names.js";
import { grantScope, parseScope } from "../scopes.js";
import { requiredParameters } from "../../schemas/oauth.js";
import type { Grant } from "./types.js";

/** RFC 6749 §4.4. Never issues a refresh token (§4.4.3; the spec's rule 1). */
export const clientCredentialsGrant: Grant = {
  grantType: "client_credentials",
  required: requiredParameters("client_credentials"),
  async handle({ ctx, urls, client, params, now, clientIp }) {
    const requested = parseScope(params.get("scope"));
    if (requested?.includes(OFFLINE_ACCESS)) {
      throw new OAuthError("invalid_scope", "offline_access is not available with client_credentials: this grant has no refresh token.");
    }
    const scope = grantScope(requested, client.scopes, ctx.scopes.all);
    return issueTokens(ctx, urls, { client, subject: CLIENT_SUBJECT_PREFIX + client.clientId, scope, refresh: { kind: "none" }, now, grantType: "client_credentials", clientIp });
  },
};
