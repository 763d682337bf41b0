import { Agent, get as httpGet } from "node:http";
import pg from "pg";
import BetterSqlite3 from "better-sqlite3";
import { hashPassword } from "@plantgate/core";
import { openSqlStorage } from "@plantgate/storage-sql";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BASIC_AUTH } from "./shared.js";
import { startServer } from "./proc.js";

/** Rounds of page 1, middle and last page requested before timing. */
const WARMUP_ROUNDS = 30;

/** The engines the paging section runs on. */
export type PagingEngine = "postgres" | "sqlite";

/** p50 and max of one page's latency, ms. */
export interface Latency {
  p50: number;
  max: number;
}

/** Latency of GetAccountList page 1, the middle page and the last page over HTTP, on one engine. */
export interface PagingResult {
  engine: PagingEngine;
  accounts: number;
  seedSeconds: number | null;
  middlePage: number;
  lastPage: number;
  firstMs: Latency;
  middleMs: Latency;
  lastMs: Latency;
  samples: number;
  /** Set for a BENCH_BASELINE server's figures (its abbreviated commit). */
  baseline?: string;
}

export const ENGINE_LABEL: Record<PagingEngine, string> = { postgres: "PostgreSQL", sqlite: "SQLite" };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const latency = (xs: number[]): Latency => ({ p50: median(xs), max: Math.max(...xs) });

function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set("options", `-c search_path=${schema}`);
  return u.toString();
}

/** A real PHC hash for every seeded row, so the records are valid (no one logs in with them). */
const phc = () => hashPassword("not-used-for-login", (n) => new Uint8Array(randomBytes(n)), { iterations: 1000 });

/**
 * Fills `<schema>.pg_accounts` (its own schema, so the test suites' tables are untouched) with
 * `count` accounts, unless it already holds them. Tables come from storage-sql's own migrations;
 * rows are generated server-side in one INSERT ... SELECT with their places precomputed (as a
 * bulk import of that many creates would leave them), and the account counter is set to match.
 */
async function seedPostgres(url: string, schema: string, count: number): Promise<number | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`create schema if not exists ${schema}`);
    const storage = await openSqlStorage(withSearchPath(url, schema));
    await storage.close();
    const { rows } = await client.query<{ username: string }>(`select username from ${schema}.pg_accounts where position in (1, $1) order by position`, [count]);
    if (seeded(rows, count)) return null;
    const t0 = performance.now();
    await client.query("begin");
    await client.query(`truncate ${schema}.pg_accounts`);
    await client.query(
      `insert into ${schema}.pg_accounts (id, username, display_name, email, roles, enabled, created_at, password_hash, position)
       select md5('paged-' || i)::uuid::text, 'paged-' || lpad(i::text, 7, '0'), 'Paged ' || i,
              'paged' || i || '@example.test', '["reader"]', 1, 1700000000000 + i, $1, i
       from generate_series(1, $2::int) as i`,
      [await phc(), count],
    );
    await client.query(`update ${schema}.pg_counters set value = $1 where name = 'accounts'`, [count]);
    await client.query("commit");
    // What autovacuum does after a bulk load: fresh statistics and a visibility map.
    await client.query(`vacuum analyze ${schema}.pg_accounts`);
    // Write the load's dirty pages out now rather than during the timed requests (needs superuser
    // or pg_checkpoint; without it the checkpointer does it in its own time).
    await client.query("checkpoint").catch(() => {});
    return (performance.now() - t0) / 1000;
  } finally {
    await client.end();
  }
}

/** The same for a SQLite file (kept in the temp folder between runs): one INSERT ... SELECT over a recursive CTE. */
async function seedSqlite(path: string, count: number): Promise<number | null> {
  const storage = await openSqlStorage(path);
  await storage.close();
  const db = new BetterSqlite3(path);
  try {
    const rows = db.prepare("select username from pg_accounts where position in (1, ?) order by position").all(count) as Array<{ username: string }>;
    if (seeded(rows, count)) return null;
    const t0 = performance.now();
    const hash = await phc();
    db.transaction(() => {
      db.prepare("delete from pg_accounts").run();
      db.prepare(
        `with recursive s(i) as (select 1 union all select i + 1 from s where i < ?)
         insert into pg_accounts (id, username, display_name, email, roles, enabled, created_at, password_hash, position)
         select lower(hex(randomblob(16))), 'paged-' || printf('%07d', i), 'Paged ' || i, 'paged' || i || '@example.test', '["reader"]', 1, 1700000000000 + i, ?, i from s`,
      ).run(count, hash);
      db.prepare("update pg_counters set value = ? where name = 'accounts'").run(count);
    })();
    db.exec("analyze");
    db.pragma("wal_checkpoint(TRUNCATE)");
    return (performance.now() - t0) / 1000;
  } finally {
    db.close();
  }
}

