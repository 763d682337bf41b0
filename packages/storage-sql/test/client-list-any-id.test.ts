/**
 * `app.admin.listClientsPage` (what `plantgate client list` walks) lists every client exactly once
 * whatever its id holds, on the real engines: ids the admin API never makes (it refuses U+0000 and
 * the empty id) written straight into the table, as an operator can with SQL. SQLite and
 * MariaDB hold U+0000 in an id; PostgreSQL text cannot (its store refuses such an id), but holds the
 * empty one. Until 2026-11-30 core refused the cursor it had handed out after such an id
 * ("after must be the next cursor of a previous page"), and the list stopped there.
 */
import { createPlantgate, type ClientRecord } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { describeIfReachable, MYSQL_URL, mysqlEngine, POSTGRES_URL, postgresEngine, probeMysql, probePostgres, sqliteEngine, type Engine } from "./support.js";

const record = (clientId: string): ClientRecord => ({
  clientId,
  authMethod: "client_secret",
  secrets: [],
  jwks: null,
  jwksUri: null,
  name: "Written by hand",
  grantTypes: ["client_credentials"],
  scopes: [],
  accessTokenTtl: null,
  refreshTokenTtl: null,
  refreshTokenAbsoluteTtl: null,
  createdAt: 1_700_000_000_000,
  secretUpdatedAt: 1_700_000_000_000,
});

/** Each id once, in code-unit order (the order of `list()`); the odd ones end pages at every page size. */
const WITH_NUL = ["", "\u0000", "a", "a\u0000", "a\u0000b", "a\u0001", "b"];
const WITHOUT_NUL = ["", " ", "a", "a\u0001", "b"];

function walks(engine: () => Engine, ids: string[]) {
  it(`every client once, in list() order, at page sizes 1 to ${ids.length}: ${JSON.stringify(ids)}`, async () => {
    const e = engine();
    const db = await e.fresh();
    const storage = await openSqlStorage(db.url, { clientCache: false });
    try {
      // Not through the admin API, which makes no such id: the row as an operator's SQL writes it.
      for (const id of [...ids].reverse()) expect(await storage.clients.create(record(id)), JSON.stringify(id)).toBe(true);
      expect((await storage.clients.list()).map((c) => c.clientId)).toEqual(ids);
      const app = createPlantgate({ storage, passwordHashIterations: 1000 });
      for (let limit = 1; limit <= ids.length; limit++) {
        const seen: string[] = [];
        const cursors: (string | null)[] = [];
        for (let after: string | null = null; ; ) {
          const page = await app.admin.listClientsPage({ after, limit });
          seen.push(...page.clients.map((c) => c.clientId));
          cursors.push(page.next);
          if ((after = page.next) === null || cursors.length > ids.length + 1) break;
        }
        expect(seen, `limit ${limit}`).toEqual(ids);
        // The cursor of a page is its last client's id, the empty one too.
        expect(cursors, `limit ${limit}`).toEqual([...ids.filter((_, i) => (i + 1) % limit === 0 && i + 1 < ids.length), null]);
      }
    } finally {
      await storage.close();
      await db.drop();
    }
  });
}

describe("sqlite", () => {
  const engine = sqliteEngine();
  walks(() => engine, WITH_NUL);
});

const mysqlProblem = await probeMysql();
describeIfReachable("mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", mysqlProblem, () => {
  const engine = mysqlEngine();
  walks(() => engine, WITH_NUL);
});

const postgresProblem = await probePostgres();
describeIfReachable("postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", postgresProblem, () => {
  const engine = postgresEngine();
  walks(() => engine, WITHOUT_NUL);
});
