import { readFileSync } from "node:fs";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { RedisConfigError as EnvRedisConfigError } from "../src/env.js";
import { checkRedisPermissions, RedisConfigError } from "../src/index.js";
import { NEEDS } from "../src/permissions.js";
import { connect, haveServer, IN_CI, REDIS_SERVER, withAclUser, withPrivateClient, type TestClient } from "./support.js";

/** The commands of every `redis.call('…')` in a source file. */
const calls = (file: string) => new Set([...readFileSync(new URL(`../src/${file}`, import.meta.url), "utf8").matchAll(/redis\.call\('(\w+)'/g)].map((m) => m[1]!));

describe("the start-up permission check (NEEDS) and the stores' scripts", () => {
  it("names, for each store's keys, exactly the commands its scripts run: none missed (a refusal found only at the first request, 503), none extra (a start refused for a command never sent)", () => {
    const shared = calls("scripts.ts"); // TYPE (typed), ZRANGEBYSCORE and ZREM (expiredBatchLoop), GET and DEL (DELETE_EXPIRED_STAMPED)
    expect([...shared].sort()).toEqual(["DEL", "GET", "TYPE", "ZRANGEBYSCORE", "ZREM"]);
    const every = ["TYPE", "ZRANGEBYSCORE", "ZREM"];
    const stamped = ["GET", "DEL"];
    const expected: Record<string, string[]> = {
      a: [...calls("attempts.ts"), ...every],
      r: [...calls("revoked-tokens.ts"), ...every, ...stamped],
      s: [...calls("sessions.ts"), ...every],
      j: [...calls("assertion-jtis.ts"), ...every, ...stamped],
    };
    for (const [store, commands] of Object.entries(expected)) {
      const needed = NEEDS.filter(([family]) => family.startsWith(`${store}:`)).flatMap(([, c]) => c.map(([command]) => command!));
      expect([...new Set(needed)].sort(), `store ${store}`).toEqual([...new Set(commands)].sort());
    }
  });
});

describe.skipIf(!haveServer && !IN_CI)(`checkRedisPermissions on a client of your own: a private redis-server whose user's ACL refuses some of what the hot stores need${haveServer ? "" : ` (skipped: no ${REDIS_SERVER})`}`, () => {
  const GRANT = (prefix: string) => `(grant EVALSHA, EVAL and the commands the README's Redis section lists on keys under ${prefix})`;
  /** Runs `body` with a node-redis client signed in as the ACL user `app`, as a host would build it. */
  const asApp = (rules: string[], body: (client: TestClient, admin: TestClient) => Promise<void>) =>
    withAclUser(rules, async (url, admin) => {
      const client = await connect(url);
      try {
        await body(client, admin);
      } finally {
        client.destroy();
      }
    });
  const refusal = (client: TestClient, keyPrefix?: string) => checkRedisPermissions(client, keyPrefix === undefined ? {} : { keyPrefix }).then(() => "resolved", (e: unknown) => e);

  it("is the RedisConfigError of the env entry point (one class: a catch of either catches both)", () => {
    expect(RedisConfigError).toBe(EnvRedisConfigError);
  });

  it("no EVALSHA, or no scripting at all: a RedisConfigError naming each refused command with the server's reply, the NOPERM as cause, no URL, user or password", async () => {
    await asApp(["~hot:*", "+@all", "-evalsha"], async (client) => {
      const error = await refusal(client, "hot:");
      expect(error).toEqual(new RedisConfigError(`the Redis user may not run what the hot stores need: EVALSHA (NOPERM this user has no permissions to run the 'evalsha' command) ${GRANT("hot:")}`));
      expect((error as Error).cause).toEqual(new Error("NOPERM this user has no permissions to run the 'evalsha' command"));
      const shown = inspect(error, { depth: 10 });
      for (const secret of ["app-password", "127.0.0.1", "redis://"]) expect(shown).not.toContain(secret);
    });
    await asApp(["~hot:*", "+@all", "-@scripting"], async (client) => {
      expect(await refusal(client, "hot:")).toEqual(
        new RedisConfigError(
          `the Redis user may not run what the hot stores need: EVALSHA (NOPERM this user has no permissions to run the 'evalsha' command); EVAL (NOPERM this user has no permissions to run the 'eval' command) ${GRANT("hot:")}`,
        ),
      );
    });
  });

  it("scripts allowed but not every command on every key under the prefix: each refused command named with its keys (no cause), nothing written", async () => {
    await asApp(["~hot:a:*", "~hot:s:*", "~hot:j:*", "%R~hot:r:*", "+@all", "-hset"], async (client, admin) => {
      const error = await refusal(client, "hot:");
      expect(error).toEqual(new RedisConfigError(`the Redis user may not run what the hot stores need: HSET on hot:a:k:*; SET, DEL on hot:r:k:*; ZADD, ZREM on hot:r:i; HSET on hot:s:k:* ${GRANT("hot:")}`));
      expect((error as Error).cause).toBeUndefined();
      expect(await admin.dbSize()).toBe(0);
    });
  });

  it("resolves for the README's least-privilege ACL, under the default prefix plantgate: when none is given; the same user is refused under another prefix; a bad prefix is a TypeError", async () => {
    const example = /`ACL SETUSER plantgate on >password ([^`]+)`/.exec(readFileSync(new URL("../../../README.md", import.meta.url), "utf8"))?.[1];
    await asApp(example!.split(/\s+/), async (client, admin) => {
      expect(await refusal(client)).toBe("resolved");
      expect(await refusal(client, "plantgate:")).toBe("resolved");
      expect(((await refusal(client, "other:")) as Error).message).toMatch(/^the Redis user may not run what the hot stores need: TYPE, HGET, HMGET, HINCRBY, HSET, PEXPIRE, DEL on other:a:k:\*; /);
      expect(await refusal(client, "{plantgate}:")).toEqual(new TypeError("keyPrefix must be 1 to 128 characters, each a letter, a digit or one of : . _ - /"));
      expect(await admin.dbSize()).toBe(0);
    });
  });

  it("a server that takes the check's commands and never answers (SIGSTOP after connect): an Error after timeoutMs, not a wait without end; the client left to its owner", async () => {
    await withPrivateClient(undefined, async (server, client) => {
      server.kill("SIGSTOP");
      const started = performance.now();
      const outcome = await Promise.race([
        checkRedisPermissions(client, { keyPrefix: "hot:", timeoutMs: 300 }).then(() => "resolved", (e: unknown) => e),
        new Promise((resolve) => setTimeout(() => resolve("still waiting after 3000 ms"), 3000)),
      ]);
      expect(outcome).toEqual(new Error("checkRedisPermissions: no answer from Redis within 300 ms"));
      expect(performance.now() - started).toBeGreaterThanOrEqual(290);
      expect((client as unknown as { isOpen: boolean }).isOpen).toBe(true);
      server.kill("SIGCONT");
      expect(await checkRedisPermissions(client, { keyPrefix: "hot:" })).toBeUndefined();
      expect(await checkRedisPermissions(client, { timeoutMs: 0 }).then(() => "resolved", (e: unknown) => e)).toEqual(
        new TypeError("timeoutMs must be a whole number of milliseconds from 1 to 2147483647"),
      );
    });
  });
});
