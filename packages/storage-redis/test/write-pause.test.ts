/**
 * While Redis pauses writes (`CLIENT PAUSE <ms> WRITE`, what `FAILOVER` does while the replica
 * catches up), the read-only operations still answer: on Redis 7+ their scripts carry
 * `#!lua flags=no-writes`, and Redis holds only scripts that may write. Until 2026-12-02 every
 * script was sent without flags, so it counted as a write: `revokedTokens.has` (every bearer
 * request), `attempts.get` (every client authentication) and `sessions.get` (every console request)
 * waited for the pause's end and failed after the command timeout (503).
 *
 * On a private redis-server, as the pause holds every client of the server.
 */
import type { ChildProcess } from "node:child_process";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { redisHotStores } from "../src/index.js";
import { respServer } from "./resp-server.js";
import { haveServer, IN_CI, REDIS_SERVER, withPrivateClient } from "./support.js";

const TIMEOUT_MS = 500;

async function paused(body: (hot: ReturnType<typeof redisHotStores>, pause: (ms: number) => Promise<void>, server: ChildProcess) => Promise<void>): Promise<void> {
  await withPrivateClient(undefined, async (server, client, port) => {
    const admin = createClient({ url: `redis://127.0.0.1:${port}` });
    admin.on("error", () => {});
    await admin.connect();
    try {
      const hot = redisHotStores(client, { keyPrefix: "p:", commandTimeoutMs: TIMEOUT_MS });
      await body(hot, async (ms) => void (await admin.sendCommand(["CLIENT", "PAUSE", String(ms), "WRITE"])), server);
    } finally {
      await admin.sendCommand(["CLIENT", "UNPAUSE"]).catch(() => {});
      admin.destroy();
    }
  });
}

/** `promise`'s value, or its error's message and cause's, and how long it took. */
async function timedOutcome(promise: Promise<unknown>): Promise<{ outcome: unknown; ms: number }> {
  const started = performance.now();
  const outcome = await promise.then(
    (v) => v,
    (e: Error) => `${e.message} (${String(e.cause)})`,
  );
  return { outcome, ms: performance.now() - started };
}

describe.skipIf(!haveServer && !IN_CI)(`redis hot stores while Redis pauses writes${haveServer ? "" : ` (skipped: no ${REDIS_SERVER})`}`, () => {
  it("revokedTokens.has, attempts.get and sessions.get answer at once during CLIENT PAUSE WRITE (the script cache empty, then warm)", async () => {
    await paused(async (hot, pause) => {
      const now = Date.now();
      await hot.revokedTokens.add("j1", now + 60_000);
      await hot.attempts.increment("k1", now, 60_000);
      await hot.sessions.create({ idHash: "h1", accountId: "a1", csrfHash: "c1", createdAt: now, expiresAt: now + 60_000 });
      await pause(5000);
      for (const round of ["first use", "cached"]) {
        const reads = await Promise.all([
          timedOutcome(hot.revokedTokens.has("j1")),
          timedOutcome(hot.revokedTokens.has("j2")),
          timedOutcome(hot.attempts.get("k1")),
          timedOutcome(hot.sessions.get("h1")),
        ]);
        expect({ round, outcomes: reads.map((r) => r.outcome) }).toEqual({
          round,
          outcomes: [true, false, { key: "k1", count: 1, windowStart: now }, { idHash: "h1", accountId: "a1", csrfHash: "c1", createdAt: now, expiresAt: now + 60_000 }],
        });
        // Well within the command timeout: not held until the pause ends.
        expect(reads.every((r) => r.ms < TIMEOUT_MS / 2)).toBe(true);
      }
    });
  }, 30_000);

  it("a write during the pause fails after the command timeout (503), and a read sent behind it on the same connection waits with it (the limit the README states)", async () => {
    await paused(async (hot, pause) => {
      const now = Date.now();
      await hot.revokedTokens.add("j1", now + 60_000);
      await pause(3000);
      const write = timedOutcome(hot.revokedTokens.add("j2", now + 60_000));
      const read = timedOutcome(hot.revokedTokens.has("j1"));
      const [w, r] = await Promise.all([write, read]);
      expect([w.outcome, r.outcome]).toEqual([
        `redis: revokedTokens.add failed (CommandTimeoutError: no reply within ${TIMEOUT_MS} ms)`,
        `redis: revokedTokens.has failed (CommandTimeoutError: no reply within ${TIMEOUT_MS} ms)`,
      ]);
    });
  }, 30_000);
});


describe("a read-only script on Redis 6, which cannot parse the flags line", () => {
  it("is sent again without the flags, and without them from then on (a RESP server answering as Redis 6.2 does; no Redis 6 on this machine)", async () => {
    const server = await respServer(([name, body]) => {
      if (name?.toUpperCase() !== "EVAL") return undefined;
      // Redis 6.2 scripting.c: luaCreateFunction's reply for a body Lua cannot compile.
      if (body!.startsWith("#!")) return "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '#' \r\n";
      return ":1\r\n";
    });
    const client = createClient({ url: `redis://127.0.0.1:${server.port}`, disableOfflineQueue: true });
    client.on("error", () => {});
    await client.connect();
    try {
      const hot = redisHotStores(client, { keyPrefix: "p:", commandTimeoutMs: TIMEOUT_MS });
      expect([await hot.revokedTokens.has("j1"), await hot.revokedTokens.has("j2")]).toEqual([true, true]);
      expect(server.commands.filter(([name]) => name === "EVAL")).toEqual([
        ["EVAL", "#!lua flags=no-writes\nreturn redis.call('EXISTS', KEYS[1])", "1", "p:r:k:j1"],
        ["EVAL", "return redis.call('EXISTS', KEYS[1])", "1", "p:r:k:j1"],
        ["EVAL", "return redis.call('EXISTS', KEYS[1])", "1", "p:r:k:j2"],
      ]);
    } finally {
      client.destroy();
      await server.close();
    }
  });
});
