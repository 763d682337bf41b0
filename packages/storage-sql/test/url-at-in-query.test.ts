/**
 * A URL whose userinfo is plain, or absent, but whose query holds an "@" in a parameter's value (a
 * user named in the query, `?user=alice@corp`, as pg reads it; an application_name with an "@")
 * opens: the refusal of an "@" after the host (a password with an unescaped "@" and then "/", "?" or
 * "#") leaves query values alone (its first form, in this session, refused these too).
 */
import { sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { describeIfReachable, POSTGRES_URL, probePostgres } from "./support.js";

const pgProblem = await probePostgres();
const opened: SqlStorage[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

describeIfReachable("an '@' in the query of a URL whose userinfo is clear", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => {
  it("postgres: ?application_name=ops@eu (userinfo given) and ?user=... with no userinfo open", async () => {
    const base = new URL(POSTGRES_URL);
    const withUser = `${POSTGRES_URL}${POSTGRES_URL.includes("?") ? "&" : "?"}application_name=plantgate@eu`;
    const noUserinfo = `postgres://${base.host}${base.pathname}?user=${base.username || "postgres"}&application_name=plantgate@eu`;
    for (const url of [withUser, noUserinfo]) {
      const storage = await openSqlStorage(url, { migrate: false, clientCache: false });
      opened.push(storage);
      const { rows } = await sql<{ name: string }>`select current_setting('application_name') as name`.execute(storage.db);
      expect(rows[0]!.name, url).toBe("plantgate@eu");
    }
  });
});
