import type { AccountRecord, AccountStore } from "@plantgate/core";
import { sql, type CompiledQuery, type Insertable, type Kysely } from "kysely";
import { chunks, d1Batch } from "../batch.js";
import type { StoreContext } from "../context.js";
import { isUniqueViolation } from "../errors.js";
import { prepared } from "../prepared.js";
import { copyRecord } from "../read-cache.js";
import { accountRecord, accountRow } from "../rows.js";
import { TABLES, type AccountTable, type Database } from "../schema.js";
import { toInt } from "../values.js";

/** The row of `pg_counters` that counts accounts. */
const ACCOUNTS = "accounts";

/**
 * The place of the row `fromLast` rows before the last of an insert: the accounts counter, which
 * the same transaction has just advanced by the size of the insert, minus `fromLast`. A literal,
 * not a parameter, so rows bind no more parameters than before (D1 allows 100 per statement).
 */
const place = (fromLast: number) =>
  sql<number>`(select ${sql.ref("value")} from ${sql.table(TABLES.counters)} where ${sql.ref("name")} = ${sql.lit(ACCOUNTS)}) - ${sql.lit(fromLast)}`;

/** The accounts counter as a scalar subquery (the exact total). */
const totalSql = sql<number | bigint | string>`(select ${sql.ref("value")} from ${sql.table(TABLES.counters)} where ${sql.ref("name")} = ${sql.lit(ACCOUNTS)})`;

/** Thrown inside `append`'s transaction to roll it back when the check finds a conflict. */
class ConflictFound extends Error {
  constructor(readonly index: number) {
    super("conflict");
  }
}

/**
 * `pg_accounts` as core's {@link AccountStore}. Every insert advances the `accounts` row of
 * `pg_counters` and gives its rows the next places in the same transaction (the counter's row
 * lock, or SQLite's single writer, orders concurrent inserts; a failed insert rolls the counter
 * back), so places stay unique and gapless and a page is the index range `position > offset`.
 */
