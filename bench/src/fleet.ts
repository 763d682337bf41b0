// The stores of the fleet rows: a fresh PostgreSQL schema per server process, and with Redis a
// fresh key prefix beside it, both removed after the row.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { createClient } from "redis";

export const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";

/** The server env of one row's store, and how to remove it afterwards. */
export interface FleetStore {
  env: Record<string, string>;
  drop(): Promise<void>;
}

export async function redisReachable(url: string): Promise<boolean> {
  const client = createClient({ url, socket: { connectTimeout: 2000, reconnectStrategy: false } });
  client.on("error", () => {});
  try {
    await client.connect();
    client.destroy();
    return true;
  } catch {
    return false;
  }
}

/** A new schema on `pgUrl` (selected through `options=-c search_path`), and a Redis prefix if `redis`. */
export async function freshFleetStore(pgUrl: string, redis: boolean): Promise<FleetStore> {
  const name = `bench_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`create schema ${name}`);
  await admin.end();
  const u = new URL(pgUrl);
  u.searchParams.set("options", `-c search_path=${name}`);
  const prefix = `plantgate-bench:${name}:`;
  return {
    env: { BENCH_STORE: "sql", BENCH_DB_URL: u.toString(), ...(redis ? { BENCH_REDIS_URL: REDIS_URL, BENCH_REDIS_PREFIX: prefix } : {}) },
    async drop() {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`drop schema if exists ${name} cascade`);
      await c.end();
      if (!redis) return;
      const r = createClient({ url: REDIS_URL });
      r.on("error", () => {});
      await r.connect();
      const keys: string[] = [];
      for await (const batch of r.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) keys.push(...batch);
      if (keys.length > 0) await r.del(keys);
      r.destroy();
    },
  };
}
