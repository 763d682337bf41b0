/**
 * `@plantgate/storage-redis`: plantgate's hot, short-lived state in Redis, beside any SQL store.
 * See {@link redisHotStores}.
 */
import type { AssertionJtiStore, AttemptStore, RevokedTokenStore, SessionStore } from "@plantgate/core";
import { redisAssertionJtiStore } from "./assertion-jtis.js";
import { redisAttemptStore } from "./attempts.js";
import type { HotContext } from "./context.js";
import { deadlines, withinMs } from "./deadlines.js";
import { redisRevokedTokenStore } from "./revoked-tokens.js";
import type { RedisScriptClient, ScriptRunner } from "./scripts.js";
import { redisSessionStore } from "./sessions.js";
import { refuseMissingPermissions } from "./permissions.js";

export type { RedisScriptClient } from "./scripts.js";
export { CommandTimeoutError } from "./deadlines.js";
export { RedisConfigError } from "./config-error.js";

/** Options of {@link redisHotStores}. */
export interface RedisHotStoresOptions {
  /**
   * Prepended to every key, so several deployments (or tests) can share one Redis database.
   * Default `plantgate:`. 1 to 128 characters, each a letter, a digit or one of `: . _ - /`
   * ({@link isValidKeyPrefix}); anything else is refused at once (a `TypeError`): empty (the keys
   * would sit among every other application's), `{` `}` (Redis Cluster hash tags: this is not for
   * Cluster), `* ? [ ] \` (`SCAN MATCH {prefix}*`, how one deployment's keys are found and
   * cleared, would match others'), spaces and control characters (unreadable in logs and
   * `redis-cli`), and anything longer (every key carries it). Set the prefix here, not on the
   * client: a node-redis client made with a `keyPrefix` of its own is refused (a `TypeError`), as
   * node-redis does not prefix the keys the scripts build from their arguments.
   */
  keyPrefix?: string;
  /**
   * Epoch milliseconds: pass the same clock as `createPlantgate({ clock })`. Used to turn a
   * record's `expiresAt` into a Redis expiry. Default `Date.now`.
   */
  clock?: () => number;
  /**
   * How long a record is kept after its logical end (a session's or a revoked token's `expiresAt`,
   * the end of a counter's window), for clock skew between instances. Default 60 000 (one minute).
   */
  expiryMarginMs?: number;
  /**
   * How long an operation (its EVALSHA and, after a `NOSCRIPT`, its EVAL: one bound for both) may
   * wait for its reply before it fails (`StorageError`, so 503). Default: the node-redis client's (or sentinel's) own `commandOptions.timeout`
   * (node-redis's default is 5000), and 5000 for a client that shows none (a pool made without
   * `commandOptions`, a client of another library). With a positive value the hot stores send their commands with node-redis's per-command
   * timer off and enforce the bound themselves with one timer per quarter of it (a command fails
   * after between 1 and 1.25 times the bound): node-redis's `AbortSignal.timeout` per command
   * cost about 20 µs of CPU per request. `0`: no bound of ours; node-redis 6.3.1 then times out
   * only commands it has not written yet, so a hung server holds a written one without end.
   */
  commandTimeoutMs?: number;
}

/** The stores {@link redisHotStores} puts in Redis: spread them over a full `Storage`. */
export interface RedisHotStores {
  attempts: AttemptStore;
  revokedTokens: RevokedTokenStore;
  sessions: SessionStore;
  assertionJtis: AssertionJtiStore;
}

/** Default {@link RedisHotStoresOptions.keyPrefix}. */
export const DEFAULT_KEY_PREFIX = "plantgate:";

/** The longest {@link RedisHotStoresOptions.keyPrefix}. */
export const MAX_KEY_PREFIX_LENGTH = 128;

const KEY_PREFIX = new RegExp(`^[A-Za-z0-9:._/-]{1,${MAX_KEY_PREFIX_LENGTH}}$`);

/**
 * Whether `value` may be a {@link RedisHotStoresOptions.keyPrefix}: 1 to 128 characters, each a
 * letter, a digit or one of `: . _ - /`.
 *
 * @example
 * isValidKeyPrefix("plantgate:prod:"); // true
 * isValidKeyPrefix("{plantgate}:"); // false: a Redis Cluster hash tag
 */
