import { createHash } from "node:crypto";
import { StorageError } from "@plantgate/core";

/**
 * What the hot stores need of a Redis client: `EVALSHA` and `EVAL` with keys and arguments, as
 * node-redis (`redis` 6) clients have them. Every operation of every store is one Lua script, so
 * each is atomic on the server and costs one round trip.
 *
 * @example
 * import { createClient } from "redis";
 * const client: RedisScriptClient = await createClient({ url: "redis://127.0.0.1:6379" }).connect();
 */
export interface RedisScriptClient {
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** node-redis: the same connection with other command options (used to turn its per-command timer off, see `commandTimeoutMs`). */
  withCommandOptions?(options: { timeout: number; abortSignal?: AbortSignal }): RedisScriptClient;
}

/**
 * How the stores reach Redis: `within` runs `body`, every command of one operation (its EVALSHA
 * and, after a NOSCRIPT, its EVAL), with `client` under one deadline for the whole operation;
 * `expired()` tells `body` that the deadline has passed (the operation has failed), so it sends
 * nothing more.
 *
 * @internal
 */
export interface ScriptRunner {
  within<T>(body: (client: RedisScriptClient, expired: () => boolean) => Promise<T>): Promise<T>;
}

/** A Lua script and its SHA-1, the name Redis caches it under. */
export interface Script {
  readonly source: string;
  readonly sha1: string;
  /** A read-only script ({@link readOnlyScript}): `source` without its `#!lua flags=no-writes` line, for Redis 6. */
  readonly withoutFlags?: string;
}

/** @internal */
export function script(source: string): Script {
  return { source, sha1: createHash("sha1").update(source).digest("hex") };
}

/**
 * A script that writes nothing, flagged so (`#!lua flags=no-writes`, Redis 7.0+). Redis counts a
 * script without flags as a write: while it pauses writes (`CLIENT PAUSE WRITE`, what `FAILOVER`
 * does while the replica catches up) it held such a script, and every later command of its
 * connection, until the pause ended, so before 2026-12-02 every bearer request (`revokedTokens.has`)
 * and client authentication (`attempts.get`) failed with 503 during a failover. Sent as EVAL,
 * never EVALSHA: Redis reads the flags of an EVALSHA only from its script cache, so after a restart
 * (an empty cache) an EVALSHA would be held too; the source is a few dozen bytes, cached by Redis under
 * its SHA-1 like an EVALSHA's, and needs no NOSCRIPT round trip. Redis 6 cannot parse the flags
 * line (a compile error): {@link run} then sends `withoutFlags`, for that client from then on.
 *
 * @internal
 */
export function readOnlyScript(body: string): Script {
  return { ...script(`#!lua flags=no-writes\n${body}`), withoutFlags: body };
}

const isCompileError = (e: unknown) => e instanceof Error && e.message.includes("Error compiling script");

/** The runners (of {@link run}) whose server could not parse a script's flags line (Redis 6). */
const withoutFlags = new WeakSet<ScriptRunner>();

const isNoScript = (e: unknown) => e instanceof Error && e.message.startsWith("NOSCRIPT");
const isWrongType = (e: unknown) => e instanceof Error && e.message.startsWith("WRONGTYPE");

/**
 * Lua that defines `typed(key, type)`: a `WRONGTYPE` error when `key` exists and holds another
 * type. Every script that writes calls it for each key it will touch before its first write: Redis
 * does not undo what a script wrote before it failed, and a key of another type under the prefix
 * (something else writing there) failed a script midway, its earlier writes kept (a used assertion
 * jti recorded while its index write was refused, so the caller got a 503 and its retry was refused
 * as a replay; a counter opened but never indexed; a session deleted but left in its account's set).
 *
 * @internal
 */
export const TYPED = `local function typed(key, want)
  local got = redis.call('TYPE', key)['ok']
  if got ~= 'none' and got ~= want then error({ err = 'WRONGTYPE a key under the key prefix holds a ' .. got .. ', not a ' .. want }) end
end
`;

/**
 * Runs `s` by its SHA-1, falling back to sending the source once when this server has not seen
 * it (first use, a restart, `SCRIPT FLUSH`, a failover): EVAL also caches it for the next call. A
 * read-only script ({@link readOnlyScript}) is sent as EVAL, flagged, or without its flags once
 * this client's server could not parse them (Redis 6). The commands of one operation share one
 * deadline (`runner`, see index.ts): until 2026-12-02 each had its own, so a server slow to answer
 * the NOSCRIPT that then hung held the request up to twice the command timeout.
 * Any failure of the client or the server is an outage to the core: a `StorageError` (503),
 * naming the operation, never a key or an argument. A key of another type under the prefix says
 * so in the message (the scripts check types before they write, so nothing was changed).
 *
 * @internal
 */
