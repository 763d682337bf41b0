import type { Context } from "../context.js";
import { verifyPassword } from "../crypto/index.js";
import type { AccountRecord } from "../storage/types.js";
import { TooManyAttemptsError } from "../errors/index.js";
import { throttleAddress } from "./client-ip.js";
import { credentialKeys, type ThrottleKey } from "./throttle.js";

/**
 * Most password hashes (PBKDF2, the dummy hash for unknown users included) verified at once per
 * app instance by default (`maxConcurrentPasswordChecks`; finding 2 of the security review). One check at the default 600 000 iterations
 * keeps a core busy for ~100 ms; past this many in flight a further attempt is refused at once
 * with 429 and `Retry-After: 1` instead of queueing CPU work.
 */
export const MAX_CONCURRENT_PASSWORD_CHECKS = 4;

/** Per-address budget of console sign-in attempts across usernames: this many × `maxFailures` per window. */
export const CONSOLE_ADDRESS_FACTOR = 3;

/** Per-client budget of password-grant attempts across usernames: this many × `maxFailures` per window. */
export const PASSWORD_CLIENT_FACTOR = 10;

const inFlight = new WeakMap<Context, number>();

/** The budget key of console sign-ins from one address (an IPv6 address counts per /64), whatever the username. */
export function consoleAddressBudget(ip: string | undefined): ThrottleKey {
  return { key: JSON.stringify(["console-budget", "i", ip === undefined ? null : throttleAddress(ip)]), factor: CONSOLE_ADDRESS_FACTOR };
}

/** The budget key of password-grant attempts of one client, whatever the username or address. */
export function passwordClientBudget(clientId: string): ThrottleKey {
  return { key: JSON.stringify(["password-budget", "c", clientId]), factor: PASSWORD_CLIENT_FACTOR };
}

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
  budget?: ThrottleKey,
): Promise<AccountRecord | null> {
  // Full: refused before anything is counted or hashed.
  const active = inFlight.get(ctx) ?? 0;
  if (active >= ctx.maxConcurrentPasswordChecks) throw new TooManyAttemptsError(1);
  inFlight.set(ctx, active + 1);
  try {
    return await checkPasswordNow(ctx, username, password, clientIp, budget);
  } finally {
    inFlight.set(ctx, (inFlight.get(ctx) ?? 1) - 1);
  }
}

async function checkPasswordNow(
  ctx: Context,
  username: string,
  password: string,
  clientIp: string | undefined,
  budget: ThrottleKey | undefined,
): Promise<AccountRecord | null> {
  const [pair, user] = credentialKeys("password", username, clientIp);
  // The budget after the (username + IP) key, so an address refused by its own counter does not
  // spend the shared budget, and before the username key.
  const keys = budget === undefined ? [pair!, user!] : [pair!, budget, user!];
  await ctx.throttle.attempt(keys);
  const account = await ctx.storage.accounts.findByUsername(username);
  const ok = await verifyPassword(password, account?.passwordHash ?? (await ctx.dummyPasswordHash()));
  // Already counted by attempt(): nothing more to record on failure.
  if (!account || !ok || !account.enabled) return null;
  await ctx.throttle.succeed(keys);
  return account;
}
