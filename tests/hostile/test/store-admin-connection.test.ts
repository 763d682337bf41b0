/**
 * A world's PostgreSQL schema or MySQL/MariaDB database is made and dropped by an admin connection
 * of its own (src/world.ts: openPostgresSchema, openMysqlDatabase); every way out closes it: a
 * `create schema` / `create database` that fails (here: the name already exists) as well as a
 * world that opened and closed. Until 2026-11-30 the failed statement left its connection open.
 *
 * The server is asked, not the client: the admin connection is told apart by its
 * `application_name` (PostgreSQL, pg_stat_activity) or by the database it is connected to
 * (MariaDB, information_schema.processlist; the name is this test's alone). The test first sees
 * an open world's admin connection counted, so it cannot pass by counting nothing. It runs on
 * both servers whatever HOSTILE_STORE says; an unreachable server skips it loudly, or fails it
 * under CI=true, as packages/storage-sql's tests do.
 */
import mysql from "mysql2/promise";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { redactConnectionUrl } from "@plantgate/core";
import { MYSQL_URL, openMysqlDatabase, openPostgresSchema, POSTGRES_URL } from "../src/world.js";

const IN_CI = process.env.CI === "true";
const unique = () => `hostile_admin_${crypto.getRandomValues(new Uint32Array(2)).reduce((s, n) => s + n.toString(16).padStart(8, "0"), "")}`;

/** Why the server at `url` cannot be reached, or null when it answered. */
async function problemOf(connect: () => Promise<{ end(): Promise<void> }>): Promise<string | null> {
  try {
    await (await connect()).end();
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/** `body` when the server answered; else a skipped block, or a failing test under CI=true. */
function describeIfReachable(label: string, url: string, problem: string | null, body: () => void): void {
  if (problem === null) {
    describe(label, body);
    return;
  }
  const reason = `${label} (unreachable at ${redactConnectionUrl(url)}: ${problem})`;
  if (IN_CI) describe(reason, () => it("the server is reachable (required when CI=true)", () => expect.fail(problem)));
  else describe.skip(reason, () => it("skipped", () => {}));
}

/** `count()` once it reads `expected`, or its last reading after 3 s (a closed backend may linger a moment). */
async function settled(count: () => Promise<number>, expected: number): Promise<number> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const n = await count();
    if (n === expected || Date.now() > deadline) return n;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const pgProblem = await problemOf(async () => {
  const c = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  await c.connect();
  return c;
});

describeIfReachable("PostgreSQL", POSTGRES_URL, pgProblem, () => {
  it("the admin connection is closed when `create schema` fails, and when the world closes", async () => {
    const name = unique();
    const observer = new pg.Client({ connectionString: POSTGRES_URL });
    await observer.connect();
    try {
      // Every connection openPostgresSchema makes from this URL carries the name.
      const url = new URL(POSTGRES_URL);
      url.searchParams.set("application_name", name);
      const connections = async () => Number((await observer.query<{ n: string }>("select count(*) as n from pg_stat_activity where application_name = $1", [name])).rows[0]!.n);

      // An open world's connections are seen, and gone when it closes.
      const open = await openPostgresSchema(url.toString(), `${name}_ok`);
      expect(await connections()).toBeGreaterThanOrEqual(1);
      await open.close();
      expect(await settled(connections, 0)).toBe(0);

      // `create schema` fails: the schema exists already.
      await observer.query(`create schema "${name}"`);
      const failure = await openPostgresSchema(url.toString(), name).then(
        () => null,
        (e: unknown) => e,
      );
      expect(failure).toBeInstanceOf(Error);
      expect((failure as Error).message).toBe(`schema "${name}" already exists`);
      expect(await settled(connections, 0)).toBe(0);
    } finally {
      await observer.query(`drop schema if exists "${name}" cascade`);
      await observer.query(`drop schema if exists "${name}_ok" cascade`);
      await observer.end();
    }
  });
});

const mysqlAdminUrl = MYSQL_URL.replace(/^mariadb:/i, "mysql:");
const mysqlProblem = await problemOf(() => mysql.createConnection({ uri: mysqlAdminUrl, connectTimeout: 3000 }));

describeIfReachable("MySQL/MariaDB", MYSQL_URL, mysqlProblem, () => {
  it("the admin connection is closed when `create database` fails, and when the world closes", async () => {
    const name = unique();
    const observer = await mysql.createConnection({ uri: mysqlAdminUrl });
    try {
      // The admin connection is the one on database `name`: the server URL's database is set to it.
      await observer.query(`create database \`${name}\``);
      const url = new URL(MYSQL_URL);
      url.pathname = `/${name}`;
      const connections = async () => {
        const [rows] = await observer.query("select count(*) as n from information_schema.processlist where db = ?", [name]);
        return Number((rows as { n: number | string }[])[0]!.n);
      };
      expect(await connections()).toBe(0);

      // An open world's admin connection is seen, and gone when it closes.
      const open = await openMysqlDatabase(url.toString(), `${name}_ok`);
      expect(await connections()).toBe(1);
      await open.close();
      expect(await settled(connections, 0)).toBe(0);

      // `create database` fails: the database exists already (it is the one the URL names).
      const failure = await openMysqlDatabase(url.toString(), name).then(
        () => null,
        (e: unknown) => e,
      );
      expect(failure).toBeInstanceOf(Error);
      expect((failure as Error).message).toBe(`Can't create database '${name}'; database exists`);
      expect(await settled(connections, 0)).toBe(0);
    } finally {
      await observer.query(`drop database if exists \`${name}\``);
      await observer.query(`drop database if exists \`${name}_ok\``);
      await observer.end();
    }
  });
});