export async function run(runner: ScriptRunner, s: Script, what: string, keys: string[], args: string[]): Promise<unknown> {
  const options = { keys, arguments: args };
  try {
    return await runner.within(async (client, expired) => {
      if (s.withoutFlags !== undefined) {
        if (withoutFlags.has(runner)) return await client.eval(s.withoutFlags, options);
        try {
          return await client.eval(s.source, options);
        } catch (e) {
          if (!isCompileError(e) || expired()) throw e;
          withoutFlags.add(runner);
          return await client.eval(s.withoutFlags, options);
        }
      }
      try {
        return await client.evalSha(s.sha1, options);
      } catch (e) {
        // A NOSCRIPT after the deadline: the operation has failed, and its EVAL would run late.
        if (!isNoScript(e) || expired()) throw e;
        return await client.eval(s.source, options);
      }
    });
  } catch (e) {
    if (isWrongType(e)) throw new StorageError(`redis: ${what} failed: a key under the key prefix holds a value of another type (does something else write under this prefix?); nothing was changed`, { cause: e });
    throw new StorageError(`redis: ${what} failed`, { cause: e });
  }
}

/** A reply string, whatever type mapping the client uses (strings or Buffers). */
export function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) return new TextDecoder().decode(value);
  if (typeof value === "number") return String(value);
  throw new StorageError(`redis: unexpected reply type ${value === null ? "null" : typeof value}`);
}

/** A reply integer (Lua numbers come back as integers; scripts return epoch ms as strings). */
export function integer(value: unknown): number {
  const n = typeof value === "number" ? value : Number(text(value));
  if (!Number.isSafeInteger(n)) throw new StorageError("redis: unexpected reply, not an integer");
  return n;
}

/**
 * A reply holding epoch ms as the stores wrote it (`String(n)` of the caller's number): any finite
 * number, a fraction included, so a time comes back exactly as it was given. Read as an integer,
 * a fractional clock (`performance.timeOrigin + performance.now()`) failed every throttle read
 * and every console session read with a 503 before 2026-11-29.
 *
 * @internal
 */
export function time(value: unknown): number {
  const n = typeof value === "number" ? value : text(value) === "" ? Number.NaN : Number(text(value));
  if (!Number.isFinite(n)) throw new StorageError("redis: unexpected reply, not a time");
  return n;
}

/**
 * Milliseconds a record is kept in Redis: until `until` (epoch ms) as seen from `now`, plus the
 * margin, and at least the margin (a record that is already over still lives that long, so the
 * core's own `deleteExpired(now)` calls see and count it).
 *
 * @internal
 */
export function keepFor(until: number, now: number, marginMs: number): string {
  return String(Math.max(0, Math.ceil(until - now)) + marginMs);
}

/**
 * The Lua that opens every `deleteExpired` script (after {@link TYPED}): `ids` holds the members
 * of the index (KEYS[1]) scored at most ARGV[1], at most `limitArg` of them (the batch limit; -1:
 * all); `check` (Lua with `id` in scope) runs for each of them before anything is written, to
 * check the types of the keys the loop will write; then each is taken off the index as the loop
 * meets it (`id` in the loop body the caller writes before `end`).
 *
 * @internal
 */
export function expiredBatchLoop(limitArg: number, check: string): string {
  return `local limit = tonumber(ARGV[${limitArg}])
local ids
if limit >= 0 then ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, limit)
else ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1]) end
for _, id in ipairs(ids) do
  ${check}
end
local n = 0
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
`;
}

/**
 * `deleteExpired` of a store whose records hold their `expiresAt` as their value, indexed by a
 * sorted set scored by it (revoked jtis, used assertion jtis). KEYS: index. ARGV: now, record key
 * prefix, limit (-1: none). Returns how many entries it deleted.
 *
 * An index entry whose record Redis already expired (PEXPIRE) counts as deleted: taking it off is
 * what is left of deleting that entry. Counting only records still there made a batch of such
 * leftovers come back as 0, so `prune` (which calls again only while batches come back full)
 * stopped after one batch and the index, which has no expiry of its own, grew without bound under
 * steady traffic (used assertion jtis have no other sweep).
 *
 * @internal
 */
export const DELETE_EXPIRED_STAMPED = script(`${TYPED}
local now = tonumber(ARGV[1])
${expiredBatchLoop(3, "typed(ARGV[2] .. id, 'string')")}  local record = ARGV[2] .. id
  local exp = redis.call('GET', record)
  if not exp or tonumber(exp) <= now then
    redis.call('DEL', record)
    n = n + 1
  end
end
return n
`);
