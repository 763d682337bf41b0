/**
 * The CLI behind PgBouncer in transaction pooling mode: the store refuses such a URL at open
 * (storage-sql's TransactionPoolingError, see its README, "Poolers"), and the CLI says so, exit 2
 * (configuration: trying again changes nothing), naming the remedy, never the password. In session
 * mode it works. Each describe starts a PgBouncer of its own (storage-sql/test/pgbouncer-support.ts).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { openSqlStorage } from "@plantgate/storage-sql";
import { transactionPoolingMessage } from "../../storage-sql/src/pooler-probe.js";
import { describeWithPgBouncer, directDb, startPgBouncer, type Bouncer } from "../../storage-sql/test/pgbouncer-support.js";
import { POSTGRES_URL } from "../../storage-sql/test/support.js";
import { runCli } from "../src/cli.js";

async function cli(argv: string[], env: Record<string, string>) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...env }, cwd: "/", readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

for (const mode of ["transaction", "session"] as const) {
  describeWithPgBouncer(`plantgate CLI behind PgBouncer in ${mode} mode`, () => {
    let bouncer: Bouncer;
    const dbs = directDb();
    beforeAll(async () => {
      bouncer = await startPgBouncer(mode);
    });
    afterAll(async () => {
      await bouncer?.stop();
      await dbs.end();
    });

    it(mode === "transaction" ? "migrate and client list are refused: exit 2, the reason and the remedy on stderr, nothing migrated" : "migrate and client list work", async () => {
      const name = await dbs.fresh();
      const url = bouncer.url(name).replace("postgres://postgres@", "postgres://postgres:pw-51c2@");
      const shown = url.replace("pw-51c2", "***");
      const migrate = await cli(["migrate"], { PLANTGATE_DATABASE_URL: url });
      const tables = (await dbs.query(name, "select count(*)::int as n from pg_tables where schemaname = 'public'"))[0]!.n;
      // A store migrated directly: `client list` gets past its schema check to the open.
      const direct = new URL(POSTGRES_URL);
      direct.pathname = `/${name}`;
      if (mode === "transaction") await (await openSqlStorage(direct.toString(), { clientCache: false })).close();
      const list = await cli(["client", "list"], { PLANTGATE_DATABASE_URL: url });
      if (mode === "session") {
        expect({ migrate: migrate.code, migrated: tables !== 0, list }).toEqual({ migrate: 0, migrated: true, list: { code: 0, stdout: "[]\n", stderr: "" } });
        return;
      }
      const refusals = ["a second connection ran in the first one's server session", "a connection's statements ran in different server sessions"].map(
        (evidence) => `plantgate: cannot open the store at ${shown}: ${transactionPoolingMessage("openSqlStorage's url", evidence)}\n`,
      );
      expect({ code: migrate.code, stdout: migrate.stdout, known: refusals.includes(migrate.stderr), tables }, migrate.stderr).toEqual({ code: 2, stdout: "", known: true, tables: 0 });
      expect({ code: list.code, stdout: list.stdout, known: refusals.includes(list.stderr) }, list.stderr).toEqual({ code: 2, stdout: "", known: true });
    });
  });
}
