/**
 * MySQL and MariaDB commit each DDL statement on its own, so a migration cut short there (a crash,
 * a lost connection, a deploy that killed the process) leaves its first statements done and is not
 * recorded, and the next start runs it again from the top. Until 2026-11-29 that second run failed
 * on the first `CREATE TABLE`/`ADD COLUMN` already done, and the database stayed unusable until
 * repaired by hand. Here the migrations from an empty database and from a version 1 database with
 * rows in it are cut short after each of their writing statements in turn (and after each of the
 * migrator's own, such as recording a migration done); the next start must finish the job, to the
 * very schema and rows an uninterrupted run leaves.
 */
import { SelectQueryNode, type Kysely, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, type QueryResult, type RootOperationNode, type UnknownRow } from "kysely";
import { expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { LATEST_SCHEMA_VERSION, migrateToLatest, migrateToVersion } from "../src/migrations.js";
import { TABLES } from "../src/schema.js";
import { describeIfReachable, MYSQL_URL, mysqlEngine, probeMysql, type Engine, type FreshDatabase } from "./support.js";

const problem = await probeMysql();

class CutShort extends Error {}

/** Lets `limit` statements that write (anything but a SELECT) run, then fails the next one before it is sent. */
class CutShortAfter implements KyselyPlugin {
  /** Writing statements let through so far. */
  written = 0;
  constructor(readonly limit: number) {}
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (!SelectQueryNode.is(args.node) && this.written++ >= this.limit) throw new CutShort(`cut short after ${this.limit} writing statements`);
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

/** The schema (columns with types, defaults and collations; indexes) and every row, migrations' names included. */
async function snapshot(engine: Engine, db: FreshDatabase): Promise<unknown> {
  const columns = await engine.exec(
    db,
    "select table_name as t, column_name as c, ordinal_position as p, column_type as y, is_nullable as n, column_default as d, collation_name as k " +
      "from information_schema.columns where table_schema = database() and table_name not like 'pg\\_migrations\\_lock' order by 1, 3",
  );
  const indexes = await engine.exec(
    db,
    "select table_name as t, index_name as i, seq_in_index as s, column_name as c, non_unique as u " +
      "from information_schema.statistics where table_schema = database() order by 1, 2, 3",
  );
  const rows: Record<string, string[]> = {};
  const tables = [...new Set(columns.map((r) => String(r.t)))];
  for (const table of tables) {
    const all = await engine.exec(db, table === TABLES.migrations ? `select name from ${table}` : `select * from ${table}`);
    rows[table] = all.map((r) => JSON.stringify(r, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString("hex") : v))).sort();
  }
  return { columns, indexes, rows };
}

/** A version 1 database with a row in every table that a later migration copies or fills. */
async function seedVersion1(engine: Engine, db: FreshDatabase, storage: SqlStorage): Promise<void> {
  await migrateToVersion(storage.db as Kysely<any>, "mysql", 1);
  const statements = [
    `insert into ${TABLES.clients} (client_id, secret_hash, name, grant_types, scopes, access_token_ttl, refresh_token_ttl, refresh_token_absolute_ttl, created_at, secret_updated_at) values ` +
      `('c1', 'hash-1', 'One', '["client_credentials"]', '["read"]', null, null, null, 1000, 1500), ('c2', 'hash-2', 'Two', '["password","refresh_token"]', '["offline_access"]', 60, 600, 6000, 2000, 2000)`,
    `insert into ${TABLES.accounts} (id, username, display_name, email, roles, enabled, created_at, password_hash) values ` +
      `('a2', 'bob', null, null, '[]', 1, 3000, 'p2'), ('a1', 'alice', 'Alice', 'a@example.com', '["admin"]', 1, 3000, 'p1'), ('a3', 'carol', null, null, '[]', 0, 1000, 'p3')`,
    `insert into ${TABLES.refreshTokens} (token_hash, family_id, client_id, account_id, scope, created_at, expires_at, family_expires_at, consumed_at, revoked_at) values ` +
      `('r1', 'f1', 'c2', 'a1', '["offline_access"]', 10, 20, 100, 15, null), ('r2', 'f1', 'c2', 'a1', '["offline_access"]', 15, 25, 100, null, null), ('r3', 'f2', 'c2', 'a2', '[]', 10, 20, 200, null, 12)`,
    `insert into ${TABLES.signingKeys} (kid, alg, private_jwk, public_jwk, created_at) values ('k1', 'ES256', '{"d":"x"}', '{}', 5000)`,
    `insert into ${TABLES.plants} (id, name, tag) values (-9223372036854775808, 'min', 't')`,
  ];
  for (const statement of statements) await engine.exec(db, statement);
}

describeIfReachable("mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", problem, () => {
  const engine = mysqlEngine();

  /**
   * Cuts the migration to `version` short after 0, 1, 2, ... writing statements, up to the number an
   * uninterrupted run makes (counted on the reference run, whose schema and rows are the expected
   * ones); each time the next start (which migrates to the latest version) must leave what the
   * uninterrupted run left. Four cuts at a time, each in its own database. Returns the number of cuts.
   */
  async function everyCut(prepare: (db: FreshDatabase, storage: SqlStorage) => Promise<void>, version = LATEST_SCHEMA_VERSION): Promise<number> {
    const reference = await engine.fresh();
    const counter = new CutShortAfter(Number.POSITIVE_INFINITY);
    let expected: unknown;
    try {
      const storage = await openSqlStorage(reference.url, { migrate: false });
      await prepare(reference, storage);
      await migrateToVersion((storage.db as Kysely<any>).withPlugin(counter), "mysql", version);
      await migrateToLatest(storage.db as Kysely<any>, "mysql");
      await storage.close();
      expected = await snapshot(engine, reference);
    } finally {
      await reference.drop();
    }

    const cutAt = async (limit: number): Promise<void> => {
      const db = await engine.fresh();
      try {
        const storage = await openSqlStorage(db.url, { migrate: false });
        await prepare(db, storage);
        const cut = await migrateToVersion((storage.db as Kysely<any>).withPlugin(new CutShortAfter(limit)), "mysql", version).then(
          () => false,
          (error: unknown) => {
            // Only our own cut: any other failure of the first run is a finding in itself.
            if (!(error instanceof CutShort)) throw error;
            return true;
          },
        );
        await storage.close();
        expect([limit, cut]).toEqual([limit, true]);
        // The next start: what openSqlStorage does by default.
        const restarted = await openSqlStorage(db.url);
        await restarted.close();
        expect([limit, await snapshot(engine, db)]).toEqual([limit, expected]);
      } finally {
        await db.drop();
      }
    };
    const cuts = counter.written;
    let next = 0;
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < cuts) await cutAt(next++);
    }));
    return cuts;
  }

  it("mysql: the first migration of an empty database, cut short after any of its statements, is finished by the next start, to the schema of an uninterrupted run", async () => {
    // The later ones are cut below, from a database with rows. Five tables, two indexes, a record.
    expect(await everyCut(async () => {}, 1)).toBeGreaterThanOrEqual(8);
  }, 120_000);

  it("mysql: a migration of a version 1 database with rows, cut short after any of its statements, is finished by the next start with every row copied and filled as an uninterrupted run does", async () => {
    // Nine migrations of several statements each, and a record of each.
    expect(await everyCut((db, storage) => seedVersion1(engine, db, storage))).toBeGreaterThan(40);
  }, 240_000);
});
