import type { AssertionJtiStore } from "@plantgate/core";
import type { StoreContext } from "../context.js";
import { deleteBatch } from "../delete-batch.js";
import { prepared } from "../prepared.js";
import { TABLES } from "../schema.js";

/** `pg_assertion_jtis` (used client-assertion jtis) as core's {@link AssertionJtiStore}. */
export function assertionJtiStore(ctx: StoreContext): AssertionJtiStore {
  const { db, run, text, insertOrFalse } = ctx;
  const q = {
    insert: prepared((row: { jti_key: string; expires_at: number }) => db.insertInto(TABLES.assertionJtis).values(row)),
  };
  return {
    // One INSERT on the primary key: of concurrent callers exactly one succeeds. A jti used again by
    // several callers at once while the sweep deletes its expired row deadlocks on InnoDB (each
    // INSERT takes a shared lock on the delete-marked record once the DELETE commits, then asks for
    // an exclusive one): the victim's INSERT was rolled back, and run again it wins or finds the
    // winner's row (false).
    use: (key, expiresAt) =>
      run("assertionJtis.use", () => {
        const row = { jti_key: text(key, "key"), expires_at: expiresAt };
        return insertOrFalse(() => ctx.again(() => q.insert(db, row)));
      }),
    deleteExpired: (now, limit) =>
      run("assertionJtis.deleteExpired", () => deleteBatch(ctx, TABLES.assertionJtis, "jti_key", (eb) => eb("expires_at", "<=", now), limit)),
  };
}
