/**
 * `@plantgate/storage-redis/env`: the hot stores from environment variables, as the example
 * servers use them. Creates and owns its node-redis client.
 */
import { AMBIGUOUS_USERINFO, redactConnectionUrl, userinfoAmbiguous } from "@plantgate/core";
import { createClient } from "redis";
import { DEFAULT_KEY_PREFIX, isValidKeyPrefix, KEY_PREFIX_RULE, redisHotStores, type RedisHotStores } from "./index.js";
import { RedisConfigError } from "./config-error.js";
import { withinMs } from "./deadlines.js";
import { refuseMissingPermissions } from "./permissions.js";

export { RedisConfigError } from "./config-error.js";

/** The hot stores on a client this module opened; `close()` ends that client. */
export interface OpenedRedisHotStores {
  stores: RedisHotStores;
  /** Where they live, password-free, e.g. `redis://127.0.0.1:6379/ (prefix plantgate:)`. */
  display: string;
  /**
   * What the server's settings put at risk, read from `INFO` at start (for a `warn` log line): an
   * evicting `maxmemory-policy`, no append-only file. Empty when both are safe or `INFO` is refused.
   */
  warnings: string[];
  /** Ends the client: waits for pending replies up to 2 s (a hung server), then drops the connection. */
  close(): Promise<void>;
}

/** How long `close()` waits for pending replies before it drops the connection. */
const CLOSE_WAIT_MS = 2000;

/** The risks a Redis server's `INFO` (sections memory and persistence) shows for the hot stores. */
export function redisRisks(info: string): string[] {
  const field = (name: string) => new RegExp(`^${name}:(\\S*)`, "m").exec(info)?.[1];
  const risks: string[] = [];
  const policy = field("maxmemory_policy");
  if (policy !== undefined && policy !== "noeviction") {
    risks.push(`Redis maxmemory-policy is ${policy}: under memory pressure it evicts revoked tokens, lock-out counters and used assertion ids (all have expiries); set noeviction`);
  }
  if (field("aof_enabled") === "0") {
    risks.push("Redis keeps no append-only file (appendonly no): a restart forgets revoked tokens, lock-out counters and used assertion ids (a client assertion sent before it can be replayed until it expires); set appendonly yes where they must survive one");
  }
  return risks;
}

/**
 * The Redis URL as it may be printed: the password (in the userinfo or a query parameter) replaced
 * by `***`, and an unparsable URL shown as its scheme only (core's `redactConnectionUrl`).
 */
export const redactRedisUrl: (url: string) => string = redactConnectionUrl;

/** The env client's bound on commands in its queue (written and awaiting replies, or not yet written). */
export const COMMANDS_QUEUE_MAX = 10_000;

/** How long the start waits for Redis by default: connect and handshake, then the permission check, then the INFO reads. */
const START_WAIT_MS = 10_000;

/**
 * Opens the hot stores when `PLANTGATE_REDIS_URL` (`redis://…` or `rediss://…` for TLS) is set,
 * under the key prefix `PLANTGATE_REDIS_KEY_PREFIX` (default `plantgate:`); null when it is not.
 * The client fails commands at once while disconnected (no offline queue, so the core answers 503
 * instead of waiting) and reconnects in the background; an unreachable Redis at start-up, one
 * that does not answer within 10 s (`startWaitMs`), or a user whose ACL refuses EVALSHA, EVAL or a
 * command the stores' scripts run on a key under the prefix (Redis 7.0+ is asked for each; Redis 6
 * for EVALSHA and EVAL only), is a `RedisConfigError` naming the password-free URL and what is
 * refused. A refused `INFO` is not (see `warnings`).
 *
 * @example
 * const sql = await openStorageFromEnv(process.env, { cwd: process.cwd() });
 * const hot = await openRedisHotStoresFromEnv(process.env);
 * const app = createPlantgate({ storage: { ...sql, ...hot?.stores } });
 */
