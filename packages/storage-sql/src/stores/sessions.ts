import type { SessionStore } from "@plantgate/core";
import type { Insertable } from "kysely";
import type { StoreContext } from "../context.js";
import { deleteBatch } from "../delete-batch.js";
import { affected, prepared } from "../prepared.js";
import { sessionRecord, sessionRow } from "../rows.js";
import { TABLES, type SessionTable } from "../schema.js";

/** `pg_sessions` (console sign-in sessions) as core's {@link SessionStore}. */
export function sessionStore(ctx: StoreContext): SessionStore {
  const { db, run, storableKey, insertOrFalse } = ctx;
  const q = {
    get: prepared((p: { idHash: string }) => db.selectFrom(TABLES.sessions).selectAll().where("id_hash", "=", p.idHash)),
    insert: prepared((row: Insertable<SessionTable>) => db.insertInto(TABLES.sessions).values(row)),
    delete: prepared((p: { idHash: string }) => db.deleteFrom(TABLES.sessions).where("id_hash", "=", p.idHash)),
    // Forward only, in the one statement: of two racing touches the later end stays.
    touch: prepared((p: { idHash: string; expiresAt: number }) =>
      db.updateTable(TABLES.sessions).set({ expires_at: p.expiresAt }).where("id_hash", "=", p.idHash).where("expires_at", "<", p.expiresAt),
    ),
  };

  return {
    create: (record) =>
      run("sessions.create", async () => {
        const row = sessionRow(ctx, record);
        // InnoDB: INSERTs of one hash racing a DELETE of it (the sweep, a sign-out) deadlock, as
        // assertionJtis.use's do; the victim was rolled back, and run again it wins or finds the row.
        return insertOrFalse(() => ctx.again(() => q.insert(db, row)));
      }),
    get: (idHash) =>
      run("sessions.get", async () => {
        if (!storableKey(idHash)) return null;
        const row = (await q.get(db, { idHash })).rows[0];
        return row ? sessionRecord(row) : null;
      }),
    delete: (idHash) =>
      run("sessions.delete", async () => {
        if (!storableKey(idHash)) return false;
        // InnoDB locks the primary key, then the expiry index; the sweep (deleteExpired) walks them
        // the other way round, and one of the two is picked as a deadlock victim: run it again.
        return affected(await ctx.again(() => q.delete(db, { idHash }))) > 0n;
      }),
    touch: (idHash, expiresAt) =>
      run("sessions.touch", async () => {
        if (!storableKey(idHash)) return false;
        // Like delete: the primary key, then the expiry index, against the sweep's order; a
        // deadlock victim runs again (and then finds the row moved, deleted or still to move).
        return affected(await ctx.again(() => q.touch(db, { idHash, expiresAt }))) > 0n;
      }),
    deleteByAccount: (accountId) =>
      run("sessions.deleteByAccount", async () => {
        if (!storableKey(accountId)) return 0;
        // A deadlock victim beside the sweep (account index, then expiry index; the sweep the other way): again.
        const result = await ctx.again(() => db.deleteFrom(TABLES.sessions).where("account_id", "=", accountId).executeTakeFirst());
        return Number(result.numDeletedRows);
      }),
    deleteExpired: (now, limit) =>
      run("sessions.deleteExpired", () => deleteBatch(ctx, TABLES.sessions, "id_hash", (eb) => eb("expires_at", "<=", now), limit)),
  };
}
