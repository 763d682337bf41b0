import { sha256 } from "../crypto/index.js";
import { TooManyAttemptsError } from "../errors/index.js";
import { remember } from "../util/bounded-cache.js";
import { throttleAddress } from "./client-ip.js";
import type { AttemptRecord, AttemptStore } from "../storage/types.js";

/**
 * One throttle key with its own threshold: the key is locked past `factor × maxFailures` counts
 * (a plain string is factor 1). A per-username key gets a higher factor than a per-(username + IP)
 * key, so one address locks only itself out while a guess spread over many addresses still meets
 * the username's ceiling.
 */
export interface ThrottleKey {
  key: string;
  factor: number;
  /**
   * What a success does to this key: `"reset"` (the default) forgets it; `"refund"` takes back
   * only what this caller counted (storage `attempts.refund`), for a key shared across usernames (a
   * budget), whose failures were counted by other attempts and must stand.
   */
  onSuccess?: "reset" | "refund";
  /**
   * Read before any key is counted, and when it already refuses (its count at its limit in its
   * window) counted alone: for a budget shared across usernames counted after the username's own
   * keys, so past a spent budget an attempt touches no other key (no counter row for a new
   * username). Costs one read per attempt. (`check` reads every key before anything is counted
   * anyway.)
   */
  readFirst?: boolean;
}

/**
 * Brute-force defence: counters kept in storage (so a lock-out holds across every instance
 * sharing it), one per key (a username, a client id + IP, ...). Two ways to use it:
 *
 * - `attempt` counts FIRST, then the caller checks the password. Every attempt is counted by one
 *   atomic increment before any password is looked at, so a burst of concurrent guesses cannot
 *   all slip in before the lock: with `maxFailures` 3, 50 simultaneous wrong guesses give exactly
 *   3 password checks and 47 answers of 429. Used by the password grant and console sign-in.
 * - `check` / `fail` / `succeed`: a read before, a count only after a failure. Concurrent guesses
 *   that all read before any fail is counted are all evaluated; kept for client authentication,
 *   which runs on every token request and costs one read when it succeeds (plus a delete when a
 *   counter existed).
 *
 * @example
 * // Password-style doors: count first.
 * const keys = credentialKeys("password", username, clientIp);
 * const counted = await ctx.throttle.attempt(keys); // throws TooManyAttemptsError past the limit
 * if (!(await verifyPassword(password, hash))) throw badCredentials(); // already counted
 * await ctx.throttle.succeed(counted); // resets the keys; a budget gets back its one count
 *
 * // Client authentication: check, then count the failure.
 * const clientKeys = throttleKeys("client", { clientId, ip });
 * const checked = await ctx.throttle.check(clientKeys);
 * if (!ok) { await ctx.throttle.fail(checked); throw invalidClient(); }
 * await ctx.throttle.succeed(checked); // writes nothing when no counter existed
 */
