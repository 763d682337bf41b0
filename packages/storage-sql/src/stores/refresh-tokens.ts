import type { RefreshTokenStore } from "@plantgate/core";
import { sql, type ExpressionBuilder, type Insertable, type QueryCreator, type Selectable } from "kysely";
import { d1Batch } from "../batch.js";
import type { StoreContext } from "../context.js";
import { deleteBatch } from "../delete-batch.js";
import { isUniqueViolation } from "../errors.js";
import { affected, prepared } from "../prepared.js";
import { REPLAY_CONSUMED_AT } from "../migrations/steps.js";
import { refreshRecord, refreshRow } from "../rows.js";
import { TABLES, type Database, type RefreshFamilyTable, type RefreshTokenTable } from "../schema.js";

/** The columns of a `pg_refresh_families` row, its primary key. */
const FAMILY_KEY = ["family_id", "account_id", "family_expires_at"] as const;
type FamilyRow = { family_id: string; account_id: string; family_expires_at: number };
const familyRow = (row: Insertable<RefreshTokenTable>): FamilyRow => ({ family_id: row.family_id, account_id: row.account_id, family_expires_at: row.family_expires_at });
/** Whether a consumed token's family row (as RETURNING hands it back) is the replacement's. */
const sameFamily = (old: Selectable<RefreshFamilyTable>, f: FamilyRow): boolean =>
  old.family_id === f.family_id && old.account_id === f.account_id && String(old.family_expires_at) === String(f.family_expires_at);

/**
 * `pg_refresh_tokens` as core's {@link RefreshTokenStore}, with `pg_refresh_families` beside it: each
 * token's (family, account, absolute expiry) has a row there, written with the token, so
 * `revokeByAccount` and the family rule of `deleteExpired` start from that table's indexes and
 * reach the tokens through the family index. A rotation keeps the family, so it writes no family
 * row (RETURNING tells; MySQL, without it, asks the table with an upsert that changes nothing).
 */