export function isValidKeyPrefix(value: unknown): value is string {
  return typeof value === "string" && KEY_PREFIX.test(value);
}

/** What {@link redisHotStores} says of a refused key prefix (never the prefix itself: it may be anything, a megabyte or control characters). @internal */
export const KEY_PREFIX_RULE = `must be 1 to ${MAX_KEY_PREFIX_LENGTH} characters, each a letter, a digit or one of : . _ - /`;

/** Default {@link RedisHotStoresOptions.expiryMarginMs}. */
export const DEFAULT_EXPIRY_MARGIN_MS = 60_000;

/**
 * The hot aggregates (brute-force counters, revoked access-token jtis, console sessions, used
 * client-assertion jtis) on a
 * Redis client you created and connected (so TLS, auth, Sentinel and reconnects are yours to set).
 * Spread the result over any other store: the rest (clients, accounts, refresh tokens, plants,
 * signing keys) stays there.
 *
 * Every operation is one Lua script (EVALSHA, falling back to EVAL once after a `NOSCRIPT`; the
 * read-only ones EVAL, flagged `no-writes` on Redis 7.0+ so they answer while Redis pauses writes),
 * so each is atomic: 50 concurrent increments of one counter from any number of instances return
 * 1..50. Records expire by themselves (PEXPIRE) `expiryMarginMs` after their logical end; the
 * core's `deleteExpired` calls still delete exactly what the interfaces say. A failing client
 * (Redis down, a closed connection) surfaces as `StorageError`, which the core answers with 503.
 * Nothing secret is stored: the core passes only hashes (throttle keys, session ids and CSRF
 * tokens as SHA-256) and token ids.
 *
 * Keys touched by one script share no hash slot, so this is for a standalone Redis (or a primary
 * behind Sentinel), not Redis Cluster.
 *
 * @example
 * import { createClient } from "redis";
 * import { createPlantgate } from "@plantgate/core";
 * import { openSqlStorage } from "@plantgate/storage-sql";
 * import { redisHotStores } from "@plantgate/storage-redis";
 *
 * const sql = await openSqlStorage(process.env.DATABASE_URL!);
 * const redis = createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true });
 * redis.on("error", (error) => console.error("redis:", error.message)); // node-redis throws an unheard error
 * await redis.connect();
 * const app = createPlantgate({ storage: { ...sql, ...redisHotStores(redis, { keyPrefix: "auth:" }) } });
 */
export function redisHotStores(client: RedisScriptClient, options: RedisHotStoresOptions = {}): RedisHotStores {
  const marginMs = options.expiryMarginMs ?? DEFAULT_EXPIRY_MARGIN_MS;
  if (!Number.isSafeInteger(marginMs) || marginMs < 1) throw new RangeError("expiryMarginMs must be a positive integer (milliseconds)");
  const timeoutMs = options.commandTimeoutMs ?? nodeRedisTimeout(client);
  // A timer longer than 2^31 - 1 ms fires at once in Node (and in browsers): every command would
  // time out. The timer armed is up to 1.25 times the bound (see deadlines.ts), so that is the cap.
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_COMMAND_TIMEOUT_MS) {
    throw new RangeError(`commandTimeoutMs must be an integer from 0 to ${MAX_COMMAND_TIMEOUT_MS} (milliseconds)`);
  }
  const prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  if (!isValidKeyPrefix(prefix)) throw new TypeError(`keyPrefix ${KEY_PREFIX_RULE}`);
  if (hasOwnKeyPrefix(client)) {
    throw new TypeError("redisHotStores: the Redis client has a keyPrefix of its own, which the stores' scripts cannot follow; create the client without one and pass the prefix as redisHotStores' keyPrefix option");
  }
  listenForErrors(client);
  const ctx: HotContext = { client: timeoutMs > 0 ? timed(client, timeoutMs) : untimed(client), prefix, clock: options.clock ?? Date.now, marginMs };
  return {
    attempts: redisAttemptStore(ctx),
    revokedTokens: redisRevokedTokenStore(ctx),
    sessions: redisSessionStore(ctx),
    assertionJtis: redisAssertionJtiStore(ctx),
  };
}

