import type { RevokedTokenStore } from "@plantgate/core";
import type { StoreContext } from "../context.js";
import { deleteBatch } from "../delete-batch.js";
import { prepared } from "../prepared.js";
import { TABLES } from "../schema.js";

/** `pg_revoked_tokens` (revoked access-token jtis) as core's {@link RevokedTokenStore}. */
export function revokedTokenStore(ctx: StoreContext): RevokedTokenStore {
  const { db, runner, family, run, storableKey, text } = ctx;
  const q = {
    has: prepared((p: { jti: string }) => db.selectFrom(TABLES.revokedTokens).select("jti").where("jti", "=", p.jti)),
    add: prepared((row: { jti: string; expires_at: number }) => {
      // Idempotent and keeps the first expiry: a repeat changes nothing (a no-op update on
      // MySQL, where INSERT IGNORE would also swallow unrelated errors).
      const insert = db.insertInto(TABLES.revokedTokens).values(row);
      return family === "mysql" ? insert.onDuplicateKeyUpdate((eb) => ({ jti: eb.ref("jti") })) : insert.onConflict((oc) => oc.column("jti").doNothing());
    }),
  };
  // Read on every bearer request; an add (here or by another process) drops it.
  const cached = ctx.cache.space<boolean>([TABLES.revokedTokens], (v) => v, 10_000);

  return {
    add: (jti, expiresAt) =>
      run("revokedTokens.add", async () => {
        await q.add(runner, { jti: text(jti, "jti"), expires_at: expiresAt });
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
