/**
 * The brute-force throttle under concurrent guesses with its counters in Redis: two app instances
 * (two Redis clients, one key prefix) over one SQLite file, the guesses split between them. The
 * cases are storage-testing's `throttleConcurrencyCases` (storage-sql runs them on each SQL
 * engine); they count how many password checks ran and which locks were reported.
 *
 * The second case failed until 2026-12-02 (locks ["client_budget", "username"], bob 429): the
 * client's budget across usernames was counted before the username's own key, so concurrent
 * guesses at one username each held a budget count while that key refused them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqlStorage } from "@plantgate/storage-sql";
import { throttleConcurrencyCases } from "@plantgate/storage-testing";
import { redisHotStores } from "../src/index.js";
import { connect, describeIfRedis, dropPrefix, freshPrefix, probeRedis } from "./support.js";

describeIfRedis("lock-out under concurrency (SQLite + Redis, two instances)", await probeRedis(), () => {
  throttleConcurrencyCases(async (defer) => {
    const dir = mkdtempSync(join(tmpdir(), "plantgate-lock-"));
    defer(async () => rmSync(dir, { recursive: true, force: true }));
    const prefix = freshPrefix();
    const c1 = await connect();
    const c2 = await connect();
    defer(async () => {
      await dropPrefix(c1, prefix);
      c1.destroy();
      c2.destroy();
    });
    const s1 = await openSqlStorage(join(dir, "db.sqlite"));
    defer(() => s1.close());
    const s2 = await openSqlStorage(join(dir, "db.sqlite"), { migrate: false });
    defer(() => s2.close());
    return [
      { ...s1, ...redisHotStores(c1 as never, { keyPrefix: prefix }) },
      { ...s2, ...redisHotStores(c2 as never, { keyPrefix: prefix }) },
    ];
  });
});
