/**
 * The machine's Redis (`PLANTGATE_TEST_REDIS_URL`, default `redis://127.0.0.1:6379`), a fresh key
 * prefix per store so tests never see each other's keys, and the composed storage under test:
 * SQLite in memory (`@plantgate/storage-sql`) with the hot stores spread over it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import type { Storage } from "@plantgate/core";
import { openSqlStorage, type SqlStorage } from "@plantgate/storage-sql";
import type { ConformanceTarget } from "@plantgate/storage-testing";
import { sql } from "kysely";
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { redisHotStores, type RedisHotStoresOptions, type RedisScriptClient } from "../src/index.js";

export const IN_CI = process.env.CI === "true";
export const REDIS_URL = process.env.PLANTGATE_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** The URL with any password replaced, for test names and messages. */
import { redactConnectionUrl as redact } from "@plantgate/core";
export { redact };

/** A client that fails at once (no reconnect, no offline queue) instead of waiting. */
const createTestClient = (url: string) => createClient({ url, disableOfflineQueue: true, socket: { connectTimeout: 3000, reconnectStrategy: false } });

export type TestClient = ReturnType<typeof createTestClient>;

/** A connected test client. */
export async function connect(url = REDIS_URL): Promise<TestClient> {
  const client = createTestClient(url);
  client.on("error", () => {}); // failures reach the caller as rejections; no unhandled 'error' event
  await client.connect();
  return client;
}

/** Null when Redis answers PING; else why not. */
export async function probeRedis(): Promise<string | null> {
  try {
    const client = await connect();
    try {
      if ((await client.ping()) !== "PONG") return "PING did not answer PONG";
    } finally {
      client.destroy();
    }
    return null;
  } catch (e) {
    return (e as Error)?.message || String(e);
  }
}

/** Registers `body` when Redis answered; else a loudly named skip, or a failing test under CI=true. */
export function describeIfRedis(label: string, problem: string | null, body: () => void): void {
  if (problem === null) {
    describe(label, body);
    return;
  }
  const reason = `${label} (Redis unreachable at ${redact(REDIS_URL)}: set PLANTGATE_TEST_REDIS_URL)`;
  if (IN_CI) {
    describe(reason, () => {
      it("Redis is reachable (required when CI=true)", () => {
        throw new Error(`Redis is unreachable at ${redact(REDIS_URL)}: ${problem}`);
      });
    });
  } else {
    describe.skip(reason, () => {
      it(`skipped: ${problem}`, () => {});
    });
  }
}

export const freshPrefix = (): string => `plantgate-test:${randomBytes(6).toString("hex")}:`;

/** Every key under `prefix`. */
export async function keysUnder(client: TestClient, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) keys.push(...batch);
  return keys.sort();
}

/** Deletes every key under `prefix`. */
export async function dropPrefix(client: TestClient, prefix: string): Promise<void> {
  const keys = await keysUnder(client, prefix);
  if (keys.length > 0) await client.del(keys);
}

/** Every key under `prefix` with its whole value, as JSON text. */
export async function dumpPrefix(client: TestClient, prefix: string): Promise<string> {
  const dump: Record<string, unknown> = {};
  for (const key of await keysUnder(client, prefix)) {
    const type = await client.type(key);
    if (type === "string") dump[key] = await client.get(key);
    else if (type === "hash") dump[key] = await client.hGetAll(key);
    else if (type === "set") dump[key] = await client.sMembers(key);
    else if (type === "zset") dump[key] = await client.zRangeWithScores(key, 0, -1);
    else throw new Error(`unexpected Redis type ${type} at ${key}`);
  }
  return JSON.stringify(dump);
}

/** Every row of every table of an SQLite store, as JSON text (bigints as digits). */
async function dumpSql(storage: SqlStorage): Promise<string> {
  const tables = await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(storage.db);
  const dump: Record<string, unknown[]> = {};
  for (const { name } of tables.rows) dump[name] = (await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(storage.db)).rows;
  return JSON.stringify(dump, (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value));
}