/** The username of the seeded account at place `i`. */
const seedName = (i: number) => `paged-${String(i).padStart(7, "0")}`;

/**
 * Whether places 1 and `count` hold the first and last seeded accounts (a run's bench server
 * appends its own few users after them, so the count alone does not tell).
 */
const seeded = (rows: Array<{ username: string }>, count: number) =>
  rows.length === 2 && rows[0]!.username === seedName(1) && rows[1]!.username === seedName(count);

/** Whether PostgreSQL answers at `url`. */
export async function postgresReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Seeds `count` accounts on `engine` (PostgreSQL at `pgUrl`), starts the plantgate bench server on
 * that database, then times page 1, the middle page and the last page (pageSize 20), in turn,
 * one request at a time over HTTP, `samples` times each after {@link WARMUP_ROUNDS} warm-up rounds.
 */
export async function measurePaging(
  engine: PagingEngine,
  pgUrl: string,
  count: number,
  samples: number,
  baseline?: { commit: string; benchDir: string },
): Promise<PagingResult> {
  let dbUrl: string;
  let seedSeconds: number | null;
  if (engine === "postgres") {
    const schema = `bench_paging_${count}`;
    seedSeconds = await seedPostgres(pgUrl, schema, count);
    dbUrl = withSearchPath(pgUrl, schema);
  } else {
    const path = join(tmpdir(), `plantgate-bench-paging-${count}.db`);
    seedSeconds = await seedSqlite(path, count);
    dbUrl = `sqlite:${path}`;
  }
  const server = await startServer("plantgate.ts", { BENCH_STORE: "sql", BENCH_DB_URL: dbUrl }, undefined, undefined, [], baseline?.benchDir);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const tokenResponse = await fetch(`${server.baseUrl}/UserService/connect/token`, {
      method: "POST",
      headers: { authorization: BASIC_AUTH, "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials",
    });
    const { access_token } = (await tokenResponse.json()) as { access_token: string };
    // One kept-alive connection through node:http: fetch (undici) added ~0.35 ms of its own per
    // request on this machine, which is the client's time, not the server's.
    const { hostname, port } = new URL(server.baseUrl);
    const request = (page: number) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const path = `/rbac/ServerCommand/GetAccountList?page=${page}&pageSize=20`;
        httpGet({ hostname, port, path, agent, headers: { authorization: `Bearer ${access_token}` } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        }).on("error", reject);
      });
    const get = async (page: number) => {
      const t0 = performance.now();
      const response = await request(page);
      const body = JSON.parse(response.text) as { accounts: Array<{ username: string }>; total: number; totalPages: number };
      const ms = performance.now() - t0;
      // Creation order: page p starts with account (p-1)*20+1 of the seed (the bench server's
      // own few users come after the seed).
      const place = (page - 1) * 20 + 1;
      const expected = place <= count ? seedName(place) : body.accounts[0]?.username;
      if (response.status !== 200 || body.accounts.length === 0 || body.accounts[0]!.username !== expected || body.total < count) {
        throw new Error(`GetAccountList page ${page}: ${response.status}, first ${body.accounts?.[0]?.username} (expected ${expected}), total ${body.total}`);
      }
      return { ms, totalPages: body.totalPages };
    };
    const { totalPages } = await get(1);
    const middlePage = Math.ceil(totalPages / 2);
    // Warm the server's JIT and the database's caches on all three pages first: a fresh process
    // verifies its first bearer tokens several times slower than a warm one.
    for (let i = 0; i < WARMUP_ROUNDS; i++) for (const page of [1, middlePage, totalPages]) await get(page);
    const first: number[] = [];
    const middle: number[] = [];
    const last: number[] = [];
    for (let i = 0; i < samples; i++) {
      first.push((await get(1)).ms);
      middle.push((await get(middlePage)).ms);
      last.push((await get(totalPages)).ms);
    }
    return {
      engine,
      accounts: count,
      seedSeconds,
      middlePage,
      lastPage: totalPages,
      firstMs: latency(first),
      middleMs: latency(middle),
      lastMs: latency(last),
      samples,
      ...(baseline ? { baseline: baseline.commit } : {}),
    };
  } finally {
    agent.destroy();
    await server.stop();
  }
}
