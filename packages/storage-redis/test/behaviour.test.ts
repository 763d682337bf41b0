/**
 * What the conformance suite cannot see: Redis-side expiry (PTTL set from the record's end, and
 * records really disappearing), key prefixes keeping deployments apart, counts from two separate
 * connections (two instances), outages as StorageError / 503, and a Redis restart, which also
 * empties its script cache (the NOSCRIPT fallback).
 */
import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "node:net";
import diagnostics_channel from "node:diagnostics_channel";
import { createMemoryStorage, createPlantgate, StorageError, type Plantgate, type PlantgateOptions, type Storage } from "@plantgate/core";
import { openSqlStorage } from "@plantgate/storage-sql";
import { createClient, createSentinel } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMANDS_QUEUE_MAX, openRedisHotStoresFromEnv, type OpenedRedisHotStores } from "../src/env.js";
import { CommandTimeoutError, isValidKeyPrefix, MAX_COMMAND_TIMEOUT_MS, redisHotStores } from "../src/index.js";
import { connect, describeIfRedis, dropPrefix, dumpPrefix, freePort, freshPrefix, haveServer, IN_CI, keysUnder, probeRedis, REDIS_SERVER, REDIS_URL, startRedis, stopped, withAclUser, withPrivateClient, type TestClient } from "./support.js";

const problem = await probeRedis();
const WINDOW = 15 * 60 * 1000;

