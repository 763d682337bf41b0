import pg from "pg";
import { expect, it } from "vitest";
import { openSqlStorage, TransactionPoolingError } from "../src/index.js";
import { bouncerFixture, describeWithPgBouncer, warm } from "./pgbouncer-support.js";

// A refused open must leave nothing behind on the pooler's server connections, which other
// applications on the same PgBouncer are handed next. A review on 2026-12-03 saw the probe run on
// the storage's own pool, whose connect-time SETs (statement_timeout = 29s,
// idle_in_transaction_session_timeout = 15s, ...) and the probe's own session setting stayed on
// pooled server connections after the refusal: another client's long query would be cancelled
// after 29 s. The probe now runs on bare connections and sets nothing.

for (const extra of ["", "server_round_robin = 1\ndefault_pool_size = 2"]) {
  describeWithPgBouncer(`PgBouncer in transaction pooling mode${extra === "" ? "" : ` with ${extra.replace("\n", ", ")}`}: a refused open leaves no setting behind`, () => {
    const { bouncer, dbs } = bouncerFixture("transaction", extra);

    it("after ten refused opens, another client of the pooler sees the server's defaults on every server connection", { timeout: 60_000 }, async () => {
      const url = bouncer().url(await dbs.fresh());
      const read = "select current_setting('plantgate.pooler_probe', true) as probe, current_setting('statement_timeout') as statement_timeout, current_setting('lock_timeout') as lock_timeout, current_setting('idle_in_transaction_session_timeout') as idle, current_setting('default_transaction_isolation') as isolation";
      const defaults = { probe: null, statement_timeout: "0", lock_timeout: "0", idle: "0", isolation: "read committed" };
      const seen = new Set<string>();
      for (let i = 0; i < 10; i++) {
        await warm(url);
        const outcome = await openSqlStorage(url).then(
          async (s) => {
            await s.close();
            return "opened";
          },
          (e: unknown) => (e instanceof TransactionPoolingError ? "refused" : `other: ${String(e)}`),
        );
        expect(outcome).toBe("refused");
        // Another application on the same PgBouncer, reading on each server connection in turn.
        const other = new pg.Pool({ connectionString: url, max: 2 });
        try {
          for (let j = 0; j < 6; j++) seen.add(JSON.stringify((await other.query(read)).rows[0]));
        } finally {
          await other.end();
        }
      }
      // The probe's connections begin with a SET of a plantgate-only placeholder (see open.ts: a
      // proxy that pins a client on its first SET); through a transaction pooler it may stay, empty,
      // on a server connection, which changes nothing for anyone else. Nothing else may.
      const rows = [...seen].map((row) => JSON.parse(row) as Record<string, unknown>);
      expect(rows.filter((row) => row.probe !== "" && row.probe !== null)).toEqual([]);
      expect([...new Set(rows.map((row) => JSON.stringify({ ...row, probe: null })))].map((row) => JSON.parse(row) as unknown)).toEqual([defaults]);
    });
  });
}
