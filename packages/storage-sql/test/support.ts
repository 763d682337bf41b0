/**
 * Engines the tests run on. Each gives out fresh, empty databases through the public URL API
 * (`openSqlStorage(url)`), so the code under test is exactly what users run:
 * - SQLite: a new file in a temp directory per store;
 * - PostgreSQL: a new schema per store, selected with `?options=-c search_path=<schema>`;
 * - MySQL/MariaDB: a new database `pg_test_<random>` per store, dropped afterwards.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClientRecord, Plantgate, Storage } from "@plantgate/core";
import type { ConformanceTarget } from "@plantgate/storage-testing";
import mysql from "mysql2/promise";
import pg from "pg";
import { afterAll, describe, it } from "vitest";
import { openSqlStorage, type SqlFamily, type SqlStorage } from "../src/index.js";
import { TABLES } from "../src/schema.js";

export const IN_CI = process.env.CI === "true";

/** A fresh empty database: its URL and how to remove it. */
export interface FreshDatabase {
  url: string;
  /** An identifier unique to this database (schema, database or file name). */
  name: string;
  drop(): Promise<void>;
}

export interface Engine {
  family: SqlFamily;
  label: string;
  fresh(): Promise<FreshDatabase>;
  /** A URL nothing listens on. */
  unreachableUrl: string;
  /** Runs a statement on the admin connection (not through the storage under test). */
  exec(db: FreshDatabase, statement: string): Promise<Record<string, unknown>[]>;
  /** Kills every server connection of that database, as a server restart would. */
  killConnections?(db: FreshDatabase): Promise<number>;
}

const random = () => randomBytes(6).toString("hex");

/** The URL with any password replaced, for test names and messages. */
import { redactConnectionUrl as redact } from "@plantgate/core";
export { redact };

/** Whether `probe` succeeds; else why not. */
export async function reachable(probe: () => Promise<void>): Promise<string | null> {
  try {
    await probe();
    return null;
  } catch (e) {
    return (e as Error)?.message || String(e);
  }
}

/**
 * Registers `body` in a describe named `label` when the service answered; otherwise a loudly named skipped block, or under
 * CI=true a failing test, since CI must never pass by skipping.
 */
export function describeIfReachable(label: string, url: string, envVar: string, problem: string | null, body: () => void): void {
  if (problem === null) {
    // Inside a describe of its own: the same case run on PostgreSQL and on MariaDB is then told
    // apart by its name in a failure (until 2026-12-02 both carried the bare case name).
    describe(label, body);
    return;
  }
  const reason = `${label} (unreachable at ${redact(url)}: set ${envVar})`;
  if (IN_CI) {
    describe(reason, () => {
      it("the service is reachable (required when CI=true)", () => {
        throw new Error(`${label} is unreachable at ${redact(url)}: ${problem}`);
      });
    });
  } else {
    describe.skip(reason, () => {
      it(`skipped: ${problem}`, () => {});
    });
  }
}

// --- SQLite --------------------------------------------------------------------------------

