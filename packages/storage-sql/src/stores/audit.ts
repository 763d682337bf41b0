import { AuditNotKeptError, type AuditPruneStore, type AuditStore } from "@plantgate/core";
import type { InsertQueryBuilder, InsertResult, Insertable } from "kysely";
import type { StoreContext } from "../context.js";
import { deleteBatch } from "../delete-batch.js";
import { prepared } from "../prepared.js";
import { auditRecord } from "../rows.js";
import { TABLES, type AuditTable, type Database } from "../schema.js";

/** Appends under way at once: each holds a connection of the pool while it runs (see {@link auditStore}). */
export const AUDIT_APPENDS_AT_ONCE = 2;
/** Records waiting for the audit table, at most; past it a record is not kept (see {@link auditStore}). */
export const AUDIT_QUEUE_MAX = 1000;
/** Rows of one multi-row append of waiting records, at most. */
const AUDIT_ROWS_AT_ONCE = 100;

/** `pg_audit_events` (kept security events) as core's {@link AuditStore}, with `discard` for the storage's close. */
export interface SqlAuditStore extends AuditStore {
  /** Settles every record still waiting without writing it, with one warning naming the count (the storage is closing). */
  discard(): void;
}

/** What an append past the queue's bound rejects with: one instance for every such record (a run of drops makes no stack trace a record). */
const QUEUE_FULL = Object.freeze(new AuditNotKeptError(`audit store append skipped; event not kept: ${AUDIT_QUEUE_MAX} events already wait for the audit table`));
/** What the appends still waiting when the storage closes reject with, likewise one instance. */
const CLOSING = Object.freeze(new AuditNotKeptError("storage closing; audit event not kept (it was waiting for the audit table)"));

/** One record waiting for the audit table, and its `append` call's promise. */
interface Waiting {
  row: Insertable<AuditTable>;
  resolve: () => void;
  reject: (error: unknown) => void;
  /** Set once its row was in a multi-row append that failed: it is then tried once more, alone. */
  retried?: true;
}

/**
 * `pg_audit_events` (kept security events) as core's {@link AuditStore}.
 *
 * The trail never starves the request path: at most {@link AUDIT_APPENDS_AT_ONCE} appends run at
 * once, so they hold at most that many connections of the pool; the records after them wait in
 * memory, at most {@link AUDIT_QUEUE_MAX}, and are written together (one multi-row INSERT of up to
 * 100 rows per append; one row at a time after a failed append, until one works, so a table that
 * keeps failing loses one record per attempt, not a hundred). The rows of a failed multi-row
 * append go back to the head of the line and are each tried once more, alone, so one row the
 * database refuses loses only itself (until 2026-12-03 the batches under way at a first failure,
 * up to {@link AUDIT_APPENDS_AT_ONCE} × 100 records, were lost whole). Until 2026-12-02 every event's append
 * took a connection at once: while something held a lock on the table (an index build by another
 * process's migration), the waiting appends took the whole pool, and every other statement waited
 * 10 s for a connection and answered 503. Past the bound a record is not kept: its `append`
 * rejects with core's `AuditNotKeptError` (core counts it as lost and logs nothing for it; until
 * 2026-12-03 it resolved, and no metric saw the loss) and `warn` is told once at the first such
 * record of a run, and once with their count when a record is taken again. So do the appends still
 * waiting when the storage closes (`discard`).
 */
