/**
 * The migration lock `openSqlStorage` takes is plantgate's own and scoped to its tables: on
 * MySQL/MariaDB a GET_LOCK name per database, on PostgreSQL an advisory lock on (MIGRATION_LOCK,
 * the current schema's oid). Until 2026-12-02 it was Kysely's default: one GET_LOCK name for the
 * whole server and one advisory key for a whole PostgreSQL database, so a migrator of another
 * database or schema (another deployment, any Kysely app) held up every plantgate start there
 * without a word, up to an hour (and on MySQL Kysely then migrated without the lock); and every
 * start took it, even with nothing pending. A migrating start still takes Kysely's lock as well,
 * after plantgate's (instances from before 2026-12-02 take only Kysely's; see
 * migration-lock-mixed-version.test.ts): only an up-to-date start is free of it.
 *
 * A lock held by "another application" here is released the moment the start under test ends (a
 * fresh MariaDB migration takes seconds on a busy machine), and after 15 s at the latest: the old
 * code, waiting for it, then ended after the release. Kysely's MySQL lock is server-wide and the
 * server is shared, so it is never held longer.
 */
import { randomBytes } from "node:crypto";
import { StorageError } from "@plantgate/core";
import mysql from "mysql2/promise";
import pg from "pg";
import { afterAll, expect, it } from "vitest";
import { LATEST_SCHEMA_VERSION, openSqlStorage, type SqlStorage } from "../src/index.js";
import { MIGRATION_LOCK } from "../src/migration-lock.js";
import { describeIfReachable, MYSQL_URL, POSTGRES_URL, probeMysql, probePostgres } from "./support.js";

const HOLD_MS = 15_000;
const random = () => randomBytes(5).toString("hex");

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => {});
}, 60_000);
const later = <T>(ms: number, fn: () => Promise<T>) => new Promise<T>((resolve, reject) => setTimeout(() => void fn().then(resolve, reject), ms));

/**
 * Runs `start` while a lock is held (taken before, released by `release` once `start` ends, or
 * after {@link HOLD_MS}): whether `start` ended while the lock was still held.
 */
async function whileHeld(release: () => Promise<unknown>, start: () => Promise<unknown>): Promise<{ endedWhileHeld: boolean }> {
  let released = false;
  const free = () => {
    if (released) return Promise.resolve();
    released = true;
    return release();
  };
  const timer = setTimeout(() => void free(), HOLD_MS);
  try {
    await start();
    return { endedWhileHeld: !released };
  } finally {
    clearTimeout(timer);
    await free();
  }
}

/**
 * Opens `url` with a 200 ms warning point while a lock is held, released by `release` after
 * 1500 ms: how long the start took and what it warned.
 */
async function openWhileHeld1500(url: string, release: () => Promise<unknown>): Promise<{ ms: number; warnings: string[] }> {
  const released = later(1500, release);
  const warnings: string[] = [];
  const started = performance.now();
  await open(url, { onWarning: (m) => warnings.push(m), migrationLock: { warnAfterMs: 200 } });
  const ms = performance.now() - started;
  await released;
  return { ms, warnings };
}

async function open(url: string, options: Parameters<typeof openSqlStorage>[1] = {}): Promise<SqlStorage> {
  const storage = await openSqlStorage(url, { clientCache: false, ...options });
  cleanup.push(() => storage.close());
  return storage;
}

/** A new database (MySQL) or schema (PostgreSQL) of this test: where plantgate's tables go. */
interface Place {
  url: string;
  /** The migrations recorded there. */
  migrations(): Promise<string[]>;
  /** Whether it has plantgate's tables (pg_clients). */
  hasTables(): Promise<boolean>;
}

/** Another session (another application's, another instance's), holding or releasing a lock. */
interface Session {
  /** Kysely's default migration lock (its scope: the whole MySQL server, the whole PostgreSQL database). */
  holdKysely(): Promise<void>;
  releaseKysely(): Promise<unknown>;
  /** Plantgate's migration lock of `place`. */
  holdPlantgate(place: Place): Promise<void>;
  releasePlantgate(place: Place): Promise<unknown>;
}

