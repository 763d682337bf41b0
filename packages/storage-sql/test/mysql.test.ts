import { describeStorageConformance } from "@plantgate/storage-testing";
import { expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { describeSqlBehaviour } from "./behaviour.js";
import { conformanceTarget, describeIfReachable, MYSQL_URL, mysqlEngine, probeMysql } from "./support.js";

const problem = await probeMysql();

describeIfReachable("mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", problem, () => {
  const engine = mysqlEngine();
  describeStorageConformance("mysql (one migrated database, emptied per test)", conformanceTarget(engine, "tables"));
  describeSqlBehaviour(engine);

  it("mysql: text columns use a binary NO PAD utf8mb4 collation and plant ids are BIGINT", async () => {
    const db = await engine.fresh();
    try {
      const storage = await openSqlStorage(db.url);
      await storage.close();
      const rows = await engine.exec(db, "select table_name as t, column_name as c, data_type as d, collation_name as k from information_schema.columns where table_schema = database() and table_name like 'pg\\_%' and table_name not like 'pg\\_migrations%'");
      const text = rows.filter((r) => r.k !== null);
      expect(text.length).toBeGreaterThan(10);
      for (const r of text) expect([`${r.t}.${r.c}`, r.k]).toEqual([`${r.t}.${r.c}`, expect.stringMatching(/^utf8mb4_(nopad_bin|0900_bin)$/)]);
      expect(rows.find((r) => r.t === "pg_plants" && r.c === "id")?.d).toBe("bigint");
    } finally {
      await db.drop();
    }
  });
});
