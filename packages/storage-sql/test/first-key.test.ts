/**
 * The first signing key of an empty store, made once however many instances start together:
 * several servers (each its own storage: its own SQLite connection, its own PostgreSQL pool) load
 * their keys at once on an empty store, and all of them end with one stored key, sign with it and
 * publish it. Until 2026-11-30 each made a "first" key (list, then create); one that listed before
 * the others wrote signed with its own key and published a JWKS without theirs until its next
 * reload, up to a minute, so a resource server holding that JWKS refused the others' tokens.
 * Also `signingKeys.createIfEmpty` on MySQL/MariaDB over a pool in READ COMMITTED, where InnoDB's
 * INSERT ... SELECT takes no gap lock: still one key (the named lock).
 */
import { createPlantgate, type Plantgate } from "@plantgate/core";
import { Kysely, MysqlDialect, PostgresDialect, sql } from "kysely";
import mysql from "mysql2";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { createSqlStorage, openSqlStorage, type Database, type SqlStorage } from "../src/index.js";
import { atIsolation, describeIfReachable, MYSQL_URL, mysqlEngine, POSTGRES_URL, postgresEngine, probeMysql, probePostgres, sqliteEngine, type Engine } from "./support.js";

const [pgProblem, mysqlProblem] = await Promise.all([probePostgres(), probeMysql()]);
const ISSUER = "https://first-key.plantgate.test";
const INSTANCES = 6;
const T0 = 1_767_225_600_000;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
});

const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString()) as { kid: string }).kid;

/** `INSTANCES` servers, each over its own storage on one fresh database. */
async function instances(engine: Engine): Promise<{ apps: Plantgate[]; storages: SqlStorage[]; secret: string }> {
  const db = await engine.fresh();
  cleanups.push(() => db.drop());
  const storages: SqlStorage[] = [];
  for (let i = 0; i < INSTANCES; i++) {
    const storage = await openSqlStorage(db.url, { migrate: i === 0 });
    cleanups.push(() => storage.close());
    storages.push(storage);
  }
  const apps = storages.map((storage) => createPlantgate({ storage, issuer: ISSUER, passwordHashIterations: 1000, logger: { error() {}, warn() {} } }));
  const { clientSecret } = await apps[0]!.admin.createClient({ clientId: "first-key-client" });
  return { apps, storages, secret: clientSecret };
}

async function token(app: Plantgate, secret: string): Promise<string> {
  const res = await app.fetch(
    new Request(`${ISSUER}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`first-key-client:${secret}`) },
      body: "grant_type=client_credentials",
    }),
  );
  const body = (await res.json()) as { access_token: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.access_token;
}

async function jwksKids(app: Plantgate): Promise<string[]> {
  const res = await app.fetch(new Request(`${ISSUER}/.well-known/jwks.json`));
  expect(res.status).toBe(200);
  return ((await res.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
}

/** Three times, each on a fresh database: a race lost once in a while still shows. */
function firstKeyRace(engine: () => Engine): void {
  it(`${INSTANCES} instances loading their keys at once on an empty store: one key stored, every instance signs with it and publishes only it, and takes every other's tokens`, { timeout: 90_000 }, async () => {
    for (let round = 0; round < 3; round++) {
      const { apps, storages, secret } = await instances(engine());
      expect(await storages[0]!.signingKeys.list()).toEqual([]);
      await Promise.all(apps.map((app) => app.jwks()));
      const stored = await storages[0]!.signingKeys.list();
      expect(stored.map((k) => k.kid), `round ${round}: keys stored`).toHaveLength(1);
      const kid = stored[0]!.kid;
      const tokens: string[] = [];
      for (const app of apps) {
        expect(await jwksKids(app), `round ${round}: JWKS`).toEqual([kid]);
        tokens.push(await token(app, secret));
      }
      expect(tokens.map(kidOf), `round ${round}: kids of the tokens`).toEqual(apps.map(() => kid));
      // Every token on every instance, at once (no clock moved, no reload waited for).
      for (const app of apps) {
        for (const t of tokens) {
          const res = await app.fetch(new Request(`${ISSUER}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${t}` } }));
          expect(res.status).toBe(200);
        }
      }
      for (const step of cleanups.splice(0).reverse()) await step();
    }
  });
}

