import type { AuditPruneStore, AuditStore } from "@plantgate/core";
import type { Selectable } from "kysely";
import { auditRecord } from "../rows.js";
import { TABLES, type AuditTable } from "../schema.js";
import { deleteBatch, id, type D1Context } from "./context.js";

/** `pg_audit_events` on D1 (see ../stores/audit.ts): the same statements, written out. */
export function d1AuditStore(ctx: D1Context): AuditStore {
  const { run, all, exec, storableKey, text, nullableText } = ctx;
  const table = id(TABLES.audit);
  return {
    append: (r) =>
      run("audit.append", async () => {
        // A repeated id changes nothing.
        await exec(
          `insert into ${table} ("id", "type", "time", "client_id", "account_id", "username", "data") values (?, ?, ?, ?, ?, ?, ?) on conflict ("id") do nothing`,
          text(r.id, "id"),
          text(r.type, "type"),
          r.time,
          nullableText(r.clientId, "clientId"),
          nullableText(r.accountId, "accountId"),
          nullableText(r.username, "username"),
          text(r.data, "data"),
        );
      }),
    list: (query) =>
      run("audit.list", async () => {
        if (!Number.isSafeInteger(query.limit) || query.limit < 1 || query.limit > 1000) throw new TypeError("audit.list: limit must be 1-1000");
        for (const v of [query.type, query.clientId, query.accountId, query.username, query.before?.id]) if (v !== undefined && !storableKey(v)) return [];
        const where: string[] = [];
        const params: unknown[] = [];
        if (query.type !== undefined) where.push(`"type" = ?`), params.push(query.type);
        if (query.clientId !== undefined) where.push(`"client_id" = ?`), params.push(query.clientId);
        if (query.accountId !== undefined) where.push(`"account_id" = ?`), params.push(query.accountId);
        if (query.username !== undefined) where.push(`"username" = ?`), params.push(query.username);
        // An index range first (see stores/audit.ts): a deep page costs what the first does.
        if (query.before !== undefined) where.push(`"time" <= ? and ("time" < ? or "id" < ?)`), params.push(query.before.time, query.before.time, query.before.id);
        const sql = `select * from ${table}${where.length ? ` where ${where.join(" and ")}` : ""} order by "time" desc, "id" desc limit ?`;
        const rows = await all<Selectable<AuditTable>>(sql, ...params, query.limit);
        return rows.map(auditRecord);
      }),
    ...d1AuditPruneStore(ctx),
  };
}

/** `pg_audit_events`' deletion by age alone on D1: the storage's `auditPrune` with `audit: false` (see ../stores/audit.ts). */
export function d1AuditPruneStore(ctx: D1Context): AuditPruneStore {
  return {
    deleteExpired: (before, limit) => ctx.run("audit.deleteExpired", () => deleteBatch(ctx, TABLES.audit, "id", `"time" <= ?`, [before], limit)),
  };
}
