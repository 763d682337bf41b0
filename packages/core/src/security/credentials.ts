import type { Context } from "../context.js";
import { verifyPassword } from "../crypto/index.js";
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
export async function checkPassword(ctx: Context, username: string, password: string, clientIp: string | undefined): Promise<AccountRecord | null> {
  const keys = credentialKeys("password", username, clientIp);
  await ctx.throttle.attempt(keys);
  const account = await ctx.storage.accounts.findByUsername(username);
  const ok = await verifyPassword(password, account?.passwordHash ?? (await ctx.dummyPasswordHash()));
  // Already counted by attempt(): nothing more to record on failure.
  if (!account || !ok || !account.enabled) return null;
  await ctx.throttle.succeed(keys);
  return account;
}