interface Composed {
  sql: SqlStorage;
  prefix: string;
}

/**
 * SQLite in memory with the Redis hot stores spread over it, as a deployment composes them; a
 * fresh key prefix per store, deleted afterwards. The raw dump is every SQL row plus every Redis
 * key under the prefix, so the secrets probe covers both halves.
 */
export function composedTarget(client: () => TestClient, options: Omit<RedisHotStoresOptions, "keyPrefix"> = {}): ConformanceTarget {
  const parts = new WeakMap<Storage, Composed>();
  return {
    async create() {
      const sqlStorage = await openSqlStorage(":memory:");
      const prefix = freshPrefix();
      const storage: Storage = { ...sqlStorage, ...redisHotStores(client(), { ...options, keyPrefix: prefix }) };
      parts.set(storage, { sql: sqlStorage, prefix });
      return storage;
    },
    async destroy(storage) {
      const p = parts.get(storage)!;
      await p.sql.close();
      await dropPrefix(client(), p.prefix);
    },
    async rawDump(storage) {
      const p = parts.get(storage)!;
      return `${await dumpSql(p.sql)}\n${await dumpPrefix(client(), p.prefix)}`;
    },
  };
}

// --- a private redis-server (to restart, freeze, or give an ACL) ------------------------------

export const REDIS_SERVER = "/usr/bin/redis-server";

export const haveServer = existsSync(REDIS_SERVER);

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startRedis(port: number, dir?: string, extra: string[] = []): Promise<ChildProcess> {
  // With a folder: an append-only file there, so its data outlives a restart.
  const persistence = dir === undefined ? ["--appendonly", "no"] : ["--appendonly", "yes", "--appendfsync", "always", "--dir", dir];
  const proc = spawn(REDIS_SERVER, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", ...persistence, ...extra], { stdio: "ignore" });
  for (let i = 0; i < 100; i++) {
    try {
      const c = await connect(`redis://127.0.0.1:${port}`);
      c.destroy();
      return proc;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  proc.kill("SIGKILL");
  throw new Error(`redis-server did not start on port ${port}`);
}

export const stopped = (proc: ChildProcess) => new Promise<void>((resolve) => (proc.exitCode !== null || proc.signalCode !== null ? resolve() : proc.once("exit", () => resolve())));

/**
 * Runs `body` with a private redis-server (`server`, which the body may SIGSTOP) and a node-redis
 * client on it without offline queue (`timeout`: its per-command timeout, when given), and its
 * port; both gone after.
 */
export async function withPrivateClient(timeout: number | undefined, body: (server: ChildProcess, client: RedisScriptClient, port: number) => Promise<void>): Promise<void> {
  expect(haveServer, `${REDIS_SERVER} is required when CI=true`).toBe(true);
  const port = await freePort();
  const server = await startRedis(port);
  const client = createClient({ url: `redis://127.0.0.1:${port}`, disableOfflineQueue: true, ...(timeout !== undefined ? { commandOptions: { timeout } } : {}) });
  client.on("error", () => {});
  await client.connect();
  try {
    await body(server, client, port);
  } finally {
    server.kill("SIGCONT");
    client.destroy();
    server.kill("SIGKILL");
    await stopped(server);
  }
}

/**
 * Runs `body` with a private redis-server whose user `app` (password `app-password`) has the ACL
 * rules `rules` (e.g. `["~hot:*", "+@all", "-evalsha"]`), given that user's URL and an admin client
 * (the default user, every right); both gone after.
 */
export async function withAclUser(rules: string[], body: (url: string, admin: TestClient) => Promise<void>): Promise<void> {
  await withPrivateClient(undefined, async (_server, admin, port) => {
    const full = admin as TestClient;
    await full.sendCommand(["ACL", "SETUSER", "app", "on", ">app-password", ...rules]);
    await body(`redis://app:app-password@127.0.0.1:${port}`, full);
  });
}
