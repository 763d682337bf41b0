import type { AttemptRecord, AttemptStore } from "@plantgate/core";
import type { HotContext } from "./context.js";
import { expiredBatchLoop, integer, readOnlyScript, run, script, time, TYPED } from "./scripts.js";

// Keys: `{prefix}a:k:{key}` a hash {c: count, w: windowStart}; `{prefix}a:i` a sorted set of keys
// scored by windowStart, so `deleteExpired(before)` finds its counters without a scan. Epoch ms
// travel as strings and are compared as Lua numbers (doubles: exact below 2^53, and the largest
// Date is 8.64e15); windowStart is stored as the caller's string, so a fractional one comes back
// as given. Only the PEXPIRE is rounded (%.0f).

/** KEYS: record, index. ARGV: now, windowMs, key, marginMs. Returns {count, windowStart}. */
const INCREMENT = script(`${TYPED}
typed(KEYS[1], 'hash')
typed(KEYS[2], 'zset')
local now = tonumber(ARGV[1])
local win = tonumber(ARGV[2])
local ws = redis.call('HGET', KEYS[1], 'w')
local count
if ws and tonumber(ws) > now - win then
  count = redis.call('HINCRBY', KEYS[1], 'c', 1)
else
  ws = ARGV[1]
  count = 1
  redis.call('HSET', KEYS[1], 'c', 1, 'w', ws)
  redis.call('ZADD', KEYS[2], ws, ARGV[3])
end
local keep = tonumber(ws) + win - now
if keep < 0 then keep = 0 end
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', keep + tonumber(ARGV[4])))
return {count, ws}
`);

/** KEYS: record. Returns {count, windowStart} or nil. */
const GET = readOnlyScript(`return redis.call('HMGET', KEYS[1], 'c', 'w')`);

/** KEYS: record, index. ARGV: key. */
const RESET = script(`${TYPED}
typed(KEYS[1], 'hash')
typed(KEYS[2], 'zset')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`);

/**
 * KEYS: record, index. ARGV: windowStart, key, count. Takes `count` back when the record is of
 * that window, never below 0; a record left at 0 is deleted, as RESET does.
 */
const REFUND = script(`${TYPED}
typed(KEYS[1], 'hash')
typed(KEYS[2], 'zset')
local ws = redis.call('HGET', KEYS[1], 'w')
if ws and tonumber(ws) == tonumber(ARGV[1]) then
  local count = tonumber(redis.call('HGET', KEYS[1], 'c'))
  local back = tonumber(ARGV[3])
  if count and count > back then
    redis.call('HINCRBY', KEYS[1], 'c', -back)
  elseif count then
    redis.call('DEL', KEYS[1])
    redis.call('ZREM', KEYS[2], ARGV[2])
  end
end
return 1
`);

/** KEYS: index. ARGV: before, record key prefix, limit (-1: none). Returns how many counters it deleted. */
const DELETE_EXPIRED = script(`${TYPED}
local before = tonumber(ARGV[1])
${expiredBatchLoop(3, "typed(ARGV[2] .. id, 'hash')")}  local record = ARGV[2] .. id
  local ws = redis.call('HGET', record, 'w')
  if not ws or tonumber(ws) <= before then
    redis.call('DEL', record)
    n = n + 1
  end
end
return n
`);

/**
 * Failure counters in Redis: one script per increment (read the window, open a new one or add
 * one, set the expiry), so concurrent increments from any number of instances never lose a count.
 * A counter expires by itself `marginMs` after its window ends as the caller's `now` places it
 * (the expiry is `windowStart + windowMs - now` from Redis's present): since 2026-12-03 core
 * passes the start of the clock's window as `now` for client authentication's address budget and
 * a client's share of it, so those live up to one window longer (harmless: core's reads take a
 * record whose window is over for none, and its sweep deletes it by the index).
 *
 * @internal
 */
export function redisAttemptStore(ctx: HotContext): AttemptStore {
  const recordPrefix = `${ctx.prefix}a:k:`;
  const index = `${ctx.prefix}a:i`;
  const margin = String(ctx.marginMs);
  return {
    async increment(key, now, windowMs): Promise<AttemptRecord> {
      const reply = (await run(ctx.client, INCREMENT, "attempts.increment", [recordPrefix + key, index], [String(now), String(windowMs), key, margin])) as unknown[];
      return { key, count: integer(reply[0]), windowStart: time(reply[1]) };
    },
    async get(key) {
      const reply = (await run(ctx.client, GET, "attempts.get", [recordPrefix + key], [])) as unknown[];
      if (reply[0] === null || reply[0] === undefined || reply[1] === null || reply[1] === undefined) return null;
      return { key, count: integer(reply[0]), windowStart: time(reply[1]) };
    },
    async reset(key) {
      await run(ctx.client, RESET, "attempts.reset", [recordPrefix + key, index], [key]);
    },
    async refund(key, windowStart, count) {
      await run(ctx.client, REFUND, "attempts.refund", [recordPrefix + key, index], [String(windowStart), key, String(count)]);
    },
    async deleteExpired(before, limit) {
      return integer(await run(ctx.client, DELETE_EXPIRED, "attempts.deleteExpired", [index], [String(before), recordPrefix, String(limit ?? -1)]));
    },
  };
}