describe("first signing key: sqlite file", () => {
  firstKeyRace(sqliteEngine);
});

describeIfReachable("first signing key: postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => {
  describe("first signing key: postgres", () => firstKeyRace(postgresEngine));

  // A transaction in REPEATABLE READ (or SERIALIZABLE) takes its snapshot at its first statement:
  // had that been the advisory lock's SELECT, a caller that waited for the lock would still not see
  // the key its predecessor committed meanwhile, and would insert a second one.
  for (const level of ["repeatable read", "serializable"]) {
    it(`postgres: signingKeys.createIfEmpty where default_transaction_isolation is ${level}: 10 rounds of 30 racing calls over two storages each store exactly one key`, { timeout: 120_000 }, async () => {
      const db = await postgresEngine().fresh();
      cleanups.push(() => db.drop());
      const url = atIsolation(db.url, level);
      // Pools of the test's own (createSqlStorage): openSqlStorage's say READ COMMITTED on connect
      // since 2026-12-01, and this is the statement's own level under a pool that does not.
      const storages: SqlStorage[] = [];
      for (let i = 0; i < 2; i++) {
        const storage = createSqlStorage(new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url }) }) }), "postgres");
        cleanups.push(() => storage.close());
        if (i === 0) await storage.migrate();
        storages.push(storage);
      }
      const { rows } = await sql<{ level: string }>`select current_setting('transaction_isolation') as level`.execute(storages[0]!.db);
      expect(rows[0]!.level).toBe(level);
      for (let round = 0; round < 10; round++) {
        const results = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            storages[i % 2]!.signingKeys.createIfEmpty!({ kid: `r${round}-${i}`, alg: "ES256", privateJwk: "{}", publicJwk: "{}", createdAt: T0 + i, activatesAt: T0 + i }),
          ),
        );
        const stored = await storages[0]!.signingKeys.list();
        expect(stored.map((k) => k.kid), `round ${round}: keys stored`).toHaveLength(1);
        expect(results.filter(Boolean), `round ${round}: calls that returned true`).toHaveLength(1);
        expect(stored[0]!.kid).toBe(`r${round}-${results.indexOf(true)}`);
        await storages[0]!.signingKeys.delete(stored[0]!.kid);
      }
    });
  }
});

describeIfReachable("first signing key: mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", mysqlProblem, () => {
  describe("first signing key: mysql", () => firstKeyRace(mysqlEngine));

  it("mysql: signingKeys.createIfEmpty over a pool in READ COMMITTED (no gap locks): 20 rounds of 30 racing calls each store exactly one key", { timeout: 120_000 }, async () => {
    const db = await mysqlEngine().fresh();
    cleanups.push(() => db.drop());
    const pool = mysql.createPool({ uri: db.url, connectionLimit: 16, supportBigNumbers: true, bigNumberStrings: true });
    pool.on("connection", (connection) => void connection.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", () => {}));
    const storage = createSqlStorage(new Kysely<Database>({ dialect: new MysqlDialect({ pool }) }), "mysql");
    cleanups.push(() => storage.close());
    await storage.migrate();
    const keys = storage.signingKeys;
    for (let round = 0; round < 20; round++) {
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          keys.createIfEmpty!({ kid: `r${round}-${i}`, alg: "ES256", privateJwk: "{}", publicJwk: "{}", createdAt: T0 + i, activatesAt: T0 + i }),
        ),
      );
      const stored = await keys.list();
      expect(stored.map((k) => k.kid), `round ${round}: keys stored`).toHaveLength(1);
      expect(results.filter(Boolean), `round ${round}: calls that returned true`).toHaveLength(1);
      expect(stored[0]!.kid).toBe(`r${round}-${results.indexOf(true)}`);
      await keys.delete(stored[0]!.kid);
    }
  });
});