interface Engine {
  family: "mysql" | "postgres";
  /** "database" or "schema". */
  kind: string;
  fresh(): Promise<Place>;
  session(): Promise<Session>;
  /** The lock as the warning names it, a regular expression. */
  lockPattern(place: Place): string;
  /** The lock's scope as the messages name it. */
  scope(place: Place): string;
  /** Kysely's lock's scope as the messages name it ("MySQL server"), and the lock as the warning names it, a regular expression. */
  kyselyScope: string;
  kyselyPattern: string;
  /** MySQL: KILL QUERY on the sessions of `place`'s database waiting in a GET_LOCK for plantgate's lock; how many. */
  killLockWaits?(place: Place): Promise<number>;
}

function mysqlEngine(): Engine {
  const serverUrl = new URL(MYSQL_URL.replace(/^mariadb:/i, "mysql:"));
  const connect = async () => {
    const conn = await mysql.createConnection({ uri: serverUrl.toString() });
    cleanup.push(() => conn.end());
    return conn;
  };
  let admin: Promise<mysql.Connection> | undefined;
  const server = () => (admin ??= connect());
  const names = new Map<Place, string>();
  const lockOf = (place: Place) => `concat('plantgate.migrate.', md5('${names.get(place)}'))`;
  const kysely = "'ea586330-2c93-47c8-908d-981d9d270f9d'";
  return {
    family: "mysql",
    kind: "database",
    async fresh() {
      const name = `plantgate_miglock_${random()}`;
      await (await server()).query(`create database \`${name}\``);
      cleanup.push(async () => (await server()).query(`drop database if exists \`${name}\``));
      const url = new URL(serverUrl);
      url.pathname = `/${name}`;
      const place: Place = {
        url: url.toString(),
        migrations: async () => ((await (await server()).query(`select name from \`${name}\`.pg_migrations order by name`))[0] as { name: string }[]).map((r) => r.name),
        hasTables: async () => ((await (await server()).query("select 1 from information_schema.tables where table_schema = ? and table_name = 'pg_clients'", [name]))[0] as unknown[]).length > 0,
      };
      names.set(place, name);
      return place;
    },
    async session() {
      const conn = await connect();
      // Kysely's lock is the server's: another Kysely migrator (another test) may hold it a moment.
      const take = async (lock: string) => {
        const [[row]] = (await conn.query(`select get_lock(${lock}, 10) as taken`)) as unknown as [[{ taken: unknown }]];
        expect(Number(row.taken)).toBe(1);
      };
      return {
        holdKysely: () => take(kysely),
        releaseKysely: () => conn.query(`do release_lock(${kysely})`),
        holdPlantgate: (place) => take(lockOf(place)),
        releasePlantgate: (place) => conn.query(`do release_lock(${lockOf(place)})`),
      };
    },
    lockPattern: () => "GET_LOCK\\('plantgate\\.migrate\\.[0-9a-f]{32}'\\), held by connection \\d+",
    scope: () => "this database",
    async killLockWaits(place) {
      const admin = await server();
      // Only this test's database's sessions: the server is shared with other tests.
      const [rows] = (await admin.query("select id from information_schema.processlist where db = ? and info like 'select get_lock(concat(%'", [names.get(place)])) as unknown as [{ id: number }[]];
      for (const { id } of rows) await admin.query(`kill query ${Number(id)}`);
      return rows.length;
    },
    kyselyScope: "MySQL server",
    kyselyPattern: "GET_LOCK\\('ea586330-2c93-47c8-908d-981d9d270f9d'\\), held by connection \\d+",
  };
}

