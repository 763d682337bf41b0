/**
 * A world whose setup fails leaves nothing behind on the run's store (HOSTILE_STORE, HOSTILE_REDIS)
 * or runtime (HOSTILE_RUNTIME): its PostgreSQL schema or MySQL database is dropped, its Redis keys
 * deleted, its SQLite database closed, its Miniflare instance (a workerd child process) disposed.
 * The failure is injected as setup's last step (`atSetupEnd`), when setup has written all it writes
 * (the revoked token's jti in Redis among it); the test first sees each of those things exist, so it
 * cannot pass by finding nothing to begin with. On the memory store there is nothing to leak: only
 * the failure's own error is checked.
 */
import { execFileSync } from "node:child_process";
import mysql from "mysql2/promise";
import pg from "pg";
import { createClient } from "redis";
import { expect, it } from "vitest";
import type { Storage } from "@plantgate/core";
import { RUNTIME_LABEL } from "../src/settings.js";
import { createWorld, isolatedPrefix, MYSQL_URL, ON_WORKERD, POSTGRES_URL, REDIS_URL, STORE } from "../src/world.js";

/** The workerd processes this process started (Miniflare spawns workerd as a child). */
function workerdChildren(): string[] {
  let out: string;
  try {
    out = execFileSync("ps", ["-o", "pid=,comm=", "--ppid", String(process.pid)], { encoding: "utf8" });
  } catch {
    out = ""; // ps exits with 1 when there is no child at all
  }
  return out
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => /\sworkerd$/.test(l));
}

/** What of a world named by `prefix` exists now on the run's store and runtime. */
async function leftovers(prefix: string): Promise<string[]> {
  const found: string[] = [];
  if (STORE === "postgres") {
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>("select schema_name as name from information_schema.schemata");
      found.push(...rows.filter((r) => r.name.startsWith(prefix)).map((r) => `schema ${r.name}`));
    } finally {
      await client.end();
    }
  }
  if (STORE === "mysql") {
    const connection = await mysql.createConnection({ uri: MYSQL_URL.replace(/^mariadb:/i, "mysql:") });
    try {
      const [rows] = await connection.query("show databases");
      found.push(...(rows as { Database: string }[]).filter((r) => r.Database.startsWith(prefix)).map((r) => `database ${r.Database}`));
    } finally {
      await connection.end();
    }
  }
  if (REDIS_URL !== null) {
    const client = createClient({ url: REDIS_URL });
    await client.connect();
    try {
      for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) found.push(...batch.map((k) => `Redis key ${k}`));
    } finally {
      client.destroy();
    }
  }
  if (ON_WORKERD) found.push(...workerdChildren().map((p) => `workerd process ${p}`));
  return found;
}

/** Whether `storage` still answers a query (a closed SQLite database, a disposed D1 bridge do not). */
const answers = (storage: Storage) =>
  storage.clients.list().then(
    () => true,
    () => false,
  );

const where = [STORE, ...(REDIS_URL !== null ? ["Redis"] : [])].join(" + ");

it(`${RUNTIME_LABEL}a world whose setup fails at its last step leaves nothing behind on ${ON_WORKERD ? "workerd" : where}`, async () => {
  // A seed of its own: the names it makes are this test's alone, even beside another run.
  const seed = crypto.getRandomValues(new Uint32Array(1))[0]!;
  const prefix = isolatedPrefix(seed);
  const before = ON_WORKERD ? workerdChildren().length : 0;
  expect(await leftovers(prefix)).toHaveLength(before);
  let during: string[] = [];
  let storage: Storage | undefined;
  const injected = new Error("injected setup failure");
  const failure = await createWorld(seed, {
    atSetupEnd: async (s) => {
      storage = s;
      during = await leftovers(prefix);
      if (!(await answers(s))) throw new Error("the world's store did not answer during setup");
      throw injected;
    },
  }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(failure).toBe(injected);
  // What there was to clean up.
  const expected = [
    ...(STORE === "postgres" ? ["schema"] : []),
    ...(STORE === "mysql" ? ["database"] : []),
    ...(REDIS_URL !== null ? ["Redis key"] : []),
    ...(ON_WORKERD ? ["workerd process"] : []),
  ];
  for (const kind of expected) expect(during.filter((d) => d.startsWith(kind)).length, `${kind} during setup`).toBeGreaterThan(kind === "workerd process" ? before : 0);
  // All of it gone; the store closed.
  expect(await leftovers(prefix)).toHaveLength(before);
  if (STORE !== "memory" || ON_WORKERD) expect(await answers(storage!)).toBe(false);
});
