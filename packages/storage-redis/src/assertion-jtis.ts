import type { AssertionJtiStore } from "@plantgate/core";
import type { HotContext } from "./context.js";
import { DELETE_EXPIRED_STAMPED, integer, keepFor, run, script, TYPED } from "./scripts.js";

// Keys: `{prefix}j:k:{key}` holds expiresAt; `{prefix}j:i` a sorted set of keys scored by
// expiresAt, for `deleteExpired(now)`.

/** KEYS: record, index. ARGV: expiresAt, key, keep (ms). SET NX PX: only the first caller records it. */
const USE = script(`${TYPED}
typed(KEYS[1], 'string')
typed(KEYS[2], 'zset')
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[3]) then
  redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
  return 1
end
return 0
`);

/**
 * Used client-assertion jtis in Redis (`SET NX PX`), so two instances refuse a replayed
 * assertion; each expires by itself `marginMs` after the assertion would have expired anyway.
 *
 * @internal
 */
export function redisAssertionJtiStore(ctx: HotContext): AssertionJtiStore {
  const recordPrefix = `${ctx.prefix}j:k:`;
  const index = `${ctx.prefix}j:i`;
  return {
    async use(key, expiresAt) {
      return integer(await run(ctx.client, USE, "assertionJtis.use", [recordPrefix + key, index], [String(expiresAt), key, keepFor(expiresAt, ctx.clock(), ctx.marginMs)])) === 1;
    },
    async deleteExpired(now, limit) {
      return integer(await run(ctx.client, DELETE_EXPIRED_STAMPED, "assertionJtis.deleteExpired", [index], [String(now), recordPrefix, String(limit ?? -1)]));
    },
  };
}