export interface Throttle {
  /**
   * Counts one attempt for every key (storage `attempts.increment`, in the order given) and throws
   * TooManyAttemptsError as soon as a key's count passes its threshold (`factor × maxFailures`);
   * later keys are then not counted, so a request refused by its per-(username + IP) key does not
   * add to the username's shared counter, and earlier keys get their count back (`refund`, where the
   * store has it) unless others have locked them meanwhile, so a refusal counts on the refusing key
   * alone. Retry-After runs to the latest window end among every key that would refuse the attempt
   * (the refusing one, and the keys after it, read then), so a caller that waits as told is not
   * refused again by a lock already in place; the error's `lock.until` is the refusing key's.
   * Resolves to what it counted, which `succeed` takes after a success.
   */
  attempt(keys: (string | ThrottleKey)[]): Promise<ThrottleAttempt>;
  /**
   * Throws TooManyAttemptsError when any of the keys is locked (count >= `factor × maxFailures` in
   * its window; the error's `lock` names the first such key and this refusal's count within that
   * lock as this instance has counted them, since a refusal here writes nothing; Retry-After runs to
   * the latest end among them). Otherwise resolves to what it read, which `fail` and `succeed` take instead of the
   * keys: the keys are then not hashed again, and `succeed` writes nothing when no counter existed
   * at check time (the common case: a client that authenticates correctly). A failure counted by a
   * concurrent request after the check is then left standing until its window ends, which only
   * errs towards locking. A key with `onSuccess: "refund"` (a budget across client ids) is left as
   * it is by `succeed`: a check counts nothing, so a success has nothing of its own to give back,
   * and the failures others counted there stand.
   */
  check(keys: (string | ThrottleKey)[]): Promise<ThrottleCheck>;
  /**
   * Counts one failure for every key (storage `attempts.increment`). Given what `check` read, the
   * keys a success resets (the client's own) are counted first; then, when there is a key with
   * `onSuccess: "refund"` (a budget across client ids), the client's share of it: one more counter
   * (its storage key derived here from the client's own storage keys, so `check` reads nothing
   * more), counted on every failure and never reset by a success. The budget is counted only
   * while the share's new count (atomic in every store) is within `maxFailures`. So one client
   * spends at most `maxFailures` of a budget per window of its share, however many of its
   * failures are in flight at once and whatever successes come between them. Until early on
   * 2026-12-03 each failure in flight spent one (100 requests at once of one client with a stale
   * secret, 100 of the budget: every client at that address locked out); then, until later that
   * day, the rule was the client's own counter's new count, which each success resets, so a
   * client whose successes and failures interleave (a rolling redeploy after a rotation: new pods
   * succeed, old ones fail) never reached it and spent the whole budget. The share replaces that
   * rule rather than joining it: the share alone gives the bound (the client's own counter, with
   * its window from its first failure and reset by each success, may hold more or fewer than the
   * share, which counts every failure in the clock's window). The share and
   * the budget are counted as of the start of the clock's current window (windows of `windowMs`
   * from the epoch: a budget spent at 10:14 with 15-minute windows is served again at 10:15), so
   * both always cover the same time and the bound holds per budget window. Until later on
   * 2026-12-03 each had a window from its own first count, and a client whose failures straddled
   * the start of the budget's window (its share opened in the budget's previous window, then a new
   * one) spent up to 2 × `maxFailures` of that one window. The client's own counter keeps its
   * window from its first failure. At most one counter row more per failing client (id +
   * address). Failure path only: a success still reads and writes nothing more.
   */
  fail(keys: string[] | ThrottleCheck): Promise<void>;
  /**
   * After a success: resets every key, except that a key counted by `attempt` with `onSuccess:
   * "refund"` only gets its own count back, in the window it was counted in. Given plain keys instead of what `attempt` counted, it resets them all.
   * Every key is tried even when one's reset or refund fails; the first failure is then thrown
   * (before 2026-11-30 it stopped at that key, and the keys after it stayed counted).
   */
  succeed(keys: (string | ThrottleKey)[] | ThrottleCheck | ThrottleAttempt): Promise<void>;
  /**
   * The window length in ms: a counter whose window started at least this long ago is finished
   * and can be deleted (`prune`). 0 when the throttle is off (then no counter matters).
   */
  readonly windowMs: number;
}

/**
 * What {@link Throttle.check} read: the stored (hashed) keys (`fail` counts them all, a budget's
 * within the client's share), those a success resets (`resetKeys`: all but a budget's), and
 * whether any of those had a counter.
 */
export interface ThrottleCheck {
  readonly storageKeys: readonly string[];
  readonly resetKeys: readonly string[];
  readonly anyCounted: boolean;
}

/** What {@link Throttle.attempt} counted: each stored key, the window it was counted in, and what a success does to it. */
export interface ThrottleAttempt {
  readonly counted: readonly { readonly storageKey: string; readonly windowStart: number; readonly onSuccess: "reset" | "refund" }[];
}

