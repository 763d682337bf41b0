import type { AuditPruneStore, AuditStore } from "@plantgate/core";
import type { Insertable } from "kysely";
import type { StoreContext } from "../context.js";
import { deleteBatch } from "../delete-batch.js";
import { prepared } from "../prepared.js";
import { auditRecord } from "../rows.js";
import { TABLES, type AuditTable } from "../schema.js";

/** `pg_audit_events` (kept security events) as core's {@link AuditStore}. */
export function auditStore(ctx: StoreContext): AuditStore {
  const { db, family, run, text, nullableText, storableKey } = ctx;
  const q = {
    insert: prepared((row: Insertable<AuditTable>) => {
      // A repeated id changes nothing (a no-op update on MySQL, as revoked tokens do).
      const insert = db.insertInto(TABLES.audit).values(row);
      return family === "mysql" ? insert.onDuplicateKeyUpdate((eb) => ({ id: eb.ref("id") })) : insert.onConflict((oc) => oc.column("id").doNothing());
    }),
  };
  return {
    append: (r) =>
      run("audit.append", async () => {
        await q.insert(db, {
          id: text(r.id, "id"),
          type: text(r.type, "type"),
          time: r.time,
          client_id: nullableText(r.clientId, "clientId"),
          account_id: nullableText(r.accountId, "accountId"),
          username: nullableText(r.username, "username"),
          data: text(r.data, "data"),
        });
      }),
    list: (query) =>
      run("audit.list", async () => {
        if (!Number.isSafeInteger(query.limit) || query.limit < 1 || query.limit > 1000) throw new TypeError("audit.list: limit must be 1-1000");
        for (const v of [query.type, query.clientId, query.accountId, query.username, query.before?.id]) if (v !== undefined && !storableKey(v)) return [];
        let select = db.selectFrom(TABLES.audit).selectAll();
        if (query.type !== undefined) select = select.where("type", "=", query.type);
        if (query.clientId !== undefined) select = select.where("client_id", "=", query.clientId);
        if (query.accountId !== undefined) select = select.where("account_id", "=", query.accountId);
        if (query.username !== undefined) select = select.where("username", "=", query.username);
        const before = query.before;
        if (before !== undefined) {
          // time <= T and (time < T or id < I), not (time < T or (time = T and id < I)): the same
          // rows, but its first term is an index range on every engine, so a page deep in the
          // trail costs what the first does (the OR alone made each scan from the newest event).
          select = select.where("time", "<=", before.time).where((eb) => eb.or([eb("time", "<", before.time), eb("id", "<", before.id)]));
        }
        const rows = await select.orderBy("time", "desc").orderBy("id", "desc").limit(query.limit).execute();
        return rows.map(auditRecord);
      }),
    ...auditPruneStore(ctx),
  };
}

/**
 * `pg_audit_events`' deletion by age alone: the storage's `auditPrune` when it keeps no new events
 * (`audit: false`), so the rows kept while the trail was on are still pruned by the retention.
 */
export function auditPruneStore(ctx: StoreContext): AuditPruneStore {
  return {
    deleteExpired: (before, limit) => ctx.run("audit.deleteExpired", () => deleteBatch(ctx, TABLES.audit, "id", (eb) => eb("time", "<=", before), limit)),
  };
}
