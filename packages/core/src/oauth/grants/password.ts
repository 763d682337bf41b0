import { OAuthError } from "../../errors/index.js";
import { checkPassword } from "../../security/credentials.js";
import { issueTokens } from "../issue.js";
import { OFFLINE_ACCESS } from "../../scope-names.js";
import { grantScope, parseScope } from "../scopes.js";
import { requiredParameters } from "../../schemas/oauth.js";
import type { Grant } from "./types.js";

const MAX_CREDENTIAL_LENGTH = 1024;

/** One message for every credential failure: it never tells which of username or password was wrong. */
const badCredentials = () => new OAuthError("invalid_grant", "The username or password is incorrect.");

/**
 * RFC 6749 §4.3, the resource-owner password grant. Legacy (RFC 9700 §2.4); kept because the
 * platform's clients use it. A refresh token is issued only when the scope includes offline_access.
 */
export const passwordGrant: Grant = {
  grantType: "password",
  required: requiredParameters("password"),
  async handle({ ctx, urls, client, params, now, clientIp }) {
    const username = params.get("username")!;
    const password = params.get("password")!;
    const requested = parseScope(params.get("scope"));
    const scope = grantScope(requested, client.scopes, ctx.scopes.all);
    const wantsRefresh = scope.includes(OFFLINE_ACCESS);
    if (wantsRefresh && !client.grantTypes.includes("refresh_token")) {
      throw new OAuthError("invalid_scope", "offline_access needs the refresh_token grant, which this client is not allowed.");
    }
    if (username.length > MAX_CREDENTIAL_LENGTH || password.length > MAX_CREDENTIAL_LENGTH) throw badCredentials();
    // Throttled, counted before the password is looked at (see checkPassword).
    const account = await checkPassword(ctx, username, password, clientIp, { source: "password_grant", clientId: client.clientId });
    if (!account) throw badCredentials();
    return issueTokens(ctx, urls, {
      client,
      subject: account.id,
      scope,
      refresh: wantsRefresh ? { kind: "new-family", accountId: account.id, scope } : { kind: "none" },
      now,
      grantType: "password",
      clientIp,
    });
  },
};