export function sqliteEngine(): Engine {
  const dir = mkdtempSync(join(tmpdir(), "plantgate-sqlite-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const files = new Map<string, import("better-sqlite3").Database>();
  return {
    family: "sqlite",
    label: "sqlite",
    unreachableUrl: join(dir, "no-such-directory", "sub", "db.sqlite"),
    async fresh() {
      const name = `t_${random()}`;
      const path = join(dir, `${name}.db`);
      return {
        url: `sqlite:${path}`,
        name,
        async drop() {
          files.get(name)?.close();
          for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
        },
      };
    },
    async exec(db, statement) {
      const { default: Database } = await import("better-sqlite3");
      let conn = files.get(db.name);
      if (!conn) {
        conn = new Database(db.url.slice("sqlite:".length));
        conn.defaultSafeIntegers(true);
        files.set(db.name, conn);
      }
      const stmt = conn.prepare(statement);
      if (stmt.reader) return stmt.all() as Record<string, unknown>[];
      stmt.run();
      return [];
    },
  };
}

// --- PostgreSQL ----------------------------------------------------------------------------

/** `url` with `default_transaction_isolation` set to `level` for every session it opens (the URL's `options`). */
export function atIsolation(url: string, level: string): string {
  const at = new URL(url);
  at.searchParams.set("options", `${at.searchParams.get("options")} -c default_transaction_isolation=${level.replace(" ", "\\ ")}`);
  return at.toString();
}

export const POSTGRES_URL = process.env.PLANTGATE_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export async function probePostgres(): Promise<string | null> {
  return reachable(async () => {
    const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
    await client.connect();
    await client.end();
  });
}

function withQuery(url: string, params: Record<string, string>): string {
  const q = new URLSearchParams(params).toString().replace(/\+/g, "%20");
  return url + (url.includes("?") ? "&" : "?") + q;
}

export function postgresEngine(): Engine {
  let admin: pg.Pool | undefined;
  const pool = () => (admin ??= new pg.Pool({ connectionString: POSTGRES_URL, max: 2 }));
  afterAll(async () => admin?.end());
  return {
    family: "postgres",
    label: "postgres",
    unreachableUrl: "postgres://postgres@127.0.0.1:1/test",
    async fresh() {
      // Not "pg_…": PostgreSQL reserves schema names with that prefix.
      const name = `plantgate_test_${random()}`;
      await pool().query(`create schema "${name}"`);
      return {
        url: withQuery(POSTGRES_URL, { options: `-c search_path=${name}`, application_name: name }),
        name,
        drop: async () => void (await pool().query(`drop schema if exists "${name}" cascade`)),
      };
    },
    async exec(db, statement) {
      const client = await pool().connect();
      try {
        await client.query(`set search_path to "${db.name}"`);
        return (await client.query(statement)).rows as Record<string, unknown>[];
      } finally {
        await client.query("reset search_path").catch(() => {});
        client.release();
      }
    },
    async killConnections(db) {
      const { rows } = await pool().query("select pg_terminate_backend(pid) as killed from pg_stat_activity where application_name = $1", [db.name]);
      return rows.length;
    },
  };
}

// --- MySQL / MariaDB -----------------------------------------------------------------------

export const MYSQL_URL = process.env.PLANTGATE_TEST_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";

export async function probeMysql(): Promise<string | null> {
  return reachable(async () => {
    const conn = await mysql.createConnection({ uri: MYSQL_URL.replace(/^mariadb:/i, "mysql:"), connectTimeout: 3000 });
    await conn.end();
  });
}

export function mysqlEngine(): Engine {
  let admin: mysql.Pool | undefined;
  const pool = () => (admin ??= mysql.createPool({ uri: MYSQL_URL.replace(/^mariadb:/i, "mysql:"), connectionLimit: 2, supportBigNumbers: true, bigNumberStrings: true }));
  afterAll(async () => admin?.end());
  return {
    family: "mysql",
    label: "mysql",
    unreachableUrl: "mysql://root@127.0.0.1:1/test",
    async fresh() {
      const name = `pg_test_${random()}`;
      await pool().query(`create database \`${name}\``);
      const url = new URL(MYSQL_URL);
      url.pathname = `/${name}`;
      return { url: url.toString(), name, drop: async () => void (await pool().query(`drop database if exists \`${name}\``)) };
    },
    async exec(db, statement) {
      const conn = await pool().getConnection();
      try {
        await conn.query(`use \`${db.name}\``);
        const [rows] = await conn.query(statement);
        return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
      } finally {
        conn.release();
      }
    },
    async killConnections(db) {
      const [rows] = await pool().query("select id from information_schema.processlist where db = ? and id <> connection_id()", [db.name]);
      const ids = (rows as { id: number | string }[]).map((r) => r.id);
      for (const id of ids) await pool().query(`kill connection ${Number(id)}`).catch(() => {});
      return ids.length;
    },
  };
}

// --- conformance target --------------------------------------------------------------------

/** Every table that holds plantgate's data (not the counters, not the migrations' bookkeeping). */
export const DATA_TABLES = [
  TABLES.clients,
  TABLES.accounts,
  TABLES.refreshTokens,
  TABLES.refreshFamilies,
  TABLES.plants,
  TABLES.signingKeys,
  TABLES.attempts,
  TABLES.revokedTokens,
  TABLES.sessions,
  TABLES.assertionJtis,
  TABLES.audit,
] as const;

/** Every row of every plantgate table, as JSON text (bigints as digits, bytes as UTF-8). */
export async function rawDump(storage: Storage): Promise<string> {
  const db = (storage as SqlStorage).db;
  const dump: Record<string, unknown[]> = {};
  for (const table of DATA_TABLES) {
    dump[table] = await db.selectFrom(table).selectAll().execute();
  }
  return JSON.stringify(dump, (_key, value: unknown) => {
    if (typeof value === "bigint") return value.toString();
    if (value instanceof Uint8Array) return new TextDecoder().decode(value);
    // Buffer#toJSON runs before the replacer sees it.
    if (typeof value === "object" && value !== null && (value as { type?: unknown }).type === "Buffer" && Array.isArray((value as { data?: unknown }).data)) {
      return new TextDecoder().decode(Uint8Array.from((value as { data: number[] }).data));
    }
    return value;
  });
}

/**
 * Empties every plantgate table of `db` and sets the counters back to what a fresh migration
 * leaves (the accounts counter at 0), on the admin connection: the state of a database just
 * migrated, without creating and migrating one again. Nothing else uses the database meanwhile
 * (the previous test's stores are closed), so the statements need no transaction.
 */
async function emptyTables(engine: Engine, db: FreshDatabase): Promise<void> {
  // A table added by a later migration and missing from DATA_TABLES would carry rows from one
  // test into the next: refuse instead.
  const current = engine.family === "mysql" ? "database()" : "current_schema()";
  const rows = await engine.exec(db, `select table_name as name from information_schema.tables where table_schema = ${current}`);
  const known = new Set<string>([...DATA_TABLES, TABLES.counters, TABLES.migrations, TABLES.migrationLock]);
  const unknown = rows.map((r) => String(r.name)).filter((name) => !known.has(name));
  if (unknown.length > 0) throw new Error(`conformanceTarget: tables not in DATA_TABLES, which would not be emptied between tests: ${unknown.join(", ")}`);
  for (const table of DATA_TABLES) await engine.exec(db, `delete from ${quoteIdent(engine, table)}`);
  await engine.exec(db, `update ${quoteIdent(engine, TABLES.counters)} set value = 0`);
}

const quoteIdent = (engine: Engine, name: string) => (engine.family === "mysql" ? `\`${name}\`` : `"${name}"`);

/**
 * A conformance target. `perTest: "database"` gives every test a fresh database (created,
 * migrated from nothing, dropped after it). `"tables"` creates and migrates one
 * database on the first test and drops it when the file ends; every later test opens its store
 * on the same database after its tables are emptied, so that store's migrate() finds the work
 * done (the path every restart of a deployed server takes). Both start each test from the same
 * rows: none, and the accounts counter at 0.
 */
export function conformanceTarget(engine: Engine, perTest: "database" | "tables"): ConformanceTarget {
  const drops = new WeakMap<Storage, () => Promise<void>>();
  const urls = new WeakMap<Storage, string>();
  let shared: FreshDatabase | undefined;
  if (perTest === "tables") afterAll(async () => shared?.drop());
  return {
    async create() {
      let fresh: FreshDatabase;
      if (perTest === "database") fresh = await engine.fresh();
      else if (shared) await emptyTables(engine, (fresh = shared));
      else fresh = shared = await engine.fresh();
      const storage = await openSqlStorage(fresh.url, { audit: true });
      urls.set(storage, fresh.url);
      drops.set(storage, async () => {
        await storage.close();
        if (perTest === "database") await fresh.drop();
      });
      return storage;
    },
    async destroy(storage) {
      await drops.get(storage)?.();
    },
    rawDump,
    // A second pool (PostgreSQL, MySQL) or connection (SQLite) on the same database.
    async connect(storage) {
      const url = urls.get(storage);
      if (url === undefined) throw new Error("connect: not a store of this target");
      return openSqlStorage(url, { migrate: false, audit: true });
    },
    // The same database with the trail off, as after PLANTGATE_AUDIT=0.
    async connectWithoutAudit(storage) {
      const url = urls.get(storage);
      if (url === undefined) throw new Error("connectWithoutAudit: not a store of this target");
      return openSqlStorage(url, { migrate: false });
    },
    disconnect: (storage) => (storage as SqlStorage).close(),
  };
}

/**
 * The storages of two instances over one fresh database of `engine` (A's migrates it, B's does
 * not); closing both and dropping the database are pushed on `cleanups`. For the multi-instance
 * scenarios.
 */
export async function twoStorages(engine: Engine, cleanups: Array<() => Promise<void>>): Promise<[SqlStorage, SqlStorage]> {
  const db = await engine.fresh();
  cleanups.push(() => db.drop());
  const sa = await openSqlStorage(db.url);
  cleanups.push(() => sa.close());
  const sb = await openSqlStorage(db.url, { migrate: false });
  cleanups.push(() => sb.close());
  return [sa, sb];
}

/**
 * A form POST to `{base}/UserService/connect/{path}` (token, revoke, introspect) with Basic client
 * credentials: the status and the parsed body (`{}` when empty). For the multi-instance scenarios.
 */
export const connectPoster =
  (base: string) =>
  async (app: Plantgate, path: string, auth: [string, string], params: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await app.fetch(
      new Request(`${base}/UserService/connect/${path}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`${auth[0]}:${auth[1]}`) },
        body: new URLSearchParams(params).toString(),
      }),
    );
    const text = await res.text();
    return { status: res.status, body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>) };
  };

/** The status of GetAccountList under `base` with a bearer token. */
export const accountListStatus =
  (base: string) =>
  async (app: Plantgate, token: string): Promise<number> =>
    (await app.fetch(new Request(`${base}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${token}` } }))).status;

/** A client_secret client "reporting" with one secret, as several tests store it; `overrides` replace fields. */
export const clientRecord = (overrides: Partial<ClientRecord> = {}): ClientRecord => ({
  clientId: "reporting",
  authMethod: "client_secret",
  secrets: [{ id: "s1", hash: "hash-one", createdAt: 1_700_000_000_000, expiresAt: null, lastUsedAt: null }],
  jwks: null,
  jwksUri: null,
  name: "Reporting",
  grantTypes: ["client_credentials"],
  scopes: ["Platform_UserAPIs"],
  accessTokenTtl: null,
  refreshTokenTtl: null,
  refreshTokenAbsoluteTtl: null,
  createdAt: 1_690_000_000_000,
  secretUpdatedAt: 1_700_000_000_000,
  ...overrides,
});
