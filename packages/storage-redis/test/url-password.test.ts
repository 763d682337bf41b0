/**
 * A PLANTGATE_REDIS_URL whose password holds an unescaped "@" and then "/", "?" or "#" (a generated
 * password with symbols, pasted in): URL parsing ends the userinfo at that "@", so the rest of the
 * password reads as the host and the path, query or fragment. Refused before anything is contacted,
 * naming nothing of it; until 2026-12-01 the host was tried and the error printed the rest of the
 * password (`redis://app:***@zqsec/xkwd@127.0.0.1:1`, `getaddrinfo ENOTFOUND zqsec`).
 */
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { openRedisHotStoresFromEnv, RedisConfigError } from "../src/env.js";

describe("PLANTGATE_REDIS_URL with a password holding an unescaped '@'", () => {
  it("then '/', '?' or '#': refused before connecting, and no part of the password is shown", async () => {
    for (const url of ["redis://app:hunter2@zqsec/xkwd@127.0.0.1:1", "redis://app:hunter2@zqsec?xkwd@127.0.0.1:1", "redis://app:hunter2@zqsec#xkwd@127.0.0.1:1"]) {
      const error = await openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: url }, { startWaitMs: 2000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisConfigError);
      expect((error as Error).message).toBe(
        'PLANTGATE_REDIS_URL is not a valid Redis URL: redis://*** (userinfo not parsable: shown without its address); an "@" follows its host, so where its user name and password end cannot be told: percent-encode any @ : / ? # in the user name or password (@ as %40)',
      );
      const shown = inspect(error, { depth: 10 });
      for (const part of ["hunter2", "zqsec", "xkwd"]) expect(shown, url).not.toContain(part);
    }
  });
});
