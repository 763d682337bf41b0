import { describeStorageConformance } from "@plantgate/storage-testing";
import { expect, it } from "vitest";
import { describeSqlBehaviour } from "./behaviour.js";
import { conformanceTarget, describeIfReachable, POSTGRES_URL, postgresEngine, probePostgres } from "./support.js";

const problem = await probePostgres();

describeIfReachable("postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", problem, () => {
  const engine = postgresEngine();
  describeStorageConformance("postgres (one migrated schema, emptied per test)", conformanceTarget(engine, "tables"));
  describeSqlBehaviour(engine);

  it("postgres: key columns use the C collation and plant text is bytea", async () => {
    const db = await engine.fresh();
    try {
      const { openSqlStorage } = await import("../src/index.js");
      const storage = await openSqlStorage(db.url);
      await storage.close();
      const rows = await engine.exec(db, "select table_name, column_name, data_type, collation_name from information_schema.columns where table_schema = current_schema() and table_name like 'pg\\_%' and column_name in ('username', 'id', 'name', 'token_hash', 'attempt_key', 'jti', 'id_hash')");
      const info = Object.fromEntries(rows.map((r) => [`${r.table_name}.${r.column_name}`, [r.data_type, r.collation_name]]));
      expect(info["pg_accounts.username"]).toEqual(["text", "C"]);
      expect(info["pg_accounts.id"]).toEqual(["text", "C"]);
      expect(info["pg_refresh_tokens.token_hash"]).toEqual(["text", "C"]);
      expect(info["pg_attempts.attempt_key"]).toEqual(["text", "C"]);
      expect(info["pg_revoked_tokens.jti"]).toEqual(["text", "C"]);
      expect(info["pg_sessions.id_hash"]).toEqual(["text", "C"]);
      expect(info["pg_plants.id"]).toEqual(["bigint", null]);
      expect(info["pg_plants.name"]).toEqual(["bytea", null]);
    } finally {
      await db.drop();
    }
  });
});

describeIfReachable("postgres migrate beside other schemas", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", problem, () => {
  const engine = postgresEngine();

  // Another application (or another plantgate) in the same database dropping its schema while
  // this one starts: migrate() looks at its own schema only, so that is none of its business.
  // Kysely's introspection, which it used to ask whether its tables existed, read every table of
  // every schema and resolved each schema's name while doing so (has_schema_privilege,
  // pg_get_serial_sequence): a schema dropped in between failed the start with 3F000.
  it("a schema dropped elsewhere in the database while migrate() runs does not fail it", { timeout: 60_000 }, async () => {
    const { openSqlStorage } = await import("../src/index.js");
    const pg = (await import("pg")).default;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    let churning = true;
    let dropped = 0;
    const churn = (async () => {
      while (churning) {
        const name = `plantgate_churn_${Math.random().toString(16).slice(2, 12)}`;
        await admin.query(`create schema "${name}"; create table "${name}".t (id serial primary key, a text, b text, c text)`);
        await admin.query(`drop schema "${name}" cascade`);
        dropped++;
      }
    })();
    const failures: string[] = [];
    try {
      for (let i = 0; i < 12; i++) {
        const db = await engine.fresh();
        try {
          const storage = await openSqlStorage(db.url);
          await storage.close();
        } catch (error) {
          failures.push(String((error as { cause?: unknown }).cause ?? error));
        } finally {
          await db.drop();
        }
      }
    } finally {
      churning = false;
      await churn;
      await admin.end();
    }
    expect(dropped).toBeGreaterThan(12);
    expect(failures).toEqual([]);
  });
});