export async function openRedisHotStoresFromEnv(env: Record<string, string | undefined>, options: { clock?: () => number; startWaitMs?: number } = {}): Promise<OpenedRedisHotStores | null> {
  const startWaitMs = options.startWaitMs ?? START_WAIT_MS;
  const url = env.PLANTGATE_REDIS_URL;
  if (!url) return null;
  if (!/^rediss?:\/\//.test(url)) throw new RedisConfigError("PLANTGATE_REDIS_URL must start with redis:// or rediss://");
  const keyPrefix = env.PLANTGATE_REDIS_KEY_PREFIX || DEFAULT_KEY_PREFIX;
  // Checked before connecting, so a refused prefix leaves no client open.
  if (!isValidKeyPrefix(keyPrefix)) throw new RedisConfigError(`PLANTGATE_REDIS_KEY_PREFIX ${KEY_PREFIX_RULE}`);
  const shown = redactRedisUrl(url);
  // A password with an unescaped "@" and then "/", "?" or "#" ends the host early: the host the
  // driver would try, and name in its error ("ENOTFOUND secret"), is part of the password. Until
  // 2026-12-01 it was tried, and that part printed.
  if (userinfoAmbiguous(url)) throw new RedisConfigError(`PLANTGATE_REDIS_URL is not a valid Redis URL: ${shown}; ${AMBIGUOUS_USERINFO}`);
  let connected = false;
  let client: ReturnType<typeof createClient>;
  try {
    client = createClient({
      url,
      disableOfflineQueue: true,
      // Commands waiting to be written or answered, at most: past it a command fails at once (503)
      // instead of queueing, so a Redis that hangs cannot grow the process without bound before the
      // first timeouts (see redisHotStores' commandTimeoutMs).
      commandsQueueMaxLength: COMMANDS_QUEUE_MAX,
      socket: {
        connectTimeout: 5000,
        // Before the first connection: give up (start-up fails); after it: retry, backing off to 2 s.
        reconnectStrategy: (retries: number, cause: Error) => (connected ? Math.min(50 * 2 ** retries, 2000) : cause),
      },
    });
  } catch {
    // node-redis parses the URL here; its TypeError (e.g. Node's "Invalid URL") carries the whole
    // URL, password included, in its `input`: neither it nor its message is passed on.
    throw new RedisConfigError(`PLANTGATE_REDIS_URL is not a valid Redis URL: ${shown}`);
  }
  // Errors reach the core as rejected commands (StorageError, 503); the event only needs a listener.
  client.on("error", () => {});
  try {
    // connectTimeout bounds the TCP connect only, not node-redis's handshake after it: a server that
    // accepts and never answers held the start (and a CLI cron job) without end before 2026-11-29.
    await withinMs(client.connect(), startWaitMs, () => client.destroy(), `no answer within ${startWaitMs} ms`);
    connected = true;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new RedisConfigError(`cannot reach Redis at ${shown}: ${reason}`, { cause: error });
  }
  // The user's permissions: an ACL without EVALSHA or EVAL, or without the scripts' commands on the
  // prefix's keys, started without a word and then answered every request 503 (the reason only in
  // a log line per request) until 2026-11-30. Checked without writing anything (see permissions.ts).
  // The same check as checkRedisPermissions (the package index), naming the password-free URL.
  try {
    await withinMs(refuseMissingPermissions(client, keyPrefix, `the Redis user at ${shown}`), startWaitMs, () => client.destroy(), `no answer within ${startWaitMs} ms`);
  } catch (error) {
    client.destroy();
    if (error instanceof RedisConfigError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new RedisConfigError(`cannot check the Redis user's permissions at ${shown}: ${reason}`, { cause: error });
  }
  let warnings: string[] = [];
  try {
    // Bounded too; past the wait nothing is known and nothing said (the commands' own timeout rules).
    const info = withinMs(Promise.all([client.info("memory"), client.info("persistence")]), startWaitMs, () => {}, "INFO got no answer");
    warnings = redisRisks((await info).join("\n"));
  } catch {
    // INFO refused (an ACL without it, a managed service): nothing known, nothing said. The stores
    // do not need INFO (only these warnings read it), so its refusal does not stop the start.
  }
  return {
    stores: redisHotStores(client, { keyPrefix, ...(options.clock ? { clock: options.clock } : {}) }),
    display: `${shown} (prefix ${keyPrefix})`,
    warnings,
    close: async () => {
      if (!client.isOpen) return;
      // close() waits for every pending reply, which a hung server never sends: past the wait, the
      // connection is dropped, so a shutdown goes on to close the SQL store. (close() marks the
      // client closed at once, so isOpen says nothing then: destroyed regardless.)
      await withinMs(client.close(), CLOSE_WAIT_MS, () => client.destroy(), "close got no answer").catch(() => {});
    },
  };
}
