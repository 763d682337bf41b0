import { ErrorReply } from "redis";
import { RedisConfigError } from "./config-error.js";
import { script, type RedisScriptClient } from "./scripts.js";

/**
 * Each key family of the hot stores (after the key prefix; a trailing `:` is a family of records,
 * one key per id) with the commands their scripts run on it, each with arguments of its shape
 * after the key (what `redis.acl_check_cmd` needs to find the key). Kept in step with the scripts
 * by test/permissions.test.ts, which reads every `redis.call` of src/.
 */
export const NEEDS: readonly (readonly [family: string, commands: readonly (readonly string[])[]])[] = [
  ["a:k:", [["TYPE"], ["HGET", "w"], ["HMGET", "c", "w"], ["HINCRBY", "c", "1"], ["HSET", "c", "1"], ["PEXPIRE", "1"], ["DEL"]]],
  ["a:i", [["TYPE"], ["ZADD", "1", "m"], ["ZREM", "m"], ["ZRANGEBYSCORE", "-inf", "1"]]],
  ["r:k:", [["TYPE"], ["SET", "1", "NX", "PX", "1"], ["EXISTS"], ["GET"], ["DEL"]]],
  ["r:i", [["TYPE"], ["ZADD", "1", "m"], ["ZREM", "m"], ["ZRANGEBYSCORE", "-inf", "1"]]],
  ["s:k:", [["TYPE"], ["EXISTS"], ["HSET", "a", "1"], ["PEXPIRE", "1"], ["HGET", "a"], ["HMGET", "a", "e"], ["DEL"]]],
  ["s:i", [["TYPE"], ["ZADD", "1", "m"], ["ZREM", "m"], ["ZRANGEBYSCORE", "-inf", "1"]]],
  ["s:u:", [["TYPE"], ["SMEMBERS"], ["SADD", "m"], ["SREM", "m"], ["PTTL"], ["PEXPIRE", "1"], ["DEL"]]],
  ["j:k:", [["TYPE"], ["SET", "1", "NX", "PX", "1"], ["GET"], ["DEL"]]],
  ["j:i", [["TYPE"], ["ZADD", "1", "m"], ["ZREM", "m"], ["ZRANGEBYSCORE", "-inf", "1"]]],
];

/**
 * ARGV: checks, each its length n then n strings (command, key, arguments). Returns the 1-based
 * numbers of the checks this user may not run (`redis.acl_check_cmd`, Redis 7.0+; an unknown or
 * renamed command counts as refused), or -1 on a server without it (Redis 6: not asked). Writes
 * nothing, reads no key.
 */
const PROBE = script(`if not redis.acl_check_cmd then return -1 end
local refused = {}
local i, check = 1, 0
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  check = check + 1
  local ok, allowed = pcall(redis.acl_check_cmd, unpack(ARGV, i + 1, i + n))
  if not ok or not allowed then refused[#refused + 1] = check end
  i = i + n + 1
end
return refused
`);

const isNoScript = (e: unknown) => e instanceof Error && e.message.startsWith("NOSCRIPT");

/** What {@link missingPermissions} found: nothing missing when both lists are empty. */
export interface MissingPermissions {
  /** EVALSHA and EVAL, each refused with the server's reply (`NOPERM this user has no permissions to run the 'evalsha' command`). */
  scripting: { command: "EVALSHA" | "EVAL"; error: Error }[];
  /** The key families (as ACL patterns, e.g. `plantgate:a:k:*`) with the commands this user may not run on them. */
  keys: { pattern: string; commands: string[] }[];
}

/**
 * What the hot stores need of the user `client` is signed in as and the server refuses: EVALSHA
 * and EVAL (every operation is a script: EVALSHA, then EVAL after a `NOSCRIPT`), and, on Redis
 * 7.0+, each command their scripts run on each key family under `prefix` (asked of the server's
 * ACL with `redis.acl_check_cmd` in one script; Redis 6 has no way to ask without touching keys, so
 * only EVALSHA and EVAL are checked there). Two round trips; writes nothing, reads no key. A failure
 * other than a refusal of EVALSHA or EVAL (a dropped connection) is thrown.
 *
 * @internal
 */
export async function missingPermissions(client: RedisScriptClient, prefix: string): Promise<MissingPermissions> {
  const checks: { pattern: string; command: string }[] = [];
  const argv: string[] = [];
  for (const [family, commands] of NEEDS) {
    const record = family.endsWith(":");
    for (const [command, ...args] of commands) {
      checks.push({ pattern: `${prefix}${family}${record ? "*" : ""}`, command: command! });
      argv.push(String(2 + args.length), command!, `${prefix}${family}${record ? "acl-probe" : ""}`, ...args);
    }
  }
  const options = { keys: [], arguments: argv };
  const scripting: MissingPermissions["scripting"] = [];
  const refusal = (e: unknown) => {
    // An error reply of the server is a refusal; anything else (a dropped connection) is not known to be one.
    if (e instanceof ErrorReply) return e;
    throw e;
  };
  try {
    await client.evalSha(PROBE.sha1, options);
  } catch (e) {
    if (!isNoScript(e)) scripting.push({ command: "EVALSHA", error: refusal(e) });
  }
  let refused: unknown = -1;
  try {
    refused = await client.eval(PROBE.source, options);
  } catch (e) {
    scripting.push({ command: "EVAL", error: refusal(e) });
  }
  const keys: MissingPermissions["keys"] = [];
  if (Array.isArray(refused)) {
    for (const n of refused) {
      const { pattern, command } = checks[Number(n) - 1]!;
      const entry = keys.find((k) => k.pattern === pattern);
      if (entry) entry.commands.push(command);
      else keys.push({ pattern, commands: [command] });
    }
  }
  return { scripting, keys };
}

/**
 * Throws a {@link RedisConfigError} naming everything {@link missingPermissions} found refused
 * (`${who} may not run what the hot stores need: ...`); resolves when nothing is. The first
 * refusal of EVALSHA or EVAL is the cause (a NOPERM); a refusal the server's ACL reported from
 * inside the check has none. Any other failure (a dropped connection) is thrown as it is.
 * Shared by `checkRedisPermissions` (who: "the Redis user") and the env start (who names the
 * password-free URL).
 *
 * @internal
 */
export async function refuseMissingPermissions(client: RedisScriptClient, keyPrefix: string, who: string): Promise<void> {
  const missing = await missingPermissions(client, keyPrefix);
  if (missing.scripting.length === 0 && missing.keys.length === 0) return;
  const refused = [...missing.scripting.map((s) => `${s.command} (${s.error.message})`), ...missing.keys.map((k) => `${k.commands.join(", ")} on ${k.pattern}`)];
  throw new RedisConfigError(
    `${who} may not run what the hot stores need: ${refused.join("; ")} (grant EVALSHA, EVAL and the commands the README's Redis section lists on keys under ${keyPrefix})`,
    missing.scripting.length > 0 ? { cause: missing.scripting[0]!.error } : {},
  );
}
