import type { Expression, ExpressionBuilder, Kysely, SqlBool } from "kysely";
import type { StoreContext } from "./context.js";

/** Builds the condition of the rows to delete, over the table's columns. */
export type DeleteCondition = (eb: ExpressionBuilder<any, any>) => Expression<SqlBool>;

/**
 * Deletes the rows of `table` matching `where`, at most `limit` of them when given, in one
 * statement (its own short transaction); returns how many. Housekeeping calls it in a loop, so a
 * backlog of millions is removed in many short steps instead of one long lock.
 *
 * Two callers at once delete each row once and their counts add up:
 * - PostgreSQL: `key in (select key ... limit n for update skip locked)`: the rows another pruner
 *   has picked are skipped, not waited for, and a row deleted meanwhile is not counted twice;
 * - MySQL/MariaDB: `delete ... limit n` (MySQL refuses LIMIT in an IN subquery); InnoDB's row locks
 *   serialise overlapping deletes, and a deadlock victim (rolled back whole) is retried;
 * - SQLite and D1: `key in (select key ... limit n)`; one writer at a time.
 */
export async function deleteBatch(ctx: StoreContext, table: string, key: string, where: DeleteCondition, limit?: number): Promise<number> {
  const db = ctx.db as unknown as Kysely<any>;
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1)) throw new TypeError("deleteExpired: limit must be a positive integer");
  if (limit === undefined) {
    const result = await ctx.again(() => db.deleteFrom(table).where(where).executeTakeFirst());
    return Number(result.numDeletedRows);
  }
  if (ctx.family === "mysql") {
    return ctx.again(async () => Number((await db.deleteFrom(table).where(where).limit(limit).executeTakeFirst()).numDeletedRows));
  }
  const result = await db
    .deleteFrom(table)
    .where(key, "in", (eb: ExpressionBuilder<any, any>) => {
      const picked = eb.selectFrom(table).select(key).where(where).limit(limit);
      return ctx.family === "postgres" ? picked.forUpdate().skipLocked() : picked;
    })
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
