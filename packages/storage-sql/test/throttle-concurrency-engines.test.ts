/**
 * The brute-force throttle under concurrent guesses on every SQL engine (SQLite, PostgreSQL,
 * MariaDB): two app instances over two storages (two pools) on one database, the guesses split
 * between them. The cases are storage-testing's `throttleConcurrencyCases` (storage-redis runs
 * them on SQLite + Redis); they count how many password checks ran and which locks were reported.
 *
 * The second case failed on PostgreSQL and MariaDB until 2026-12-02 (locks
 * ["client_budget", "username"], bob 429): the client's budget across usernames was counted before
 * the username's own key, so concurrent guesses at one username each held a budget count while
 * that key refused them, and the budget stayed past its limit (see core's
 * brute-force-budget-races.test.ts).
 */
import { throttleConcurrencyCases } from "@plantgate/storage-testing";
import { describe } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { describeIfReachable, MYSQL_URL, mysqlEngine, POSTGRES_URL, postgresEngine, probeMysql, probePostgres, sqliteEngine, type Engine } from "./support.js";

function suite(engine: Engine): void {
  throttleConcurrencyCases(async (defer) => {
    const fresh = await engine.fresh();
    defer(() => fresh.drop());
    const s1 = await openSqlStorage(fresh.url);
    defer(() => s1.close());
    const s2 = await openSqlStorage(fresh.url, { migrate: false });
    defer(() => s2.close());
    return [s1, s2];
  });
}

describe("lock-out under concurrency (sqlite)", () => suite(sqliteEngine()));
describeIfReachable("lock-out under concurrency (postgres)", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", await probePostgres(), () => suite(postgresEngine()));
describeIfReachable("lock-out under concurrency (mariadb)", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", await probeMysql(), () => suite(mysqlEngine()));
