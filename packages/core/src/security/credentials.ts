import type { Context } from "../context.js";
import { hashPassword, spendPasswordWork, verifyPasswordCounted } from "../crypto/index.js";
import { StorageError, TooManyAttemptsError } from "../errors/index.js";
import { describeError } from "../http/respond.js";
import type { AccountLockedOutEvent, AccountLoginFailedEvent, EventInput, LoginFailure, LoginSource } from "../events/types.js";

/** An `account.login_failed` before its id and time. */
type LoginFailedInput = Omit<AccountLoginFailedEvent, "id" | "time">;
import type { AccountRecord } from "../storage/types.js";
import { throttleAddress } from "./client-ip.js";
import { credentialKeys, reportsRefusal, type ThrottleAttempt, type ThrottleKey } from "./throttle.js";

/**
 * Most password checks (PBKDF2 verifications, the work spent for an unknown username included) running at
 * once per app instance by default (`maxConcurrentPasswordChecks`; finding 2 of the security
 * review). One check at the default 600 000 iterations keeps a core busy for ~100 ms; past this
 * many in flight a further attempt is refused at once with 429 and `Retry-After: 1` instead of
 * queueing CPU work, before anything is counted or looked up.
 */
export const MAX_CONCURRENT_PASSWORD_CHECKS = 4;

/**
 * The most `maxConcurrentPasswordChecks` (and `PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS`) may be.
 * Until 2026-12-02 only the variable was held to it: the option took any positive integer.
 */
export const MAX_CONCURRENT_PASSWORD_CHECKS_LIMIT = 1000;

/** Per-address budget of console sign-in attempts across usernames: this many × `maxFailures` per window. */
export const CONSOLE_ADDRESS_FACTOR = 3;

/** Per-client budget of password-grant attempts across usernames and addresses: this many × `maxFailures` per window. */
export const PASSWORD_CLIENT_FACTOR = 10;

/**
 * Per-address budget of failed client authentications across client ids: this many × `maxFailures`
 * per window. Only failures spend it (client authentication counts a failure, never a success), and
 * one client with a wrong secret spends at most `maxFailures` of it per window,
 * however many of its requests are in flight at once and whatever successes come between its
 * failures: `Throttle.fail` counts a failure on the budget only while the client's share of it (a
 * counter per client id + address that, unlike the client's own, a success never resets) is
 * within `maxFailures` after this failure. Until early on 2026-12-03 each failure in flight spent
 * one; then, until later that day, the rule was the client's own counter, which each success
 * resets, so a client half of whose pods had a stale secret (a rolling redeploy: new pods succeed,
 * old ones fail, in turns) spent the whole budget. The share and the budget are counted per window
 * of the clock (from the epoch), so both cover the same time; until later still that day each had a
 * window from its own first count, and a client whose failures straddled the start of the budget's
 * window spent up to 2 × `maxFailures` of it. So behind one
 * egress address (a Kubernetes cluster's NAT, an office proxy) ten misconfigured clients, or one guesser's 100 failures, spend it and lock that address's
 * other clients out for the rest of the window. Ten and not the console's three: many more
 * services than administrators share one address, and a secret rotated on the server before its
 * clients are redeployed makes several of them fail at once. Bounded all the same: a failure
 * leaves at most two counter rows (the client id + address's, and its share), so one address
 * leaves at most 2 × (10 × `maxFailures`) + 1 counter rows per window (the budget's, and a pair
 * and its share per failure the budget counts), plus two per distinct client id among failures in
 * flight when the budget fills (they all read it unspent: 500 at once, 1 001 rows; once per
 * window). Before the budget each distinct client id it sent was a row (2 000
 * ids, 2 000 rows). Behind a proxy without (or with too few) `trustedProxies` every caller has the
 * proxy's address and shares this one budget.
 */
export const CLIENT_ADDRESS_FACTOR = 10;

/**
 * A budget across usernames: one more throttle key counted with the username's own keys, and
 * counted after both of them, so only an attempt that passed the username's own keys (one that is
 * about to check a password) holds a count of it: guesses stopped by a username's lock never spend
 * a budget others share, whether they come one after another or all at once. A refusal by the
 * budget gives the username's keys their counts back (the throttle's refund of the keys before the
 * refusing one). It is read before anything is counted (`readFirst`): once spent, it refuses an
 * attempt on its own, so past it a new username costs neither a password hash nor a counter row
 * (attempts already under way when it fills count the username's keys and give them back). A success takes back
 * only its own count (`onSuccess: "refund"`), never the failures counted at other usernames.
 * Until 2026-12-02 the console's budget was counted first and the grant's between the two
 * username keys: concurrent guesses at one username each held a budget count while the username's
 * key refused them, pushed it past its limit and kept it there (packages/core/test/brute-force-budget-races.test.ts).
 */
