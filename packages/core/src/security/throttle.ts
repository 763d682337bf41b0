import { sha256 } from "../crypto/index.js";
import { TooManyAttemptsError } from "../errors/index.js";
import type { AttemptStore } from "../storage/types.js";

/**
 * Brute-force defence: failure counters kept in storage (so a lock-out holds across every instance
 * sharing it), one per key (a username, a client id + IP, ...). A key is locked once it has
 * `maxFailures` failures inside one window; the lock ends when that window ends.
 *
 * @example
 * const keys = throttleKeys("password", { username });
 * await ctx.throttle.check(keys);
 * if (!ok) { await ctx.throttle.fail(keys); throw badCredentials(); }
 * await ctx.throttle.succeed(keys);
 */
export interface Throttle {
  /** Throws TooManyAttemptsError when any of the keys is locked (count >= maxFailures in its window). */
  check(keys: string[]): Promise<void>;
  /** Counts one failure for every key (storage `attempts.increment`). */
  fail(keys: string[]): Promise<void>;
  /** Resets every key after a success. */
  succeed(keys: string[]): Promise<void>;
}

/** Settings of {@link createThrottle}. */
export interface ThrottleSettings {
  /** Failures within one window that lock a key. */
  maxFailures: number;
  /** Window length in seconds, counted from the first failure. */
  windowSeconds: number;
}

/** Defaults: 10 failures per 15 minutes. */
export const DEFAULT_BRUTE_FORCE: ThrottleSettings = { maxFailures: 10, windowSeconds: 15 * 60 };

/**
 * The throttle keys for one attempt, before hashing: one per `username`, and one per `clientId`
 * together with `ip` (or per `ip` alone when there is no client). `kind` separates the counters of
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
  if (parts.clientId !== undefined) keys.push(JSON.stringify([kind, "c", parts.clientId, parts.ip ?? null]));
  else if (parts.ip !== undefined) keys.push(JSON.stringify([kind, "i", parts.ip]));
  return keys;
}

/** Expired counters are deleted after every this many failures (per instance). */
export const SWEEP_EVERY = 64;

/** `t:` + SHA-256 (base64url): 45 ASCII characters whatever the input. */
const storageKey = async (key: string) => `t:${await sha256(key)}`;

/**
 * A throttle over an attempt store. With `settings === false` it never locks and never writes
 * (the host has its own defence, e.g. at a gateway).
 *
 * @example
 * const throttle = createThrottle(storage.attempts, Date.now, { maxFailures: 5, windowSeconds: 600 });
 */
export function createThrottle(store: AttemptStore, clock: () => number, settings: ThrottleSettings | false): Throttle {
  if (settings === false) {
    return { async check() {}, async fail() {}, async succeed() {} };
  }
  const windowMs = settings.windowSeconds * 1000;
  const hashAll = (keys: string[]) => Promise.all([...new Set(keys)].map(storageKey));
  let failures = 0;
  return {
    async check(keys) {
      const now = clock();
      let retryAfterMs = 0;
      for (const key of await hashAll(keys)) {
        const r = await store.get(key);
        if (r && r.count >= settings.maxFailures && r.windowStart > now - windowMs) {
          retryAfterMs = Math.max(retryAfterMs, r.windowStart + windowMs - now);
        }
      }
      if (retryAfterMs > 0) throw new TooManyAttemptsError(Math.max(1, Math.ceil(retryAfterMs / 1000)));
    },
    async fail(keys) {
      const now = clock();
      for (const key of await hashAll(keys)) await store.increment(key, now, windowMs);
      // Every guess at a new username adds a row; sweep finished windows now and then so an
      // attacker cannot grow the table without bound. Per instance, so the cost is spread.
      if (++failures % SWEEP_EVERY === 0) await store.deleteExpired(now - windowMs);
    },
    async succeed(keys) {
      for (const key of await hashAll(keys)) await store.reset(key);
    },
  };
}
