import type { RevokedTokenStore } from "@plantgate/core";
import type { HotContext } from "./context.js";
import { DELETE_EXPIRED_STAMPED, integer, keepFor, readOnlyScript, run, script, TYPED } from "./scripts.js";

// Keys: `{prefix}r:k:{jti}` holds expiresAt; `{prefix}r:i` a sorted set of jtis scored by
// expiresAt, for `deleteExpired(now)`.

/**
 * KEYS: record, index. ARGV: expiresAt, jti, keep (ms). SET NX keeps the first expiresAt; returns 1
 * when this call recorded the jti, 0 when it was there (one script: of concurrent calls one gets 1).
 */
const ADD = script(`${TYPED}
typed(KEYS[1], 'string')
typed(KEYS[2], 'zset')
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[3]) then
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
  return 1
end
return 0
`);

/** KEYS: record. */
const HAS = readOnlyScript(`return redis.call('EXISTS', KEYS[1])`);

/**
 * Revoked access-token jtis in Redis, each expiring by itself `marginMs` after the token would
 * have expired anyway (read on every bearer request: one `EXISTS`).
 *
 * @internal
 */
export function redisRevokedTokenStore(ctx: HotContext): RevokedTokenStore {
  const recordPrefix = `${ctx.prefix}r:k:`;
  const index = `${ctx.prefix}r:i`;
  return {
    async add(jti, expiresAt) {
      return integer(await run(ctx.client, ADD, "revokedTokens.add", [recordPrefix + jti, index], [String(expiresAt), jti, keepFor(expiresAt, ctx.clock(), ctx.marginMs)])) === 1;
    },
    async has(jti) {
      return integer(await run(ctx.client, HAS, "revokedTokens.has", [recordPrefix + jti], [])) === 1;
    },
    async deleteExpired(now, limit) {
      return integer(await run(ctx.client, DELETE_EXPIRED_STAMPED, "revokedTokens.deleteExpired", [index], [String(now), recordPrefix, String(limit ?? -1)]));
    },
  };
}
