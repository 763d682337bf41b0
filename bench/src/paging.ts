import pg from "pg";
import { hashPassword } from "@plantgate/core";
import { openSqlStorage } from "@plantgate/storage-sql";
import { randomBytes } from "node:crypto";
import { BASIC_AUTH } from "./shared.js";
import { startServer } from "./proc.js";

/** Latency of GetAccountList page 1 and of the last page over HTTP, on PostgreSQL. */
export interface PagingResult {
  accounts: number;
  seedSeconds: number | null;
  lastPage: number;
  firstMs: { p50: number; max: number };
  lastMs: { p50: number; max: number };
  samples: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set("options", `-c search_path=${schema}`);
  return u.toString();
}

/**
 * Fills `<schema>.pg_accounts` (its own schema, so the test suites' tables are untouched) with
 * `count` accounts, unless it already holds them. Tables come from storage-sql's own migrations;
 * rows are generated server-side in one INSERT ... SELECT, the fastest path that needs no COPY
 * stream package. Every row carries a real PHC hash so the records are valid, but no one logs in.
 */
async function seed(url: string, schema: string, count: number): Promise<number | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`create schema if not exists ${schema}`);
    const storage = await openSqlStorage(withSearchPath(url, schema));
    await storage.close();
    const { rows } = await client.query<{ n: string }>(`select count(*) as n from ${schema}.pg_accounts where username like 'paged-%'`);
    if (Number(rows[0]!.n) === count) return null;
    const t0 = performance.now();
    const phc = await hashPassword("not-used-for-login", (n) => new Uint8Array(randomBytes(n)), { iterations: 1000 });
    await client.query(`truncate ${schema}.pg_accounts`);
    await client.query(
      `insert into ${schema}.pg_accounts (id, username, display_name, email, roles, enabled, created_at, password_hash)
       select md5('paged-' || i)::uuid::text, 'paged-' || lpad(i::text, 7, '0'), 'Paged ' || i,
              'paged' || i || '@example.test', '["reader"]', 1, 1700000000000 + i, $1
       from generate_series(1, $2::int) as i`,
      [phc, count],
    );
    // What autovacuum does after a bulk load: the visibility map lets counts and deep pages use index-only scans.
    await client.query(`vacuum analyze ${schema}.pg_accounts`);
    return (performance.now() - t0) / 1000;
  } finally {
    await client.end();
  }
}

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

/** Seeds, then times page 1 and the last page (pageSize 20), alternating, one request at a time. */
export async function measurePaging(url: string, count: number, samples: number): Promise<PagingResult> {
  const schema = `bench_paging_${count}`;
  const seedSeconds = await seed(url, schema, count);
  const server = await startServer("plantgate.ts", { BENCH_STORE: "sql", BENCH_DB_URL: withSearchPath(url, schema) });
  try {
    const tokenResponse = await fetch(`${server.baseUrl}/UserService/connect/token`, {
      method: "POST",
      headers: { authorization: BASIC_AUTH, "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials",
    });
    const { access_token } = (await tokenResponse.json()) as { access_token: string };
    const get = async (page: number) => {
      const t0 = performance.now();
      const response = await fetch(`${server.baseUrl}/rbac/ServerCommand/GetAccountList?page=${page}&pageSize=20`, {
        headers: { authorization: `Bearer ${access_token}` },
      });
      const body = (await response.json()) as { accounts: unknown[]; totalPages: number };
      const ms = performance.now() - t0;
      if (response.status !== 200 || body.accounts.length === 0) throw new Error(`GetAccountList page ${page}: ${response.status}`);
      return { ms, totalPages: body.totalPages };
    };
    const { totalPages } = await get(1);
    await get(totalPages); // warm the buffer cache once; deep pages can take seconds each
    const first: number[] = [];
    const last: number[] = [];
    for (let i = 0; i < samples; i++) {
      first.push((await get(1)).ms);
      last.push((await get(totalPages)).ms);
    }
    return {
      accounts: count,
      seedSeconds,
      lastPage: totalPages,
      firstMs: { p50: median(first), max: Math.max(...first) },
      lastMs: { p50: median(last), max: Math.max(...last) },
      samples,
    };
  } finally {
    await server.stop();
  }
}
