import { describeStorageConformance } from "@plantgate/storage-testing";
import { expect, it } from "vitest";
import { describeSqlBehaviour } from "./behaviour.js";
import { conformanceTarget, describeIfReachable, POSTGRES_URL, postgresEngine, probePostgres } from "./support.js";

const problem = await probePostgres();

describeIfReachable("postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", problem, () => {
  const engine = postgresEngine();
  describeStorageConformance("postgres (schema per test)", conformanceTarget(engine));
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
