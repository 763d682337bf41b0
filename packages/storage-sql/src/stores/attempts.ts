import type { AttemptRecord, AttemptStore } from "@plantgate/core";
import { sql } from "kysely";
import type { StoreContext } from "../context.js";
import { deleteBatch } from "../delete-batch.js";
import { affected, prepared } from "../prepared.js";
import { copyRecord } from "../read-cache.js";
import { attemptRecord } from "../rows.js";
import { TABLES } from "../schema.js";

/** `pg_attempts` (failure counters of the brute-force throttle) as core's {@link AttemptStore}. */
export function attemptStore(ctx: StoreContext): AttemptStore {
  const { db, runner, family, run, storableKey, text } = ctx;
  const q = {
    get: prepared((p: { key: string }) => db.selectFrom(TABLES.attempts).selectAll().where("attempt_key", "=", p.key)),
    reset: prepared((p: { key: string }) => db.deleteFrom(TABLES.attempts).where("attempt_key", "=", p.key)),
    /**
     * A conditional UPDATE (the row's own lock, or SQLite's single writer, orders it with
     * increments), then the record deleted while it is at 0. No transaction needed: an increment
     * between the two leaves it above 0, and one after the delete opens a new window.
     */
    refund: prepared((p: { key: string; windowStart: number; count: number }) =>
      db
        .updateTable(TABLES.attempts)
        .set((eb) => ({ count: sql<number>`case when ${eb.ref("count")} > ${p.count} then ${eb.ref("count")} - ${p.count} else 0 end` }))
        .where("attempt_key", "=", p.key)
        .where("window_start", "=", p.windowStart)
        .where("count", ">", 0),
    ),
    dropEmpty: prepared((p: { key: string }) => db.deleteFrom(TABLES.attempts).where("attempt_key", "=", p.key).where("count", "<=", 0)),
    /**
     * PostgreSQL and SQLite: one upsert with RETURNING. A window that started at or before
     * `expiredBefore` is over: the failure opens a new one.
     */
    count: prepared((p: { key: string; now: number; expiredBefore: number }) =>
      db
        .insertInto(TABLES.attempts)
        .values({ attempt_key: p.key, count: 1, window_start: p.now })
        .onConflict((oc) =>
          oc.column("attempt_key").doUpdateSet((eb) => {
            const expired = eb(`${TABLES.attempts}.window_start`, "<=", p.expiredBefore);
            return {
              count: eb.case().when(expired).then(sql<number>`1`).else(sql<number>`${eb.ref(`${TABLES.attempts}.count`)} + 1`).end(),
              window_start: eb.case().when(expired).then(p.now).else(sql<number>`${eb.ref(`${TABLES.attempts}.window_start`)}`).end(),
            };
          }),
        )
        .returningAll(),
    ),
    /**
     * MySQL: assigns left to right and later assignments see earlier ones, so `count` (which reads
     * the old window_start) goes first.
     */
    countMysql: prepared((p: { key: string; now: number; expiredBefore: number }) =>
      db
        .insertInto(TABLES.attempts)
        .values({ attempt_key: p.key, count: 1, window_start: p.now })
        .onDuplicateKeyUpdate((eb) => ({
          count: eb.case().when("window_start", "<=", p.expiredBefore).then(sql<number>`1`).else(sql<number>`${eb.ref("count")} + 1`).end(),
          window_start: eb.case().when("window_start", "<=", p.expiredBefore).then(p.now).else(sql<number>`${eb.ref("window_start")}`).end(),
        })),
    ),
  };

  // Read on every authentication (the throttle's check); any counted failure or reset drops it.
  const cached = ctx.cache.space<AttemptRecord | null>([TABLES.attempts], copyRecord, 10_000);

  return {
    increment: (key, now, windowMs) =>
      run("attempts.increment", async () => {
        const attemptKey = text(key, "key");
        // A window that started at or before this instant is over: the failure opens a new one.
        const expiredBefore = now - windowMs;
        const params = { key: attemptKey, now, expiredBefore };
        if (family === "mysql") {
          // ON DUPLICATE KEY UPDATE locks the row until commit, so the read-back in the same
          // transaction sees exactly this call's result. InnoDB may pick a racing first insert of
          // a key as a deadlock victim; its transaction rolled back (nothing counted), so it is
          // safe to count again.
          return ctx.again(() =>
            db.transaction().execute(async (trx) => {
              await q.countMysql(trx, params);
              const row = (await q.get(trx, { key: attemptKey })).rows[0];
              if (row === undefined) throw new Error("pg_attempts lost the row just counted");
              return attemptRecord(row);
            }),
          );
        }
        // One upsert with RETURNING: the row lock (PostgreSQL) or the single writer (SQLite, D1)
        // makes each call see the previous one's count, so none is lost.
        const row = (await q.count(runner, params)).rows[0];
        if (row === undefined) throw new Error("the upsert of pg_attempts returned no row");
        return attemptRecord(row);
      }),
    get: (key) =>
      run("attempts.get", async () => {
        if (!storableKey(key)) return null;
        return cached.get(key, async () => {
          const row = (await q.get(runner, { key })).rows[0];
          return row ? attemptRecord(row) : null;
        });
      }),
    reset: (key) =>
      run("attempts.reset", async () => {
        if (!storableKey(key)) return;
        // A deadlock victim beside the sweep (primary key, then the window index; the sweep the other way): again.
        await ctx.again(() => q.reset(runner, { key }));
      }),
    refund: (key, windowStart, count) =>
      run("attempts.refund", async () => {
        if (!storableKey(key)) return;
        // Each statement commits alone, so one that InnoDB picked as a deadlock victim (beside a
        // racing first insert of the key, as in increment) changed nothing and is run again.
        if (affected(await ctx.again(() => q.refund(runner, { key, windowStart, count }))) > 0n) await ctx.again(() => q.dropEmpty(runner, { key }));
      }),
    deleteExpired: (before, limit) =>
      run("attempts.deleteExpired", () => deleteBatch(ctx, TABLES.attempts, "attempt_key", (eb) => eb("window_start", "<=", before), limit)),
  };
}
