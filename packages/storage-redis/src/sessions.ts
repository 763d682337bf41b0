import type { SessionRecord, SessionStore } from "@plantgate/core";
import type { HotContext } from "./context.js";
import { expiredBatchLoop, integer, keepFor, readOnlyScript, run, script, text, time, TYPED } from "./scripts.js";

// Keys: `{prefix}s:k:{idHash}` a hash {a: accountId, c: csrfHash, t: createdAt, e: expiresAt};
// `{prefix}s:i` a sorted set of idHashes scored by expiresAt, for `deleteExpired(now)`;
// `{prefix}s:u:{accountId}` the set of that account's idHashes, for `deleteByAccount`, expiring
// with its longest session. An index may still name a session Redis has expired: deleteExpired
// counts taking such an entry off as deleting it (it is the last of that session), so prune's
// batches come back full while a backlog of them is left (see DELETE_EXPIRED_STAMPED).

/**
 * KEYS: record, index, account set. ARGV: idHash, accountId, csrfHash, createdAt, expiresAt, keep,
 * record key prefix. The account set first loses the sessions Redis has expired: each sign-in
 * extends the set's life, so under sign-ins that overlap it never expired and gained one dead
 * member per sign-in (read whole by deleteByAccount).
 */
const CREATE = script(`${TYPED}
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
typed(KEYS[2], 'zset')
typed(KEYS[3], 'set')
for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  if redis.call('EXISTS', ARGV[7] .. id) == 0 then redis.call('SREM', KEYS[3], id) end
end
redis.call('HSET', KEYS[1], 'a', ARGV[2], 'c', ARGV[3], 't', ARGV[4], 'e', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
local ttl = redis.call('PTTL', KEYS[3])
if ttl < tonumber(ARGV[6]) then redis.call('PEXPIRE', KEYS[3], ARGV[6]) end
return 1
`);

/** KEYS: record. */
const GET = readOnlyScript(`return redis.call('HMGET', KEYS[1], 'a', 'c', 't', 'e')`);

/** KEYS: record, index. ARGV: idHash, account set prefix. */
const DELETE = script(`${TYPED}
typed(KEYS[1], 'hash')
local account = redis.call('HGET', KEYS[1], 'a')
if not account then return 0 end
typed(KEYS[2], 'zset')
typed(ARGV[2] .. account, 'set')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('SREM', ARGV[2] .. account, ARGV[1])
return 1
`);

/**
 * KEYS: record, index. ARGV: idHash, expiresAt, keep, account set prefix. Forward only, in the one
 * script: of racing touches the latest end stays, and a session already gone (signed out, swept,
 * expired by Redis) is not made again. The record's and the index's expiry move with it, and the
 * account set's is lengthened to the record's, or deleteByAccount would miss a session that
 * outlived its set.
 */
const TOUCH = script(`${TYPED}
typed(KEYS[1], 'hash')
local r = redis.call('HMGET', KEYS[1], 'a', 'e')
if not r[1] or tonumber(r[2]) >= tonumber(ARGV[2]) then return 0 end
typed(KEYS[2], 'zset')
local set = ARGV[4] .. r[1]
typed(set, 'set')
redis.call('HSET', KEYS[1], 'e', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('SADD', set, ARGV[1])
local ttl = redis.call('PTTL', set)
if ttl < tonumber(ARGV[3]) then redis.call('PEXPIRE', set, ARGV[3]) end
return 1
`);

/** KEYS: account set, index. ARGV: accountId, record key prefix. */
const DELETE_BY_ACCOUNT = script(`${TYPED}
typed(KEYS[1], 'set')
typed(KEYS[2], 'zset')
local ids = redis.call('SMEMBERS', KEYS[1])
for _, id in ipairs(ids) do typed(ARGV[2] .. id, 'hash') end
local n = 0
for _, id in ipairs(ids) do
  local record = ARGV[2] .. id
  if redis.call('HGET', record, 'a') == ARGV[1] then
    redis.call('DEL', record)
    redis.call('ZREM', KEYS[2], id)
    n = n + 1
  end
end
redis.call('DEL', KEYS[1])
return n
`);

/** KEYS: index. ARGV: now, record key prefix, account set prefix, limit (-1: none). */
const DELETE_EXPIRED = script(`${TYPED}
local now = tonumber(ARGV[1])
${expiredBatchLoop(4, "typed(ARGV[2] .. id, 'hash'); local a = redis.call('HGET', ARGV[2] .. id, 'a'); if a then typed(ARGV[3] .. a, 'set') end")}  local record = ARGV[2] .. id
  local r = redis.call('HMGET', record, 'a', 'e')
  if not r[1] or tonumber(r[2]) <= now then
    redis.call('DEL', record)
    if r[1] then redis.call('SREM', ARGV[3] .. r[1], id) end
    n = n + 1
  end
end
return n
`);

/**
 * Console sessions in Redis, by the SHA-256 of the session id (the core hashes it; the cookie holds
 * the only copy of the id), each expiring by itself `marginMs` after its `expiresAt`.
 *
 * @internal
 */
export function redisSessionStore(ctx: HotContext): SessionStore {
  const recordPrefix = `${ctx.prefix}s:k:`;
  const accountPrefix = `${ctx.prefix}s:u:`;
  const index = `${ctx.prefix}s:i`;
  return {
    async create(record) {
      const keep = keepFor(record.expiresAt, ctx.clock(), ctx.marginMs);
      const created = await run(
        ctx.client,
        CREATE,
        "sessions.create",
        [recordPrefix + record.idHash, index, accountPrefix + record.accountId],
        [record.idHash, record.accountId, record.csrfHash, String(record.createdAt), String(record.expiresAt), keep, recordPrefix],
      );
      return integer(created) === 1;
    },
    async get(idHash): Promise<SessionRecord | null> {
      const r = (await run(ctx.client, GET, "sessions.get", [recordPrefix + idHash], [])) as unknown[];
      if (r.length !== 4 || r.some((v) => v === null || v === undefined)) return null;
      return { idHash, accountId: text(r[0]), csrfHash: text(r[1]), createdAt: time(r[2]), expiresAt: time(r[3]) };
    },
    async delete(idHash) {
      return integer(await run(ctx.client, DELETE, "sessions.delete", [recordPrefix + idHash, index], [idHash, accountPrefix])) === 1;
    },
    async touch(idHash, expiresAt) {
      const keep = keepFor(expiresAt, ctx.clock(), ctx.marginMs);
      return integer(await run(ctx.client, TOUCH, "sessions.touch", [recordPrefix + idHash, index], [idHash, String(expiresAt), keep, accountPrefix])) === 1;
    },
    async deleteByAccount(accountId) {
      return integer(await run(ctx.client, DELETE_BY_ACCOUNT, "sessions.deleteByAccount", [accountPrefix + accountId, index], [accountId, recordPrefix]));
    },
    async deleteExpired(now, limit) {
      return integer(await run(ctx.client, DELETE_EXPIRED, "sessions.deleteExpired", [index], [String(now), recordPrefix, accountPrefix, String(limit ?? -1)]));
    },
  };
}