/**
 * Checks, once, that the user `client` is signed in as may run what {@link redisHotStores} needs
 * under `keyPrefix` (default `plantgate:`): EVALSHA and EVAL (every operation is a script), and on
 * Redis 7.0+ each command the scripts run on each key family under the prefix (asked of the
 * server's ACL with `redis.acl_check_cmd`; Redis 6 cannot be asked without touching keys, so only
 * EVALSHA and EVAL are checked there). Writes nothing, reads no key; two round trips. The same
 * check `openRedisHotStoresFromEnv` runs at start: call it after `connect()` on a client you
 * created, so a user whose ACL refuses something fails your start instead of answering every
 * request 503.
 *
 * Resolves when nothing is refused. Otherwise throws a `RedisConfigError` naming each refused
 * command (`the Redis user may not run what the hot stores need: HSET on auth:a:k:*; ...`), with
 * the server's NOPERM reply as `cause` when EVALSHA or EVAL is refused; it names no URL,
 * user or password. A failure that is not a refusal (a dropped connection, a timeout) is thrown
 * as node-redis threw it; no answer within `timeoutMs` (default 10,000) is an `Error` saying so
 * (the client is left as it is: yours to end or keep). A `keyPrefix` that breaks the rules of {@link RedisHotStoresOptions.keyPrefix}
 * is a `TypeError`, as in `redisHotStores`.
 *
 * @example
 * await redis.connect();
 * await checkRedisPermissions(redis, { keyPrefix: "auth:" }); // throws RedisConfigError when refused
 * const hot = redisHotStores(redis, { keyPrefix: "auth:" });
 */
export async function checkRedisPermissions(client: RedisScriptClient, options: { keyPrefix?: string; timeoutMs?: number } = {}): Promise<void> {
  const prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
  if (!isValidKeyPrefix(prefix)) throw new TypeError(`keyPrefix ${KEY_PREFIX_RULE}`);
  const timeoutMs = options.timeoutMs ?? CHECK_TIMEOUT_MS;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2_147_483_647) throw new TypeError("timeoutMs must be a whole number of milliseconds from 1 to 2147483647");
  // node-redis times out only commands it has not written yet: a server that took the check's
  // commands and never answered held this (and the host's start) without end before 2026-11-30.
  await withinMs(refuseMissingPermissions(client, prefix, "the Redis user"), timeoutMs, () => {}, `checkRedisPermissions: no answer from Redis within ${timeoutMs} ms`);
}

/** How long {@link checkRedisPermissions} waits for its answers by default (as the env start does). */
const CHECK_TIMEOUT_MS = 10_000;

/**
 * Whether a node-redis client (or sentinel, or pool, or a proxy of one) was made with its own
 * `keyPrefix`. node-redis prefixes a script's KEYS but not its arguments, and the scripts build
 * the keys they reach through an index or a record (a session's account set, the records an
 * index names) from arguments: with such a client those went to unprefixed keys, so
 * `sessions.deleteByAccount` found none of an account's sessions (they outlived a disable), a
 * sign-in emptied the account's set, and the sweeps took index entries off without deleting their
 * records (before 2026-11-30).
 */
function hasOwnKeyPrefix(client: RedisScriptClient): boolean {
  const prefix = (client as { _keyPrefix?: unknown })._keyPrefix;
  return (typeof prefix === "string" || prefix instanceof Uint8Array) && prefix.length > 0;
}

/** The largest `commandTimeoutMs`: its timer (up to 1.25 times it) must stay within 2^31 - 1 ms. */
export const MAX_COMMAND_TIMEOUT_MS = Math.floor(2_147_483_647 / 1.25);

/**
 * node-redis emits `error` on every dropped connection, and an EventEmitter with no `error`
 * listener throws it: the process would die on a Redis restart. With none attached yet, one that
 * ignores it is added (the commands themselves fail as `StorageError`, 503); a listener of yours,
 * added before or after, is called as well.
 */
