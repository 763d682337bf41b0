import type { RefreshTokenStore } from "@plantgate/core";
import { sql, type Insertable } from "kysely";
import { d1Batch } from "../batch.js";
import type { StoreContext } from "../context.js";
import { deleteBatch } from "../delete-batch.js";
import { isUniqueViolation } from "../errors.js";
import { affected, prepared } from "../prepared.js";
import { refreshRecord, refreshRow } from "../rows.js";
import { TABLES, type RefreshTokenTable } from "../schema.js";

/** `pg_refresh_tokens` as core's {@link RefreshTokenStore}. */
export function refreshTokenStore(ctx: StoreContext): RefreshTokenStore {
  const { db, runner, direct, family, d1, run, storableKey } = ctx;
  type GraceUseParams = { tokenHash: string; consumedAfter: number; maxUses: number };
  const graceUseUpdate = (p: GraceUseParams) =>
    db
      .updateTable(TABLES.refreshTokens)
      .set({ grace_uses: sql<number>`grace_uses + 1` })
      .where("token_hash", "=", p.tokenHash)
      .where("consumed_at", ">", p.consumedAfter)
      .where("revoked_at", "is", null)
      .where("replay", "is not", null)
      .where("grace_uses", "<", p.maxUses);
  const q = {
    get: prepared((p: { tokenHash: string }) => db.selectFrom(TABLES.refreshTokens).selectAll().where("token_hash", "=", p.tokenHash)),
    upsert: prepared((row: Insertable<RefreshTokenTable>) => {
      const { token_hash: _key, ...rest } = row;
      // Same hash again replaces the record, as the reference implementation does.
      const insert = db.insertInto(TABLES.refreshTokens).values(row);
      return family === "mysql" ? insert.onDuplicateKeyUpdate(rest) : insert.onConflict((oc) => oc.column("token_hash").doUpdateSet(rest));
    }),
    insert: prepared((row: Insertable<RefreshTokenTable>) => db.insertInto(TABLES.refreshTokens).values(row)),
    /** D1 only: copies the replacement in only if the statement before it changed exactly one row. */
    insertAfterConsume: prepared((row: Insertable<RefreshTokenTable>) => {
      const columns = Object.keys(row) as Array<keyof typeof row & string>;
      return db
        .insertInto(TABLES.refreshTokens)
        .columns(columns)
        .expression(db.selectNoFrom((eb) => columns.map((c) => eb.val(row[c]).as(c))).where(sql<number>`changes()`, "=", 1));
    }),
    consume: prepared((p: { tokenHash: string; now: number; replay: string | null }) =>
      db
        .updateTable(TABLES.refreshTokens)
        .set({ consumed_at: p.now, replay: p.replay })
        .where("token_hash", "=", p.tokenHash)
        .where("consumed_at", "is", null)
        .where("revoked_at", "is", null),
    ),
    /** The grace use's arbiter: one row lock (or SQLite's single writer) per token serialises the count (with RETURNING where the dialect has it). */
    graceUse: prepared(graceUseUpdate),
    graceUseReturning: prepared((p: GraceUseParams) => graceUseUpdate(p).returningAll()),
  };

  return {
    create: (record) =>
      run("refreshTokens.create", async () => {
        await q.upsert(runner, refreshRow(ctx, record));
      }),
    findByHash: (tokenHash) =>
      run("refreshTokens.findByHash", async () => {
        if (!storableKey(tokenHash)) return null;
        const row = (await q.get(runner, { tokenHash })).rows[0];
        return row ? refreshRecord(row) : null;
      }),
    consume: (tokenHash, now, replacement, replay = null) =>
      run("refreshTokens.consume", async () => {
        const row = refreshRow(ctx, replacement);
        if (replay !== null) ctx.text(replay, "replay");
        if (!storableKey(tokenHash)) return false;
        try {
          if (d1 !== undefined) {
            // One batch = one implicit transaction, run serially by D1. The conditional UPDATE
            // is the arbiter; the INSERT copies the replacement in only if that UPDATE changed
            // exactly one row (changes() still reports it: the INSERT has not completed yet).
            // A duplicate replacement hash fails the batch, rolling the UPDATE back too.
            const [, inserted] = await d1Batch(d1, [q.consume.compile({ tokenHash, now, replay }), q.insertAfterConsume.compile(row)]);
            return inserted === 1;
          }
          if (direct !== undefined) {
            // better-sqlite3: the same two statements, synchronously, in one SAVEPOINT of the
            // group commit of this event-loop turn (a duplicate replacement undoes both). The
            // single writer makes the conditional UPDATE the arbiter as before.
            return await direct.batched(() => {
              if (affected(direct.execute(q.consume.compile({ tokenHash, now, replay }))) !== 1n) return false;
              direct.execute(q.insert.compile(row));
              return true;
            });
          }
          return await db.transaction().execute(async (trx) => {
            // The conditional UPDATE is the arbiter: the row lock (PostgreSQL, InnoDB) or the
            // single connection (SQLite) lets exactly one caller see 1 row updated.
            if (affected(await q.consume(trx, { tokenHash, now, replay })) !== 1n) return false;
            await q.insert(trx, row);
            return true;
          });
        } catch (e) {
          // The replacement's hash already exists: the transaction rolled back, nothing changed.
          if (isUniqueViolation(e)) return false;
          throw e;
        }
      }),
    graceUse: (tokenHash, consumedAfter, maxUses) =>
      run("refreshTokens.graceUse", async () => {
        if (!storableKey(tokenHash)) return null;
        const p = { tokenHash, consumedAfter, maxUses };
        if (family !== "mysql") {
          // One statement: the conditional UPDATE counts and RETURNING hands back that very row.
          const row = (await q.graceUseReturning(runner, p)).rows[0];
          return row ? refreshRecord(row) : null;
        }
        // MySQL has no UPDATE ... RETURNING: read the row back inside the transaction that holds
        // its lock, so no other grace use or revocation can slip in between.
        return db.transaction().execute(async (trx) => {
          if (affected(await q.graceUse(trx, p)) !== 1n) return null;
          const row = (await q.get(trx, { tokenHash })).rows[0];
          return row ? refreshRecord(row) : null;
        });
      }),
    revokeFamily: (familyId, now) =>
      run("refreshTokens.revokeFamily", async () => {
        if (!storableKey(familyId)) return;
        await db.updateTable(TABLES.refreshTokens).set({ revoked_at: now }).where("family_id", "=", familyId).where("revoked_at", "is", null).execute();
      }),
    revokeByAccount: (accountId, now) =>
      run("refreshTokens.revokeByAccount", async () => {
        if (!storableKey(accountId)) return;
        await db.updateTable(TABLES.refreshTokens).set({ revoked_at: now }).where("account_id", "=", accountId).where("revoked_at", "is", null).execute();
      }),
    deleteExpired: (now, limit) =>
      run("refreshTokens.deleteExpired", async () => {
        // Two rules, one statement each so each is an index range (see migration 0003): the
        // whole family past its absolute expiry; an unconsumed token past its sliding expiry. A
        // consumed token stays until its family ends: presenting it again detects reuse.
        const familyGone = await deleteBatch(ctx, TABLES.refreshTokens, "token_hash", (eb) => eb("family_expires_at", "<=", now), limit);
        if (limit !== undefined && familyGone >= limit) return familyGone;
        const unconsumedGone = await deleteBatch(
          ctx,
          TABLES.refreshTokens,
          "token_hash",
          (eb) => eb.and([eb("consumed_at", "is", null), eb("expires_at", "<=", now)]),
          limit === undefined ? undefined : limit - familyGone,
        );
        return familyGone + unconsumedGone;
      }),
  };
}