describeIfRedis("redis hot stores: behaviour", problem, () => {
  let client: TestClient;
  const prefixes: string[] = [];
  const prefix = () => {
    const p = freshPrefix();
    prefixes.push(p);
    return p;
  };
  beforeAll(async () => {
    client = await connect();
  });
  afterAll(async () => {
    for (const p of prefixes) await dropPrefix(client, p);
    client.destroy();
  });

  it("keys carry a Redis expiry: a counter until its window ends, a jti and a session until their expiresAt, each plus the margin", async () => {
    const now = Date.now();
    const p = prefix();
    const hot = redisHotStores(client, { keyPrefix: p, clock: () => now, expiryMarginMs: 5000 });
    await hot.attempts.increment("t:key", now, WINDOW);
    await hot.revokedTokens.add("jti-1", now + 120_000);
    await hot.sessions.create({ idHash: "hash-1", accountId: "acct-1", csrfHash: "csrf-1", createdAt: now, expiresAt: now + 3_600_000 });
    expect(await keysUnder(client, p)).toEqual([`${p}a:i`, `${p}a:k:t:key`, `${p}r:i`, `${p}r:k:jti-1`, `${p}s:i`, `${p}s:k:hash-1`, `${p}s:u:acct-1`]);
    const ttl = async (key: string) => client.pTTL(`${p}${key}`);
    // A few ms pass between the call and PTTL; allow 2 s.
    expect(await ttl("a:k:t:key")).toBeLessThanOrEqual(WINDOW + 5000);
    expect(await ttl("a:k:t:key")).toBeGreaterThan(WINDOW + 3000);
    expect(await ttl("r:k:jti-1")).toBeLessThanOrEqual(125_000);
    expect(await ttl("r:k:jti-1")).toBeGreaterThan(123_000);
    expect(await ttl("s:k:hash-1")).toBeLessThanOrEqual(3_605_000);
    expect(await ttl("s:k:hash-1")).toBeGreaterThan(3_603_000);
    // Absolute expiry times (PEXPIRETIME), set by one script: equal however long the reads take.
    const setExpiry = await client.sendCommand(["PEXPIRETIME", `${p}s:u:acct-1`]);
    const sessionExpiry = await client.sendCommand(["PEXPIRETIME", `${p}s:k:hash-1`]);
    expect(Math.abs(Number(setExpiry) - Number(sessionExpiry)), `the account's set lives as long as its longest session (${String(setExpiry)} against ${String(sessionExpiry)})`).toBeLessThanOrEqual(1);
    // A later increment inside the window keeps its end: the expiry does not slide.
    await hot.attempts.increment("t:key", now + 60_000, WINDOW);
    expect(await ttl("a:k:t:key")).toBeLessThanOrEqual(WINDOW - 60_000 + 5000);
    expect(await ttl("a:k:t:key")).toBeGreaterThan(WINDOW - 60_000 + 3000);
  });

  it("sessions.touch moves the session's Redis expiry and its account set's with it: past its first end it is still there, and deleteByAccount still finds it", async () => {
    const p = prefix();
    const hot = redisHotStores(client, { keyPrefix: p, expiryMarginMs: 100 });
    const now = Date.now();
    const session = { idHash: "hash-touched", accountId: "acct-1", csrfHash: "csrf", createdAt: now, expiresAt: now + 100 };
    await hot.sessions.create(session);
    expect(await hot.sessions.touch!("hash-touched", now + 60_000)).toBe(true);
    const setExpiry = await client.sendCommand(["PEXPIRETIME", `${p}s:u:acct-1`]);
    const sessionExpiry = await client.sendCommand(["PEXPIRETIME", `${p}s:k:hash-touched`]);
    expect(Math.abs(Number(setExpiry) - Number(sessionExpiry)), `the account's set lives as long as the touched session (${String(setExpiry)} against ${String(sessionExpiry)})`).toBeLessThanOrEqual(1);
    expect(Number(sessionExpiry)).toBeGreaterThan(now + 60_000);
    // Past the first end plus the margin: without the touch's expiries Redis would have dropped both keys.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await hot.sessions.get("hash-touched")).toEqual({ ...session, expiresAt: now + 60_000 });
    expect(await hot.sessions.deleteByAccount("acct-1")).toBe(1);
    expect(await hot.sessions.get("hash-touched")).toBeNull();
    // A touch of the session now gone makes nothing.
    expect(await hot.sessions.touch!("hash-touched", now + 120_000)).toBe(false);
    expect(await keysUnder(client, p), "no key made again").toEqual([]);
  });

  it("records disappear by themselves once over (no deleteExpired call); the indexes are trimmed by the next deleteExpired", async () => {
    const p = prefix();
    const hot = redisHotStores(client, { keyPrefix: p, expiryMarginMs: 100 });
    const now = Date.now();
    await hot.attempts.increment("t:short", now, 100);
    await hot.revokedTokens.add("jti-short", now + 100);
    await hot.sessions.create({ idHash: "hash-short", accountId: "acct-1", csrfHash: "csrf", createdAt: now, expiresAt: now + 100 });
    expect(await hot.assertionJtis.use("assertion-short", now + 100)).toBe(true);
    expect([await hot.attempts.get("t:short"), await hot.revokedTokens.has("jti-short"), await hot.sessions.get("hash-short")]).toEqual([
      { key: "t:short", count: 1, windowStart: now },
      true,
      { idHash: "hash-short", accountId: "acct-1", csrfHash: "csrf", createdAt: now, expiresAt: now + 100 },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect([await hot.attempts.get("t:short"), await hot.revokedTokens.has("jti-short"), await hot.sessions.get("hash-short")]).toEqual([null, false, null]);
    // Only the indexes remain, until the core's next deleteExpired trims them; taking such an entry
    // off is the last of deleting it, so it counts (prune calls again while batches come back full).
    expect(await keysUnder(client, p)).toEqual([`${p}a:i`, `${p}j:i`, `${p}r:i`, `${p}s:i`]);
    expect(await hot.sessions.deleteExpired(now + 1000)).toBe(1);
    expect(await hot.revokedTokens.deleteExpired(now + 1000)).toBe(1);
    expect(await hot.attempts.deleteExpired(now + 1000)).toBe(1);
    expect(await hot.assertionJtis.deleteExpired(now + 1000)).toBe(1);
    expect(await keysUnder(client, p)).toEqual([]);
    expect(await hot.sessions.deleteExpired(now + 1000), "nothing is counted twice").toBe(0);
  });

  it("prune clears a backlog of index entries whose records Redis expired, however many batches it takes (the used-assertion index had no other sweep)", async () => {
    const p = prefix();
    const hot = redisHotStores(client, { keyPrefix: p, expiryMarginMs: 100 });
    const app = createPlantgate({ storage: { ...createMemoryStorage(), ...hot }, logger: { error() {}, warn() {} } });
    const now = Date.now();
    for (let i = 0; i < 25; i++) {
      expect(await hot.assertionJtis.use(`assertion-${i}`, now + 50)).toBe(true);
      await hot.revokedTokens.add(`jti-${i}`, now + 50);
    }
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await keysUnder(client, p)).toEqual([`${p}j:i`, `${p}r:i`]);
    const counts = await app.admin.prune({ batchSize: 10 });
    expect([counts.assertionJtis, counts.revokedTokens]).toEqual([25, 25]);
    expect(await keysUnder(client, p)).toEqual([]);
  });

  it("an account's session set loses the sessions Redis expired at its next sign-in, so overlapping sign-ins do not grow it", async () => {
    const p = prefix();
    const hot = redisHotStores(client, { keyPrefix: p, expiryMarginMs: 100 });
    for (let i = 0; i < 30; i++) {
      const now = Date.now();
      // Each lives 20 ms plus the 100 ms margin: about four overlap at any time.
      expect(await hot.sessions.create({ idHash: `hash-${i}`, accountId: "acct-1", csrfHash: "csrf", createdAt: now, expiresAt: now + 20 })).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    expect(await client.sCard(`${p}s:u:acct-1`)).toBeLessThanOrEqual(6);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = Date.now();
    expect(await hot.sessions.create({ idHash: "hash-last", accountId: "acct-1", csrfHash: "csrf", createdAt: now, expiresAt: now + 60_000 })).toBe(true);
    expect(await client.sMembers(`${p}s:u:acct-1`)).toEqual(["hash-last"]);
    expect(await hot.sessions.deleteByAccount("acct-1")).toBe(1);
  });

  it("options are checked at once: a margin below 1 ms, a command timeout whose timer (up to 1.25 times it) would pass 2^31 - 1 ms (longer fires at once), or below 0", async () => {
    expect(() => redisHotStores(client, { expiryMarginMs: 0 })).toThrow(new RangeError("expiryMarginMs must be a positive integer (milliseconds)"));
    expect(MAX_COMMAND_TIMEOUT_MS).toBe(1_717_986_917);
    for (const commandTimeoutMs of [MAX_COMMAND_TIMEOUT_MS + 1, 2 ** 31 - 1, 2 ** 31, -1, 1.5]) {
      expect(() => redisHotStores(client, { commandTimeoutMs })).toThrow(new RangeError("commandTimeoutMs must be an integer from 0 to 1717986917 (milliseconds)"));
    }
    // The largest one really works: its timer does not fire at once (before 2026-11-29, up to 2^31 - 1 was taken and every command failed).
    const hot = redisHotStores(client, { commandTimeoutMs: MAX_COMMAND_TIMEOUT_MS, keyPrefix: prefix() });
    expect(await hot.revokedTokens.has("jti-none")).toBe(false);
  });

  it("the key prefix is checked at once: 1 to 128 letters, digits and : . _ - /; empty, hash-tag braces, glob characters, spaces, control characters and longer are refused without being echoed", async () => {
    const refused = ["", "{plantgate}:", "plant}gate:", "plantgate*", "plant?gate:", "[pg]:", "back\\slash:", "with space:", "tab\t:", "new\nline:", "nul\u0000:", "é:", "x".repeat(129), 42];
    for (const keyPrefix of refused) {
      expect(isValidKeyPrefix(keyPrefix), JSON.stringify(keyPrefix)).toBe(false);
      expect(() => redisHotStores(client, { keyPrefix: keyPrefix as string }), JSON.stringify(keyPrefix)).toThrow(
        new TypeError("keyPrefix must be 1 to 128 characters, each a letter, a digit or one of : . _ - /"),
      );
    }
    // Accepted ones work, and their keys are the prefix and the store's own names.
    for (const keyPrefix of ["a", "x".repeat(128), `plantgate-test/${freshPrefix().slice(15)}v2.a_b-c:`]) {
      expect(isValidKeyPrefix(keyPrefix)).toBe(true);
      const hot = redisHotStores(client, { keyPrefix });
      const jti = `jti-${freshPrefix().slice(15, -1)}`;
      await hot.revokedTokens.add(jti, Date.now() + 60_000);
      expect(await hot.revokedTokens.has(jti)).toBe(true);
      // Exactly these two keys (deleted by name: a prefix like "a" is shared with anything else's keys).
      expect(await client.del([`${keyPrefix}r:k:${jti}`, `${keyPrefix}r:i`])).toBe(2);
    }
  });

  it("a client with no 'error' listener gets one that ignores the event (node-redis would end the process on a dropped connection); one of yours is left alone", async () => {
    const bare = createClient({ url: REDIS_URL, disableOfflineQueue: true, socket: { reconnectStrategy: false } });
    await bare.connect();
    try {
      expect(bare.listenerCount("error")).toBe(0);
      redisHotStores(bare, { keyPrefix: prefix() });
      expect(bare.listenerCount("error")).toBe(1);
      // What node-redis does when the connection drops: heard, so no throw.
      expect(() => bare.emit("error", new Error("Socket closed unexpectedly"))).not.toThrow();
    } finally {
      bare.destroy();
    }
    const heard = createClient({ url: REDIS_URL, disableOfflineQueue: true });
    const mine = () => {};
    heard.on("error", mine);
    redisHotStores(heard, { keyPrefix: prefix() });
    expect(heard.listeners("error")).toEqual([mine]);
  });

  it("two key prefixes are two separate stores on one Redis database", async () => {
    const a = redisHotStores(client, { keyPrefix: prefix() });
    const b = redisHotStores(client, { keyPrefix: prefix() });
    const now = Date.now();
    await a.attempts.increment("t:same", now, WINDOW);
    await a.attempts.increment("t:same", now, WINDOW);
    await a.revokedTokens.add("jti-same", now + 60_000);
    expect(await b.attempts.get("t:same")).toBeNull();
    expect(await b.revokedTokens.has("jti-same")).toBe(false);
    expect(await b.attempts.increment("t:same", now, WINDOW)).toEqual({ key: "t:same", count: 1, windowStart: now });
    expect(await a.attempts.get("t:same")).toEqual({ key: "t:same", count: 2, windowStart: now });
  });

  it("a node-redis client made with its own keyPrefix is refused at once (the scripts build record keys from their arguments, which it does not prefix: an account's console sessions outlived deleteByAccount)", async () => {
    const clientPrefix = prefix();
    const prefixed = createClient({ url: REDIS_URL, disableOfflineQueue: true, keyPrefix: clientPrefix });
    prefixed.on("error", () => {});
    await prefixed.connect();
    try {
      expect(() => redisHotStores(prefixed, { keyPrefix: "plantgate:" })).toThrow(
        new TypeError("redisHotStores: the Redis client has a keyPrefix of its own, which the stores' scripts cannot follow; create the client without one and pass the prefix as redisHotStores' keyPrefix option"),
      );
      // Its proxies too (withCommandOptions, withTypeMapping keep the prefix).
      expect(() => redisHotStores(prefixed.withTypeMapping({}), { keyPrefix: "plantgate:" })).toThrow(TypeError);
      expect(await keysUnder(client, clientPrefix), "nothing written").toEqual([]);
    } finally {
      prefixed.destroy();
    }
  });

  it("two instances (two connections) counting one key at once lose no count: 1..50 between them", async () => {
    const second = await connect();
    try {
      const p = prefix();
      const now = Date.now();
      const instances = [redisHotStores(client, { keyPrefix: p }), redisHotStores(second, { keyPrefix: p })];
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => instances[i % 2]!.attempts.increment("t:contested", now, WINDOW)));
      expect(results.map((r) => r.count).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      expect(await instances[1]!.attempts.get("t:contested")).toEqual({ key: "t:contested", count: 50, windowStart: now });
    } finally {
      second.destroy();
    }
  });

  it("fractional epoch ms (a clock like performance.timeOrigin + performance.now()) come back exactly as given, and through the core a wrong password is still a 400, not a 503", async () => {
    const p = prefix();
    const hot = redisHotStores(client, { keyPrefix: p, clock: () => Date.now() + 0.75 });
    const now = Date.now() + 0.25;
    expect(await hot.attempts.increment("t:frac", now, 1000.5)).toEqual({ key: "t:frac", count: 1, windowStart: now });
    expect(await hot.attempts.increment("t:frac", now + 1.5, 1000.5)).toEqual({ key: "t:frac", count: 2, windowStart: now });
    expect(await hot.attempts.get("t:frac")).toEqual({ key: "t:frac", count: 2, windowStart: now });
    await hot.attempts.refund!("t:frac", now, 1);
    expect(await hot.attempts.get("t:frac")).toEqual({ key: "t:frac", count: 1, windowStart: now });
    // The Redis expiry is whole milliseconds: the window's end plus the margin, rounded.
    expect(await client.pTTL(`${p}a:k:t:frac`)).toBeGreaterThan(60_000);
    const session = { idHash: "hash-frac", accountId: "acct-1", csrfHash: "csrf", createdAt: now, expiresAt: now + 60_000.5 };
    expect(await hot.sessions.create(session)).toBe(true);
    expect(await hot.sessions.get("hash-frac")).toEqual(session);
    await hot.revokedTokens.add("jti-frac", now + 60_000.5);
    expect(await hot.revokedTokens.has("jti-frac")).toBe(true);
    expect(await hot.assertionJtis.use("assertion-frac", now + 60_000.5)).toBe(true);
    expect(await hot.sessions.deleteExpired(now + 60_001)).toBe(1);
    expect(await hot.revokedTokens.deleteExpired(now + 60_001)).toBe(1);

    const clock = () => Date.now() + 0.25;
    const app = createPlantgate({ storage: { ...createMemoryStorage(), ...redisHotStores(client, { keyPrefix: prefix(), clock }) }, clock, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const { clientSecret } = await app.admin.createClient({ clientId: "c" });
    await app.admin.createAccount({ username: "u", password: "a password" });
    const grant = (password: string) =>
      app.fetch(new Request("https://pg.test/UserService/connect/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ grant_type: "password", client_id: "c", client_secret: clientSecret, username: "u", password }) }));
    const wrong = await grant("not the password");
    expect([wrong.status, await wrong.json()]).toEqual([400, { error: "invalid_grant", error_description: "The username or password is incorrect." }]);
    // The throttle reads the counter the wrong password opened (its windowStart a fraction).
    expect((await grant("a password")).status).toBe(200);
  });

  it("a key of another type under the prefix (something else writing there): every writing operation fails with a StorageError saying so, and nothing is half-written", async () => {
    const now = Date.now();
    const session = (idHash: string, accountId = "acct-1") => ({ idHash, accountId, csrfHash: "csrf", createdAt: now, expiresAt: now + 60_000 });
    // [operation, what the store holds first, the key (under the prefix) that then holds a string (a
    // hash where a string belongs), the call]
    const cases: [string, (hot: ReturnType<typeof redisHotStores>) => Promise<unknown>, string, (hot: ReturnType<typeof redisHotStores>) => Promise<unknown>][] = [
      ["attempts.increment", async () => {}, "a:i", (hot) => hot.attempts.increment("t:k", now, WINDOW)],
      ["attempts.reset", (hot) => hot.attempts.increment("t:k", now, WINDOW), "a:i", (hot) => hot.attempts.reset("t:k")],
      ["attempts.refund", (hot) => hot.attempts.increment("t:k", now, WINDOW), "a:i", (hot) => hot.attempts.refund!("t:k", now, 1)],
      ["attempts.deleteExpired", async (hot) => (await hot.attempts.increment("t:k1", now - 2 * WINDOW, WINDOW), await hot.attempts.increment("t:k2", now - 2 * WINDOW, WINDOW)), "a:k:t:k2", (hot) => hot.attempts.deleteExpired(now)],
      ["revokedTokens.add", async () => {}, "r:i", (hot) => hot.revokedTokens.add("jti", now + 60_000)],
      ["revokedTokens.deleteExpired", async (hot) => (await hot.revokedTokens.add("jti-1", now - 1000), await hot.revokedTokens.add("jti-2", now - 1000)), "r:k:jti-2", (hot) => hot.revokedTokens.deleteExpired(now)],
      ["assertionJtis.use", async () => {}, "j:i", (hot) => hot.assertionJtis.use("assertion", now + 60_000)],
      ["sessions.create", async () => {}, "s:i", (hot) => hot.sessions.create(session("h"))],
      ["sessions.create", (hot) => hot.sessions.create(session("h0")), "s:u:acct-1", (hot) => hot.sessions.create(session("h"))],
      ["sessions.delete", (hot) => hot.sessions.create(session("h")), "s:u:acct-1", (hot) => hot.sessions.delete("h")],
      // touch writes the record, the index and the account set: each of the three may be the foreign one.
      ["sessions.touch", (hot) => hot.sessions.create(session("h")), "s:k:h", (hot) => hot.sessions.touch!("h", now + 120_000)],
      ["sessions.touch", (hot) => hot.sessions.create(session("h")), "s:i", (hot) => hot.sessions.touch!("h", now + 120_000)],
      ["sessions.touch", (hot) => hot.sessions.create(session("h")), "s:u:acct-1", (hot) => hot.sessions.touch!("h", now + 120_000)],
      ["sessions.deleteByAccount", async (hot) => (await hot.sessions.create(session("h1")), await hot.sessions.create(session("h2"))), "s:k:h2", (hot) => hot.sessions.deleteByAccount("acct-1")],
      ["sessions.deleteExpired", async (hot) => (await hot.sessions.create({ ...session("h1"), expiresAt: now - 1000 }), await hot.sessions.create({ ...session("h2", "acct-2"), expiresAt: now - 1000 })), "s:u:acct-2", (hot) => hot.sessions.deleteExpired(now)],
    ];
    for (const [what, arrange, foreign, act] of cases) {
      const p = prefix();
      const hot = redisHotStores(client, { keyPrefix: p });
      await arrange(hot);
      await client.del(`${p}${foreign}`);
      if (foreign.startsWith("r:k:")) await client.hSet(`${p}${foreign}`, "not", "plantgate's");
      else await client.set(`${p}${foreign}`, "not plantgate's");
      const before = await dumpPrefix(client, p);
      const failure = await act(hot).then(() => null, (e: unknown) => e);
      expect(failure, `${what} with ${foreign} of another type`).toEqual(new StorageError(`redis: ${what} failed: a key under the key prefix holds a value of another type (does something else write under this prefix?); nothing was changed`));
      expect(await dumpPrefix(client, p), `${what} with ${foreign} of another type: nothing written`).toBe(before);
    }
    // The replay case that made this matter: with the index back to what it should be, the
    // assertion the failed call was about is still unused (it was recorded before: a replay).
    const p = prefix();
    const hot = redisHotStores(client, { keyPrefix: p });
    await client.set(`${p}j:i`, "not plantgate's");
    await expect(hot.assertionJtis.use("assertion", now + 60_000)).rejects.toThrow(StorageError);
    await client.del(`${p}j:i`);
    expect(await hot.assertionJtis.use("assertion", now + 60_000)).toBe(true);
  });

  it("a closed client is an outage: StorageError naming the operation, never the key", async () => {
    const closed = await connect();
    closed.destroy();
    const hot = redisHotStores(closed, { keyPrefix: prefix() });
    const failures = await Promise.allSettled([hot.attempts.increment("t:secret-key", 1, WINDOW), hot.revokedTokens.has("secret-jti"), hot.sessions.get("secret-hash")]);
    expect(failures.map((f) => (f.status === "rejected" ? [(f.reason as Error).constructor, (f.reason as Error).message] : f.status))).toEqual([
      [StorageError, "redis: attempts.increment failed"],
      [StorageError, "redis: revokedTokens.has failed"],
      [StorageError, "redis: sessions.get failed"],
    ]);
  });

  it("a client never connected (connect() not called, or still connecting): every operation is a StorageError at once, and through the core a 503", async () => {
    const never = createClient({ url: REDIS_URL, disableOfflineQueue: true });
    const connecting = createClient({ url: "redis://127.0.0.1:1", socket: { reconnectStrategy: () => 100 } });
    connecting.on("error", () => {});
    const attempt = connecting.connect().catch(() => {});
    try {
      // "At once" is within AT_ONCE_MS, loose enough for a loaded machine and far from the
      // command timeout (a command held for the connection would fail only after that).
      const COMMAND_TIMEOUT_MS = 60_000;
      const AT_ONCE_MS = 2_000;
      for (const unconnected of [never, connecting]) {
        const hot = redisHotStores(unconnected, { keyPrefix: prefix(), commandTimeoutMs: COMMAND_TIMEOUT_MS });
        let bound: ReturnType<typeof setTimeout> | undefined;
        const failures = await Promise.race([
          Promise.allSettled([hot.attempts.get("t:k"), hot.revokedTokens.add("jti", Date.now() + 60_000), hot.sessions.create({ idHash: "h", accountId: "a", csrfHash: "c", createdAt: 1, expiresAt: Date.now() + 60_000 })]),
          new Promise<string>((resolve) => (bound = setTimeout(() => resolve(`still pending after ${AT_ONCE_MS} ms`), AT_ONCE_MS))),
        ]).finally(() => clearTimeout(bound));
        expect(typeof failures === "string" ? failures : failures.map((f) => (f.status === "rejected" ? (f.reason as Error).message : f.status))).toEqual([
          "redis: attempts.get failed",
          "redis: revokedTokens.add failed",
          "redis: sessions.create failed",
        ]);
      }
      const app = createPlantgate({ storage: { ...createMemoryStorage(), ...redisHotStores(never, { keyPrefix: prefix() }) }, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
      const { clientSecret } = await app.admin.createClient({ clientId: "c" });
      const response = await app.fetch(
        new Request("https://pg.test/UserService/connect/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ grant_type: "client_credentials", client_id: "c", client_secret: clientSecret }) }),
      );
      expect([response.status, await response.json()]).toEqual([503, { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." }]);
    } finally {
      connecting.destroy();
      await attempt;
    }
  });

  it("through the core: with Redis gone, a bearer request is 503 and a password grant is 503 temporarily_unavailable", async () => {
    const sql = await openSqlStorage(":memory:");
    const own = await connect();
    const storage: Storage = { ...sql, ...redisHotStores(own, { keyPrefix: prefix() }) };
    const app = createPlantgate({ storage, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    try {
      const { clientSecret } = await app.admin.createClient({ clientId: "c" });
      await app.admin.createAccount({ username: "u", password: "a password" });
      const tokenRequest = (params: Record<string, string>) =>
        app.fetch(new Request("https://pg.test/UserService/connect/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ client_id: "c", client_secret: clientSecret, ...params }) }));
      const issued = await tokenRequest({ grant_type: "client_credentials" });
      expect(issued.status).toBe(200);
      const access = ((await issued.json()) as { access_token: string }).access_token;
      own.destroy();
      const list = await app.fetch(new Request("https://pg.test/rbac/ServerCommand/GetAccountList", { headers: { authorization: `Bearer ${access}` } }));
      expect([list.status, list.headers.get("retry-after"), await list.json()]).toEqual([503, "5", { error: 1503, message: "The service is temporarily unavailable; retry later." }]);
      const grant = await tokenRequest({ grant_type: "password", username: "u", password: "a password" });
      expect([grant.status, grant.headers.get("retry-after"), await grant.json()]).toEqual([
        503,
        "5",
        { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." },
      ]);
    } finally {
      await sql.close();
    }
  });
});

// --- a private redis-server (support.ts), to restart it ---------------------------------------

/**
 * A redis-server of its own with the env-opened client on it, frozen (SIGSTOP) before `body`;
 * thawed, the client closed (again, if `body` closed it: a no-op) and the server killed after.
 */
async function withFrozenEnvClient(body: (opened: OpenedRedisHotStores) => Promise<void>): Promise<void> {
  expect(haveServer, `${REDIS_SERVER} is required when CI=true`).toBe(true);
  const port = await freePort();
  const frozen = await startRedis(port);
  const opened = (await openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: `redis://127.0.0.1:${port}` }))!;
  try {
    frozen.kill("SIGSTOP");
    await body(opened);
  } finally {
    frozen.kill("SIGCONT");
    await opened.close();
    frozen.kill("SIGKILL");
    await stopped(frozen);
  }
}

/**
 * plantgate over a SQLite store in memory and the hot stores in Redis as the ACL user at `url`
 * (prefix `hot:`), its warn lines collected; `body` gets it, then both stores are closed.
 */
async function withAppAsAclUser(url: string, options: Omit<PlantgateOptions, "storage" | "logger">, body: (app: Plantgate, warnings: [string, unknown][]) => Promise<void>): Promise<void> {
  const own = await connect(url);
  const sql = await openSqlStorage(":memory:");
  const warnings: [string, unknown][] = [];
  const app = createPlantgate({ ...options, storage: { ...sql, ...redisHotStores(own, { keyPrefix: "hot:" }) }, logger: { error() {}, warn: (message, context) => warnings.push([message, context]) } });
  try {
    await body(app, warnings);
  } finally {
    own.destroy();
    await sql.close();
  }
}

/** The throttle's counts under `hot:`, sorted. */
async function throttleCounts(admin: TestClient): Promise<string[]> {
  const values: string[] = [];
  for (const key of await keysUnder(admin, "hot:a:k:")) values.push((await admin.hGet(key, "c"))!);
  return values.sort();
}

describe.skipIf(!haveServer && !IN_CI)(`through the core, a private redis-server that refuses one store's commands${haveServer ? "" : ` (skipped: no ${REDIS_SERVER})`}`, () => {
  it("a grace replay whose revoked-jti lookup fails gets a fresh access token with the rotation's refresh token, not a 503 after its grace use was counted: the retry was taken for reuse and the user signed out", async () => {
    await withPrivateClient(undefined, async (_server, admin, port) => {
      // Redis answers errors to the revoked-jti commands only (an ACL without the `r:` keys): the
      // lookup of a grace replay fails after the grace use was counted in SQL.
      await (admin as ReturnType<typeof createClient>).sendCommand(["ACL", "SETUSER", "app", "on", ">app-password", "~hot:a:*", "~hot:s:*", "~hot:j:*", "+@all"]);
      const own = await connect(`redis://app:app-password@127.0.0.1:${port}`);
      const sql = await openSqlStorage(":memory:");
      const warnings: [string, unknown][] = [];
      const app = createPlantgate({
        storage: { ...sql, ...redisHotStores(own, { keyPrefix: "hot:" }) },
        passwordHashIterations: 1000,
        refreshGraceMaxUses: 1,
        logger: { error() {}, warn: (message, context) => warnings.push([message, context]) },
      });
      try {
        const { clientSecret } = await app.admin.createClient({ clientId: "c" });
        await app.admin.createAccount({ username: "u", password: "a password" });
        const tokenRequest = (params: Record<string, string>) =>
          app.fetch(new Request("https://pg.test/UserService/connect/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ client_id: "c", client_secret: clientSecret, ...params }) }));
        type Body = { access_token: string; token_type: string; expires_in: number; scope: string; refresh_token: string };
        const granted = await tokenRequest({ grant_type: "password", username: "u", password: "a password", scope: "Platform_UserAPIs offline_access" });
        expect(granted.status).toBe(200);
        const first = (await granted.json()) as Body;
        const rotated = await tokenRequest({ grant_type: "refresh_token", refresh_token: first.refresh_token });
        expect(rotated.status).toBe(200);
        const rotation = (await rotated.json()) as Body;
        // The rotated token again, within the grace window (a parallel refresh, a retry).
        warnings.length = 0; // the app's start-up warnings (no issuer, keys in clear)
        const replayed = await tokenRequest({ grant_type: "refresh_token", refresh_token: first.refresh_token });
        const replay = (await replayed.json()) as Body;
        expect([replayed.status, replay]).toEqual([200, { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs offline_access", refresh_token: rotation.refresh_token }]);
        // Not the replayed access token, which could not be checked for revocation: a fresh one.
        expect(replay.access_token).not.toBe(rotation.access_token);
        expect(warnings).toEqual([
          [
            "revoked-token lookup failed at a refresh-token grace replay; a fresh access token is issued instead of the replayed one",
            { name: "StorageError", message: "redis: revokedTokens.has failed", cause: "Error: NOPERM this user has no permissions to access one of the keys used as arguments" },
          ],
        ]);
        // Still signed in: the family's head rotates.
        const next = await tokenRequest({ grant_type: "refresh_token", refresh_token: rotation.refresh_token });
        expect(next.status).toBe(200);
      } finally {
        own.destroy();
        await sql.close();
      }
    });
  });
  it("a correct password whose throttle reset fails (Redis refuses DEL) gets its tokens, and its console session, with a warn line naming the failure instead of a 503; the attempt stays counted, so wrong guesses lock at the same count as ever or sooner, never later", async () => {
    // The reset's script deletes the counter (DEL); incrementing one, issuing tokens (SQL) and
    // creating a console session need no DEL: only the throttle's reset after a success fails.
    await withAclUser(["~hot:*", "+@all", "-del"], async (url, admin) => {
      await withAppAsAclUser(url, { passwordHashIterations: 1000, bruteForce: { maxFailures: 3, windowSeconds: 900 }, console: { enabled: true } }, async (app, warnings) => {
        const { clientSecret } = await app.admin.createClient({ clientId: "c" });
        await app.admin.createAccount({ username: "root", password: "a password", roles: ["admin"] });
        const grant = (password: string) =>
          app.fetch(
            new Request("https://pg.test/UserService/connect/token", {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({ client_id: "c", client_secret: clientSecret, grant_type: "password", username: "root", password, scope: "Platform_UserAPIs" }),
            }),
          );
        const counts = () => throttleCounts(admin as TestClient);
        const failed = (operation: string, sha1: string, line: number) => [
          "brute-force counters could not be reset after a correct password; the sign-in stands, and this attempt stays counted until its window ends",
          { name: "StorageError", message: `redis: attempts.${operation} failed`, cause: `Error: ERR The user executing the script can't run this command or subcommand script: ${sha1}, on @user_script:${line}.` },
        ];
        // The grant and the console both reset their (username + address) key first, and the first
        // failure is the one named (the budget, counted last, is refunded last; until 2026-12-02 the
        // console counted its address budget first, and its refund's failure was named).
        const resetFailed = failed("reset", "8eac28155ba10c19f1de4538e8f838eb130d6869", 8);
        // The app's start-up warnings (no issuer, keys in clear) come with its first request.
        const warmUp = await app.fetch(new Request("https://pg.test/UserService/connect/token", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ client_id: "c", client_secret: clientSecret, grant_type: "client_credentials" }) }));
        expect(warmUp.status).toBe(200);
        warnings.length = 0;

        const granted = await grant("a password");
        expect([granted.status, await granted.json()]).toEqual([200, { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs" }]);
        expect(warnings).toEqual([resetFailed]);
        // Counted first, not reset: the (username + address) pair, the client's budget, the username.
        expect(await counts()).toEqual(["1", "1", "1"]);

        const signedIn = await app.fetch(
          new Request("https://pg.test/console/api/session", {
            method: "POST",
            headers: { "content-type": "application/json", origin: "https://pg.test", "sec-fetch-site": "same-origin" },
            body: JSON.stringify({ username: "root", password: "a password" }),
          }),
        );
        expect([signedIn.status, await signedIn.json()]).toEqual([
          200,
          { username: "root", displayName: null, csrfToken: expect.any(String), expiresAt: expect.any(String), grantTypes: ["client_credentials", "password", "refresh_token"], scopes: ["Platform_UserAPIs", "Platform_AllAppsServerCommands", "offline_access"], adminRole: "admin", accountPages: { defaultPageSize: 20, maxPageSize: 100 } },
        ]);
        expect(signedIn.headers.get("set-cookie")).toMatch(/^plantgate_console=[A-Za-z0-9_-]{43};/);
        expect(warnings).toEqual([resetFailed, resetFailed]);
        // The console's address budget now too; the pair and the username at 2.
        expect(await counts()).toEqual(["1", "1", "2", "2"]);

        // maxFailures 3: the pair takes one wrong guess more (3), then locks, the right password included.
        const wrong = await grant("wrong");
        expect([wrong.status, await wrong.json()]).toEqual([400, { error: "invalid_grant", error_description: "The username or password is incorrect." }]);
        const locked = await grant("a password");
        expect([locked.status, await locked.json()]).toEqual([429, { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." }]);
        // The console's budget 1, the client's 2 (the wrong guess), the username 3, the pair 4 (the
        // locked attempt stops there: the keys after it are not counted).
        expect(await counts()).toEqual(["1", "2", "3", "4"]);
        expect(warnings).toEqual([resetFailed, resetFailed]);
      });
    });
  });
  it("a right client secret whose throttle reset fails (Redis refuses DEL) gets its token with a warn line instead of a 503; the counted failures stay, so the client locks at the same count as ever", async () => {
    await withAclUser(["~hot:*", "+@all", "-del"], async (url, admin) => {
      // One instant throughout: the address budget and the client's share are counted per window
      // of the clock (from the epoch), and on the real clock a window could start mid-case.
      const now = Date.now();
      await withAppAsAclUser(url, { bruteForce: { maxFailures: 3, windowSeconds: 900 }, clock: () => now }, async (app, warnings) => {
        const { clientSecret } = await app.admin.createClient({ clientId: "c" });
        const token = (secret: string) =>
          app.fetch(
            new Request("https://pg.test/UserService/connect/token", {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({ client_id: "c", client_secret: secret, grant_type: "client_credentials" }),
            }),
          );
        const counts = () => throttleCounts(admin as TestClient);
        const invalidClient = [401, { error: "invalid_client", error_description: "Client authentication failed." }];
        const issued = [200, { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" }];
        // The app's start-up warnings (no issuer, keys in clear) come with its first request; no counter exists yet, so nothing is reset.
        const first = await token(clientSecret);
        expect([first.status, await first.json()]).toEqual(issued);
        warnings.length = 0;

        const wrong = await token("wrong");
        expect([wrong.status, await wrong.json()]).toEqual(invalidClient);
        // Counted: the (client id + address) pair, its share of the address's budget, and the budget across client ids.
        expect(await counts()).toEqual(["1", "1", "1"]);
        const right = await token(clientSecret);
        expect([right.status, await right.json()]).toEqual(issued);
        expect(warnings).toEqual([
          [
            "brute-force counter could not be reset after a successful client authentication; the authentication stands, and the counted failures stay until their window ends",
            { name: "StorageError", message: "redis: attempts.reset failed", cause: expect.stringMatching(/^Error: ERR The user executing the script can't run this command or subcommand script: [0-9a-f]{40}, on @user_script:\d+\.$/) },
          ],
        ]);
        // The pair's reset failed, so its count stays; a success leaves the pair's share and the address budget as they are.
        expect(await counts()).toEqual(["1", "1", "1"]);

        // maxFailures 3: two more failures lock the client and address, the right secret included.
        for (let i = 0; i < 2; i++) {
          const again = await token("wrong");
          expect([again.status, await again.json()]).toEqual(invalidClient);
        }
        const locked = await token(clientSecret);
        expect([locked.status, await locked.json()]).toEqual([429, { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." }]);
        // The pair at 3 refuses on its read: no counter is counted again.
        expect(await counts()).toEqual(["3", "3", "3"]);
        expect(warnings).toHaveLength(1);
      });
    });
  });
});

describe.skipIf(!haveServer && !IN_CI)(`a private redis-server restarts${haveServer ? "" : ` (skipped: no ${REDIS_SERVER})`}`, () => {
  let proc: ChildProcess | undefined;
  afterAll(async () => {
    if (proc) {
      proc.kill("SIGKILL");
      await stopped(proc);
    }
  });

  it("StorageError while it is down; after it is back (its script cache empty), the same client works again", async () => {
    expect(haveServer, `${REDIS_SERVER} is required when CI=true`).toBe(true);
    const port = await freePort();
    proc = await startRedis(port);
    const client = createClient({ url: `redis://127.0.0.1:${port}`, disableOfflineQueue: true, socket: { reconnectStrategy: () => 50 } });
    client.on("error", () => {});
    await client.connect();
    try {
      const hot = redisHotStores(client, { keyPrefix: "p:" });
      const now = Date.now();
      expect(await hot.attempts.increment("t:k", now, WINDOW)).toEqual({ key: "t:k", count: 1, windowStart: now });
      proc.kill("SIGKILL");
      await stopped(proc);
      await expect(hot.revokedTokens.has("jti")).rejects.toThrow(new StorageError("redis: revokedTokens.has failed"));
      proc = await startRedis(port);
      // The restarted server has no data and no cached scripts: EVALSHA answers NOSCRIPT, EVAL follows.
      let back = false;
      for (let i = 0; i < 100 && !back; i++) {
        back = client.isReady;
        if (!back) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(back, "the client reconnected").toBe(true);
      expect(await hot.attempts.increment("t:k", now, WINDOW)).toEqual({ key: "t:k", count: 1, windowStart: now });
      await hot.revokedTokens.add("jti", now + 60_000);
      expect(await hot.revokedTokens.has("jti")).toBe(true);
    } finally {
      client.destroy();
    }
  });

  it("a client with its offline queue on (node-redis's default): while Redis is down, a command fails at once instead of waiting in the queue (to run after the reconnect, when its caller was long told it failed)", async () => {
    expect(haveServer, `${REDIS_SERVER} is required when CI=true`).toBe(true);
    const port = await freePort();
    // Persistent, so a reset replayed after the restart would find the counter and delete it.
    const dir = mkdtempSync(join(tmpdir(), "plantgate-redis-aof-"));
    let server = await startRedis(port, dir);
    const queued = createClient({ url: `redis://127.0.0.1:${port}`, socket: { reconnectStrategy: () => 50 } });
    queued.on("error", () => {});
    await queued.connect();
    try {
      const hot = redisHotStores(queued, { keyPrefix: "p:" });
      const now = Date.now();
      expect(await hot.attempts.increment("t:k", now, WINDOW)).toEqual({ key: "t:k", count: 1, windowStart: now });
      server.kill("SIGKILL");
      await stopped(server);
      for (let i = 0; i < 100 && queued.isReady; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(queued.isReady).toBe(false);
      const started = performance.now();
      // Queued, it would wait for the client's 5 s command timeout and then run on the next server
      // (half of that tells the two apart, with room for a loaded machine).
      await expect(hot.attempts.reset("t:k")).rejects.toThrow(new StorageError("redis: attempts.reset failed"));
      expect(performance.now() - started).toBeLessThan(2_500);
      server = await startRedis(port, dir);
      for (let i = 0; i < 200 && !queued.isReady; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(queued.isReady, "reconnected").toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // The counter came back from the append-only file, and the refused reset never ran.
      expect(await hot.attempts.get("t:k")).toEqual({ key: "t:k", count: 1, windowStart: now });
    } finally {
      queued.destroy();
      server.kill("SIGKILL");
      await stopped(server);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the connection drops with commands in flight (CLIENT KILL): each settles at once, as its reply or a StorageError, none waits for the reconnect", async () => {
    await withPrivateClient(undefined, async (_server, client, port) => {
      const hot = redisHotStores(client, { keyPrefix: "k:" });
      const now = Date.now();
      const started = performance.now();
      const settled = Promise.allSettled(Array.from({ length: 2_000 }, () => hot.attempts.increment("t:k", now, WINDOW)));
      const killer = createClient({ url: `redis://127.0.0.1:${port}` });
      await killer.connect();
      try {
        await killer.sendCommand(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
      } finally {
        killer.destroy();
      }
      const results = await settled;
      // Far below the client's 5 s command timeout: nothing waited for it.
      expect(performance.now() - started).toBeLessThan(2_000);
      const failed = results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason as Error);
      expect(failed.length).toBeGreaterThan(0);
      expect(failed.every((e) => e instanceof StorageError && e.message === "redis: attempts.increment failed")).toBe(true);
    });
  });

  it("close() of the env-opened client does not hang on a server that stopped answering: past 2 s of waiting for replies it drops the connection", async () => {
    await withFrozenEnvClient(async (opened) => {
      // A command waiting for its reply, which never comes (it fails at the 5 s command timeout).
      let settledAt = 0;
      const pending = opened.stores.revokedTokens.has("jti").then(
        () => "answered",
        () => ((settledAt = performance.now()), "failed"),
      );
      const started = performance.now();
      await opened.close();
      const took = performance.now() - started;
      expect(took).toBeGreaterThanOrEqual(1900);
      expect(took).toBeLessThan(4000);
      // The connection was dropped: the waiting command fails then, not at its own 5 s timeout.
      expect(await pending).toBe("failed");
      expect(settledAt - started).toBeLessThan(3000);
    });
  }, 15_000);

  it("a server that stops answering (SIGSTOP): StorageError after the client's command timeout, not before, from the hot stores' own shared timer; in order again after SIGCONT", async () => {
    // node-redis's per-command timeout, read by redisHotStores and enforced by its own timer.
    // 1 s: the bound's 1.25 and a second of room for a loaded machine stay far from a 5 s default.
    await withPrivateClient(1000, async (frozen, client) => {
      const hot = redisHotStores(client, { keyPrefix: "p:" });
      const now = Date.now();
      expect(await hot.attempts.increment("t:k", now, WINDOW)).toEqual({ key: "t:k", count: 1, windowStart: now });
      frozen.kill("SIGSTOP");
      const started = performance.now();
      const failure = await hot.attempts.get("t:k").then(() => null, (e: unknown) => e);
      const took = performance.now() - started;
      expect(failure).toEqual(new StorageError("redis: attempts.get failed"));
      expect((failure as Error).cause).toBeInstanceOf(CommandTimeoutError);
      expect(took).toBeGreaterThanOrEqual(999);
      expect(took).toBeLessThan(1000 * 1.25 + 1000);
      frozen.kill("SIGCONT");
      // The late reply of the failed read is dropped; the next reply is the next command's.
      expect(await hot.attempts.get("t:k")).toEqual({ key: "t:k", count: 1, windowStart: now });
      expect(await hot.attempts.increment("t:k", now, WINDOW)).toEqual({ key: "t:k", count: 2, windowStart: now });
    });
  });

  it("through a Sentinel client (createSentinel) a primary that stops answering is a StorageError after the sentinel's command timeout too, and without one set after node-redis's 5 s default: both held the request without end", async () => {
    expect(haveServer, `${REDIS_SERVER} is required when CI=true`).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), "plantgate-sentinel-"));
    const primaryPort = await freePort();
    const primary = await startRedis(primaryPort);
    const sentinelPort = await freePort();
    const config = join(dir, "sentinel.conf");
    writeFileSync(config, `port ${sentinelPort}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor primary 127.0.0.1 ${primaryPort} 1\n`);
    const sentinelProc = spawn(REDIS_SERVER, [config, "--sentinel"], { stdio: "ignore" });
    const sentinels: { destroy(): void }[] = [];
    try {
      const open = async (timeout: number | undefined) => {
        const sentinel = createSentinel({ name: "primary", sentinelRootNodes: [{ host: "127.0.0.1", port: sentinelPort }], ...(timeout !== undefined ? { commandOptions: { timeout } } : {}) });
        sentinel.on("error", () => {});
        sentinels.push(sentinel);
        for (let i = 0; ; i++) {
          try {
            await sentinel.connect();
            return sentinel;
          } catch (e) {
            if (i >= 100) throw e;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
      };
      const withTimeout = redisHotStores(await open(1000), { keyPrefix: "p:" });
      const withDefault = redisHotStores(await open(undefined), { keyPrefix: "p:" });
      expect(await withTimeout.revokedTokens.has("jti")).toBe(false);
      expect(await withDefault.revokedTokens.has("jti")).toBe(false);
      primary.kill("SIGSTOP");
      const started = performance.now();
      const outcome = (p: Promise<unknown>) =>
        p.then(
          () => "answered",
          (e: unknown) => ({ error: e, after: performance.now() - started }),
        );
      const late = (ms: number) => new Promise((resolve) => setTimeout(() => resolve(`still waiting after ${ms} ms`), ms));
      const [short, long] = await Promise.all([Promise.race([outcome(withTimeout.revokedTokens.has("jti")), late(4000)]), Promise.race([outcome(withDefault.revokedTokens.has("jti")), late(9000)])]);
      expect(short).toEqual({ error: new StorageError("redis: revokedTokens.has failed"), after: expect.any(Number) });
      expect(((short as { error: Error }).error.cause)).toBeInstanceOf(CommandTimeoutError);
      expect((short as { after: number }).after).toBeGreaterThanOrEqual(999);
      expect(long).toEqual({ error: new StorageError("redis: revokedTokens.has failed"), after: expect.any(Number) });
      expect((long as { after: number }).after).toBeGreaterThanOrEqual(4999);
    } finally {
      primary.kill("SIGCONT");
      for (const s of sentinels) s.destroy();
      primary.kill("SIGKILL");
      sentinelProc.kill("SIGKILL");
      await Promise.all([stopped(primary), stopped(sentinelProc)]);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it("commands that timed out while the server was frozen are not run once it answers again: exactly those the client had written to the socket run, none of the unsent ones (dropped from the client's queue)", async () => {
    // How many commands a frozen server's connection takes before the rest wait unsent is the
    // kernel's doing: the socket's buffers grow with TCP autotuning, by timing (under heavy load
    // the old bound, fewer than 2,000 of 20,100 run, failed). So the bytes the client wrote are
    // counted on its real socket (Node's net.client.socket diagnostics channel), and the commands
    // that ran must be exactly those: every command is the same bytes.
    expect(haveServer, `${REDIS_SERVER} is required when CI=true`).toBe(true);
    const port = await freePort();
    const frozen = await startRedis(port);
    const sockets: Socket[] = [];
    const seeSocket = (message: unknown) => void sockets.push((message as { socket: Socket }).socket);
    diagnostics_channel.subscribe("net.client.socket", seeSocket);
    const client = createClient({ url: `redis://127.0.0.1:${port}`, disableOfflineQueue: true, commandOptions: { timeout: 300 } });
    client.on("error", () => {});
    try {
      await client.connect();
    } finally {
      diagnostics_channel.unsubscribe("net.client.socket", seeSocket);
    }
    try {
      const mine = sockets.filter((socket) => socket.remotePort === port);
      expect(mine).toHaveLength(1);
      const socket = mine[0]!;
      const hot = redisHotStores(client, { keyPrefix: "q:" });
      // A long key makes each call about 1 KB on the wire: the 20,100 below (some 20 MB) are far
      // more than any socket buffers take (Linux's tcp_wmem allows at most 4 MB here), so most
      // stay unsent whatever the load.
      const key = `t:${"k".repeat(500)}`;
      const record = `q:a:k:${key}`;
      // Read without the hot stores' timeout: Redis first runs what it was sent, which takes
      // longer on a loaded machine.
      const raw = client.withCommandOptions({ timeout: 0 });
      const now = Date.now();
      // The bytes of one increment (the second: the first loads the script) and one read.
      expect(await hot.attempts.increment(key, now, WINDOW)).toEqual({ key, count: 1, windowStart: now });
      let at = socket.bytesWritten;
      expect(await hot.attempts.increment(key, now, WINDOW)).toEqual({ key, count: 2, windowStart: now });
      const incrementBytes = socket.bytesWritten - at;
      expect(incrementBytes).toBeGreaterThan(1_000);
      at = socket.bytesWritten;
      expect(await raw.hGet(record, "c")).toBe("2");
      const readBytes = socket.bytesWritten - at;

      frozen.kill("SIGSTOP");
      const frozenAt = socket.bytesWritten;
      // The first timed-out calls tell the stores Redis is hung: the next carry their slot's
      // signal with any number pending (the socket may still be backed up with these).
      const first = await Promise.allSettled(Array.from({ length: 100 }, () => hot.attempts.increment(key, now, WINDOW)));
      expect(first.every((c) => c.status === "rejected")).toBe(true);
      const calls = await Promise.allSettled(Array.from({ length: 20_000 }, () => hot.attempts.increment(key, now, WINDOW)));
      expect(calls.every((c) => c.status === "rejected")).toBe(true);
      // Written to the socket (in the kernel's buffers or Node's), whole commands only: these
      // cannot be called back and will run.
      const written = socket.bytesWritten - frozenAt;
      expect(written % incrementBytes).toBe(0);
      const sent = written / incrementBytes;
      expect(sent).toBeGreaterThan(0);
      expect(sent).toBeLessThan(20_100);

      frozen.kill("SIGCONT");
      // Exactly the written ones ran; nothing more was written after the thaw but this read: the
      // unsent ones were dropped. (Before 2026-11-29 every one of them ran late: 20,102.)
      expect(Number(await raw.hGet(record, "c"))).toBe(2 + sent);
      expect(socket.bytesWritten - frozenAt - written).toBe(readBytes);
    } finally {
      frozen.kill("SIGCONT");
      client.destroy();
      frozen.kill("SIGKILL");
      await stopped(frozen);
    }
  }, 20_000);

  it("commands that time out in the first slot of a hang are dropped from the client's queue too, not run when Redis answers again (over a Unix socket, whose small buffer leaves most unsent)", async () => {
    expect(haveServer, `${REDIS_SERVER} is required when CI=true`).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), "plantgate-redis-sock-"));
    const path = join(dir, "redis.sock");
    const port = await freePort();
    const frozen = await startRedis(port, undefined, ["--unixsocket", path]);
    const client = createClient({ socket: { path, tls: false }, disableOfflineQueue: true, commandOptions: { timeout: 300 } });
    client.on("error", () => {});
    await client.connect();
    try {
      const hot = redisHotStores(client, { keyPrefix: "f:" });
      const now = Date.now();
      expect(await hot.attempts.increment("t:k", now, WINDOW)).toEqual({ key: "t:k", count: 1, windowStart: now });
      frozen.kill("SIGSTOP");
      // No slot has timed out before: these are the first of the hang.
      const calls = await Promise.allSettled(Array.from({ length: 10_000 }, () => hot.attempts.increment("t:k", now, WINDOW)));
      expect(calls.every((c) => c.status === "rejected")).toBe(true);
      frozen.kill("SIGCONT");
      // What the socket took before the slot expired still runs (about 100 KB in the kernel, 16 KB
      // in the client's buffer: some 1,500 of these here); the rest must not. Read without a
      // timeout: Redis may first have to run what it was sent.
      const count = Number(await client.withCommandOptions({ timeout: 0 }).hGet("f:a:k:t:k", "c"));
      expect(count).toBeGreaterThan(1);
      expect(count).toBeLessThan(3_000);
      // Before 2026-11-29 a command carried its slot's signal only after a first slot had timed
      // out, so every one of these ran late: 10,001.
    } finally {
      frozen.kill("SIGCONT");
      client.destroy();
      frozen.kill("SIGKILL");
      await stopped(frozen);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);

  it("the env client holds at most COMMANDS_QUEUE_MAX commands: past it, with a frozen server, a command fails at once instead of queueing", async () => {
    await withFrozenEnvClient(async (opened) => {
      const settledAt: number[] = [];
      const started = performance.now();
      const calls = Array.from({ length: COMMANDS_QUEUE_MAX + 500 }, () =>
        opened.stores.revokedTokens.has("jti").then(
          () => "answered",
          (e: unknown) => (settledAt.push(performance.now() - started), (e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : String(e)),
        ),
      );
      // The 500 past the bound fail at once, long before the 5 s command timeout.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(settledAt.length).toBe(500);
      expect((await Promise.all(calls.slice(-500))).every((m) => m === "The queue is full")).toBe(true);
    });
  }, 20_000);

  it("after the event loop stalled, a command to a healthy server still gets its whole timeout (it joined a slot whose expiry was already due)", async () => {
    await withPrivateClient(undefined, async (_server, client) => {
      const hot = redisHotStores(client, { keyPrefix: "s:", commandTimeoutMs: 200 });
      expect(await hot.revokedTokens.has("a")).toBe(false);
      // The loop busy for longer than the timeout right after a command: its slot's expiry is due.
      const first = hot.revokedTokens.has("b");
      const until = performance.now() + 300;
      while (performance.now() < until) {
        // a long synchronous handler
      }
      const second = hot.revokedTokens.has("c");
      await first.catch(() => undefined);
      expect(await second).toBe(false);
    });
  });
});