function listenForErrors(client: RedisScriptClient): void {
  const emitter = client as { on?: (event: string, listener: (error: unknown) => void) => unknown; listenerCount?: (event: string) => number };
  if (typeof emitter.on === "function" && typeof emitter.listenerCount === "function" && emitter.listenerCount("error") === 0) emitter.on("error", () => {});
}

/**
 * Refuses a command at once while a node-redis client is not connected, instead of handing it
 * over: a client with its offline queue on (the default) would hold it and run it after the
 * reconnect, long after the caller was told it failed (a counter reset that a later failure count
 * on another instance then loses). Clients without `isReady` are passed through.
 */
function connectedOnly(client: RedisScriptClient, inner: RedisScriptClient): RedisScriptClient {
  const state = client as { isReady?: unknown };
  if (typeof state.isReady !== "boolean") return inner;
  const notConnected = () => Promise.reject(new Error("the Redis client is not connected"));
  return {
    evalSha: (sha1, options) => (state.isReady === true ? inner.evalSha(sha1, options) : notConnected()),
    eval: (script, options) => (state.isReady === true ? inner.eval(script, options) : notConnected()),
  };
}

/** node-redis's default per-command timeout, the bound of a client whose own cannot be read. */
const DEFAULT_COMMAND_TIMEOUT_MS = 5000;

/**
 * The per-command timeout a node-redis client was created with: a client's `_commandOptions`, a
 * sentinel's `commandOptions` (its `_commandOptions` is only a proxy's override, unset on the
 * sentinel itself); 0 when it was made with `timeout: 0`. A client that shows neither (a pool made
 * without `commandOptions`, another library) gets node-redis's default of 5000 ms. Before
 * 2026-11-30 both of the latter, and every sentinel, got 0: no bound, so a primary that stopped
 * answering held each request without end.
 */
function nodeRedisTimeout(client: RedisScriptClient): number {
  const c = client as { _commandOptions?: { timeout?: unknown }; commandOptions?: { timeout?: unknown } };
  const timeout = c._commandOptions?.timeout ?? c.commandOptions?.timeout;
  if (timeout === undefined) return DEFAULT_COMMAND_TIMEOUT_MS;
  return typeof timeout === "number" && Number.isSafeInteger(timeout) && timeout > 0 ? timeout : 0;
}

/** `client` with no bound of ours (`commandTimeoutMs: 0`). */
function untimed(client: RedisScriptClient): ScriptRunner {
  const connected = connectedOnly(client, client);
  return { within: (body) => body(connected, () => false) };
}

/**
 * `client` with its own per-command timer off (node-redis) and one shared timeout instead (see
 * deadlines.ts), over each operation as a whole (its EVALSHA and, after a NOSCRIPT, its EVAL: until
 * 2026-12-02 each command had its own, so an operation could take twice the bound). An operation
 * that may wait to be written (many pending, or Redis found slow) also carries its slot's signal,
 * so a command of it not yet written when the slot expires is dropped from node-redis's queue
 * instead of running when Redis answers again.
 */
function timed(client: RedisScriptClient, timeoutMs: number): ScriptRunner {
  const plain = connectedOnly(client, client.withCommandOptions?.({ timeout: 0 }) ?? client);
  const deadline = deadlines(timeoutMs);
  // One view of the client per slot signal (the signal changes only with the slot).
  let signal: AbortSignal | null = null;
  let view: RedisScriptClient = plain;
  const viewFor = (slotSignal: AbortSignal | null): RedisScriptClient => {
    if (slotSignal === null) return plain;
    if (slotSignal !== signal) {
      signal = slotSignal;
      view = connectedOnly(client, client.withCommandOptions?.({ timeout: 0, abortSignal: slotSignal }) ?? client);
    }
    return view;
  };
  return {
    within<T>(body: (client: RedisScriptClient, expired: () => boolean) => Promise<T>): Promise<T> {
      let over = false;
      return deadline((s) => body(viewFor(s), () => over)).catch((e: unknown) => {
        over = true;
        throw e;
      });
    },
  };
}