function postgresEngine(): Engine {
  // A database of this test's own: Kysely's key is held in it, not in the shared one.
  const database = `plantgate_miglock_${random()}`;
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${database}`;
  const connect = async () => {
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    cleanup.push(() => client.end());
    return client;
  };
  let admin: Promise<pg.Client> | undefined;
  const server = () =>
    (admin ??= (async () => {
      const root = new pg.Client({ connectionString: POSTGRES_URL });
      await root.connect();
      await root.query(`create database ${database}`);
      cleanup.push(async () => {
        await root.query(`drop database if exists ${database} with (force)`);
        await root.end();
      });
      return connect();
    })());
  const schemas = new Map<Place, string>();
  const lockOf = (place: Place) => `${MIGRATION_LOCK}, (select oid from pg_namespace where nspname = '${schemas.get(place)}')::int4`;
  const kysely = "3853314791062309107";
  return {
    family: "postgres",
    kind: "schema",
    async fresh() {
      const schema = `miglock_${random()}`;
      await (await server()).query(`create schema ${schema}`);
      const place: Place = {
        url: `${url}?options=-c%20search_path%3D${schema}&application_name=${schema}`,
        migrations: async () => (await (await server()).query(`select name from ${schema}.pg_migrations order by name`)).rows.map((r: { name: string }) => r.name),
        hasTables: async () => (await (await server()).query("select 1 from pg_tables where schemaname = $1 and tablename = 'pg_clients'", [schema])).rows.length > 0,
      };
      schemas.set(place, schema);
      return place;
    },
    async session() {
      const client = await connect();
      return {
        holdKysely: async () => void (await client.query(`select pg_advisory_lock(${kysely})`)),
        releaseKysely: () => client.query(`select pg_advisory_unlock(${kysely})`),
        holdPlantgate: async (place) => void (await client.query(`select pg_advisory_lock(${lockOf(place)})`)),
        releasePlantgate: (place) => client.query(`select pg_advisory_unlock(${lockOf(place)})`),
      };
    },
    lockPattern: () => `pg_advisory_lock\\(${MIGRATION_LOCK}, -?\\d+\\), held by backend \\d+`,
    scope: (place) => `schema "${schemas.get(place)}"`,
    kyselyScope: "PostgreSQL database",
    kyselyPattern: "pg_advisory_lock\\(3853314791062309107\\), held by backend \\d+",
  };
}

const [mysqlProblem, postgresProblem] = await Promise.all([probeMysql(), probePostgres()]);
const engines = [
  { label: "mysql", url: MYSQL_URL, env: "PLANTGATE_TEST_MYSQL_URL", problem: mysqlProblem, engine: mysqlEngine },
  { label: "postgres", url: POSTGRES_URL, env: "PLANTGATE_TEST_POSTGRES_URL", problem: postgresProblem, engine: postgresEngine },
];

for (const { label, url, env, problem, engine: makeEngine } of engines) {
  describeIfReachable(`migration lock scope: ${label}`, url, env, problem, () => {
    const engine = makeEngine();
    const { kind } = engine;

    it(`a start on an up-to-date ${kind} does not wait for Kysely's migration lock held for another ${kind}`, async () => {
      const mine = await engine.fresh();
      await open(mine.url);
      const other = await engine.session();
      await other.holdKysely();
      const warnings: string[] = [];
      const start = () => open(mine.url, { onWarning: (m) => warnings.push(m), migrationLock: { warnAfterMs: 200 } });
      expect(await whileHeld(() => other.releaseKysely(), start)).toEqual({ endedWhileHeld: true });
      expect(warnings).toEqual([]);
    }, 30_000);

    // Kysely's lock is what instances from before 2026-12-02 take: a migrating start takes it too,
    // after plantgate's (so it waits for another database's Kysely migrator while migrating).
    it(`a migrating start also waits for Kysely's migration lock, names it through onWarning, and migrates once it is free`, async () => {
      const mine = await engine.fresh();
      const other = await engine.session();
      await other.holdKysely();
      const { ms, warnings } = await openWhileHeld1500(mine.url, () => other.releaseKysely());
      expect(ms).toBeGreaterThanOrEqual(1400);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(
        new RegExp(
          `^${engine.family} storage: waiting for Kysely's migration lock of the whole ${engine.kyselyScope} \\(${engine.kyselyPattern}: a plantgate instance from before 2026-12-02 migrating, or another Kysely application's migrator\\); waited 0\\.2 s, waiting up to 900 s in all$`,
        ),
      );
      expect(await mine.migrations()).toHaveLength(LATEST_SCHEMA_VERSION);
    }, 30_000);

    it("a migrating start whose Kysely lock stays taken is refused with a StorageError, nothing migrated", async () => {
      const mine = await engine.fresh();
      const other = await engine.session();
      await other.holdKysely();
      const failure = await open(mine.url, { onWarning: () => {}, migrationLock: { warnAfterMs: 200, waitMs: 700 } }).then(
        () => null,
        (e: unknown) => e,
      );
      await other.releaseKysely();
      expect(failure).toBeInstanceOf(StorageError);
      expect((failure as Error).message).toBe(
        `${engine.family} storage failed during migrate: Kysely's migration lock of the whole ${engine.kyselyScope} was not free within 0.7 s (a plantgate instance from before 2026-12-02 is migrating, or another Kysely application's migrator or a session holds it); nothing was migrated`,
      );
      expect(await mine.hasTables()).toBe(false);
    }, 30_000);

    it(`a start does not wait for plantgate's migration lock of another ${kind}`, async () => {
      const [mine, theirs] = [await engine.fresh(), await engine.fresh()];
      const other = await engine.session();
      await other.holdPlantgate(theirs);
      expect(await whileHeld(() => other.releasePlantgate(theirs), () => open(mine.url))).toEqual({ endedWhileHeld: true });
    }, 30_000);

    it(`three starts on the same ${kind} migrate one after the other: all succeed, each migration applied once`, async () => {
      const mine = await engine.fresh();
      const warnings: string[] = [];
      const started = await Promise.allSettled([0, 1, 2].map(() => open(mine.url, { onWarning: (m) => warnings.push(m) })));
      expect(started.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "fulfilled"]);
      const names = await mine.migrations();
      expect(names).toHaveLength(LATEST_SCHEMA_VERSION);
      expect(new Set(names).size).toBe(LATEST_SCHEMA_VERSION);
      expect(warnings).toEqual([]);
    }, 60_000);

    it(`a start waits for plantgate's lock of its ${kind}, says so through onWarning, and migrates once it is free`, async () => {
      const mine = await engine.fresh();
      const other = await engine.session();
      await other.holdPlantgate(mine);
      const { ms, warnings } = await openWhileHeld1500(mine.url, () => other.releasePlantgate(mine));
      expect(ms).toBeGreaterThanOrEqual(1400);
      expect(warnings).toHaveLength(1);
      const scope = engine.scope(mine).replace(/"/g, '\\"');
      expect(warnings[0]).toMatch(
        new RegExp(`^${engine.family} storage: waiting for the migration lock of ${scope} \\(${engine.lockPattern(mine)}: another instance migrating it\\); waited 0\\.2 s, waiting up to 900 s in all$`),
      );
      expect(await mine.migrations()).toHaveLength(LATEST_SCHEMA_VERSION);
    }, 30_000);

    it("a start whose lock stays taken is refused with a StorageError, nothing migrated", async () => {
      const mine = await engine.fresh();
      const other = await engine.session();
      await other.holdPlantgate(mine);
      const warnings: string[] = [];
      const failure = await open(mine.url, { onWarning: (m) => warnings.push(m), migrationLock: { warnAfterMs: 200, waitMs: 700 } }).then(
        () => null,
        (e: unknown) => e,
      );
      await other.releasePlantgate(mine);
      expect(failure).toBeInstanceOf(StorageError);
      expect((failure as Error).message).toBe(
        `${engine.family} storage failed during migrate: the migration lock of ${engine.scope(mine)} was not free within 0.7 s (another instance is migrating it, or a session holds it); nothing was migrated`,
      );
      expect(warnings).toHaveLength(1);
      expect(await mine.hasTables()).toBe(false);
    }, 30_000);

    if (engine.killLockWaits) {
      const kill = engine.killLockWaits.bind(engine);
      it("a GET_LOCK wait that is killed (NULL) fails the start at once, not waited for again", async () => {
        const mine = await engine.fresh();
        const other = await engine.session();
        await other.holdPlantgate(mine);
        const held = later(4000, () => other.releasePlantgate(mine));
        const started = performance.now();
        const outcome = open(mine.url, { onWarning: () => {} }).then(
          () => null,
          (e: unknown) => e,
        );
        let killed = 0;
        while (killed === 0 && performance.now() - started < 3000) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          killed = await kill(mine);
        }
        const failure = await outcome;
        const ms = performance.now() - started;
        await held;
        expect(killed).toBe(1);
        expect(failure).toBeInstanceOf(StorageError);
        expect((failure as Error).message).toBe(
          "mysql storage failed during migrate: GET_LOCK for the migration lock of this database returned NULL (the wait was killed, or the server failed it); nothing was migrated",
        );
        expect(ms).toBeLessThan(3500);
        expect(await mine.hasTables()).toBe(false);
      }, 30_000);
    }

    it(`a start on an up-to-date ${kind} takes no lock: plantgate's lock held elsewhere does not delay it`, async () => {
      const mine = await engine.fresh();
      await open(mine.url);
      const other = await engine.session();
      await other.holdPlantgate(mine);
      const warnings: string[] = [];
      const start = () => open(mine.url, { onWarning: (m) => warnings.push(m), migrationLock: { warnAfterMs: 200 } });
      expect(await whileHeld(() => other.releasePlantgate(mine), start)).toEqual({ endedWhileHeld: true });
      expect(warnings).toEqual([]);
    }, 30_000);
  });
}
