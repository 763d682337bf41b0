import { ApiError, ApiErrorCode } from "../errors/index.js";
import { json, type PlainResponse } from "../http/respond.js";
import type { Context } from "../context.js";
import { sessionBody } from "./api.js";
import { checkPassword, consoleAddressBudget } from "../security/credentials.js";
import { readJsonObject, requiredString } from "./body.js";
import type { ConsoleRequest } from "./request.js";
import { createSession, endReplacedSession, sessionCookie } from "./session.js";

const MAX_CREDENTIAL_LENGTH = 1024;

/** One message for every credential failure: it never tells which of username or password was wrong. */
const badCredentials = () => new ApiError(401, ApiErrorCode.consoleBadCredentials, "The username or password is incorrect.");

/**
 * `POST {base}/console/api/session`: signs an administrator in with username and password, through
 * the password grant's own check ({@link checkPassword}: same hash verification, same brute-force
 * counters, so guesses spread over the console and the token endpoint add up), plus a per-address
 * budget across usernames (3 × `maxFailures` per window): random usernames no longer buy unlimited
 * password hashes. Behind a shared address (an office NAT) a guesser can lock that address out of
 * the console for the window; other addresses are not affected.
 */
export async function signIn(ctx: Context, request: ConsoleRequest): Promise<PlainResponse> {
  const body = await readJsonObject(request);
  const username = requiredString(body, "username", MAX_CREDENTIAL_LENGTH);
  const password = requiredString(body, "password", MAX_CREDENTIAL_LENGTH);
  // Plus a per-address budget across usernames (finding 2 of the security review).
  // An account without the admin role gets the same 401 as a wrong password (and counts as a failure).
  const account = await checkPassword(ctx, username, password, request.clientIp, { source: "console", clientId: null }, consoleAddressBudget(request.clientIp), ctx.console!.adminRole);
  if (!account) throw badCredentials();
  const session = await createSession(ctx, account);
  // The account as it is now, after the session is stored: disabled (or its admin role taken) while
  // the password was checked, it gets no session. Disabling writes the flag before it deletes the
  // account's sessions, so a session stored after that deletion is caught here; before 2026-11-29
  // it stayed, and came back when the account was enabled again.
  const current = await ctx.storage.accounts.get(account.id);
  if (!current || !current.enabled || !current.roles.includes(ctx.console!.adminRole)) {
    await ctx.storage.sessions.delete(session.idHash);
    throw badCredentials();
  }
  // The browser's earlier session (the cookie this one replaces) ends here, not at its expiry.
  await endReplacedSession(ctx, request);
  const { sessionId, csrfToken, expiresAt } = session;
  ctx.events.emit({ type: "console.signed_in", account_id: account.id, username: account.username, client_ip: request.clientIp ?? null });
  return json(200, sessionBody(ctx, { username: account.username, displayName: account.displayName, csrfToken, expiresAt }), {
    "set-cookie": sessionCookie(ctx, request.url, sessionId),
  });
}
