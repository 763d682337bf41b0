/**
 * The brute-force throttle under concurrent guesses with its counters in Redis: two app instances
 * (two Redis clients, one key prefix) over one SQLite file, the guesses split between them. Counts
 * how many password checks ran (PBKDF2 at the configured cost, observed as the `deriveBits` calls
 * at that cost; the calls themselves run unchanged). The SQL engines' twin is storage-sql's
 * throttle-concurrency-engines.test.ts.
 *
 * The second case failed until 2026-12-02 (locks ["client_budget", "username"], bob 429): the
 * client's budget across usernames was counted before the username's own key, so concurrent
 * guesses at one username each held a budget count while that key refused them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPlantgate } from "@plantgate/core";
import { openSqlStorage } from "@plantgate/storage-sql";
import { afterEach, expect, it, vi } from "vitest";
import { redisHotStores } from "../src/index.js";
import { connect, describeIfRedis, dropPrefix, freshPrefix, probeRedis } from "./support.js";

const BASE = "https://as.example.test";
const quiet = { error() {}, warn() {} };
/** A cost no other hash in these tests uses, so each `deriveBits` at it is one password check. */
const ITER = 1_234;

const tally = (statuses: number[]) => {
  const t: Record<number, number> = {};
  for (const s of statuses) t[s] = (t[s] ?? 0) + 1;
  return t;
};

describeIfRedis("lock-out under concurrency (SQLite + Redis, two instances)", await probeRedis(), () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });
  const setup = async () => {
    const dir = mkdtempSync(join(tmpdir(), "plantgate-lock-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const prefix = freshPrefix();
    const c1 = await connect();
    const c2 = await connect();
    cleanups.push(async () => {
      await dropPrefix(c1, prefix);
      c1.destroy();
      c2.destroy();
    });
    const s1 = await openSqlStorage(join(dir, "db.sqlite"));
    cleanups.push(() => s1.close());
    const s2 = await openSqlStorage(join(dir, "db.sqlite"), { migrate: false });
    cleanups.push(() => s2.close());
    const locks: string[] = [];
    const options = {
      onEvent: (e: { type: string; lock?: string }) => void (e.type === "account.locked_out" && locks.push(e.lock!)),
      passwordHashIterations: ITER,
      logger: quiet,
      // 3 per username + IP, 15 per username, 30 per client.
      bruteForce: { maxFailures: 3, windowSeconds: 600 },
      maxConcurrentPasswordChecks: 200,
    };
    const a = createPlantgate({ ...options, storage: { ...s1, ...redisHotStores(c1 as never, { keyPrefix: prefix }) } });
    const b = createPlantgate({ ...options, storage: { ...s2, ...redisHotStores(c2 as never, { keyPrefix: prefix }) } });
    await a.admin.createAccount({ username: "alice", password: "alice-password-1" });
    await a.admin.createAccount({ username: "bob", password: "bob-password-1" });
    const { clientSecret } = await a.admin.createClient({ clientId: "app-1", grantTypes: ["password"] });
    const authorization = "Basic " + btoa(`app-1:${clientSecret}`);
    let checks = 0;
    const derive = crypto.subtle.deriveBits.bind(crypto.subtle);
    const spy = vi.spyOn(crypto.subtle, "deriveBits").mockImplementation((params, key, length) => {
      if ((params as Pbkdf2Params).iterations === ITER) checks++;
      return derive(params, key, length);
    });
    cleanups.push(async () => spy.mockRestore());
    const grant = (i: number, username: string, ip: string, password = `wrong-${i}`) =>
      (i % 2 ? b : a).fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization },
          body: new URLSearchParams({ grant_type: "password", username, password }).toString(),
        }),
        { clientIp: ip },
      );
    const burst = async (n: number, username: (i: number) => string, ip: (i: number) => string) => {
      const statuses = (await Promise.all(Array.from({ length: n }, (_, i) => grant(i, username(i), ip(i))))).map((r) => r.status);
      return { checks, statuses: tally(statuses) };
    };
    const settled = async () => {
      await Promise.all([a.flushEvents(), b.flushEvents()]);
      return locks;
    };
    return { grant, burst, settled };
  };

  it("40 concurrent wrong guesses at alice from one address: exactly 3 password checks; one lock, the username + address's", async () => {
    const { burst, settled } = await setup();
    const seen = await burst(40, () => "alice", () => "198.51.100.20");
    expect({ ...seen, locks: await settled() }).toEqual({ checks: 3, statuses: { 400: 3, 429: 37 }, locks: ["username_address"] });
  });

  it("40 concurrent wrong guesses at alice from 40 addresses: exactly 5 x 3 = 15 checks, one lock (the username's), and bob then signs in", async () => {
    const { grant, burst, settled } = await setup();
    const seen = await burst(40, () => "alice", (i) => `198.51.100.${i + 1}`);
    const bob = await grant(0, "bob", "203.0.113.9", "bob-password-1");
    expect({ ...seen, bob: bob.status, locks: await settled() }).toEqual({ checks: 15, statuses: { 400: 15, 429: 25 }, bob: 200, locks: ["username"] });
  });

  it("60 concurrent guesses at 60 usernames from 60 addresses through one client: exactly 10 x 3 = 30 checks; one lock, the client's budget", async () => {
    const { burst, settled } = await setup();
    const seen = await burst(60, (i) => `user-${i}`, (i) => `203.0.113.${i + 1}`);
    expect({ ...seen, locks: await settled() }).toEqual({ checks: 30, statuses: { 400: 30, 429: 30 }, locks: ["client_budget"] });
  });
});
