import { readFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openRedisHotStoresFromEnv, RedisConfigError, redisRisks, type OpenedRedisHotStores } from "../src/env.js";
import { connect, describeIfRedis, dropPrefix, freshPrefix, haveServer, IN_CI, probeRedis, REDIS_SERVER, REDIS_URL, withAclUser, type TestClient } from "./support.js";

describe("openRedisHotStoresFromEnv: configuration", () => {
  it("is null without PLANTGATE_REDIS_URL (empty counts as unset)", async () => {
    expect(await openRedisHotStoresFromEnv({})).toBeNull();
    expect(await openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: "" })).toBeNull();
  });

  it("refuses a URL that is not redis:// or rediss://", async () => {
    await expect(openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: "http://127.0.0.1:6379" })).rejects.toThrow(
      new RedisConfigError("PLANTGATE_REDIS_URL must start with redis:// or rediss://"),
    );
  });

  it("refuses a PLANTGATE_REDIS_KEY_PREFIX that redisHotStores would (braces, glob characters, control characters, too long) before connecting, without echoing it", async () => {
    for (const prefix of ["{plantgate}:", "plantgate*", "new\nline:", "x".repeat(129)]) {
      // An address nothing answers at: the prefix is refused first, no connection is tried.
      await expect(openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: "redis://127.0.0.1:1", PLANTGATE_REDIS_KEY_PREFIX: prefix })).rejects.toThrow(
        new RedisConfigError("PLANTGATE_REDIS_KEY_PREFIX must be 1 to 128 characters, each a letter, a digit or one of : . _ - /"),
      );
    }
  });

  it("an unreachable Redis fails start-up with the URL, its password replaced", async () => {
    const error = await openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: "redis://user:hunter2-secret@127.0.0.1:1/" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisConfigError);
    expect((error as Error).message).toMatch(/^cannot reach Redis at redis:\/\/user:\*\*\*@127\.0\.0\.1:1\/: .+/);
    expect((error as Error).message).not.toContain("hunter2");
  });

  it("a server that accepts the connection and never answers fails start-up within startWaitMs, its connection dropped (the start hung without end)", async () => {
    const sockets = new Set<Socket>();
    let closed = 0;
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => void closed++);
      // Read (and never answer), so that the client's end is seen.
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const started = performance.now();
      const error = await openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: `redis://user:hunter2-secret@127.0.0.1:${port}/` }, { startWaitMs: 500 }).catch((e: unknown) => e);
      expect(performance.now() - started).toBeLessThan(3000);
      expect(error).toEqual(new RedisConfigError(`cannot reach Redis at redis://user:***@127.0.0.1:${port}/: no answer within 500 ms`));
      await expect.poll(() => closed, { timeout: 1000 }).toBeGreaterThanOrEqual(1);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it("a malformed URL (a port out of range, a database that is no number) is a RedisConfigError that holds the password nowhere, cause included", async () => {
    for (const [url, shown] of [
      ["redis://:hunter2-secret@127.0.0.1:99999", "redis://*** (not a valid URL: shown without its address)"],
      ["redis://:hunter2-secret@127.0.0.1:6379/abc", "redis://:***@127.0.0.1:6379/abc"],
    ] as const) {
      const error = await openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: url }).catch((e: unknown) => e);
      expect(error).toEqual(new RedisConfigError(`PLANTGATE_REDIS_URL is not a valid Redis URL: ${shown}`));
      expect((error as Error).cause).toBeUndefined();
      expect(inspect(error, { depth: 10 })).not.toContain("hunter2");
    }
  });
});

describe("redisRisks: what a Redis server's INFO puts at risk", () => {
  const info = (policy: string, aof: string) => `# Memory\r\nused_memory:1000\r\nmaxmemory_policy:${policy}\r\n# Persistence\r\nloading:0\r\naof_enabled:${aof}\r\n`;
  it("an evicting policy and no append-only file are each named; noeviction with appendonly is quiet", () => {
    expect(redisRisks(info("noeviction", "1"))).toEqual([]);
    expect(redisRisks(info("allkeys-lru", "1"))).toEqual([
      "Redis maxmemory-policy is allkeys-lru: under memory pressure it evicts revoked tokens, lock-out counters and used assertion ids (all have expiries); set noeviction",
    ]);
    expect(redisRisks(info("noeviction", "0"))).toEqual([
      "Redis keeps no append-only file (appendonly no): a restart forgets revoked tokens, lock-out counters and used assertion ids (a client assertion sent before it can be replayed until it expires); set appendonly yes where they must survive one",
    ]);
    expect(redisRisks(info("volatile-ttl", "0"))).toHaveLength(2);
    // Fields it does not find (a server that hides them) say nothing.
    expect(redisRisks("# Memory\r\n")).toEqual([]);
  });
});