export function auditStore(ctx: StoreContext, warn: (message: string) => void): SqlAuditStore {
  const { db, family, run, text, nullableText, storableKey } = ctx;
  // A repeated id changes nothing (a no-op update on MySQL, as revoked tokens do; and within one
  // multi-row INSERT too).
  const onConflict = (insert: InsertQueryBuilder<Database, typeof TABLES.audit, InsertResult>) =>
    family === "mysql" ? insert.onDuplicateKeyUpdate((eb) => ({ id: eb.ref("id") })) : insert.onConflict((oc) => oc.column("id").doNothing());
  const q = {
    insert: prepared((row: Insertable<AuditTable>) => onConflict(db.insertInto(TABLES.audit).values(row))),
  };
  const rowsAtOnce = Math.max(1, Math.min(AUDIT_ROWS_AT_ONCE, Math.floor(ctx.maxParams / 7)));
  // Records waiting, from `head` on (an array with a moving head: `shift` copies on every call).
  let waiting: Waiting[] = [];
  let head = 0;
  let appending = 0;
  // Whether the last append worked: waiting records are written together only then.
  let healthy = true;
  // Records not kept in the current run of drops (0: none).
  let dropped = 0;
  // Set by `discard` (the storage is closing): a failed append's rows are then not tried again.
  let closing = false;
  const tell = (message: string) => {
    try {
      warn(message);
    } catch {
      // A reporter that throws fails nothing.
    }
  };
  const write = (batch: Waiting[]) => {
    appending++;
    const rows = batch.map((w) => w.row);
    void run("audit.append", async () => {
      if (rows.length === 1) await q.insert(db, rows[0]!);
      else await onConflict(db.insertInto(TABLES.audit).values(rows)).execute();
    }).then(
      () => {
        healthy = true;
        for (const w of batch) w.resolve();
      },
      (error: unknown) => {
        healthy = false;
        // A multi-row append that failed (one row the database refuses, or a moment of the
        // connection) is tried again one row at a time, first in line, each row once: one bad
        // row loses only itself. Until 2026-12-03 all of its rows were lost.
        // Not once the storage is closing: its driver is going, and the rows would only fail again.
        const retry = batch.length > 1 && !closing;
        const again: Waiting[] = [];
        for (const w of batch) {
          if (retry && w.retried === undefined) {
            w.retried = true;
            again.push(w);
          } else w.reject(error);
        }
        if (again.length > 0) {
          waiting = again.concat(waiting.slice(head));
          head = 0;
        }
      },
    ).finally(() => {
      appending--;
      pump();
    });
  };
  const pump = () => {
    while (appending < AUDIT_APPENDS_AT_ONCE && head < waiting.length) {
      // One row at a time after a failure, and for a row tried again (they are at the head).
      const end = Math.min(waiting.length, head + (healthy && waiting[head]!.retried === undefined ? rowsAtOnce : 1));
      const batch = waiting.slice(head, end);
      head = end;
      if (head === waiting.length) {
        waiting = [];
        head = 0;
      } else if (head >= 1024 && head * 2 >= waiting.length) {
        waiting = waiting.slice(head);
        head = 0;
      }
      write(batch);
    }
  };
  return {
    append: (r) => {
      let row: Insertable<AuditTable>;
      try {
        row = {
          id: text(r.id, "id"),
          type: text(r.type, "type"),
          time: r.time,
          client_id: nullableText(r.clientId, "clientId"),
          account_id: nullableText(r.accountId, "accountId"),
          username: nullableText(r.username, "username"),
          data: text(r.data, "data"),
        };
      } catch (error) {
        return run("audit.append", () => Promise.reject(error));
      }
      if (appending >= AUDIT_APPENDS_AT_ONCE && waiting.length - head >= AUDIT_QUEUE_MAX) {
        if (dropped++ === 0) tell(`audit store append skipped; event not kept: ${AUDIT_QUEUE_MAX} events already wait for the audit table (${r.type} ${r.id}; later ones are counted, and the count is logged once one is taken again)`);
        // Core counts it as lost (observer.eventLost) and logs nothing more (this said it). Until
        // 2026-12-03 the append resolved, and no metric saw the loss.
        return Promise.reject(QUEUE_FULL);
      }
      if (dropped > 0) {
        tell(`audit table taking events again; ${dropped} events were not kept while ${AUDIT_QUEUE_MAX} waited for it`);
        dropped = 0;
      }
      return new Promise<void>((resolve, reject) => {
        waiting.push({ row, resolve, reject });
        pump();
      });
    },
    discard() {
      closing = true;
      const left = waiting.length - head;
      const batch = waiting.slice(head);
      waiting = [];
      head = 0;
      if (left > 0 || dropped > 0) tell(`storage closing; ${left + dropped} audit events not kept (${left} still waiting for the audit table${dropped > 0 ? `, ${dropped} dropped before as the queue was full` : ""})`);
      dropped = 0;
      for (const w of batch) w.reject(CLOSING);
    },
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
