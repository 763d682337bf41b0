import type { AuditRecord, AuditStore } from "@plantgate/core";
import { describe, expect, it, type TestContext } from "vitest";
import { DAY, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

/** An audit record as the core writes them (ids are UUIDs, `data` the event as JSON). */
function rec(n: number, over: Partial<AuditRecord> = {}): AuditRecord {
  const id = `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
  const base = { id, type: "token.issued", time: T0 + n * 1000, clientId: "app-1", accountId: null, username: null, ...over };
  return { ...base, data: JSON.stringify({ type: base.type, id, time: base.time, note: "ü \u0000 \ud800 ✓" }) };
}

/**
 * The optional audit store (`storage.audit`): skipped, test by test, when the backend has none.
 */
export function auditSuite(s: SuiteContext): void {
  describe("audit (optional: each case is skipped when the storage has no audit store)", () => {
    const audit = (t: TestContext): AuditStore => {
      const store = s.storage().audit;
      if (store === undefined) t.skip("this storage has no audit store");
      return store!;
    };
    const ids = (records: AuditRecord[]) => records.map((r) => r.id);
    /** Every id, page by page of `limit` through the (time, id) cursor, in the order listed. */
    const walk = async (a: AuditStore, limit: number): Promise<string[]> => {
      const seen: string[] = [];
      let before: { time: number; id: string } | undefined;
      for (;;) {
        const page = await a.list({ limit, ...(before ? { before } : {}) });
        seen.push(...ids(page));
        if (page.length < limit) return seen;
        const last = page[page.length - 1]!;
        before = { time: last.time, id: last.id };
      }
    };

    it("append then list: whole records back, newest first by (time, id); limit caps", async (t) => {
      const a = audit(t);
      const records = [rec(3), rec(1), rec(2, { accountId: "acct-1", username: "alice", clientId: null, type: "account.login_failed" })];
      for (const r of records) await a.append(r);
      const listed = await a.list({ limit: 10 });
      expect(listed).toStrictEqual([rec(3), records[2], rec(1)]);
      expect(ids(await a.list({ limit: 2 }))).toEqual([rec(3).id, rec(2).id]);
    });

    it("equal times are ordered by id descending; the (time, id) cursor pages without gaps or repeats", async (t) => {
      const a = audit(t);
      for (let n = 1; n <= 9; n++) await a.append(rec(n, { time: T0 + Math.floor(n / 3) * 1000 }));
      const all = await a.list({ limit: 100 });
      expect(ids(all)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1].map((n) => rec(n).id));
      expect(await walk(a, 2)).toEqual(ids(all));
    });

    it("equal times appended in an order unlike their ids (random UUIDs, as the core writes): listed by id descending, and the cursor sees each once", async (t) => {
      const a = audit(t);
      // 30 records, 10 per millisecond, appended in a shuffled (fixed) order of ids.
      const order = [17, 3, 29, 11, 0, 24, 8, 20, 14, 5, 27, 1, 22, 9, 16, 28, 2, 13, 25, 6, 19, 10, 4, 23, 15, 26, 7, 21, 12, 18];
      const records = order.map((n) => rec(n + 1, { id: `${(((n * 7919) % 30) + 10).toString(16).padStart(8, "0")}-0000-4000-8000-${String(n).padStart(12, "0")}`, time: T0 + Math.floor(n / 10) }));
      for (const r of records) await a.append(r);
      const expected = [...records].sort((x, y) => y.time - x.time || (x.id < y.id ? 1 : x.id > y.id ? -1 : 0)).map((r) => r.id);
      expect(ids(await a.list({ limit: 100 }))).toEqual(expected);
      expect(await walk(a, 4)).toEqual(expected);
    });

    it("filters: type, clientId, account (matches accountId or username); all given must match", async (t) => {
      const a = audit(t);
      await a.append(rec(1, { type: "token.issued", clientId: "app-1", accountId: "acct-1" }));
      await a.append(rec(2, { type: "account.login_failed", clientId: "app-1", accountId: null, username: "alice" }));
      await a.append(rec(3, { type: "token.issued", clientId: "app-2", accountId: null }));
      await a.append(rec(4, { type: "account.created", clientId: null, accountId: "acct-1", username: "alice" }));
      expect(ids(await a.list({ type: "token.issued", limit: 10 }))).toEqual([rec(3).id, rec(1).id]);
      expect(ids(await a.list({ clientId: "app-1", limit: 10 }))).toEqual([rec(2).id, rec(1).id]);
      expect(ids(await a.list({ account: "alice", limit: 10 }))).toEqual([rec(4).id, rec(2).id]);
      expect(ids(await a.list({ account: "acct-1", limit: 10 }))).toEqual([rec(4).id, rec(1).id]);
      expect(ids(await a.list({ account: "acct-1", type: "token.issued", clientId: "app-1", limit: 10 }))).toEqual([rec(1).id]);
      expect(await a.list({ type: "nope", limit: 10 })).toEqual([]);
      expect(await a.list({ clientId: "APP-1", limit: 10 }), "exact and case-sensitive").toEqual([]);
      expect(ids(await a.list({ clientId: "app-1", limit: 1, before: { time: rec(2).time, id: rec(2).id } }))).toEqual([rec(1).id]);
    });

    it("append is idempotent by id: a repeat changes nothing", async (t) => {
      const a = audit(t);
      await a.append(rec(1));
      await a.append({ ...rec(1), type: "changed" });
      expect(await a.list({ limit: 10 })).toStrictEqual([rec(1)]);
    });

    it("deleteExpired deletes exactly the records with time <= before, in batches, and returns how many", async (t) => {
      const a = audit(t);
      for (let n = 1; n <= 10; n++) await a.append(rec(n, { time: T0 + n * DAY }));
      expect(await a.deleteExpired(T0 + 5 * DAY, 3)).toBe(3);
      expect(await a.deleteExpired(T0 + 5 * DAY, 3)).toBe(2);
      expect(await a.deleteExpired(T0 + 5 * DAY, 3)).toBe(0);
      expect(ids(await a.list({ limit: 100 }))).toEqual([10, 9, 8, 7, 6].map((n) => rec(n).id));
      expect(await a.deleteExpired(T0 + 100 * DAY)).toBe(5);
      expect(await a.list({ limit: 100 })).toEqual([]);
    });
  });
}