export type PasswordBudget = ThrottleKey;

/**
 * The budget of console sign-ins from one address (an IPv6 address counts per /64), whatever the
 * username: one address trying many usernames is stopped. Without an address, every address-less
 * caller shares one budget.
 */
export function consoleAddressBudget(ip: string | undefined): PasswordBudget {
  return { key: JSON.stringify(["console-budget", "i", ip === undefined ? null : throttleAddress(ip)]), factor: CONSOLE_ADDRESS_FACTOR, onSuccess: "refund", readFirst: true };
}

/**
 * The budget of failed client authentications (token, revocation and introspection endpoints) from
 * one address (an IPv6 address counts per /64), whatever the client id: read with the (client id +
 * address) counter before the credential is looked at, so once spent it refuses on its own (429)
 * and a new client id costs no counter row. A failure counts on it only while the client's share
 * of it is within `maxFailures` (see CLIENT_ADDRESS_FACTOR). A success counts nothing and leaves it as it is
 * (`onSuccess: "refund"`: the failures others counted stand). Without an address, every
 * address-less caller shares one budget, as the console's.
 */
export function clientAddressBudget(ip: string | undefined): ThrottleKey {
  // "iw": per address, counted in the clock's windows (see Throttle.fail). A budget counted from
  // its first failure (before 2026-12-03) had "i": a record of that kind, still open at an
  // upgrade, would be counted on as of the clock's window while `check` saw it over, refusing
  // nothing for up to a window (a review of 2026-12-03); under a key of its own the budget starts
  // afresh at the upgrade instead, and the old records expire.
  return { key: JSON.stringify(["client-budget", "iw", ip === undefined ? null : throttleAddress(ip)]), factor: CLIENT_ADDRESS_FACTOR, onSuccess: "refund", readFirst: true };
}

/**
 * The budget of password-grant attempts of one client, whatever the username or address: one
 * user of a proxying client retrying past their own lock does not spend the budget of the
 * client's other users.
 */
export function passwordClientBudget(clientId: string): PasswordBudget {
  return { key: JSON.stringify(["password-budget", "c", clientId]), factor: PASSWORD_CLIENT_FACTOR, onSuccess: "refund", readFirst: true };
}

/**
 * The one username + password check, shared by the password grant and console sign-in: the
 * brute-force counters first, then the PHC hash verified in core (when the account does not exist,
 * today's PBKDF2 work spent instead, so unknown usernames cost the same time). Resolves to the account when
 * the password is right and the account enabled, else null; the caller answers in its own error
 * shape, one message for every failure.
 *
 * Every attempt is counted before the password is looked at, so concurrent guesses cannot outrun
 * the lock, and a locked pair is refused (TooManyAttemptsError) even with the right password. The
 * counters are per (username + IP) at `maxFailures`, so one address locks only itself out, and per
 * username at a higher ceiling, so spreading guesses over many addresses does not help. The grant
 * and the console share them: guesses spread over both add up. The caller's `budget` (per address
 * for the console, per client for the grant) bounds guesses across usernames, counted after the
 * username's keys; a success resets
 * the username's keys and gives the budget back only its own count (a reset or refund that fails
 * in storage is a `warn` log line and the success stands: see the end of checkPasswordNow). At most
 * `maxConcurrentPasswordChecks` checks run at once: a further one is refused
 * (TooManyAttemptsError, reason `busy`) before anything is counted. With `requiredRole`, an
 * account without it is refused (null) like a wrong password.
 */
