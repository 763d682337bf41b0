import type { RevokedTokenStore } from "@plantgate/core";
import type { StoreContext } from "../context.js";
import { deleteBatch } from "../delete-batch.js";
import { affected, prepared } from "../prepared.js";
import { TABLES } from "../schema.js";

/** `pg_revoked_tokens` (revoked access-token jtis) as core's {@link RevokedTokenStore}. */
export function revokedTokenStore(ctx: StoreContext): RevokedTokenStore {
  const { db, runner, family, run, storableKey, text, insertOrFalse } = ctx;
  const q = {
    has: prepared((p: { jti: string }) => db.selectFrom(TABLES.revokedTokens).select("jti").where("jti", "=", p.jti)),
    // Idempotent and keeps the first expiry: a repeat changes nothing, and the row count says
    // whether this call recorded the jti (1) or found it (0).
    add: prepared((row: { jti: string; expires_at: number }) => db.insertInto(TABLES.revokedTokens).values(row).onConflict((oc) => oc.column("jti").doNothing())),
    // MySQL has no DO NOTHING, and neither of its stand-ins tells a new row from a repeat: a no-op
    // `ON DUPLICATE KEY UPDATE` reports 1 row for both where the connection sets CLIENT_FOUND_ROWS
    // (mysql2 does by default), and INSERT IGNORE swallows unrelated errors too. A plain INSERT
    // whose duplicate key means "false", as `assertionJtis.use`.
    insert: prepared((row: { jti: string; expires_at: number }) => db.insertInto(TABLES.revokedTokens).values(row)),
  };
  // Read on every bearer request; an add (here or by another process) drops it.
  const cached = ctx.cache.space<boolean>([TABLES.revokedTokens], (v) => v, 10_000);

  return {
    add: (jti, expiresAt) =>
      run("revokedTokens.add", async () => {
        const row = { jti: text(jti, "jti"), expires_at: expiresAt };
        // InnoDB deadlocks plain INSERTs of one key waiting on a DELETE of it (the sweep): the
        // victim was rolled back, and run again it records the jti or finds it (see README).
        if (family === "mysql") return insertOrFalse(() => ctx.again(() => q.insert(db, row)));
        return affected(await q.add(runner, row)) > 0n;
      }),
    has: (jti) =>
      run("revokedTokens.has", async () => {
        if (!storableKey(jti)) return false;
        return cached.get(jti, async () => (await q.has(runner, { jti })).rows.length > 0);
      }),
    deleteExpired: (now, limit) =>
      run("revokedTokens.deleteExpired", () => deleteBatch(ctx, TABLES.revokedTokens, "jti", (eb) => eb("expires_at", "<=", now), limit)),
  };
}
