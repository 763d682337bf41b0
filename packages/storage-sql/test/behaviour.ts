/**
 * SQL-specific behaviour, beyond what the conformance suite can see through the `Storage`
 * interface: migrations, the physical representation of int64 ids, exact text columns, outage
 * mapping, pool recovery and the 50-way refresh race on separate connections.
 */
import { StorageError, type AccountRecord, type ClientRecord, type RefreshTokenRecord } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { createSqlStorage, LATEST_SCHEMA_VERSION, openSqlStorage, pendingMigrations, SchemaTooNewError, UnstorableValueError, type SqlStorage } from "../src/index.js";
import { CompiledQuery, sql, type Kysely } from "kysely";
import { migrateToVersion } from "../src/migrations.js";
import { TABLES } from "../src/schema.js";
import type { Engine, FreshDatabase } from "./support.js";

const T0 = 1_767_225_600_123;
const INT64_MIN = -9223372036854775808n;
const INT64_MAX = 9223372036854775807n;

const account = (id: string, username: string): AccountRecord => ({
  id,
  username,
  displayName: null,
  email: null,
  roles: [],
  enabled: true,
  createdAt: T0,
  passwordHash: `$pbkdf2-sha256$i=1,l=32$${id}$hash`,
});

const token = (tokenHash: string, overrides: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord => ({
  tokenHash,
  familyId: "family-1",
  clientId: "client-a",
  accountId: "acct-1",
  scope: ["offline_access"],
  createdAt: T0,
  expiresAt: T0 + 1000,
  familyExpiresAt: T0 + 2000,
  consumedAt: null,
  revokedAt: null,
  replay: null,
  graceUses: 0,
  ...overrides,
});

const client = (clientId: string, accessTokenTtl: number | null): ClientRecord => ({
  clientId,
  authMethod: "client_secret",
  secrets: [{ id: "s1", hash: `hash-${clientId}`, createdAt: T0, expiresAt: null, lastUsedAt: null }],
  jwks: null,
  jwksUri: null,
  name: clientId,
  grantTypes: ["client_credentials"],
  scopes: [],
  accessTokenTtl,
  refreshTokenTtl: null,
  refreshTokenAbsoluteTtl: null,
  createdAt: T0,
  secretUpdatedAt: T0,
});

const V1_TABLES = [TABLES.accounts, TABLES.clients, TABLES.migrations, TABLES.migrationLock, TABLES.plants, TABLES.refreshTokens, TABLES.signingKeys].sort();
const V2_TABLES = [...V1_TABLES, TABLES.attempts, TABLES.revokedTokens, TABLES.sessions].sort();
const ALL_TABLES = [...V2_TABLES, TABLES.counters, TABLES.assertionJtis, TABLES.audit, TABLES.refreshFamilies].sort();
const ALL_MIGRATIONS = ["0001_initial", "0002_attempts_revoked_tokens_sessions", "0003_signing_key_activation", "0004_account_positions", "0005_refresh_token_expiry_indexes", "0006_refresh_token_grace", "0007_client_auth", "0008_audit_events", "0009_client_notify", "0010_refresh_families", "0011_client_access_token_ttl_index", "0012_client_generation", "0013_signing_key_last_signed", "0014_audit_combined_indexes", "0015_refresh_token_replay_index"];

/** The table names present in the test database, from the engine's catalog. */
async function tables(engine: Engine, db: FreshDatabase): Promise<string[]> {
  const statement = {
    sqlite: "select name from sqlite_master where type = 'table'",
    postgres: "select table_name as name from information_schema.tables where table_schema = current_schema()",
    mysql: "select table_name as name from information_schema.tables where table_schema = database()",
  }[engine.family];
  return (await engine.exec(db, statement)).map((r) => String(r.name ?? r.NAME ?? r.TABLE_NAME)).filter((n) => n.startsWith("pg_")).sort();
}

/** Inserts an account as a release before account positions did (no position), on the admin connection. */
async function insertPrePositionAccount(engine: Engine, db: FreshDatabase, r: AccountRecord): Promise<void> {
  const text = (v: string | null) => (v === null ? "null" : `'${v.replace(/'/g, "''")}'`);
  await engine.exec(
    db,
    `insert into ${TABLES.accounts} (id, username, display_name, email, roles, enabled, created_at, password_hash) values ` +
      `(${text(r.id)}, ${text(r.username)}, ${text(r.displayName)}, ${text(r.email)}, ${text(JSON.stringify(r.roles))}, ${r.enabled ? 1 : 0}, ${r.createdAt}, ${text(r.passwordHash)})`,
  );
}

export function describeSqlBehaviour(engine: Engine): void {
  describe(`${engine.label}: SQL behaviour`, () => {
    /**
     * Runs `run` over the storage's database while capturing the one statement it makes (with its
     * values), then asks the engine for that statement's plan, as text, one `key=value` line per row;
     * PostgreSQL is asked with the named planner methods (`enable_seqscan`, `enable_sort`) priced out.
     */
    const planOfOne = async <T>(storage: SqlStorage, run: (db: Kysely<any>) => Promise<T>, pgOff: string[]): Promise<{ plan: string; result: T }> => {
      const base = storage.db as Kysely<any>;
      const captured: CompiledQuery[] = [];
      const capturing = base.withPlugin({
        transformQuery: (args) => (captured.push(base.getExecutor().compileQuery(args.node, args.queryId)), args.node),
        transformResult: async (args) => args.result,
      });
      const result = await run(capturing);
      expect(captured).toHaveLength(1);
      const { sql: text, parameters } = captured[0]!;
      const explain = (db: Kysely<any>) => db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(`${engine.family === "sqlite" ? "explain query plan" : "explain"} ${text}`, [...parameters]));
      const rows =
        engine.family === "postgres"
          ? await base.transaction().execute(async (trx) => {
              for (const setting of pgOff) await sql.raw(`set local ${setting} = off`).execute(trx);
              return (await explain(trx)).rows;
            })
          : (await explain(base)).rows;
      return { plan: rows.map((r) => Object.entries(r).map(([k, v]) => `${k}=${v}`).join(" ")).join("\n"), result };
    };

    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    /** A fresh database, removed after the test. */
    const freshDb = async (): Promise<FreshDatabase> => {
      const db = await engine.fresh();
      cleanups.push(() => db.drop());
      return db;
    };
    /** A storage on `db`, closed after the test. */
    const open = async (db: FreshDatabase, options?: { migrate?: boolean; audit?: boolean }): Promise<SqlStorage> => {
      const storage = await openSqlStorage(db.url, options);
      cleanups.push(() => storage.close());
      return storage;
    };

    describe("migrations", () => {
      it("a fresh database gets every table and one recorded migration per schema version", async () => {
        const db = await freshDb();
        const storage = await open(db);
        expect(storage.family).toBe(engine.family);
        expect(await tables(engine, db)).toEqual(ALL_TABLES);
        const executed = await engine.exec(db, `select name from ${TABLES.migrations} order by name`);
        expect(executed.map((r) => r.name)).toEqual(ALL_MIGRATIONS);
        expect(LATEST_SCHEMA_VERSION).toBe(ALL_MIGRATIONS.length);
      });

      it("migrate() is idempotent: a second run and a second open change nothing and keep the data", async () => {
        const db = await freshDb();
        const storage = await open(db);
        expect(await storage.accounts.create(account("a1", "alice"))).toBe(true);
        await storage.migrate();
        await storage.migrate();
        const again = await open(db);
        expect((await again.accounts.findByUsername("alice"))?.id).toBe("a1");
        expect(await engine.exec(db, `select name from ${TABLES.migrations}`)).toHaveLength(LATEST_SCHEMA_VERSION);
      });

      it("concurrent migrate() calls from several instances apply the schema once", async () => {
        const db = await freshDb();
        const instances = await Promise.all([1, 2, 3].map(() => open(db, { migrate: false })));
        await Promise.all(instances.map((s) => s.migrate()));
        expect(await engine.exec(db, `select name from ${TABLES.migrations}`)).toHaveLength(LATEST_SCHEMA_VERSION);
        expect(await instances[0]!.accounts.create(account("a1", "alice"))).toBe(true);
      });

      it("migrate: false leaves the database untouched, and queries then fail with StorageError", async () => {
        const db = await freshDb();
        const storage = await open(db, { migrate: false });
        expect(await tables(engine, db)).toEqual([]);
        await expect(storage.accounts.get("a1")).rejects.toBeInstanceOf(StorageError);
      });

      it("pendingMigrations reads, without applying anything, which migrations are missing: all on an empty database, the tail on an older one, none when current; a newer schema is SchemaTooNewError", async () => {
        const db = await freshDb();
        const storage = await open(db, { migrate: false });
        expect(await pendingMigrations(storage)).toEqual(ALL_MIGRATIONS);
        expect(await tables(engine, db)).toEqual([]);
        await migrateToVersion(storage.db as Kysely<any>, engine.family, 9);
        const atNine = await tables(engine, db);
        expect(await pendingMigrations(storage)).toEqual(ALL_MIGRATIONS.slice(9));
        expect(await tables(engine, db)).toEqual(atNine);
        expect(await engine.exec(db, `select name from ${TABLES.migrations}`)).toHaveLength(9);
        await storage.migrate();
        expect(await pendingMigrations(storage)).toEqual([]);
        const future = `${String(LATEST_SCHEMA_VERSION + 1).padStart(4, "0")}_from_the_future`;
        await engine.exec(db, `insert into ${TABLES.migrations} (name, timestamp) values ('${future}', '2030-01-01T00:00:00.000Z')`);
        await expect(pendingMigrations(storage)).rejects.toBeInstanceOf(SchemaTooNewError);
      });

      it("a database with a migration this code does not know is refused with SchemaTooNewError, before any change", async () => {
        const db = await freshDb();
        const storage = await open(db);
        // One past the newest migration this code knows, whatever that is.
        const future = `${String(LATEST_SCHEMA_VERSION + 1).padStart(4, "0")}_from_the_future`;
        await engine.exec(db, `insert into ${TABLES.migrations} (name, timestamp) values ('${future}', '2030-01-01T00:00:00.000Z')`);
        const before = await tables(engine, db);
        const error = await storage.migrate().then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(SchemaTooNewError);
        const tooNew = error as SchemaTooNewError;
        expect(tooNew.databaseVersion).toBe(LATEST_SCHEMA_VERSION + 1);
        expect(tooNew.supportedVersion).toBe(LATEST_SCHEMA_VERSION);
        expect(tooNew.unknownMigrations).toEqual([future]);
        expect(tooNew.message).toContain(`version ${LATEST_SCHEMA_VERSION + 1}`);
        expect(tooNew.message).toContain(`version ${LATEST_SCHEMA_VERSION}`);
        expect(tooNew.message).toContain(future);
        await expect(openSqlStorage(db.url)).rejects.toBeInstanceOf(SchemaTooNewError);
        expect(await tables(engine, db)).toEqual(before);
        expect(await engine.exec(db, `select name from ${TABLES.migrations}`)).toHaveLength(LATEST_SCHEMA_VERSION + 1);
      });

      it.runIf(engine.family === "postgres")("migration 15 builds the replay index again where an operator's CREATE INDEX CONCURRENTLY of it was left invalid (cancelled), and keeps a valid one (PostgreSQL only: the others have no concurrent build)", async () => {
        const db = await freshDb();
        const old = await open(db, { migrate: false });
        await migrateToVersion(old.db as Kysely<any>, engine.family, 14);
        const validity = async () => engine.exec(db, `select indisvalid as valid from pg_index where indexrelid = to_regclass('pg_refresh_tokens_replay_idx')`);
        // As a cancelled concurrent build leaves it: the name taken, the index marked invalid (the
        // planner never uses it). Marked by hand here: a cancellation needs a table slow to index.
        await engine.exec(db, `create index pg_refresh_tokens_replay_idx on pg_refresh_tokens (consumed_at) where replay is not null`);
        await engine.exec(db, `update pg_index set indisvalid = false where indexrelid = to_regclass('pg_refresh_tokens_replay_idx')`);
        expect(await validity()).toEqual([{ valid: false }]);
        await migrateToVersion(old.db as Kysely<any>, engine.family, 15);
        expect(await validity()).toEqual([{ valid: true }]);
        // A valid one built beforehand is kept as it is (same index, not rebuilt).
        const db2 = await freshDb();
        const other = await open(db2, { migrate: false });
        await migrateToVersion(other.db as Kysely<any>, engine.family, 14);
        await engine.exec(db2, `create index pg_refresh_tokens_replay_idx on pg_refresh_tokens (consumed_at) where replay is not null`);
        const before = await engine.exec(db2, `select to_regclass('pg_refresh_tokens_replay_idx')::oid::text as oid`);
        await migrateToVersion(other.db as Kysely<any>, engine.family, 15);
        expect(await engine.exec(db2, `select to_regclass('pg_refresh_tokens_replay_idx')::oid::text as oid`)).toEqual(before);
        expect(before).toEqual([{ oid: expect.stringMatching(/^\d+$/) }]);
      });

      it("a version 1 database (as the previous release left it) is upgraded in place: new tables added, every row kept", async () => {
        const db = await freshDb();
        const old = await open(db, { migrate: false });
        await migrateToVersion(old.db as Kysely<any>, engine.family, 1);
        expect(await tables(engine, db)).toEqual(V1_TABLES);
        await insertPrePositionAccount(engine, db, account("a1", "alice"));
        expect(await old.plants.create({ id: INT64_MIN, name: "min", tag: "t" })).toBe(true);
        // The refresh-token row as the version 1 code wrote it (today's code writes the grace columns too).
        await engine.exec(
          db,
          `insert into ${TABLES.refreshTokens} (token_hash, family_id, client_id, account_id, scope, created_at, expires_at, family_expires_at, consumed_at, revoked_at) ` +
            `values ('rt-1', 'family-1', 'client-a', 'acct-1', '["offline_access"]', ${T0}, ${T0 + 1000}, ${T0 + 2000}, ${T0 + 10}, null)`,
        );
        // A key as version 1 stored it (no activation time): it signed from its creation.
        await old.db
          .insertInto(TABLES.signingKeys)
          .values({ kid: "old-kid", alg: "ES256", private_jwk: '{"d":"x"}', public_jwk: "{}", created_at: T0 } as never)
          .execute();
        await old.close();

        const upgraded = await open(db);
        expect(await tables(engine, db)).toEqual(ALL_TABLES);
        const executed = await engine.exec(db, `select name from ${TABLES.migrations} order by name`);
        expect(executed.map((r) => r.name)).toEqual(ALL_MIGRATIONS);
        expect(await upgraded.signingKeys.list()).toEqual([{ kid: "old-kid", alg: "ES256", privateJwk: '{"d":"x"}', publicJwk: "{}", createdAt: T0, activatesAt: T0 }]);
        expect(await upgraded.accounts.findByUsername("alice")).toEqual(account("a1", "alice"));
        expect(await upgraded.accounts.list(0, 10)).toEqual({ items: [account("a1", "alice")], total: 1 });
        expect(await upgraded.plants.get(INT64_MIN)).toEqual({ id: INT64_MIN, name: "min", tag: "t" });
        expect(await upgraded.refreshTokens.findByHash("rt-1")).toEqual(token("rt-1", { consumedAt: T0 + 10 }));
        // Version 10 filled pg_refresh_families from the tokens already there: a token from before
        // the upgrade is still found by its account and (consumed: only the family rule takes it)
        // by its family's absolute expiry.
        await upgraded.refreshTokens.revokeByAccount("acct-1", T0 + 5);
        expect(await upgraded.refreshTokens.findByHash("rt-1")).toEqual(token("rt-1", { consumedAt: T0 + 10, revokedAt: T0 + 5 }));
        expect(await upgraded.refreshTokens.deleteExpired(T0 + 1999)).toBe(0);
        expect(await upgraded.refreshTokens.deleteExpired(T0 + 2000)).toBe(1);
        expect(await engine.exec(db, `select family_id from ${TABLES.refreshFamilies}`), "the family's row goes with its last token").toEqual([]);
        expect(await upgraded.attempts.increment("k", T0, 1000)).toEqual({ key: "k", count: 1, windowStart: T0 });
        await upgraded.revokedTokens.add("jti-1", T0 + 1000);
        expect(await upgraded.revokedTokens.has("jti-1")).toBe(true);
        expect(await upgraded.sessions.create({ idHash: "s1", accountId: "a1", csrfHash: "c1", createdAt: T0, expiresAt: T0 + 1 })).toBe(true);
        expect(await upgraded.sessions.deleteByAccount("a1")).toBe(1);
      });

      it("a version 2 database is upgraded to account positions: backfilled by createdAt then id, counted, and new accounts follow", async () => {
        const db = await freshDb();
        const old = await open(db, { migrate: false });
        await migrateToVersion(old.db as Kysely<any>, engine.family, 2);
        expect(await tables(engine, db)).toEqual(V2_TABLES);
        // Inserted out of creation order; two share a createdAt, so id breaks the tie.
        const olds = [
          { ...account("c", "carol"), createdAt: T0 + 20 },
          { ...account("b2", "bob2"), createdAt: T0 + 10 },
          { ...account("a", "alice"), createdAt: T0 + 30 },
          { ...account("b1", "bob1"), createdAt: T0 + 10 },
        ];
        await old.close();
        for (const r of olds) await insertPrePositionAccount(engine, db, r);

        const upgraded = await open(db);
        expect(await tables(engine, db)).toEqual(ALL_TABLES);
        const positions = await engine.exec(db, `select id, ${engine.family === "mysql" ? "`position`" : '"position"'} as p from ${TABLES.accounts} order by id`);
        expect(positions.map((r) => [r.id, Number(r.p)])).toEqual([["a", 4], ["b1", 1], ["b2", 2], ["c", 3]]);
        const counter = await engine.exec(db, `select ${engine.family === "mysql" ? "`value`" : '"value"'} as v from ${TABLES.counters} where name = 'accounts'`);
        expect(counter.map((r) => Number(r.v))).toEqual([4]);
        expect(await upgraded.accounts.create({ ...account("0-newest", "dave"), createdAt: T0 })).toBe(true);
        const page = await upgraded.accounts.list(0, 10);
        expect(page.total).toBe(5);
        expect(page.items.map((a) => a.id)).toEqual(["b1", "b2", "c", "a", "0-newest"]);
        expect((await upgraded.accounts.list(3, 10)).items.map((a) => a.id)).toEqual(["a", "0-newest"]);
      });

      it("an empty version 2 database gets a zero count and lists nothing", async () => {
        const db = await freshDb();
        const old = await open(db, { migrate: false });
        await migrateToVersion(old.db as Kysely<any>, engine.family, 2);
        await old.close();
        const upgraded = await open(db);
        expect(await upgraded.accounts.list(0, 10)).toEqual({ items: [], total: 0 });
        expect(await upgraded.accounts.create(account("a1", "alice"))).toBe(true);
        expect((await upgraded.accounts.list(0, 10)).items.map((a) => a.id)).toEqual(["a1"]);
      });

      it("code at version 1 refuses a newer database with SchemaTooNewError", async () => {
        const storage = await open(await freshDb());
        const error = await migrateToVersion(storage.db as Kysely<any>, engine.family, 1).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(SchemaTooNewError);
        expect(error).toMatchObject({ databaseVersion: LATEST_SCHEMA_VERSION, supportedVersion: 1, unknownMigrations: ALL_MIGRATIONS.slice(1) });
      });
    });

    describe("int64 plant ids", () => {
      it("are stored as 64-bit integers: the extremes round-trip as bigint and the column orders numerically", async () => {
        const storage = await open(await freshDb());
        const ids = [INT64_MAX, -1n, INT64_MIN, 0n, 9007199254740993n, INT64_MIN + 1n, INT64_MAX - 1n];
        for (const id of ids) expect(await storage.plants.create({ id, name: `p${id}`, tag: null })).toBe(true);
        for (const id of ids) expect(await storage.plants.get(id)).toEqual({ id, name: `p${id}`, tag: null });
        expect(await storage.plants.get(9007199254740992n)).toBeNull();
        // Numeric (not text) order proves the column holds integers; read as text so no driver rounds.
        const ordered = await storage.db
          .selectFrom(TABLES.plants)
          .select((eb) => eb.cast<string>("id", engine.family === "mysql" ? "char" : "text").as("id"))
          .orderBy(`${TABLES.plants}.id`)
          .execute();
        expect(ordered.map((r) => BigInt(r.id))).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      });

      it("epoch milliseconds beyond 2^32 come back as numbers", async () => {
        const storage = await open(await freshDb());
        const big = 8_640_000_000_000_000;
        await storage.accounts.create({ ...account("a1", "alice"), createdAt: big });
        const got = await storage.accounts.get("a1");
        expect(got?.createdAt).toBe(big);
        expect(typeof got?.createdAt).toBe("number");
      });
    });

    describe("exact text", () => {
      it("usernames differing in case, trailing space or accent are distinct accounts", async () => {
        const storage = await open(await freshDb());
        const names = ["alice", "Alice", "ALICE", "alice ", "alicé", "alice\u0301"];
        for (const [i, n] of names.entries()) expect(await storage.accounts.create(account(`id-${i}`, n)), JSON.stringify(n)).toBe(true);
        for (const [i, n] of names.entries()) expect((await storage.accounts.findByUsername(n))?.id, JSON.stringify(n)).toBe(`id-${i}`);
        expect(await storage.accounts.findByUsername("aLice")).toBeNull();
        expect(await storage.accounts.create(account("id-x", "alice"))).toBe(false);
      });

      it("accounts are listed in creation order, whatever their ids and createdAt", async () => {
        const storage = await open(await freshDb());
        const ids = ["b", "B", "a", "_", "-", "Z", "é", "~", "10", "9", "a b"];
        for (const [i, id] of ids.entries()) await storage.accounts.create({ ...account(id, `u-${id}`), createdAt: T0 - i });
        const page = await storage.accounts.list(0, 100);
        expect(page.items.map((a) => a.id)).toEqual(ids);
        expect(page.total).toBe(ids.length);
      });

      it("a lone surrogate is refused on write (nothing stored) and never found on read", async () => {
        const storage = await open(await freshDb());
        await expect(storage.accounts.create(account("a1", "bad\uD800"))).rejects.toBeInstanceOf(UnstorableValueError);
        await expect(storage.plants.create({ id: 1n, name: "bad\uDC00", tag: null })).rejects.toBeInstanceOf(UnstorableValueError);
        expect(await storage.accounts.findByUsername("bad\uD800")).toBeNull();
        expect((await storage.accounts.list(0, 10)).total).toBe(0);
        expect(await storage.plants.get(1n)).toBeNull();
      });

      it("U+0000 round-trips in plant names; in keys it is stored where the engine can, and looked up safely", async () => {
        const storage = await open(await freshDb());
        expect(await storage.plants.create({ id: 1n, name: "a\u0000b", tag: "\u0000" })).toBe(true);
        expect(await storage.plants.get(1n)).toEqual({ id: 1n, name: "a\u0000b", tag: "\u0000" });
        expect(await storage.accounts.findByUsername("nul\u0000")).toBeNull();
        if (engine.family === "postgres") {
          await expect(storage.accounts.create(account("a1", "nul\u0000"))).rejects.toBeInstanceOf(UnstorableValueError);
        } else {
          expect(await storage.accounts.create(account("a1", "nul\u0000"))).toBe(true);
          expect((await storage.accounts.findByUsername("nul\u0000"))?.id).toBe("a1");
          expect(await storage.accounts.findByUsername("nul")).toBeNull();
        }
      });
    });

    describe("clients.maxAccessTokenTtl", () => {
      /**
       * The plan of the store's query (the same builder): one probe of the access_token_ttl index
       * (migration 0011), never a scan of pg_clients. PostgreSQL is asked with sequential scans
       * priced out, since on a table this small a scan would rightly be cheaper; without the index
       * it scans anyway.
       */
      const plan = async (storage: SqlStorage): Promise<string> => {
        const query = (storage.db as Kysely<any>).selectFrom(TABLES.clients).select((eb) => eb.fn.max("access_token_ttl").as("ttl")).compile();
        const explain = (db: Kysely<any>) =>
          sql.raw<Record<string, unknown>>(`${engine.family === "sqlite" ? "explain query plan" : "explain"} ${query.sql}`).execute(db);
        const rows =
          engine.family === "postgres"
            ? await (storage.db as Kysely<any>).transaction().execute(async (trx) => {
                await sql`set local enable_seqscan = off`.execute(trx);
                return (await explain(trx)).rows;
              })
            : (await explain(storage.db as Kysely<any>)).rows;
        return rows.map((r) => Object.values(r).join(" ")).join("\n");
      };

      it("is the largest TTL, read from the access_token_ttl index (one probe, not a scan of every client)", async () => {
        const storage = await open(await freshDb());
        expect(await storage.clients.maxAccessTokenTtl!()).toBeNull();
        for (const [id, ttl] of [["a", null], ["b", 600], ["c", 86_400], ["d", 60]] as const) expect(await storage.clients.create(client(id, ttl))).toBe(true);
        expect(await storage.clients.maxAccessTokenTtl!()).toBe(86_400);
        const text = await plan(storage);
        if (engine.family === "sqlite") expect(text).toContain("USING COVERING INDEX pg_clients_access_token_ttl_idx");
        else if (engine.family === "postgres") expect(text).toMatch(/Index Only Scan Backward using pg_clients_access_token_ttl_idx/);
        else expect(text).toContain("Select tables optimized away");
      });
    });

    describe("audit.list", () => {
      /**
       * The console's filters together (type, client, and an account, which core lists once by
       * `accountId` and once by `username`): each combination must be a range of one index in
       * (time, id) order, so a page costs the same at any depth, however rarely the filters meet.
       * Until migration 0014 two filters used one filter's index and tested the other row by row
       * (on PostgreSQL at 1,000,000 events, 50,000 rows read for a rare pair's page half-way down:
       * README, "Audit trail"). The plan is the engine's for the
       * statement the store runs (captured as it runs, with its values), on 3,000 events and the
       * engine's statistics (SQLite has none); PostgreSQL is asked with sequential scans and sorts priced out.
       */
      const COMBINATIONS: Array<[index: string, filter: { type?: string; clientId?: string; accountId?: string; username?: string }]> = [
        ["pg_audit_events_type_client_idx", { type: "token.issued", clientId: "c-1" }],
        ["pg_audit_events_type_account_idx", { type: "token.issued", accountId: "a-1" }],
        ["pg_audit_events_type_username_idx", { type: "account.login_failed", username: "u-1" }],
        ["pg_audit_events_client_account_idx", { clientId: "c-1", accountId: "a-1" }],
        ["pg_audit_events_client_username_idx", { clientId: "c-1", username: "u-1" }],
        ["pg_audit_events_type_client_account_idx", { type: "token.issued", clientId: "c-1", accountId: "a-1" }],
        ["pg_audit_events_type_client_username_idx", { type: "account.login_failed", clientId: "c-1", username: "u-1" }],
      ];
      const TYPES = ["token.issued", "token.refreshed", "account.login_failed", "token.revoked", "client.authentication_failed", "account.locked_out"];

      /** The engine's plan of the one SELECT `list(query)` runs, as text, one line per row. */
      const planOfList = async (storage: SqlStorage, query: Parameters<NonNullable<SqlStorage["audit"]>["list"]>[0]): Promise<string> =>
        // A sort of these few matches is rightly cheaper than a walk; the question is whether a walk
        // in order exists (at 1,000,000 events it is chosen: README, audit trail).
        (await planOfOne(storage, (db) => createSqlStorage(db, engine.family, { audit: true }).audit!.list(query), ["enable_seqscan", "enable_sort"])).plan;

      it("two or three filters together page through one composite index, newest first, with no sort, at any depth", async () => {
        const db = await freshDb();
        const storage = await open(db, { audit: true });
        // 3,000 events: 6 types, 10 clients, 50 accounts (and their usernames); each combination once.
        const rows = Array.from({ length: 3000 }, (_, i) => ({
          id: `e-${String(i).padStart(5, "0")}`,
          type: TYPES[i % 6]!,
          time: T0 + i,
          client_id: `c-${Math.floor(i / 6) % 10}`,
          account_id: `a-${Math.floor(i / 60)}`,
          username: `u-${Math.floor(i / 60)}`,
          data: "{}",
        }));
        for (let i = 0; i < rows.length; i += 250) await (storage.db as Kysely<any>).insertInto(TABLES.audit).values(rows.slice(i, i + 250)).execute();
        if (engine.family === "postgres") await engine.exec(db, `analyze ${TABLES.audit}`);
        if (engine.family === "mysql") await engine.exec(db, `analyze table ${TABLES.audit}`);

        for (const [index, filter] of COMBINATIONS) {
          // The first page, and one deep in the trail (the cursor of an event half-way).
          for (const before of [undefined, { time: T0 + 1500, id: "e-01500" }]) {
            const label = `${JSON.stringify(filter)} before ${JSON.stringify(before)}`;
            const text = await planOfList(storage, { ...filter, ...(before ? { before } : {}), limit: 21 });
            if (engine.family === "sqlite") {
              const equal = Object.keys(filter).map((k) => `${({ clientId: "client_id", accountId: "account_id" } as Record<string, string>)[k] ?? k}=?`).join(" AND ");
              expect(text, label).toContain(`SEARCH ${TABLES.audit} USING INDEX ${index} (${equal}${before ? " AND time<?" : ""})`);
              expect(text, label).not.toContain("TEMP B-TREE");
            } else if (engine.family === "postgres") {
              expect(text, label).toMatch(new RegExp(`^QUERY PLAN=Limit .*\\n.*Index Scan Backward using ${index} on ${TABLES.audit}`));
              if (before) expect(text, label).toMatch(/Index Cond: .*\("time" <= /);
              expect(text, label).not.toMatch(/Sort|Filter: .*\b(type|client_id|account_id|username) = /);
            } else {
              expect(text, label).toMatch(new RegExp(`type=${before ? "range" : "(ref|range)"} possible_keys=.* key=${index} `));
              expect(text, label).not.toContain("filesort");
            }
          }
        }
        // And the pages are right: the events of a type and a client, newest first, from the cursor on.
        const page = await storage.audit!.list({ type: "token.issued", clientId: "c-1", before: { time: T0 + 1500, id: "e-01500" }, limit: 3 });
        expect(page.map((r) => r.id)).toEqual(["e-01446", "e-01386", "e-01326"]);
      });
    });

    describe("refreshTokens.dropReplays", () => {
      /**
       * Prune drops the replays of tokens rotated past every grace window, in batches, while the
       * rotated rows stay until their family ends. Until migration 0015 the batches walked the
       * `(consumed_at, expires_at)` index through every rotated row, the ones cleared before among
       * them (300,000 rotated tokens: 34 s on PostgreSQL, which planned each batch as a scan of the
       * whole table; 39 s on SQLite). Each batch must be a range of the index of only the rows
       * holding a replay. The plan is the engine's for the statement the store runs (captured as
       * it runs, with its values), on 3,000 rotated tokens of which 2,900 were cleared before;
       * PostgreSQL is asked with sequential scans priced out.
       */
      const planOfDrop = async (storage: SqlStorage, consumedBefore: number, limit: number) =>
        planOfOne(storage, (db) => createSqlStorage(db, engine.family).refreshTokens.dropReplays!(consumedBefore, limit), ["enable_seqscan"]);

      it("each batch reads the index of only the tokens holding a replay, oldest first, and drops each once", async () => {
        const db = await freshDb();
        const storage = await open(db);
        const base = storage.db as Kysely<any>;
        // 3,000 rotated tokens at T0+1..T0+3000: the first 2,900 without a replay (dropped by an
        // earlier run), the last 100 with one.
        const rows = Array.from({ length: 3000 }, (_, i) => ({
          token_hash: `rt-${String(i).padStart(5, "0")}`,
          family_id: `family-${i % 50}`,
          client_id: "client-a",
          account_id: "acct-1",
          scope: "[]",
          created_at: T0,
          expires_at: T0 + 100_000,
          family_expires_at: T0 + 200_000,
          consumed_at: T0 + 1 + i,
          revoked_at: null,
          replay: i < 2900 ? null : `v1.sealed-${i}`,
          grace_uses: 0,
          client_generation: null,
        }));
        for (let i = 0; i < rows.length; i += 250) await base.insertInto(TABLES.refreshTokens).values(rows.slice(i, i + 250)).execute();
        if (engine.family === "postgres") await engine.exec(db, `analyze ${TABLES.refreshTokens}`);
        if (engine.family === "mysql") await engine.exec(db, `analyze table ${TABLES.refreshTokens}`);

        const { plan, result: dropped } = await planOfDrop(storage, T0 + 2950, 30);
        if (engine.family === "sqlite") {
          expect(plan).toMatch(/SEARCH pg_refresh_tokens USING (COVERING )?INDEX pg_refresh_tokens_replay_idx \(consumed_at<\?\)/);
          expect(plan).not.toContain("TEMP B-TREE");
        } else if (engine.family === "postgres") {
          expect(plan).toMatch(/Index Scan using pg_refresh_tokens_replay_idx on pg_refresh_tokens/);
          expect(plan).not.toMatch(/Seq Scan|Sort/);
        } else {
          expect(plan).toMatch(/type=range possible_keys=.*pg_refresh_tokens_replay_idx.* key=pg_refresh_tokens_replay_idx /);
          expect(plan).not.toContain("filesort");
        }
        // The oldest 30 of those holding one, rotated at or before the instant, dropped; then the rest in batches.
        expect(dropped).toBe(30);
        const held = async () => (await base.selectFrom(TABLES.refreshTokens).select("token_hash").where("replay", "is not", null).orderBy("token_hash").execute()).map((r) => r.token_hash);
        expect(await held()).toEqual(rows.slice(2930).map((r) => r.token_hash));
        const counts: number[] = [];
        do counts.push(await storage.refreshTokens.dropReplays!(T0 + 2950, 8));
        while (counts.at(-1) === 8);
        expect(counts).toEqual([8, 8, 4]);
        expect(await held()).toEqual(rows.slice(2950).map((r) => r.token_hash));
        expect(await storage.refreshTokens.dropReplays!(T0 + 3000, 1000)).toBe(50);
        expect(await held()).toEqual([]);
        // Every rotated row stays, for reuse detection.
        expect(Number((await base.selectFrom(TABLES.refreshTokens).select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n)).toBe(3000);
      });
    });

    describe("pruning", () => {
      /**
       * As `prune` calls the store: `deleteExpired` in batches of `limit` until one comes back short
       * (the token counts returned), then `deleteEndedFamilies` the same way (the family rows).
       */
      const drain = async (storage: SqlStorage, now: number, limit: number): Promise<number[]> => {
        const counts: number[] = [];
        for (;;) {
          counts.push(await storage.refreshTokens.deleteExpired(now, limit));
          if (counts.at(-1)! < limit) break;
        }
        while ((await storage.refreshTokens.deleteEndedFamilies!(now, limit)) === limit);
        return counts;
      };
      const familyRows = (db: FreshDatabase) => engine.exec(db, `select family_id from ${TABLES.refreshFamilies}`);

      it("a pruning in batches deletes every ended family's row, however many more than one batch end", async () => {
        const db = await freshDb();
        const storage = await open(db);
        // 25 families of one token each, all past their absolute expiry: more than two batches of 10.
        for (let i = 0; i < 25; i++) await storage.refreshTokens.create(token(`rt-${i}`, { familyId: `family-${i}` }));
        expect(await drain(storage, T0 + 2000, 10)).toEqual([10, 10, 5]);
        expect(await familyRows(db)).toEqual([]);

        // The steady state of a busy server: the tokens went earlier (unconsumed, past their sliding
        // expiry), and 25 families end later with no token left; their rows go in one pruning too.
        for (let i = 0; i < 25; i++) await storage.refreshTokens.create(token(`rt-b-${i}`, { familyId: `family-b-${i}` }));
        expect(await drain(storage, T0 + 1000, 10)).toEqual([10, 10, 5]);
        expect(await familyRows(db)).toHaveLength(25);
        expect(await drain(storage, T0 + 2000, 10)).toEqual([0]);
        expect(await familyRows(db)).toEqual([]);
      });

      it("with a limit, deleteExpired leaves the ended families' rows to deleteEndedFamilies, which deletes at most `limit` per call", async () => {
        const db = await freshDb();
        const storage = await open(db);
        for (let i = 0; i < 25; i++) await storage.refreshTokens.create(token(`rt-${i}`, { familyId: `family-${i}` }));
        const tokens: number[] = [];
        do tokens.push(await storage.refreshTokens.deleteExpired(T0 + 2000, 10));
        while (tokens.at(-1) === 10);
        expect(tokens).toEqual([10, 10, 5]);
        // Until 2026-11-29 the short call deleted every family row in a loop as long as their backlog.
        expect(await familyRows(db)).toHaveLength(25);
        const rows: number[] = [];
        do rows.push(await storage.refreshTokens.deleteEndedFamilies!(T0 + 2000, 10));
        while (rows.at(-1) === 10);
        expect(rows).toEqual([10, 10, 5]);
        expect(await familyRows(db)).toEqual([]);
        await expect(storage.refreshTokens.deleteEndedFamilies!(T0 + 2000, 0)).rejects.toThrow("deleteEndedFamilies: limit must be a positive integer");
      });
    });

    describe("atomicity", () => {
      it("50 concurrent consume calls of one token, on separate connections: one wins, one replacement stored", async () => {
        const storage = await open(await freshDb());
        await storage.refreshTokens.create(token("original"));
        const results = await Promise.all(Array.from({ length: 50 }, (_, i) => storage.refreshTokens.consume("original", T0 + i, token(`next-${i}`))));
        const winners = results.flatMap((won, i) => (won ? [i] : []));
        expect(winners).toHaveLength(1);
        const stored = await storage.db.selectFrom(TABLES.refreshTokens).select("token_hash").execute();
        expect(stored.map((r) => r.token_hash).sort()).toEqual([`next-${winners[0]}`, "original"].sort());
        expect((await storage.refreshTokens.findByHash("original"))?.consumedAt).toBe(T0 + winners[0]!);
      });

      it("consume whose replacement hash exists rolls back: the original stays unconsumed", async () => {
        const storage = await open(await freshDb());
        await storage.refreshTokens.create(token("original"));
        await storage.refreshTokens.create(token("taken", { familyId: "other" }));
        expect(await storage.refreshTokens.consume("original", T0 + 5, token("taken"))).toBe(false);
        expect((await storage.refreshTokens.findByHash("original"))?.consumedAt).toBeNull();
        expect((await storage.refreshTokens.findByHash("taken"))?.familyId).toBe("other");
        expect(await storage.refreshTokens.consume("original", T0 + 6, token("fresh"))).toBe(true);
      });

      it("createMany of 300 accounts splits into several statements yet is all or nothing", async () => {
        const storage = await open(await freshDb());
        const batch = Array.from({ length: 300 }, (_, i) => account(`id-${String(i).padStart(3, "0")}`, `user-${i}`));
        expect(await storage.accounts.createMany([...batch.slice(0, 299), account("id-x", "user-3")])).toBe(299);
        expect((await storage.accounts.list(0, 1)).total).toBe(0);
        expect(await storage.accounts.createMany(batch)).toBeNull();
        expect((await storage.accounts.list(0, 1)).total).toBe(300);
      });

      it("setEnabled to the value it already has still reports the account as found", async () => {
        const storage = await open(await freshDb());
        await storage.accounts.create(account("a1", "alice"));
        expect(await storage.accounts.setEnabled("a1", true)).toBe(true);
        expect(await storage.clients.replaceSecrets("none", { id: "s", hash: "h", createdAt: T0, expiresAt: null, lastUsedAt: null })).toBe(false);
      });
    });

    describe("outages", () => {
      it("an unreachable database fails with StorageError, at open and (with migrate: false) at the first query", async () => {
        const error = await openSqlStorage(engine.unreachableUrl).then(
          (s) => s.close().then(() => null),
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(StorageError);
        expect((error as StorageError).cause).toBeDefined();
        expect((error as StorageError).message).not.toContain(engine.unreachableUrl);
        if (engine.family !== "sqlite") {
          const lazy = await openSqlStorage(engine.unreachableUrl, { migrate: false });
          cleanups.push(() => lazy.close());
          await expect(lazy.clients.get("x")).rejects.toBeInstanceOf(StorageError);
        }
      });

      it("after close(), every call fails with StorageError whose message holds no parameter", async () => {
        const storage = await openSqlStorage((await freshDb()).url);
        await storage.close();
        await storage.close(); // idempotent
        const secretHash = "c2VjcmV0LWhhc2gtdGhhdC1tdXN0LW5vdC1sZWFr";
        for (const call of [
          () => storage.refreshTokens.findByHash(secretHash),
          () => storage.refreshTokens.consume(secretHash, T0, token(`${secretHash}-next`)),
          () => storage.accounts.findByUsername(secretHash),
          () => storage.attempts.increment(secretHash, T0, 1000),
          () => storage.sessions.create({ idHash: secretHash, accountId: "a", csrfHash: secretHash, createdAt: T0, expiresAt: T0 + 1 }),
          () => storage.clients.create({ clientId: "c", authMethod: "client_secret", secrets: [{ id: "s", hash: secretHash, createdAt: T0, expiresAt: null, lastUsedAt: null }], jwks: null, jwksUri: null, name: "c", grantTypes: [], scopes: [], accessTokenTtl: null, refreshTokenTtl: null, refreshTokenAbsoluteTtl: null, createdAt: T0, secretUpdatedAt: T0 }),
        ]) {
          const error = await call().then(
            () => null,
            (e: unknown) => e,
          );
          expect(error).toBeInstanceOf(StorageError);
          expect((error as Error).message).not.toContain(secretHash);
          expect((error as Error).message).toMatch(new RegExp(`^${engine.family} storage failed during `));
        }
      });

      // SQLite has no server connections to lose.
      if (engine.killConnections) it("the pool recovers after the server drops every connection", async () => {
        const db = await freshDb();
        const storage = await open(db);
        // Open several pooled connections, then have the server kill them all.
        await Promise.all(Array.from({ length: 5 }, (_, i) => storage.accounts.create(account(`a${i}`, `u${i}`))));
        expect(await engine.killConnections!(db)).toBeGreaterThan(0);
        await new Promise((r) => setTimeout(r, 100));
        // A call may still meet a dying connection; it must then be a StorageError, and the next succeed.
        let page: Awaited<ReturnType<SqlStorage["accounts"]["list"]>> | undefined;
        for (let attempt = 0; attempt < 3 && !page; attempt++) {
          page = await storage.accounts.list(0, 10).catch((e: unknown) => {
            expect(e).toBeInstanceOf(StorageError);
            return undefined;
          });
        }
        expect(page?.total).toBe(5);
        expect(await storage.accounts.create(account("after", "after"))).toBe(true);
      });
    });
  });
}