export function refreshTokenStore(ctx: StoreContext): RefreshTokenStore {
  const { db, runner, direct, family, d1, run, storableKey } = ctx;
  type GraceUseParams = { tokenHash: string; consumedAfter: number; maxUses: number };
  type ConsumeParams = { tokenHash: string; now: number; replay: string | null };
  const consumeUpdate = (p: ConsumeParams) =>
    db
      .updateTable(TABLES.refreshTokens)
      .set({ consumed_at: p.now, replay: p.replay })
      .where("token_hash", "=", p.tokenHash)
      .where("consumed_at", "is", null)
      .where("revoked_at", "is", null);
  const graceUseUpdate = (p: GraceUseParams) =>
    db
      .updateTable(TABLES.refreshTokens)
      .set({ grace_uses: sql<number>`grace_uses + 1` })
      .where("token_hash", "=", p.tokenHash)
      .where("consumed_at", ">", p.consumedAfter)
      .where("revoked_at", "is", null)
      .where("replay", "is not", null)
      .where("grace_uses", "<", p.maxUses);
  /** A family row, unless that row is there already (PostgreSQL, SQLite). */
  const familyInsert = (qc: QueryCreator<Database>, f: FamilyRow) =>
    qc
      .insertInto(TABLES.refreshFamilies)
      .values(f)
      .onConflict((oc) => oc.columns(FAMILY_KEY).doNothing());
  /** D1 only: an INSERT of `row` that stores it only if the statement before it changed exactly one row. */
  const insertIfChanged = (table: typeof TABLES.refreshTokens | typeof TABLES.refreshFamilies, row: Record<string, unknown>) => {
    const columns = Object.keys(row);
    return db
      .insertInto(table)
      .columns(columns as never)
      .expression(db.selectNoFrom((eb) => columns.map((c) => eb.val(row[c]).as(c))).where(sql<number>`changes()`, "=", 1));
  };
  const q = {
    get: prepared((p: { tokenHash: string }) => db.selectFrom(TABLES.refreshTokens).selectAll().where("token_hash", "=", p.tokenHash)),
    upsert: prepared((row: Insertable<RefreshTokenTable>) => {
      const { token_hash: _key, ...rest } = row;
      // Same hash again replaces the record, as the reference implementation does.
      const insert = db.insertInto(TABLES.refreshTokens).values(row);
      return family === "mysql" ? insert.onDuplicateKeyUpdate(rest) : insert.onConflict((oc) => oc.column("token_hash").doUpdateSet(rest));
    }),
    /** PostgreSQL: `upsert` with the token's family row inserted (if not there) by the same statement. */
    upsertWithFamily: prepared((row: Insertable<RefreshTokenTable>) => {
      const { token_hash: _key, ...rest } = row;
      return db
        .with("family_row", (qc) => familyInsert(qc, familyRow(row)))
        .insertInto(TABLES.refreshTokens)
        .values(row)
        .onConflict((oc) => oc.column("token_hash").doUpdateSet(rest));
    }),
    insert: prepared((row: Insertable<RefreshTokenTable>) => db.insertInto(TABLES.refreshTokens).values(row)),
    /** D1 only: copies the replacement in only if the statement before it changed exactly one row. */
    insertAfterConsume: prepared((row: Insertable<RefreshTokenTable>) => insertIfChanged(TABLES.refreshTokens, row)),
    /** D1 only: the replacement's family row, if the INSERT before it stored the replacement. */
    addFamilyAfterInsert: prepared((f: FamilyRow) => insertIfChanged(TABLES.refreshFamilies, f).onConflict((oc) => oc.columns(FAMILY_KEY as never).doNothing())),
    consume: prepared(consumeUpdate),
    /** The same, handing back the consumed token's family row (no second lookup to compare it with the replacement's). */
    consumeReturning: prepared((p: ConsumeParams) => consumeUpdate(p).returning(FAMILY_KEY)),
    /** The family row of a token, if not there yet (see `RefreshFamilyTable`). */
    addFamily: prepared((f: FamilyRow) =>
      family === "mysql" ? db.insertInto(TABLES.refreshFamilies).values(f).onDuplicateKeyUpdate({ family_id: sql.ref("family_id") }) : familyInsert(db, f),
    ),
    /** The grace use's arbiter: one row lock (or SQLite's single writer) per token serialises the count (with RETURNING where the dialect has it). */
    graceUse: prepared(graceUseUpdate),
    graceUseReturning: prepared((p: GraceUseParams) => graceUseUpdate(p).returningAll()),
  };

  /**
   * Runs a revoking UPDATE again until it revokes nothing. Under PostgreSQL's READ COMMITTED an
   * UPDATE scans the rows of its statement's snapshot: a rotation that has consumed the family's
   * head but not committed holds that row's lock, the UPDATE waits for it and then re-checks that
   * row only, so the replacement the rotation inserted (not in the snapshot) stayed live and kept
   * rotating in a family reported revoked. The next UPDATE's snapshot holds it. Once one revokes
   * nothing, no rotation was under way (it would hold a live row of the snapshot, which that
   * UPDATE would have waited for and revoked) and later ones find the family revoked. A race
   * rarely needs more than two; SQLite, D1 and InnoDB's locking reads need one, plus the check.
   * InnoDB may pick the UPDATE as a deadlock victim against a rotation: it is rolled back whole
   * and run again. Resolves to whether any of them revoked a token (`revokeFamily`'s answer: a
   * concurrent revocation's UPDATE waits for the row locks, then finds those rows revoked and
   * changes none of them; on MySQL matched and changed rows are the same ones, as the UPDATE sets
   * `revoked_at` only where it is NULL).
   */
  const untilNoneLeft = async (update: () => Promise<{ numUpdatedRows: bigint }>): Promise<boolean> => {
    let revoked = false;
    while ((await ctx.again(update)).numUpdatedRows > 0n) revoked = true;
    return revoked;
  };

  /**
   * Deletes the `pg_refresh_families` rows past their expiry that no token of that expiry still
   * points to, at most `limit` (one statement); returns how many.
   */
  const deleteEndedFamilies = async (now: number, limit: number | undefined): Promise<number> => {
    const families = sql.table(TABLES.refreshFamilies);
    const tokens = sql.table(TABLES.refreshTokens);
    const ended = sql`${sql.ref(`${TABLES.refreshFamilies}.family_expires_at`)} <= ${now} and not exists (select 1 from ${tokens} where ${sql.ref(`${TABLES.refreshTokens}.family_id`)} = ${sql.ref(`${TABLES.refreshFamilies}.family_id`)} and ${sql.ref(`${TABLES.refreshTokens}.family_expires_at`)} <= ${now})`;
    if (limit === undefined) return Number(affected(await ctx.again(() => sql`delete from ${families} where ${ended}`.execute(db))));
    // InnoDB: it X-locks family rows and share-locks tokens (NOT EXISTS); a create or consume holds
    // a new family row and waits to insert its token. Either may be the deadlock victim: again.
    if (family === "mysql") return Number(affected(await ctx.again(() => sql`delete from ${families} where ${ended} limit ${sql.lit(limit)}`.execute(db))));
    const key = sql.join(FAMILY_KEY.map((c) => sql.ref(c)));
    return Number(affected(await sql`delete from ${families} where (${key}) in (select ${key} from ${families} where ${ended} limit ${sql.lit(limit)})`.execute(db)));
  };

  return {
    create: (record) =>
      run("refreshTokens.create", async () => {
        const row = refreshRow(ctx, record);
        const fam = familyRow(row);
        // The token and its family row in one transaction and, where the driver allows, one
        // round trip: a token is never stored without its family row.
        if (d1 !== undefined) {
          await d1Batch(d1, [q.addFamily.compile(fam), q.upsert.compile(row)]);
        } else if (direct !== undefined) {
          // better-sqlite3: in the group commit of this event-loop turn, as rotations are.
          await direct.batched(() => {
            direct.execute(q.addFamily.compile(fam));
            direct.execute(q.upsert.compile(row));
          });
        } else if (family === "postgres") {
          // One statement: the family row's INSERT as a data-modifying WITH.
          await q.upsertWithFamily(runner, row);
        } else {
          // A deadlock victim against the pruning of ended families (see deleteEndedFamilies) was
          // rolled back whole: run it again.
          await ctx.again(() =>
            db.transaction().execute(async (trx) => {
              await q.addFamily(trx, fam);
              await q.upsert(trx, row);
            }),
          );
        }
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
        const fam = familyRow(row);
        if (replay !== null) ctx.text(replay, "replay");
        if (!storableKey(tokenHash)) return false;
        try {
          if (d1 !== undefined) {
            // One batch = one implicit transaction, run serially by D1. The conditional UPDATE
            // is the arbiter; the INSERT copies the replacement in only if that UPDATE changed
            // exactly one row (changes() still reports it: the INSERT has not completed yet).
            // A duplicate replacement hash fails the batch, rolling the UPDATE back too. The
            // family row follows the same way (changes() then reports the INSERT before it).
            const [, inserted] = await d1Batch(d1, [q.consume.compile({ tokenHash, now, replay }), q.insertAfterConsume.compile(row), q.addFamilyAfterInsert.compile(fam)]);
            return inserted === 1;
          }
          if (direct !== undefined) {
            // better-sqlite3: the same statements, synchronously, in the group commit of this
            // event-loop turn (a duplicate replacement undoes the job). The single writer makes
            // the conditional UPDATE the arbiter as before.
            return await direct.batched(() => {
              const [old] = direct.execute(q.consumeReturning.compile({ tokenHash, now, replay })).rows;
              if (old === undefined) return false;
              if (!sameFamily(old, fam)) direct.execute(q.addFamily.compile(fam));
              direct.execute(q.insert.compile(row));
              return true;
            });
          }
          // A deadlock victim (InnoDB, against a revocation of the family) was rolled back whole: run it again.
          return await ctx.again(() => db.transaction().execute(async (trx) => {
            // The conditional UPDATE is the arbiter: the row lock (PostgreSQL, InnoDB) or the
            // single connection (SQLite) lets exactly one caller see 1 row updated.
            if (family === "mysql") {
              if (affected(await q.consume(trx, { tokenHash, now, replay })) !== 1n) return false;
              await q.addFamily(trx, fam);
            } else {
              const [old] = (await q.consumeReturning(trx, { tokenHash, now, replay })).rows;
              if (old === undefined) return false;
              if (!sameFamily(old, fam)) await q.addFamily(trx, fam);
            }
            await q.insert(trx, row);
            return true;
          }));
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
        // its lock, so no other grace use or revocation can slip in between. A deadlock victim or
        // (see StoreContext.again) a lock-wait timeout is rolled back whole and run again: nothing
        // of it counted.
        return ctx.again(() =>
          db.transaction().execute(async (trx) => {
            if (affected(await q.graceUse(trx, p)) !== 1n) return null;
            const row = (await q.get(trx, { tokenHash })).rows[0];
            return row ? refreshRecord(row) : null;
          }),
        );
      }),
    revokeFamily: (familyId, now) =>
      run("refreshTokens.revokeFamily", async () => {
        if (!storableKey(familyId)) return false;
        return untilNoneLeft(() => db.updateTable(TABLES.refreshTokens).set({ revoked_at: now }).where("family_id", "=", familyId).where("revoked_at", "is", null).executeTakeFirst());
      }),
    revokeByAccount: (accountId, now) =>
      run("refreshTokens.revokeByAccount", async () => {
        if (!storableKey(accountId)) return;
        // The account's families, then their tokens by the family index (the account is checked
        // on each token too: the family rows only narrow the search).
        await untilNoneLeft(() =>
          db
            .updateTable(TABLES.refreshTokens)
            .set({ revoked_at: now })
            .where("family_id", "in", db.selectFrom(TABLES.refreshFamilies).select("family_id").where("account_id", "=", accountId))
            .where("account_id", "=", accountId)
            .where("revoked_at", "is", null)
            .executeTakeFirst(),
        );
      }),
    deleteExpired: (now, limit) =>
      run("refreshTokens.deleteExpired", async () => {
        // Two rules, each an index range: the whole family past its absolute expiry (its families
        // from pg_refresh_families' expiry index, then their tokens by the family index); an
        // unconsumed token past its sliding expiry (migration 0005). A consumed token stays until
        // its family ends: presenting it again detects reuse.
        const familyEnded = (eb: ExpressionBuilder<Database, typeof TABLES.refreshTokens>) =>
          eb.and([
            eb("family_expires_at", "<=", now),
            eb("family_id", "in", eb.selectFrom(TABLES.refreshFamilies).select("family_id").where("family_expires_at", "<=", now)),
          ]);
        const slidingEnded = (eb: ExpressionBuilder<Database, typeof TABLES.refreshTokens>) => eb.and([eb("consumed_at", "is", null), eb("expires_at", "<=", now)]);
        if (limit !== undefined && family === "sqlite") {
          // SQLite and D1: one statement, so a batch is one D1 query (a Worker's cron prune counts
          // them against Cloudflare's limit per invocation; until 2026-11-30 a batch whose family
          // rule found fewer than `limit` was two). The family rule's tokens first, then, in what
          // the limit leaves, the sliding rule's that the family rule does not take (a token may
          // meet both: picked twice, the batch would delete fewer than `limit` while tokens are
          // left, and prune would take it for the last). Each arm keeps its index range (EXPLAIN
          // QUERY PLAN: the family index from the ended families' list; the unconsumed-expiry
          // index, the exclusion a primary-key probe of pg_refresh_families only for a token whose
          // family has ended), and UNION ALL runs the second arm only while the limit is not reached.
          if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError("deleteExpired: limit must be a positive integer");
          const result = await db
            .deleteFrom(TABLES.refreshTokens)
            .where("token_hash", "in", (eb) =>
              eb
                .selectFrom(TABLES.refreshTokens)
                .select("token_hash")
                .where(familyEnded)
                .unionAll(
                  eb
                    .selectFrom(`${TABLES.refreshTokens} as t`)
                    .select("t.token_hash")
                    .where("t.consumed_at", "is", null)
                    .where("t.expires_at", "<=", now)
                    .where((e) =>
                      e.not(
                        e.and([
                          e("t.family_expires_at", "<=", now),
                          e.exists(
                            e
                              .selectFrom(TABLES.refreshFamilies)
                              .select(sql.lit(1).as("one"))
                              .whereRef(`${TABLES.refreshFamilies}.family_id`, "=", "t.family_id")
                              .where(`${TABLES.refreshFamilies}.family_expires_at`, "<=", now),
                          ),
                        ]),
                      ),
                    ),
                )
                .limit(limit),
            )
            .executeTakeFirst();
          return Number(result.numDeletedRows);
        }
        // PostgreSQL, MySQL (no statement budget there; FOR UPDATE SKIP LOCKED takes no UNION, and
        // MySQL's DELETE ... LIMIT no subquery to pick from): one statement per rule.
        const familyGone = await deleteBatch(ctx, TABLES.refreshTokens, "token_hash", familyEnded, limit);
        if (limit !== undefined && familyGone >= limit) return familyGone;
        // Without a limit, then the family rows whose tokens are all gone (not counted: the count is
        // of tokens). With one, those are deleteEndedFamilies' (prune calls it in batches of its
        // own until one comes back short, once the tokens are done), so each call is a bounded
        // number of statements. (Until 2026-11-29 one statement of them per call left every family
        // row past the first `limit` behind, and the table grew without end where more families
        // ended per pruning interval; the loop that fixed it here made a call as long as the backlog.)
        if (limit === undefined) await deleteEndedFamilies(now, undefined);
        const unconsumedGone = await deleteBatch(ctx, TABLES.refreshTokens, "token_hash", slidingEnded, limit === undefined ? undefined : limit - familyGone);
        return familyGone + unconsumedGone;
      }),
    deleteEndedFamilies: (now, limit) => {
      // Refused before the store is touched: a caller's mistake, not a storage failure.
      if (!Number.isSafeInteger(limit) || limit < 1) return Promise.reject(new TypeError("deleteEndedFamilies: limit must be a positive integer"));
      return run("refreshTokens.deleteEndedFamilies", () => deleteEndedFamilies(now, limit));
    },
    dropReplays: (consumedBefore, limit) => {
      if (!Number.isSafeInteger(limit) || limit < 1) return Promise.reject(new TypeError("dropReplays: limit must be a positive integer"));
      return run("refreshTokens.dropReplays", async () => {
        // The oldest first, down the index of only the rows that hold a replay (migration 15): a
        // batch reads the entries it clears, and a cleared row leaves the index, so a backlog costs
        // its size and an idle run one index probe.
        if (family === "mysql") {
          // No partial index on MySQL: its virtual column is null once the replay is, and a range
          // `<= ?` over it skips the nulls. MySQL's UPDATE takes ORDER BY and LIMIT, and no
          // subquery on the table it changes.
          return ctx.again(async () => {
            const result = await db
              .updateTable(TABLES.refreshTokens)
              .set({ replay: null })
              .where(sql.ref(REPLAY_CONSUMED_AT), "<=", consumedBefore)
              // The primary key breaks ties: the same rows on a replica under statement-based binlog.
              .orderBy(sql.ref(REPLAY_CONSUMED_AT))
              .orderBy("token_hash")
              .limit(limit)
              .executeTakeFirst();
            return Number(result.numUpdatedRows);
          });
        }
        const stale = (eb: ExpressionBuilder<Database, typeof TABLES.refreshTokens>) => eb.and([eb("replay", "is not", null), eb("consumed_at", "<=", consumedBefore)]);
        const result = await db
          .updateTable(TABLES.refreshTokens)
          .set({ replay: null })
          .where("token_hash", "in", (eb) => {
            const picked = eb.selectFrom(TABLES.refreshTokens).select("token_hash").where(stale).orderBy("consumed_at").limit(limit);
            // Rows another pruner picked are skipped, not waited for (and not counted twice).
            return family === "postgres" ? picked.forUpdate().skipLocked() : picked;
          })
          .where(stale)
          .executeTakeFirst();
        return Number(result.numUpdatedRows);
      });
    },
  };
}