const isCheck = (value: unknown): value is ThrottleCheck =>
  typeof value === "object" && value !== null && !Array.isArray(value) && "storageKeys" in value;

const isAttempt = (value: unknown): value is ThrottleAttempt =>
  typeof value === "object" && value !== null && !Array.isArray(value) && "counted" in value;

/** Settings of {@link createThrottle}. */
export interface ThrottleSettings {
  /** Failures within one window that lock a key. */
  maxFailures: number;
  /**
   * Window length in seconds, counted from the first failure; client authentication's address
   * budget and a client's share of it count in windows of the clock instead (this long, from the
   * epoch; see Throttle.fail).
   */
  windowSeconds: number;
}

/** Defaults: 10 failures per 15 minutes. */
export const DEFAULT_BRUTE_FORCE: ThrottleSettings = { maxFailures: 10, windowSeconds: 15 * 60 };

/**
 * The throttle keys for one attempt, before hashing: one per `username`, and one per `clientId`
 * together with `ip` (or per `ip` alone when there is no client); an IPv6 `ip` counts per /64. `kind` separates the counters of
 * different doors (the token endpoint's password grant, client authentication, the console).
 * The throttle hashes each key before it reaches storage, so no username or address is stored.
 *
 * @example
 * throttleKeys("client", { clientId: "reporting", ip: "198.51.100.7" }); // one key
 * throttleKeys("console", { username: "alice", ip: "198.51.100.7" });   // two keys
 */
export function throttleKeys(kind: string, parts: { username?: string; clientId?: string; ip?: string }): string[] {
  const keys: string[] = [];
  // JSON keeps the parts unambiguous whatever characters a username contains.
  if (parts.username !== undefined) keys.push(JSON.stringify([kind, "u", parts.username]));
  // IPv6 addresses count per /64 (see throttleAddress): one host can rotate through its whole prefix.
  const ip = parts.ip === undefined ? undefined : throttleAddress(parts.ip);
  if (parts.clientId !== undefined) keys.push(JSON.stringify([kind, "c", parts.clientId, ip ?? null]));
  else if (ip !== undefined) keys.push(JSON.stringify([kind, "i", ip]));
  return keys;
}

/** How many times `maxFailures` a username's own counter allows, across all addresses. */
const USERNAME_FACTOR = 5;

/**
 * The keys of a username + password attempt, most specific first: per (username + IP) at
 * `maxFailures`, then per username at {@link USERNAME_FACTOR} × `maxFailures`. One address that
 * guesses locks only itself out of that username; guesses spread over many addresses still meet
 * the username's ceiling. Without an address, the first key is shared by every address-less caller.
 * An IPv6 address counts per /64.
 *
 * @example
 * await ctx.throttle.attempt(credentialKeys("password", "alice", "198.51.100.7"));
 */
export function credentialKeys(kind: string, username: string, ip: string | undefined): ThrottleKey[] {
  return [
    { key: JSON.stringify([kind, "ui", username, ip === undefined ? null : throttleAddress(ip)]), factor: 1 },
    { key: JSON.stringify([kind, "u", username]), factor: USERNAME_FACTOR },
  ];
}

/** Locks whose refusals by `check` one throttle (one app instance) counts apart; see createThrottle. */
export const REFUSAL_TALLY_LIMIT = 4096;

/**
 * Whether a refusal whose count within its lock is `refused` makes a security event: the 1st, 2nd,
 * 4th, 8th, ... (a power of two), so a lock refusing n requests makes about log2(n) + 1 events,
 * each carrying its count (`refused_count`), where until 2026-12-03 each refusal made one and the
 * audit trail kept them all for its retention. The metrics still count every refusal.
 */
export function reportsRefusal(refused: number): boolean {
  return refused >= 1 && 2 ** Math.round(Math.log2(refused)) === refused;
}

/**
 * Bits of the set of locks whose first refusal `check` reported past a full tally (512 bytes per
 * throttle): at most this many such first refusals make an event per overflow window and instance.
 */
export const SEEN_BITS = 4096;