export function accountStore(ctx: StoreContext): AccountStore {
  const { db, runner, d1, direct, maxParams, run, storableKey, insertOrFalse, updated } = ctx;
  const q = {
    get: prepared((p: { id: string }) => db.selectFrom(TABLES.accounts).selectAll().where("id", "=", p.id)),
    byUsername: prepared((p: { username: string }) => db.selectFrom(TABLES.accounts).selectAll().where("username", "=", p.username)),
    total: prepared((_: Record<string, never>) => db.selectFrom(TABLES.counters).select("value").where("name", "=", sql.lit(ACCOUNTS))),
    // The total rides along with the page, so a non-empty page costs one round trip.
    page: prepared((p: { after: number; limit: number }) =>
      db.selectFrom(TABLES.accounts).selectAll().select(totalSql.as("total")).where("position", ">", p.after).orderBy("position").limit(p.limit),
    ),
  };

  // Read on refresh grants, sign-ins and every page of GetAccountList; any write to pg_accounts or
  // pg_counters (here, by the CLI, by another process) drops them.
  const byId = ctx.cache.space<AccountRecord | null>([TABLES.accounts], copyRecord, 10_000);
  const byName = ctx.cache.space<AccountRecord | null>([TABLES.accounts], copyRecord, 10_000);
  const pages = ctx.cache.space<{ items: AccountRecord[]; total: number }>([TABLES.accounts, TABLES.counters], copyRecord, 200);

  /** Moves the accounts counter on by `n` (taking its row lock until the transaction ends). */
  const advance = (runner: Kysely<Database>, n: number) =>
    runner
      .updateTable(TABLES.counters)
      .set({ value: sql<number>`${sql.ref("value")} + ${sql.lit(n)}` })
      .where("name", "=", ACCOUNTS);

  /** The INSERTs that store `rows` at the next places, in order, at most `maxParams` bound each. */
  const inserts = (runner: Kysely<Database>, rows: Array<Insertable<AccountTable>>) => {
    const perInsert = Math.max(1, Math.floor(maxParams / Object.keys(rows[0]!).length));
    return chunks(rows, perInsert).map((chunk, c) =>
      runner.insertInto(TABLES.accounts).values(chunk.map((row, j) => ({ ...row, position: place(rows.length - 1 - (c * perInsert + j)) }))),
    );
  };

  /**
   * Stores `rows` at the end of the creation order, all or none; a taken id or username throws
   * the engine's unique violation. With `records`, the first of them whose id or username is
   * stored or repeats an earlier one is looked for in the same transaction where there is one
   * (after the write lock is taken); its index is returned and nothing is written.
   */
  const append = async (rows: Array<Insertable<AccountTable>>, records?: AccountRecord[]): Promise<number | null> => {
    if (d1 !== undefined) {
      // No transaction to check in: check, then advance and insert in one batch (D1 runs a batch
      // as one transaction, one at a time). A writer slipping in between fails the batch on the
      // unique index, so nothing of it is written, the counter included.
      const conflict = records ? await firstConflict(records, async (q) => (await db.executeQuery(q)).rows) : null;
      if (conflict !== null) return conflict;
      await d1Batch(d1, [advance(db, rows.length).compile(), ...inserts(db, rows).map((i) => i.compile())]);
      return null;
    }
    if (direct !== undefined) {
      // better-sqlite3: in the group commit (BEGIN IMMEDIATE: the write lock before anything is
      // read, waiting out busy_timeout for another process's writer). A deferred BEGIN that read
      // first failed at once with SQLITE_BUSY when another process committed meanwhile (a user
      // import beside a running server). A throw undoes this job's statements only.
      try {
        return await direct.batched(() => {
          const conflict = records ? firstConflictNow(records, (q) => direct.execute(q).rows) : null;
          if (conflict !== null) throw new ConflictFound(conflict);
          if (direct.execute(advance(db, rows.length).compile()).numAffectedRows !== 1n) throw new Error(`${TABLES.counters} has no "${ACCOUNTS}" row: the schema is not migrated`);
          for (const insert of inserts(db, rows)) direct.execute(insert.compile());
          return null;
        });
      } catch (e) {
        if (e instanceof ConflictFound) return e.index;
        throw e;
      }
    }
    // The counter first: its UPDATE takes the write lock (the row lock on PostgreSQL and InnoDB,
    // the database's on SQLite, waiting out busy_timeout) before the check reads. Checking first
    // left SQLite holding a read snapshot that another connection's commit made stale, and the
    // write after it failed at once with SQLITE_BUSY (a user import beside a running server). A
    // conflict rolls the counter back with the rest.
    // The counter's row lock is held to the commit, so a create waits out a whole import: where
    // MySQL's lock wait times out first (a short innodb_lock_wait_timeout, see StoreContext.again),
    // the transaction is rolled back whole (nothing applied, the counter included) and run again
    // from the start, as a deadlock victim would be. A conflict or a unique violation is not retried.
    try {
      return await ctx.again(() =>
        db.transaction().execute(async (trx) => {
          const advanced = await advance(trx, rows.length).executeTakeFirst();
          if (advanced.numUpdatedRows !== 1n) throw new Error(`${TABLES.counters} has no "${ACCOUNTS}" row: the schema is not migrated`);
          const conflict = records ? await firstConflict(records, async (q) => (await trx.executeQuery(q)).rows) : null;
          if (conflict !== null) throw new ConflictFound(conflict);
          for (const insert of inserts(trx, rows)) await insert.execute();
          return null;
        }),
      );
    } catch (e) {
      if (e instanceof ConflictFound) return e.index;
      throw e;
    }
  };

  /** The queries that find which of `records`' ids and usernames are stored. */
  const storedQueries = (records: AccountRecord[]) =>
    chunks(records, Math.floor(maxParams / 2)).map((chunk) =>
      db
        .selectFrom(TABLES.accounts)
        .select(["id", "username"])
        .where((eb) => eb.or([eb("id", "in", chunk.map((r) => r.id)), eb("username", "in", chunk.map((r) => r.username))]))
        .compile(),
    );
  type Stored = { id: string; username: string };
  /** Index of the first record whose id or username is among `stored` or repeats an earlier one; else null. */
  const firstRepeat = (records: AccountRecord[], stored: Stored[]): number | null => {
    const ids = new Set(stored.map((r) => r.id));
    const names = new Set(stored.map((r) => r.username));
    for (const [i, r] of records.entries()) {
      if (ids.has(r.id) || names.has(r.username)) return i;
      ids.add(r.id);
      names.add(r.username);
    }
    return null;
  };
  /** Index of the first record whose id or username is stored or repeats an earlier one; else null. */
  const firstConflict = async (records: AccountRecord[], select: (q: CompiledQuery<Stored>) => Promise<Stored[]>): Promise<number | null> => {
    const stored: Stored[] = [];
    for (const q of storedQueries(records)) stored.push(...(await select(q)));
    return firstRepeat(records, stored);
  };
  /** The same, synchronously (better-sqlite3's direct path). */
  const firstConflictNow = (records: AccountRecord[], select: (q: CompiledQuery<Stored>) => Stored[]): number | null =>
    firstRepeat(records, storedQueries(records).flatMap((q) => select(q)));

  return {
    get: (id) =>
      run("accounts.get", async () => {
        if (!storableKey(id)) return null;
        return byId.get(id, async () => {
          const row = (await q.get(runner, { id })).rows[0];
          return row ? accountRecord(row) : null;
        });
      }),
    findByUsername: (username) =>
      run("accounts.findByUsername", async () => {
        if (!storableKey(username)) return null;
        return byName.get(username, async () => {
          const row = (await q.byUsername(runner, { username })).rows[0];
          return row ? accountRecord(row) : null;
        });
      }),
    create: (record) =>
      run("accounts.create", async () => {
        const row = accountRow(ctx, record);
        return insertOrFalse(() => append([row]));
      }),
    createMany: (records) =>
      run("accounts.createMany", async () => {
        const rows = records.map((r) => accountRow(ctx, r));
        if (rows.length === 0) return null;
        // A concurrent writer can take an id or username between our check and our insert; the
        // unique violation then rolls everything back and the next attempt's check names it.
        for (let attempt = 1; ; attempt++) {
          try {
            return await append(rows, records);
          } catch (e) {
            if (!isUniqueViolation(e) || attempt >= 3) throw e;
          }
        }
      }),
    setEnabled: (id, enabled) =>
      run("accounts.setEnabled", async () => {
        if (!storableKey(id)) return false;
        const result = await db
          .updateTable(TABLES.accounts)
          .set({ enabled: enabled ? 1 : 0 })
          .where("id", "=", id)
          .executeTakeFirst();
        return updated(result.numUpdatedRows, async () => (await db.selectFrom(TABLES.accounts).select("id").where("id", "=", id).executeTakeFirst()) !== undefined);
      }),
    setPasswordHash: (id, expected, replacement) =>
      run("accounts.setPasswordHash", async () => {
        if (!storableKey(id)) return false;
        const hash = ctx.text(replacement, "passwordHash");
        // One conditional UPDATE: atomic on every engine, a no-op when another writer got there
        // first. A new hash always differs from the one it replaces (a fresh salt), so MySQL's
        // changed-rows count is the found-rows count here.
        const result = await db.updateTable(TABLES.accounts).set({ password_hash: hash }).where("id", "=", id).where("password_hash", "=", expected).executeTakeFirst();
        return result.numUpdatedRows > 0n;
      }),
    list: (offset, limit) =>
      run("accounts.list", async () => {
        const load = async () => {
          const rows = (await q.page(runner, { after: offset, limit })).rows;
          let total = rows[0]?.total;
          if (total === undefined) {
            total = (await q.total(runner, {})).rows[0]?.value;
            if (total === undefined) throw new Error(`${TABLES.counters} has no "${ACCOUNTS}" row: the schema is not migrated`);
          }
          return { items: rows.map(accountRecord), total: toInt(total, "total") };
        };
        // At most 200 remembered pages of at most 100 accounts (API pages); larger ones are read.
        return limit <= 100 ? pages.get(`${offset}:${limit}`, load) : load();
      }),
  };
}
