import { createServer, type Socket } from "node:net";
import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openRedisHotStoresFromEnv, RedisConfigError, redisRisks } from "../src/env.js";
import { connect, describeIfRedis, dropPrefix, freshPrefix, probeRedis, REDIS_URL, type TestClient } from "./support.js";

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
      "Redis keeps no append-only file (appendonly no): a restart forgets revoked tokens and lock-out counters; set appendonly yes where they must survive one",
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
