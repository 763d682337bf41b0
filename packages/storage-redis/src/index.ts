/**
 * `@plantgate/storage-redis`: plantgate's hot, short-lived state in Redis, beside any SQL store.
 * See {@link redisHotStores}.
 */
import type { AssertionJtiStore, AttemptStore, RevokedTokenStore, SessionStore } from "@plantgate/core";
import { redisAssertionJtiStore } from "./assertion-jtis.js";
import { redisAttemptStore } from "./attempts.js";
import type { HotContext } from "./context.js";
import { deadlines } from "./deadlines.js";
import { redisRevokedTokenStore } from "./revoked-tokens.js";
import type { RedisScriptClient } from "./scripts.js";
import { redisSessionStore } from "./sessions.js";

export type { RedisScriptClient } from "./scripts.js";
export { CommandTimeoutError } from "./deadlines.js";

/** Options of {@link redisHotStores}. */
export interface RedisHotStoresOptions {
  /**
   * Prepended to every key, so several deployments (or tests) can share one Redis database.
   * Default `plantgate:`.
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
   * How long a command may wait for its reply before the operation fails (`StorageError`, so
   * 503). Default: the node-redis client's own `commandOptions.timeout` (node-redis's default is
   * 5000). With a positive value the hot stores send their commands with node-redis's per-command
   * timer off and enforce the bound themselves with one timer per quarter of it (a command fails
   * after between 1 and 1.25 times the bound): node-redis's `AbortSignal.timeout` per command
   * cost about 20 µs of CPU per request. `0`: leave timeouts to the client as configured.
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

/** Default {@link RedisHotStoresOptions.expiryMarginMs}. */
export const DEFAULT_EXPIRY_MARGIN_MS = 60_000;

/**
 * The hot aggregates (brute-force counters, revoked access-token jtis, console sessions, used
 * client-assertion jtis) on a
 * Redis client you created and connected (so TLS, auth, Sentinel and reconnects are yours to set).
 * Spread the result over any other store: the rest (clients, accounts, refresh tokens, plants,
 * signing keys) stays there.
 *
 * Every operation is one Lua script (EVALSHA, falling back to EVAL once after a `NOSCRIPT`), so
 * each is atomic: 50 concurrent increments of one counter from any number of instances return
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
 * const redis = await createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true }).connect();
 * const app = createPlantgate({ storage: { ...sql, ...redisHotStores(redis, { keyPrefix: "auth:" }) } });
 */
export function redisHotStores(client: RedisScriptClient, options: RedisHotStoresOptions = {}): RedisHotStores {
  const marginMs = options.expiryMarginMs ?? DEFAULT_EXPIRY_MARGIN_MS;
  if (!Number.isSafeInteger(marginMs) || marginMs < 1) throw new RangeError("expiryMarginMs must be a positive integer (milliseconds)");
  const timeoutMs = options.commandTimeoutMs ?? nodeRedisTimeout(client);
  // A timer longer than 2^31 - 1 ms fires at once in Node (and in browsers): every command would time out.
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > 2_147_483_647) throw new RangeError("commandTimeoutMs must be an integer from 0 to 2147483647 (milliseconds)");
  const ctx: HotContext = { client: timeoutMs > 0 ? timed(client, timeoutMs) : client, prefix: options.keyPrefix ?? DEFAULT_KEY_PREFIX, clock: options.clock ?? Date.now, marginMs };
  return {
    attempts: redisAttemptStore(ctx),
    revokedTokens: redisRevokedTokenStore(ctx),
    sessions: redisSessionStore(ctx),
    assertionJtis: redisAssertionJtiStore(ctx),
  };
}

/** The per-command timeout a node-redis client was created with (0 when none, or not node-redis). */
function nodeRedisTimeout(client: RedisScriptClient): number {
  const timeout = (client as { _commandOptions?: { timeout?: unknown } })._commandOptions?.timeout;
  return typeof timeout === "number" && Number.isSafeInteger(timeout) && timeout > 0 ? timeout : 0;
}

/** `client` with its own per-command timer off (node-redis) and one shared timeout instead (see deadlines.ts). */
function timed(client: RedisScriptClient, timeoutMs: number): RedisScriptClient {
  const untimed = client.withCommandOptions?.({ timeout: 0 }) ?? client;
  const within = deadlines(timeoutMs);
  return {
    evalSha: (sha1, options) => within(() => untimed.evalSha(sha1, options)),
    eval: (script, options) => within(() => untimed.eval(script, options)),
  };
}