export async function checkPassword(
  ctx: Context,
  username: string,
  password: string,
  clientIp: string | undefined,
  from: { source: LoginSource; clientId: string | null },
  budget?: PasswordBudget,
  requiredRole?: string,
): Promise<AccountRecord | null> {
  // A username is named only when such an account exists: an unknown one may be a password typed
  // into the wrong field, and no event may hold a password.
  const failure = (known: boolean, reason: LoginFailure): LoginFailedInput => ({
    type: "account.login_failed",
    username: known ? username : null,
    reason,
    source: from.source,
    client_id: from.clientId,
    client_ip: clientIp ?? null,
  });
  const checks = ctx.passwordChecks;
  if (checks.inFlight >= ctx.maxConcurrentPasswordChecks) {
    // Refused before any lookup (this path must stay cheap under a flood): the username is not
    // named. Counted per minute of the clock in this instance, and only the 1st, 2nd, 4th, ...
    // refusal of a minute makes an event (about log2(n) + 1 a minute for n): until 2026-12-03
    // each made one, and a flood at the console sign-in (no client needed) while the checks were
    // held busy wrote an audit row per request. The metrics count every refusal.
    const now = ctx.clock();
    const minute = now - (now % 60_000);
    if (checks.busyMinute !== minute) {
      checks.busyMinute = minute;
      checks.busyCount = 0;
    }
    const refused = ++checks.busyCount;
    if (reportsRefusal(refused)) ctx.events.emit({ ...failure(false, "busy"), refused_count: refused });
    throw new TooManyAttemptsError(1, "busy");
  }
  checks.inFlight++;
  try {
    return await checkPasswordNow(ctx, username, password, clientIp, budget, failure, from.source, requiredRole);
  } finally {
    checks.inFlight--;
  }
}

/**
 * The events of a throttled sign-in (the lock-out, when this attempt began it, and the failure),
 * made off the request path: a username is named only when such an account exists (an unknown one
 * may be a password typed into the wrong field), and that lookup must neither delay the 429 nor
 * change it (a lookup that fails names no one).
 */
async function throttledEvents(
  ctx: Context,
  username: string,
  lock: AccountLockedOutEvent["lock"] | null,
  lockedUntil: number,
  failure: (known: boolean, reason: LoginFailure) => LoginFailedInput,
  source: LoginSource,
  clientIp: string | undefined,
  refused: number,
): Promise<EventInput[]> {
  let known = false;
  try {
    known = (await ctx.storage.accounts.findByUsername(username)) !== null;
  } catch {
    // Storage down: the events name no username.
  }
  const failed: LoginFailedInput = { ...failure(known, "throttled"), refused_count: refused };
  if (lock === null) return [failed];
  return [{ type: "account.locked_out", username: known ? username : null, lock, source, client_id: failed.client_id, locked_until: lockedUntil, client_ip: clientIp ?? null }, failed];
}

