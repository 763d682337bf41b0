/**
 * A rolling upgrade across 2026-12-02: an instance of the previous version (which takes Kysely's
 * default migration lock only; its migrator is test/mixed-version-old-migrations.ts, the
 * migrations.ts of 10fd88f^) and one of this version starting together on a database with pending
 * migrations must exclude each other. With plantgate's own lock alone they both migrated at once
 * (MariaDB: ER_DUP_KEYNAME; PostgreSQL: duplicate key "pg_type_typname_nsp_index"): this version
 * also takes Kysely's lock while migrating.
 */
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import pg from "pg";
import { afterAll, expect, it } from "vitest";
import { LATEST_SCHEMA_VERSION, openSqlStorage, type SqlStorage } from "../src/index.js";
import { migrateToLatest as oldMigrateToLatest } from "./mixed-version-old-migrations.js";
import { describeIfReachable, MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres } from "./support.js";

const random = () => randomBytes(5).toString("hex");
const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => {});
}, 60_000);

async function place(family: "mysql" | "postgres"): Promise<{ url: string; names(): Promise<string[]> }> {
  if (family === "mysql") {
    const server = new URL(MYSQL_URL.replace(/^mariadb:/i, "mysql:"));
    const admin = await mysql.createConnection({ uri: server.toString() });
    const name = `pg_miglock2_${random()}`;
    await admin.query(`create database \`${name}\``);
    cleanup.push(async () => {
      await admin.query(`drop database if exists \`${name}\``);
      await admin.end();
    });
    const url = new URL(server);
    url.pathname = `/${name}`;
    return { url: url.toString(), names: async () => ((await admin.query(`select name from \`${name}\`.pg_migrations`))[0] as { name: string }[]).map((r) => r.name) };
  }
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  const schema = `miglock2_${random()}`;
  await admin.query(`create schema ${schema}`);
  cleanup.push(async () => {
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
  });
  return { url: `${POSTGRES_URL}?options=-c%20search_path%3D${schema}`, names: async () => (await admin.query(`select name from ${schema}.pg_migrations`)).rows.map((r: { name: string }) => r.name) };
}

const [mysqlProblem, postgresProblem] = await Promise.all([probeMysql(), probePostgres()]);
for (const [family, url, env, problem] of [
  ["mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", mysqlProblem],
  ["postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", postgresProblem],
] as const) {
  describeIfReachable(`migration lock across versions: ${family}`, url, env, problem, () => {
    it("a start of the previous version and one of this version on a fresh database both succeed, each migration applied once", async () => {
      const target = await place(family);
      const old: SqlStorage = await openSqlStorage(target.url, { migrate: false, clientCache: false, queryTimeoutMs: 0 });
      cleanup.push(() => old.close());
      const settled = await Promise.allSettled([
        oldMigrateToLatest(old.db as never, family),
        openSqlStorage(target.url, { clientCache: false }).then((s) => {
          cleanup.push(() => s.close());
        }),
      ]);
      const reasons = settled.map((s) => (s.status === "rejected" ? String((s.reason as Error).message) + " " + String((s.reason as { cause?: Error }).cause?.message ?? "") : "ok"));
      expect(reasons).toEqual(["ok", "ok"]);
      const names = await target.names();
      expect(names).toHaveLength(LATEST_SCHEMA_VERSION);
      expect(new Set(names).size).toBe(LATEST_SCHEMA_VERSION);
    }, 60_000);
  });
}
