import type { Context } from "../context.js";
import { verifyPassword } from "../crypto/index.js";
import { TooManyAttemptsError } from "../errors/index.js";
import type { LoginFailure, LoginSource } from "../events/types.js";
import type { AccountRecord } from "../storage/types.js";
import { credentialKeys } from "./throttle.js";

/**
 * The one username + password check, shared by the password grant and console sign-in: the
 * brute-force counters first, then the PHC hash verified in core (against a dummy hash when the
 * account does not exist, so unknown usernames cost the same time). Resolves to the account when
 * the password is right and the account enabled, else null; the caller answers in its own error
 * shape, one message for every failure.
 *
 * Every attempt is counted before the password is looked at, so concurrent guesses cannot outrun
 * the lock, and a locked pair is refused (TooManyAttemptsError) even with the right password. The
 * counters are per (username + IP) at `maxFailures`, so one address locks only itself out, and per
 * username at a higher ceiling, so spreading guesses over many addresses does not help. The grant
 * and the console share them: guesses spread over both add up.
 */
export async function checkPassword(
  ctx: Context,
  username: string,
  password: string,
  clientIp: string | undefined,
  from: { source: LoginSource; clientId: string | null },
): Promise<AccountRecord | null> {
  // A username is named only when such an account exists: an unknown one may be a password typed
  // into the wrong field, and no event may hold a password.
  const failed = (known: boolean, reason: LoginFailure) =>
    ctx.events.emit({ type: "account.login_failed", username: known ? username : null, reason, source: from.source, client_id: from.clientId, client_ip: clientIp ?? null });
  const keys = credentialKeys("password", username, clientIp);
  try {
    await ctx.throttle.attempt(keys);
  } catch (e) {
    if (e instanceof TooManyAttemptsError && ctx.events.enabled) {
      const known = (await ctx.storage.accounts.findByUsername(username)) !== null;
      if (e.lock?.first) {
        const lock = e.lock.keyIndex === 0 ? "username_address" : "username";
        ctx.events.emit({ type: "account.locked_out", username: known ? username : null, lock, source: from.source, locked_until: ctx.clock() + e.retryAfter * 1000, client_ip: clientIp ?? null });
      }
      failed(known, "throttled");
    }
    throw e;
  }
  const account = await ctx.storage.accounts.findByUsername(username);
  const ok = await verifyPassword(password, account?.passwordHash ?? (await ctx.dummyPasswordHash()));
  // Already counted by attempt(): nothing more to record on failure.
  if (!account || !ok || !account.enabled) {
    failed(account !== null, !account ? "unknown_username" : !ok ? "invalid_password" : "account_disabled");
    return null;
  }
  await ctx.throttle.succeed(keys);
  return account;
}
