import { hashPassword, verifyPassword } from "../../crypto/index.js";
import { OAuthError } from "../../errors/index.js";
import type { Context } from "../../options.js";
import { throttleKeys } from "../../security/throttle.js";
import { issueTokens } from "../issue.js";
import { grantScope, OFFLINE_ACCESS, parseScope } from "../scopes.js";
import { requiredParameters } from "../../schemas/oauth.js";
import type { Grant } from "./types.js";

const MAX_CREDENTIAL_LENGTH = 1024;
const dummyHashes = new WeakMap<Context, Promise<string>>();

/** A hash to verify against when the user does not exist, so unknown users cost the same time. */
function dummyHash(ctx: Context): Promise<string> {
  let h = dummyHashes.get(ctx);
  if (!h) {
    h = hashPassword("plantgate-dummy-password", ctx.random, { iterations: ctx.passwordHashIterations });
    dummyHashes.set(ctx, h);
  }
  return h;
}

/** One message for every credential failure: it never tells which of username or password was wrong. */
const badCredentials = () => new OAuthError("invalid_grant", "The username or password is incorrect.");

/**
 * RFC 6749 §4.3, the resource-owner password grant. Legacy (RFC 9700 §2.4); kept because the
 * platform's clients use it. A refresh token is issued only when the scope includes offline_access.
 */
export const passwordGrant: Grant = {
  grantType: "password",
  required: requiredParameters("password"),
  async handle({ ctx, urls, client, params, now }) {
    const username = params.get("username")!;
    const password = params.get("password")!;
    const requested = parseScope(params.get("scope"));
    const scope = grantScope(requested, client.scopes, ctx.scopes.all);
    const wantsRefresh = scope.includes(OFFLINE_ACCESS);
    if (wantsRefresh && !client.grantTypes.includes("refresh_token")) {
      throw new OAuthError("invalid_scope", "offline_access needs the refresh_token grant, which this client is not allowed.");
    }
    if (username.length > MAX_CREDENTIAL_LENGTH || password.length > MAX_CREDENTIAL_LENGTH) throw badCredentials();
    // Per username, whatever the client or address, so spreading guesses over IPs does not help;
    // checked before the password, so a locked account answers 429 even to the right one.
    const keys = throttleKeys("password", { username });
    await ctx.throttle.check(keys);
    const account = await ctx.storage.accounts.findByUsername(username);
    const ok = await verifyPassword(password, account?.passwordHash ?? (await dummyHash(ctx)));
    if (!account || !ok || !account.enabled) {
      await ctx.throttle.fail(keys);
      throw badCredentials();
    }
    await ctx.throttle.succeed(keys);
    return issueTokens(ctx, urls, {
      client,
      subject: account.id,
      scope,
      refresh: wantsRefresh ? { kind: "new-family", accountId: account.id, scope } : { kind: "none" },
      now,
    });
  },
};
