import type { AuditQuery, AuditRecord, AuditStore } from "./types.js";

/** (time, id) order, oldest first; ids compared by code unit. */
const compare = (a: { time: number; id: string }, b: { time: number; id: string }) => a.time - b.time || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Whether a record passes a query's filters (not the cursor). */
export function auditMatches(r: AuditRecord, q: AuditQuery): boolean {
  if (q.type !== undefined && r.type !== q.type) return false;
  if (q.clientId !== undefined && r.clientId !== q.clientId) return false;
  if (q.accountId !== undefined && r.accountId !== q.accountId) return false;
  if (q.username !== undefined && r.username !== q.username) return false;
  return true;
}

/**
 * The in-memory audit store: records kept in (time, id) order, so a page is a walk back from the
 * cursor. Lost on exit, like the rest of the memory storage.
 *
 * @example
 * const storage = createMemoryStorage({ audit: true }); // storage.audit is one of these
 */
export function createMemoryAuditStore(): AuditStore {
  const records: AuditRecord[] = [];
  const ids = new Set<string>();
  /** The index of the first record not before `key` in (time, id) order. */
  const lowerBound = (key: { time: number; id: string }) => {
    let lo = 0;
    let hi = records.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(records[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return {
    async append(record) {
      if (ids.has(record.id)) return;
      ids.add(record.id);
      records.splice(lowerBound(record), 0, { ...record });
    },
    async list(query) {
      const out: AuditRecord[] = [];
      for (let i = (query.before ? lowerBound(query.before) : records.length) - 1; i >= 0 && out.length < query.limit; i--) {
        const r = records[i]!;
        if (auditMatches(r, query)) out.push({ ...r });
      }
      return out;
    },
    async deleteExpired(before, limit) {
      // The oldest records are at the front: delete a prefix.
      let n = 0;
      while (n < records.length && records[n]!.time <= before && (limit === undefined || n < limit)) n++;
      for (const r of records.splice(0, n)) ids.delete(r.id);
      return n;
    },
  };
}