const problem = await probeRedis();

describeIfRedis("openRedisHotStoresFromEnv: on the machine's Redis", problem, () => {
  let admin: TestClient;
  const prefix = freshPrefix();
  beforeAll(async () => {
    admin = await connect();
  });
  afterAll(async () => {
    await dropPrefix(admin, prefix);
    admin.destroy();
  });

  it("opens the hot stores under PLANTGATE_REDIS_KEY_PREFIX; close() ends its client", async () => {
    const opened = await openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: REDIS_URL, PLANTGATE_REDIS_KEY_PREFIX: prefix });
    expect(opened).not.toBeNull();
    expect(opened!.display).toBe(`${new URL(REDIS_URL).toString().replace(/:[^:@/]*@/, ":***@")} (prefix ${prefix})`);
    await opened!.stores.revokedTokens.add("jti-env", Date.now() + 60_000);
    expect(await admin.exists(`${prefix}r:k:jti-env`)).toBe(1);
    await opened!.close();
    await expect(opened!.stores.revokedTokens.has("jti-env")).rejects.toThrow("redis: revokedTokens.has failed");
  });

  it("warnings name what this Redis server's settings put at risk, as its INFO says", async () => {
    const opened = await openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: REDIS_URL, PLANTGATE_REDIS_KEY_PREFIX: prefix });
    try {
      const expected = redisRisks(`${await admin.info("memory")}\n${await admin.info("persistence")}`);
      expect(opened!.warnings).toEqual(expected);
      // This machine's Redis keeps nothing on disk: the warning is there.
      if ((await admin.info("persistence")).includes("aof_enabled:0")) expect(opened!.warnings.some((w) => w.startsWith("Redis keeps no append-only file"))).toBe(true);
    } finally {
      await opened!.close();
    }
  });
});

