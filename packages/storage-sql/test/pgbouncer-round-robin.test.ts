import { expect, it } from "vitest";
import { openSqlStorage, TransactionPoolingError } from "../src/index.js";
import { bouncerFixture, describeWithPgBouncer, detections, warm } from "./pgbouncer-support.js";

// PgBouncer in transaction mode with `server_round_robin = 1` hands out its idle server connections
// in turn (FIFO) instead of the most recently released one (LIFO). A review on 2026-12-03 saw the
// probe miss it there every time (0 of 20) once two server connections were idle: a statement on
// the second connection landed on the other server, and the first connection's next statement on
// its own one again, so each read alone looked like a session of its own. The probe now reads twice
// in a row on each connection, and a connection whose two statements ran in two sessions gives it
// away.

for (const extra of ["server_round_robin = 1\ndefault_pool_size = 2", "server_round_robin = 1"]) {
  describeWithPgBouncer(`PgBouncer in transaction pooling mode with ${extra.replace("\n", ", ")}: refused at open`, () => {
    const { bouncer, dbs } = bouncerFixture("transaction", extra);

    it("the probe finds it on every try, and openSqlStorage refuses every open", { timeout: 60_000 }, async () => {
      const name = await dbs.fresh();
      const url = bouncer().url(name);
      await warm(url);
      expect(await detections(url, 20)).toBe(20);
      const outcomes: string[] = [];
      for (let i = 0; i < 10; i++) {
        outcomes.push(
          await openSqlStorage(url).then(
            async (storage) => {
              await storage.close();
              return "opened";
            },
            (e: unknown) => (e instanceof TransactionPoolingError ? "refused" : `other: ${String(e)}`),
          ),
        );
      }
      expect(outcomes).toEqual(Array(10).fill("refused"));
    });
  });
}