async function checkPasswordNow(
  ctx: Context,
  username: string,
  password: string,
  clientIp: string | undefined,
  budget: PasswordBudget | undefined,
  failure: (known: boolean, reason: LoginFailure) => LoginFailedInput,
  source: LoginSource,
  requiredRole: string | undefined,
): Promise<AccountRecord | null> {
  const failed = (known: boolean, reason: LoginFailure) => ctx.events.emit(failure(known, reason));
  const [pair, user] = credentialKeys("password", username, clientIp) as [ThrottleKey, ThrottleKey];
  // A success gives the budget back its own count only, in the window it was counted in. Giving
  // back the (username + IP) key's count as well (the user's typos) over-refunded: concurrent
  // successes each read the same earlier typos, and that key's window is not the budget's.
  // The budget last: an attempt refused by the username's own keys never holds a count of it.
  const keys = budget === undefined ? [pair, user] : [pair, user, budget];
  let counted: ThrottleAttempt;
  try {
    counted = await ctx.throttle.attempt(keys);
  } catch (e) {
    // Only the 1st, 2nd, 4th, ... refusal within a lock makes events (the lock-out with the 1st),
    // and only those look the username up: a flood at a lock makes O(log n) events and lookups,
    // where until 2026-12-03 each refusal made one of each. The metrics count every refusal.
    if (e instanceof TooManyAttemptsError && ctx.events.enabled && (e.lock === undefined || reportsRefusal(e.lock.refused))) {
      const key = e.lock?.first ? keys[e.lock.keyIndex] : undefined;
      const lock = key === undefined ? null : key === pair ? "username_address" : key === user ? "username" : source === "console" ? "address_budget" : "client_budget";
      // The lookup holds a password-check slot until it is done (the answer does not wait for it),
      // so a flood at a locked account meets `busy` refusals, not an unbounded queue of reads.
      const checks = ctx.passwordChecks;
      checks.inFlight++;
      // When the refusing key's window ends (until 2026-12-01 now plus Retry-After, which is rounded
      // up to whole seconds: up to a second late).
      const task = throttledEvents(ctx, username, lock, e.lock?.until ?? ctx.clock() + e.retryAfter * 1000, failure, source, clientIp, e.lock?.refused ?? 1);
      const release = () => void checks.inFlight--;
      task.then(release, release);
      ctx.events.defer(task);
    }
    throw e;
  }
  const account = await ctx.storage.accounts.findByUsername(username);
  // An unknown username verifies nothing and is padded below to today's cost, as every refusal is.
  // Until 2026-12-01 it was verified against a dummy hash made on first use: the first unknown
  // username of each process (each Worker isolate) cost twice the work, hash and check.
  const { ok, iterations: spent } = account ? await verifyPasswordCounted(password, account.passwordHash) : { ok: false, iterations: 0 };
  const checks = ctx.passwordChecks;
  if (spent > checks.highestIterations) checks.highestIterations = spent;
  // Already counted by attempt(): nothing more to record on failure. An account without the
  // required role (the console's admin role) fails like a wrong password, after the password is
  // checked and without the success's reset: an answer of its own would tell anyone, with no
  // client secret, that a password is right.
  const refused = !account ? "unknown_username" : !ok ? "invalid_password" : !account.enabled ? "account_disabled" : requiredRole !== undefined && !account.roles.includes(requiredRole) ? "not_admin" : null;
  if (refused !== null) {
    // Every refusal costs at least today's PBKDF2 work, whatever was refused and why: an unknown
    // username runs all of it here, a wrong password a check at its hash's cost, while a hash made before the cost was
    // raised checks faster (47 against 228 ms from 100 000 to 600 000 iterations, before
    // 2026-11-29: existing usernames told apart), and a password with U+0000 or a stored hash that
    // is not ours runs none. A right password of a disabled or non-admin account is padded too.
    // After the cost was lowered, a hash made before costs more than today's: every refusal is
    // padded to the highest cost a stored hash was checked at in this instance as well (until
    // 2026-12-01 only to today's, so a wrong password of an older account took several times an
    // unknown username's time). A higher cost not checked since the instance started can still be
    // told apart the first time it is (once per such cost: the check raises the padding); a right
    // password rehashes the account at today's cost (rehash below).
    const floor = Math.max(ctx.passwordHashIterations, checks.highestIterations);
    if (spent < floor) await spendPasswordWork(floor - spent);
    failed(account !== null, refused);
    return null;
  }
  // The username's keys are reset; the budget gets back only this attempt's own count, so a
  // success with one account's password does not erase the failures counted at other usernames.
  try {
    await ctx.throttle.succeed(counted);
  } catch (error) {
    // The password is right: the sign-in stands. This attempt was counted before the password was
    // looked at (attempt() above), so a reset or refund that fails leaves its counter where a
    // failure would have (succeed still tries the others): it only errs towards locking, never
    // grants a guess, and the counter ends with its window. Answering 503 here (before 2026-11-30) gave the right password no token
    // and still kept the attempt counted, so a user retrying a reset that kept failing (a Redis
    // whose ACL refuses it, a store failing only there) locked themselves out. Nothing is written
    // before this point for the caller, so nothing is left half-done either way.
    if (!(error instanceof StorageError)) throw error;
    ctx.logger.warn("brute-force counters could not be reset after a correct password; the sign-in stands, and this attempt stays counted until its window ends", describeError(error));
  }
  if (account !== null && spent !== ctx.passwordHashIterations) await rehash(ctx, account, password);
  return account;
}

/**
 * Stores the account's password hashed at today's cost, after a right password checked against a
 * hash of another cost (`passwordHashIterations` raised or lowered since it was made): the one
 * moment the password is at hand. A compare-and-set on the hash just checked
 * (`accounts.setPasswordHash`), so a hash changed meanwhile is kept. A store without the method,
 * and a write that fails (a `warn` line), leave the hash as it was: the sign-in stands either way.
 * Until 2026-12-01 hashes kept the cost they were made with for good.
 */
async function rehash(ctx: Context, account: AccountRecord, password: string): Promise<void> {
  const accounts = ctx.storage.accounts;
  if (typeof accounts.setPasswordHash !== "function") return;
  const replacement = await hashPassword(password, ctx.random, { iterations: ctx.passwordHashIterations });
  try {
    await accounts.setPasswordHash(account.id, account.passwordHash, replacement);
  } catch (error) {
    if (!(error instanceof StorageError)) throw error;
    ctx.logger.warn("a password hash could not be stored at today's cost after a correct password; the sign-in stands, and the next one tries again", describeError(error));
  }
}