describe.skipIf(!haveServer && !IN_CI)(`openRedisHotStoresFromEnv: a private redis-server whose user's ACL refuses some of what the hot stores need${haveServer ? "" : ` (skipped: no ${REDIS_SERVER})`}`, () => {
  /** The start with `app`'s URL under the key prefix `hot:`: what it threw, or the opened stores. */
  const open = (url: string) => openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: url, PLANTGATE_REDIS_KEY_PREFIX: "hot:" }).catch((e: unknown) => e);
  const SHOWN = (url: string) => url.replace(":app-password@", ":***@");
  const GRANT = "(grant EVALSHA, EVAL and the commands the README's Redis section lists on keys under hot:)";

  it("no EVALSHA, or no scripting at all: start-up fails with a RedisConfigError naming each refused command with the server's reply, the password nowhere (it started and answered every request 503)", async () => {
    await withAclUser(["~hot:*", "+@all", "-evalsha"], async (url) => {
      const error = await open(url);
      expect(error).toEqual(
        new RedisConfigError(`the Redis user at ${SHOWN(url)} may not run what the hot stores need: EVALSHA (NOPERM this user has no permissions to run the 'evalsha' command) ${GRANT}`),
      );
      expect((error as Error).cause).toEqual(new Error("NOPERM this user has no permissions to run the 'evalsha' command"));
      expect(inspect(error, { depth: 10 })).not.toContain("app-password");
    });
    await withAclUser(["~hot:*", "+@all", "-@scripting"], async (url) => {
      expect(await open(url)).toEqual(
        new RedisConfigError(
          `the Redis user at ${SHOWN(url)} may not run what the hot stores need: EVALSHA (NOPERM this user has no permissions to run the 'evalsha' command); EVAL (NOPERM this user has no permissions to run the 'eval' command) ${GRANT}`,
        ),
      );
    });
  });

  it("scripts allowed but not every command they run on every key under the prefix (Redis 7 is asked with redis.acl_check_cmd): each refused command is named with its keys, and nothing is written", async () => {
    // Read-only on the revoked jtis (SET, DEL, ZADD, ZREM refused), no HSET anywhere.
    await withAclUser(["~hot:a:*", "~hot:s:*", "~hot:j:*", "%R~hot:r:*", "+@all", "-hset"], async (url, admin) => {
      expect(await open(url)).toEqual(
        new RedisConfigError(
          `the Redis user at ${SHOWN(url)} may not run what the hot stores need: HSET on hot:a:k:*; SET, DEL on hot:r:k:*; ZADD, ZREM on hot:r:i; HSET on hot:s:k:* ${GRANT}`,
        ),
      );
      expect(await admin.dbSize()).toBe(0);
    });
    // Keys under another prefix only: every command on every key family.
    await withAclUser(["~other:*", "+@all"], async (url) => {
      const error = await open(url);
      expect((error as Error).message).toBe(
        `the Redis user at ${SHOWN(url)} may not run what the hot stores need: ` +
          [
            "TYPE, HGET, HMGET, HINCRBY, HSET, PEXPIRE, DEL on hot:a:k:*",
            "TYPE, ZADD, ZREM, ZRANGEBYSCORE on hot:a:i",
            "TYPE, SET, EXISTS, GET, DEL on hot:r:k:*",
            "TYPE, ZADD, ZREM, ZRANGEBYSCORE on hot:r:i",
            "TYPE, EXISTS, HSET, PEXPIRE, HGET, HMGET, DEL on hot:s:k:*",
            "TYPE, ZADD, ZREM, ZRANGEBYSCORE on hot:s:i",
            "TYPE, SMEMBERS, SADD, SREM, PTTL, PEXPIRE, DEL on hot:s:u:*",
            "TYPE, SET, GET, DEL on hot:j:k:*",
            "TYPE, ZADD, ZREM, ZRANGEBYSCORE on hot:j:i",
          ].join("; ") +
          ` ${GRANT}`,
      );
    });
  });

  it("the README's least-privilege ACL (the scripts' commands on the prefix's keys, EVALSHA, EVAL) starts, and every store works on it", async () => {
    // The rules as the README writes them (its example user, under this test's prefix): a README
    // that drops a command the stores run fails here.
    const example = /`ACL SETUSER plantgate on >password ([^`]+)`/.exec(readFileSync(new URL("../../../README.md", import.meta.url), "utf8"))?.[1];
    const readme = example!.split(/\s+/).map((rule) => rule.replace("plantgate:", "hot:"));
    expect(readme[0]).toBe("~hot:*");
    await withAclUser(readme, async (url) => {
      const opened = (await open(url)) as OpenedRedisHotStores;
      // The start's permission check refuses a README that forgot one (a RedisConfigError naming it).
      expect(opened).not.toBeInstanceOf(Error);
      try {
        const { attempts, revokedTokens, sessions, assertionJtis } = opened.stores;
        const now = Date.now();
        expect(await attempts.increment("k", now, 60_000)).toEqual({ key: "k", count: 1, windowStart: now });
        await attempts.refund!("k", now, 1);
        await attempts.reset("k");
        await revokedTokens.add("jti", now + 60_000);
        expect(await sessions.create({ idHash: "s", accountId: "a", csrfHash: "c", createdAt: now, expiresAt: now + 60_000 })).toBe(true);
        expect(await sessions.get("s")).toEqual({ idHash: "s", accountId: "a", csrfHash: "c", createdAt: now, expiresAt: now + 60_000 });
        expect(await assertionJtis.use("j", now + 60_000)).toBe(true);
        const later = now + 3_600_000;
        expect([await attempts.deleteExpired(later), await revokedTokens.deleteExpired(later), await revokedTokens.has("jti"), await sessions.deleteByAccount("a"), await sessions.delete("s"), await sessions.deleteExpired(later), await assertionJtis.deleteExpired(later)]).toEqual([0, 1, false, 1, false, 0, 1]);
      } finally {
        await opened.close();
      }
    });
  });

  it("INFO refused (a managed service, an ACL without it) still starts, without warnings, as before: the stores do not need it", async () => {
    await withAclUser(["~hot:*", "+@all", "-info"], async (url, admin) => {
      const opened = (await open(url)) as OpenedRedisHotStores;
      try {
        expect(opened.warnings).toEqual([]);
        await opened.stores.revokedTokens.add("jti-1", Date.now() + 60_000);
        expect([await opened.stores.revokedTokens.has("jti-1"), await admin.exists("hot:r:k:jti-1")]).toEqual([true, 1]);
      } finally {
        await opened.close();
      }
    });
  });
});
