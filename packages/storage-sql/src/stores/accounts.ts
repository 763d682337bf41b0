import type { AccountRecord, AccountStore } from "@plantgate/core";
import type { Insertable, Kysely, Selectable } from "kysely";
import { chunks, d1Batch } from "../batch.js";
import type { StoreContext } from "../context.js";
import { isUniqueViolation } from "../errors.js";
import { prepared } from "../prepared.js";
import { accountRecord, accountRow } from "../rows.js";
import { TABLES, type AccountTable, type Database } from "../schema.js";
import { toInt } from "../values.js";

/** `pg_accounts` as core's {@link AccountStore}. */
export function accountStore(ctx: StoreContext): AccountStore {
  const { db, d1, maxParams, run, storableKey, insertOrFalse, updated } = ctx;
  const q = {
    get: prepared((p: { id: string }) => db.selectFrom(TABLES.accounts).selectAll().where("id", "=", p.id)),
    byUsername: prepared((p: { username: string }) => db.selectFrom(TABLES.accounts).selectAll().where("username", "=", p.username)),
    insert: prepared((row: Insertable<AccountTable>) => db.insertInto(TABLES.accounts).values(row)),
    count: prepared((_: Record<string, never>) => db.selectFrom(TABLES.accounts).select((eb) => eb.fn.countAll().as("n"))),
    idAt: prepared((p: { offset: number }) => db.selectFrom(TABLES.accounts).select("id").orderBy("id").limit(1).offset(p.offset)),
    page: prepared((p: { limit: number }) => db.selectFrom(TABLES.accounts).selectAll().orderBy("id").limit(p.limit)),
    pageFrom: prepared((p: { first: string; limit: number }) => db.selectFrom(TABLES.accounts).selectAll().where("id", ">=", p.first).orderBy("id").limit(p.limit)),
  };

  /** Index of the first record whose id or username is stored or repeats an earlier one; else null. */
  const firstConflict = async (trx: Kysely<Database>, records: AccountRecord[]): Promise<number | null> => {
    const storedIds = new Set<string>();
    const storedNames = new Set<string>();
    for (const chunk of chunks(records, Math.floor(maxParams / 2))) {
      const rows = await trx
        .selectFrom(TABLES.accounts)
        .select(["id", "username"])
        .where((eb) => eb.or([eb("id", "in", chunk.map((r) => r.id)), eb("username", "in", chunk.map((r) => r.username))]))
        .execute();
      for (const row of rows) {
        storedIds.add(row.id);
        storedNames.add(row.username);
      }
    }
    const ids = new Set<string>();
    const names = new Set<string>();
    for (const [i, r] of records.entries()) {
      if (storedIds.has(r.id) || storedNames.has(r.username) || ids.has(r.id) || names.has(r.username)) return i;
      ids.add(r.id);
      names.add(r.username);
    }
    return null;
  };

  return {
    get: (id) =>
      run("accounts.get", async () => {
        if (!storableKey(id)) return null;
        const row = (await q.get(db, { id })).rows[0];
        return row ? accountRecord(row) : null;
      }),
    findByUsername: (username) =>
      run("accounts.findByUsername", async () => {
        if (!storableKey(username)) return null;
        const row = (await q.byUsername(db, { username })).rows[0];
        return row ? accountRecord(row) : null;
      }),
    create: (record) =>
      run("accounts.create", async () => {
        const row = accountRow(ctx, record);
        return insertOrFalse(() => q.insert(db, row));
      }),
    createMany: (records) =>
      run("accounts.createMany", async () => {
        const rows = records.map((r) => accountRow(ctx, r));
        if (rows.length === 0) return null;
        const perInsert = Math.max(1, Math.floor(maxParams / Object.keys(rows[0]!).length));
        // A concurrent writer can take an id or username between our check and our insert; the
        // unique violation then rolls everything back and the next attempt's check names it.
        for (let attempt = 1; ; attempt++) {
          try {
            if (d1 !== undefined) {
              // No transaction to check in: check, then insert every chunk in one batch. A
              // writer slipping in between fails the batch on the unique index, so nothing of
              // it is written, and the next attempt's check names the conflict.
              const conflict = await firstConflict(db, records);
              if (conflict !== null) return conflict;
              await d1Batch(d1, chunks(rows, perInsert).map((chunk) => db.insertInto(TABLES.accounts).values(chunk).compile()));
              return null;
            }
            return await db.transaction().execute(async (trx) => {
              const conflict = await firstConflict(trx, records);
              if (conflict !== null) return conflict;
              for (const chunk of chunks(rows, perInsert)) await trx.insertInto(TABLES.accounts).values(chunk).execute();
              return null;
            });
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
    list: (offset, limit) =>
      run("accounts.list", async () => {
        const count = (await q.count(db, {})).rows[0];
        if (count === undefined) throw new Error("count(*) of pg_accounts returned no row");
        // Deferred join: OFFSET over the id index alone (an index-only scan) finds the page's first id,
        // then only the page's rows are read. A plain OFFSET reads every skipped row in full, which
        // made the last page of 1,000,000 accounts on PostgreSQL ~25x slower than the first.
        let rows: Array<Selectable<AccountTable>>;
        if (offset === 0) {
          rows = (await q.page(db, { limit })).rows;
        } else {
          const first = (await q.idAt(db, { offset })).rows[0];
          rows = first === undefined ? [] : (await q.pageFrom(db, { first: first.id, limit })).rows;
        }
        return { items: rows.map(accountRecord), total: toInt(count.n, "count(*)") };
      }),
  };
}