/** The bit of `seen` for one lock (a storage key in one window): FNV-1a over the key, seeded with the window start. */
function seenBit(key: string, windowStart: number): number {
  let h = (0x811c9dc5 ^ Math.floor(windowStart)) | 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return (h >>> 0) % SEEN_BITS;
}

/** Expired counters are deleted after every this many counted attempts or failures (per instance). */
const SWEEP_EVERY = 64;

/** At most this many expired counters per sweep in passing, so a request never waits on a backlog (`prune` clears it). */
export const SWEEP_LIMIT = 500;

/**
 * `t:` + the hash (base64url of 32 bytes): 45 ASCII characters whatever the input. The hash is
 * SHA-256, or with a key encryption key an HMAC under a key derived from it (`counterKeyHash`).
 */
const storageKeyWith = (hash: (text: string) => Promise<string>) => async (key: string) => `t:${await hash(key)}`;

/**
 * A throttle over an attempt store. With `settings === false` it never locks and never writes
 * (the host has its own defence, e.g. at a gateway).
 *
 * @example
 * const throttle = createThrottle(storage.attempts, Date.now, { maxFailures: 5, windowSeconds: 600 });
 */
export function createThrottle(
  store: AttemptStore,
  clock: () => number,
  settings: ThrottleSettings | false,
  hash: (text: string) => Promise<string> = sha256,
  onSweepError: (error: unknown, what: "sweep" | "refund" | "read") => void = () => {},
): Throttle {
  if (settings === false) {
    return { async attempt() { return { counted: [] }; }, async check() { return { storageKeys: [], resetKeys: [], anyCounted: false }; }, async fail() {}, async succeed() {}, windowMs: 0 };
  }
  const hashed = storageKeyWith(hash);
  // The same few keys (a client from its usual address) come back on every request; their hashes
  // are kept (bounded: when full, the cache starts over) instead of recomputed. This map is process
  // memory only: what reaches storage is still the hash alone.
  const recent = new Map<string, string>();
  const storageKey = async (key: string) => {
    let value = recent.get(key);
    if (value === undefined) {
      value = await hashed(key);
      remember(recent, key, value, 1024);
    }
    return value;
  };
  const windowMs = settings.windowSeconds * 1000;
  const keyOf = (k: string | ThrottleKey) => (typeof k === "string" ? k : k.key);
  const hashAll = (keys: (string | ThrottleKey)[]) => Promise.all([...new Set(keys.map(keyOf))].map(storageKey));
  /** The storage keys when every hash is already known (the usual case), without waiting; else null. */
  const knownKeys = (keys: (string | ThrottleKey)[]): string[] | null => {
    const out: string[] = [];
    for (const key of new Set(keys.map(keyOf))) {
      const value = recent.get(key);
      if (value === undefined) return null;
      out.push(value);
    }
    return out;
  };
  const retryAfter = (windowEnd: number, now: number) => Math.max(1, Math.ceil((windowEnd - now) / 1000));
  let counted = 0;
  // Every guess at a new username adds a row; sweep finished windows now and then so an
  // attacker cannot grow the table without bound. Per instance, so the cost is spread. The sweep
  // is housekeeping: its failure (a deadlock victim, a lock wait, a slow table) is reported and
  // never changes the answer; the counters it missed wait for the next sweep or for `prune`.
  const sweep = async (now: number) => {
    if (++counted % SWEEP_EVERY !== 0) return;
    try {
      await store.deleteExpired(now - windowMs, SWEEP_LIMIT);
    } catch (error) {
      onSweepError(error, "sweep");
    }
  };
  /**
   * Runs `op` on every item in turn, even past one that fails (after a success each key left
   * counted is a step towards a lock-out), then throws the first failure so the caller can report it.
   */
  const forEvery = async <T>(items: readonly T[], op: (item: T) => Promise<unknown>) => {
    let failure: { error: unknown } | undefined;
    for (const item of items) {
      try {
        await op(item);
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  };
  const reset = (key: string) => store.reset(key);
  // `check`'s refusals write nothing (the flood path of a locked client stays one read), so their
  // count within each lock is kept here, per instance: by storage key, the lock's window start and
  // the refusals this instance has made of it. Bounded: when full, the finished locks are dropped
  // (at most once a second), and a lock that still finds no room gets one bit of `seen` (by a hash
  // of its storage key and window start): while its bit is unset, its refusal is its own first
  // (refused 1, an event) and sets it; once set (by its own first refusal, or by another lock's:
  // a collision), its refusals are counted in one shared overflow tally, reported at the 1st, 2nd,
  // 4th, ... as any lock's. Both restart a window after the first overflow. So past a full tally a
  // new lock (a real brute force on a real client while an attacker's locks fill the tally) still
  // makes its first event, where until later on 2026-12-03 it made one only when the shared count
  // happened to be a power of two; and the events stay bounded whatever the number of locks: at
  // most SEEN_BITS first refusals per overflow window (each sets a bit never unset until then),
  // plus the overflow tally's log2(n) + 1.
  const tally = new Map<string, { windowStart: number; count: number }>();
  let overflow = { windowStart: -Infinity, count: 0 };
  const seen = new Uint32Array(SEEN_BITS / 32);
  let lastDrop = -Infinity;
  const tallyRefusal = (key: string, windowStart: number, now: number): number => {
    const entry = tally.get(key);
    if (entry !== undefined && entry.windowStart === windowStart) return ++entry.count;
    if (entry === undefined && tally.size >= REFUSAL_TALLY_LIMIT) {
      if (now - lastDrop >= 1000) {
        lastDrop = now;
        for (const [k, v] of tally) if (v.windowStart + windowMs <= now) tally.delete(k);
      }
      if (tally.size >= REFUSAL_TALLY_LIMIT) {
        if (overflow.windowStart + windowMs <= now) {
          overflow = { windowStart: now, count: 0 };
          seen.fill(0);
        }
        const bit = seenBit(key, windowStart);
        const word = bit >>> 5;
        const mask = 1 << (bit & 31);
        const bits = seen[word] ?? 0;
        if ((bits & mask) === 0) {
          seen[word] = bits | mask;
          return 1;
        }
        return ++overflow.count;
      }
    }
    tally.set(key, { windowStart, count: 1 });
    return 1;
  };
  return {
    windowMs,
    async attempt(keys) {
      const now = clock();
      await sweep(now);
      const seen = new Set<string>();
      const counted: (ThrottleAttempt["counted"][number] & { limit: number })[] = [];
      const limitOf = (k: string | ThrottleKey) => settings.maxFailures * (typeof k === "string" ? 1 : k.factor);
      /** Whether a key whose count is `current` refuses the next attempt: at its limit, in its window. */
      const refuses = (current: AttemptRecord | null, keyLimit: number): current is AttemptRecord =>
        current !== null && current.windowStart > now - windowMs && current.count >= keyLimit;
      const entry = (k: string | ThrottleKey, storedAs: string, r: AttemptRecord) => ({
        storageKey: storedAs,
        windowStart: r.windowStart,
        onSuccess: typeof k === "string" ? ("reset" as const) : (k.onSuccess ?? "reset"),
        limit: limitOf(k),
      });
      /** The refusal by `keys[keyIndex]`, whose count is `r`, after the keys counted before it get theirs back. */
      const refuse = async (keyIndex: number, r: AttemptRecord): Promise<never> => {
        const limit = limitOf(keys[keyIndex]!);
        // A refused attempt checked no password: it counts on the key that refused it only. The
        // keys counted before it get their count back (in the windows it was counted in): until
        // 2026-12-01 a user retrying the right password while a client's budget or the
        // username's ceiling was spent by others locked their own (username + address) key too,
        // which then refused them for a window after the other lock had ended. Best effort: a
        // refund that fails leaves that count standing, as before, and the answer is the same.
        // A key that others have locked meanwhile (its count past its limit now) keeps the count:
        // taken back under the limit, the next attempt to pass it was taken for the first
        // refusal again, a second lock-out event for one lock. Read, then refunded: an attempt
        // that locks it between the two can still be reported twice (a conditional refund in the
        // store would close that; the storage contract has none).
        //
        // Retry-After runs to the latest end among every lock this attempt would meet when it came
        // back: the refusing key's window, an earlier key others have locked meanwhile, and the
        // keys after it, which it did not count and are read here (on the refusal path only, all
        // at once). Until 2026-12-02 it named the refusing key's window alone, and an address
        // refused by its own key while the username's longer lock was on was refused again when
        // it came back as told. A key at its limit counts as locked: the next count passes it.
        let until = r.windowStart + windowMs;
        const locked = (current: AttemptRecord | null, keyLimit: number) => {
          if (refuses(current, keyLimit)) until = Math.max(until, current.windowStart + windowMs);
        };
        for (const c of counted) {
          try {
            const current = await store.get(c.storageKey);
            if (!store.refund || current === null || current.windowStart !== c.windowStart || current.count > c.limit) {
              locked(current, c.limit);
              continue;
            }
            await store.refund(c.storageKey, c.windowStart, 1);
          } catch (error) {
            onSweepError(error, store.refund ? "refund" : "read");
          }
        }
        const names = new Set<string>();
        const later = keys.filter((k) => !seen.has(keyOf(k)) && !names.has(keyOf(k)) && names.add(keyOf(k)));
        await Promise.all(
          later.map(async (k) => {
            try {
              locked(await store.get(await storageKey(keyOf(k))), limitOf(k));
            } catch (error) {
              onSweepError(error, "read");
            }
          }),
        );
        // The refusing key counted this refusal: its count past the limit is the refusal's count within the lock.
        throw new TooManyAttemptsError(retryAfter(until, now), "locked", { keyIndex, first: r.count === limit + 1, until: r.windowStart + windowMs, refused: r.count - limit });
      };
      // A key marked `readFirst` (a budget shared across usernames, counted after the username's
      // own keys) is read before anything is counted: when it already refuses (its count at its
      // limit in its window), the attempt is counted on it alone, so past a spent budget a new
      // username costs a read and a write of the budget, the reads of its own keys beside it, and
      // the refusal's reads of the other keys, for Retry-After, and leaves no counter row. Counted here only then;
      // when a success's refund or the window's end has taken it under its limit meanwhile, it
      // stays counted (first, for this attempt) and the others follow as usual. Not when a key of
      // the username's own already refuses (read beside it, on this rare path only): the attempt is
      // then counted, and refused, there, as the order without a budget read would have it, and
      // the budget is left as it was (until later on 2026-12-02 such a guess pushed a budget at its
      // limit past it, and a success in flight giving its count back left it locked for others).
      for (const [keyIndex, k] of keys.entries()) {
        if (typeof k === "string" || !k.readFirst || seen.has(k.key)) continue;
        const storedAs = await storageKey(k.key);
        if (!refuses(await store.get(storedAs), limitOf(k))) continue;
        const own = keys.filter((o) => (typeof o === "string" || !o.readFirst) && !seen.has(keyOf(o)));
        const ownRefuses = await Promise.all(own.map(async (o) => refuses(await store.get(await storageKey(keyOf(o))), limitOf(o))));
        if (ownRefuses.some(Boolean)) continue;
        seen.add(k.key);
        const r = await store.increment(storedAs, now, windowMs);
        if (r.count > limitOf(k)) return refuse(keyIndex, r);
        counted.push(entry(k, storedAs, r));
      }
      for (const [keyIndex, k] of keys.entries()) {
        const name = keyOf(k);
        if (seen.has(name)) continue;
        seen.add(name);
        const storedAs = await storageKey(name);
        // The increment is the check: the store's atomic count decides who is past the limit.
        const r = await store.increment(storedAs, now, windowMs);
        if (r.count > limitOf(k)) return refuse(keyIndex, r);
        counted.push(entry(k, storedAs, r));
      }
      return { counted };
    },
    async check(keys) {
      const now = clock();
      let until = 0;
      let refusing: { keyIndex: number; storageKey: string; windowStart: number } | undefined;
      let anyCounted = false;
      // Distinct keys only (as storageKeys are), in the order given.
      const names = new Set<string>();
      const distinct = keys.filter((k) => !names.has(keyOf(k)) && names.add(keyOf(k)));
      const storageKeys = knownKeys(distinct) ?? (await hashAll(distinct));
      const resetKeys: string[] = [];
      // Every counter read is started at once: one storage wait, and (with known hashes) started in
      // the caller's synchronous run, beside whatever else it reads (see the token endpoint).
      const records = await Promise.all(storageKeys.map((key) => store.get(key)));
      for (const [i, r] of records.entries()) {
        const k = distinct[i]!;
        const resets = typeof k === "string" || (k.onSuccess ?? "reset") === "reset";
        const limit = settings.maxFailures * (typeof k === "string" ? 1 : k.factor);
        if (resets) resetKeys.push(storageKeys[i]!);
        if (r && resets) anyCounted = true;
        if (r && r.count >= limit && r.windowStart > now - windowMs) {
          until = Math.max(until, r.windowStart + windowMs);
          refusing ??= { keyIndex: keys.indexOf(k), storageKey: storageKeys[i]!, windowStart: r.windowStart };
        }
      }
      if (refusing) {
        const refused = tallyRefusal(refusing.storageKey, refusing.windowStart, now);
        throw new TooManyAttemptsError(retryAfter(until, now), "locked", { keyIndex: refusing.keyIndex, first: refused === 1, until: refusing.windowStart + windowMs, refused });
      }
      return { storageKeys, resetKeys, anyCounted };
    },
    async fail(keys) {
      const now = clock();
      if (!isCheck(keys)) {
        for (const key of await hashAll(keys)) await store.increment(key, now, windowMs);
      } else {
        // The client's own keys first, then its share of the budget, then the budget while the
        // share is within maxFailures (see Throttle.fail). The share's key is a hash of the client's
        // own storage keys under a name no other key has: derived here, on the failure path only.
        for (const key of keys.resetKeys) await store.increment(key, now, windowMs);
        const budgets = keys.storageKeys.filter((key) => !keys.resetKeys.includes(key));
        if (budgets.length > 0) {
          // The share and the budget are counted as of the start of the clock's current window
          // (windows of `windowMs` from the epoch), so a new window of either opens at that start
          // and the two always cover the same time: the share bounds the client's spend of each
          // budget window, not of a window of its own (see Throttle.fail).
          const windowOpen = now - (now % windowMs);
          // "budget-share-w": a key of its own for shares counted in the clock's windows, so no
          // share counted from its first failure (before 2026-12-03) goes on under it.
          const share = keys.resetKeys.length > 0 ? await storageKey(JSON.stringify(["budget-share-w", ...keys.resetKeys])) : undefined;
          if (share === undefined || (await store.increment(share, windowOpen, windowMs)).count <= settings.maxFailures) {
            for (const key of budgets) await store.increment(key, windowOpen, windowMs);
          }
        }
      }
      await sweep(now);
    },
    async succeed(keys) {
      if (isAttempt(keys)) {
        // A store written before `refund` existed: the budget is reset, as it was then.
        return forEvery(keys.counted, ({ storageKey: key, windowStart, onSuccess }) =>
          onSuccess === "refund" && store.refund ? store.refund(key, windowStart, 1) : store.reset(key),
        );
      }
      if (isCheck(keys)) {
        // The common case (a client authenticating correctly with no counter): nothing written, nothing allocated.
        if (!keys.anyCounted) return;
        return forEvery(keys.resetKeys, reset);
      }
      return forEvery(await hashAll(keys), reset);
    },
  };
}
