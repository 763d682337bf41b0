import { createPlantgate, type AuditRecord, type AuditStore, type PruneCounts } from "@plantgate/core";
import { describe, expect, it, type TestContext } from "vitest";
import { DAY, inParallel, RACES_TIMEOUT, T0, withOtherInstance } from "../fixtures.js";
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

    it("filters: type, clientId, accountId, username; all given must match", async (t) => {
      const a = audit(t);
      await a.append(rec(1, { type: "token.issued", clientId: "app-1", accountId: "acct-1" }));
      await a.append(rec(2, { type: "account.login_failed", clientId: "app-1", accountId: null, username: "alice" }));
      await a.append(rec(3, { type: "token.issued", clientId: "app-2", accountId: null }));
      await a.append(rec(4, { type: "account.created", clientId: null, accountId: "acct-1", username: "alice" }));
      expect(ids(await a.list({ type: "token.issued", limit: 10 }))).toEqual([rec(3).id, rec(1).id]);
      expect(ids(await a.list({ clientId: "app-1", limit: 10 }))).toEqual([rec(2).id, rec(1).id]);
      expect(ids(await a.list({ username: "alice", limit: 10 }))).toEqual([rec(4).id, rec(2).id]);
      expect(ids(await a.list({ accountId: "acct-1", limit: 10 }))).toEqual([rec(4).id, rec(1).id]);
      expect(ids(await a.list({ accountId: "acct-1", username: "alice", limit: 10 }))).toEqual([rec(4).id]);
      expect(ids(await a.list({ accountId: "acct-1", type: "token.issued", clientId: "app-1", limit: 10 }))).toEqual([rec(1).id]);
      expect(await a.list({ type: "nope", limit: 10 })).toEqual([]);
      expect(await a.list({ clientId: "APP-1", limit: 10 }), "exact and case-sensitive").toEqual([]);
      expect(ids(await a.list({ clientId: "app-1", limit: 1, before: { time: rec(2).time, id: rec(2).id } }))).toEqual([rec(1).id]);
    });

    it("before with an empty id lists only records strictly before its time (core's `until`, 2026-12-03): every id sorts after the empty one", async (t) => {
      const a = audit(t);
      for (let n = 1; n <= 4; n++) await a.append(rec(n));
      // One more record at rec(3)'s time, its id after rec(3)'s.
      const twin = "00000000-0000-4000-8000-a00000000003";
      await a.append({ ...rec(3), id: twin });
      expect(ids(await a.list({ limit: 10, before: { time: rec(3).time, id: "" } }))).toEqual([rec(2).id, rec(1).id]);
      expect(ids(await a.list({ limit: 10, before: { time: rec(3).time + 1, id: "" } }))).toEqual([twin, rec(3).id, rec(2).id, rec(1).id]);
      expect(ids(await a.list({ clientId: "app-1", limit: 1, before: { time: rec(2).time, id: "" } }))).toEqual([rec(1).id]);
    });

    it("a filtered page holds up to `limit` matching records, however many newer ones do not match", async (t) => {
      const a = audit(t);
      for (let n = 1; n <= 5; n++) await a.append(rec(n, { type: "account.login_failed" }));
      for (let n = 6; n <= 10; n++) await a.append(rec(n, { type: "token.issued", clientId: "app-2" }));
      expect(ids(await a.list({ type: "account.login_failed", limit: 3 }))).toEqual([5, 4, 3].map((n) => rec(n).id));
      expect(ids(await a.list({ clientId: "app-1", limit: 3 }))).toEqual([5, 4, 3].map((n) => rec(n).id));
      expect(ids(await a.list({ type: "account.login_failed", limit: 3, before: { time: rec(4).time, id: rec(4).id } }))).toEqual([3, 2, 1].map((n) => rec(n).id));
    });

    it("accountId matches accountId only and username username only, never the other column nor clientId; they and type compare exactly (case-sensitive)", async (t) => {
      const a = audit(t);
      await a.append(rec(1, { clientId: "alice" }));
      await a.append(rec(2, { clientId: null, username: "alice", type: "account.login_failed" }));
      await a.append(rec(3, { clientId: null, accountId: "Acct-9", username: "Bob", type: "account.created" }));
      // An account whose username is another account's id (2026-12-02: one `account` filter matched either column).
      await a.append(rec(4, { clientId: null, accountId: "acct-7", username: "Acct-9", type: "account.created" }));
      await a.append(rec(5, { clientId: null, accountId: null, username: "Acct-9", type: "account.login_failed" }));
      expect(ids(await a.list({ username: "alice", limit: 10 })), "a client named like a user").toEqual([rec(2).id]);
      expect(await a.list({ accountId: "alice", limit: 10 }), "a username is no account id").toEqual([]);
      expect(await a.list({ username: "bob", limit: 10 }), "another username").toEqual([]);
      expect(await a.list({ accountId: "acct-9", limit: 10 }), "another account id").toEqual([]);
      expect(ids(await a.list({ accountId: "Acct-9", limit: 10 })), "the id, not the username equal to it").toEqual([rec(3).id]);
      expect(ids(await a.list({ username: "Acct-9", limit: 10 })), "the username, not the id equal to it").toEqual([rec(5).id, rec(4).id]);
      expect(await a.list({ type: "ACCOUNT.CREATED", limit: 10 }), "another type").toEqual([]);
      expect(ids(await a.list({ username: "Bob", type: "account.created", limit: 10 }))).toEqual([rec(3).id]);
    });

    it("stores copies: mutating the record passed to append, or one returned by list, changes nothing stored", async (t) => {
      const a = audit(t);
      const r = rec(1, { accountId: "acct-1", username: "alice" });
      await a.append(r);
      r.username = "mallory";
      r.type = "changed";
      const [listed] = await a.list({ limit: 10 });
      listed!.data = "{}";
      listed!.clientId = "changed";
      expect(await a.list({ limit: 10 })).toStrictEqual([rec(1, { accountId: "acct-1", username: "alice" })]);
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

    it("deleteExpired before 1970 (now minus core's longest retention, 36,500 days, is one until 2070): a negative time deletes nothing and does not fail", async (t) => {
      const a = audit(t);
      await a.append(rec(1, { time: T0 }));
      expect(await a.deleteExpired(T0 - 36_500 * DAY)).toBe(0);
      expect(await a.deleteExpired(-1, 10)).toBe(0);
      expect(ids(await a.list({ limit: 10 }))).toEqual([rec(1).id]);
    });

    it("events kept while the trail was on are pruned by age once it is off: an instance without `audit` has `auditPrune`, whose deleteExpired deletes exactly time <= before in batches, and admin.prune counts them", async (t) => {
      const a = audit(t);
      if (s.target.connectWithoutAudit === undefined) return t.skip("the target has no connectWithoutAudit");
      for (let n = 1; n <= 10; n++) await a.append(rec(n, { time: T0 + n * DAY, accountId: `acct-${n}`, username: `user-${n}` }));
      const off = await s.target.connectWithoutAudit(s.storage());
      try {
        expect({ audit: off.audit, auditPrune: typeof off.auditPrune?.deleteExpired }, "an instance with the trail off").toEqual({ audit: undefined, auditPrune: "function" });
        const pruner = off.auditPrune!;
        expect(await pruner.deleteExpired(T0 + 3 * DAY, 2)).toBe(2);
        expect(await pruner.deleteExpired(T0 + 3 * DAY, 2)).toBe(1);
        expect(await pruner.deleteExpired(T0 + 3 * DAY, 2)).toBe(0);
        expect(ids(await a.list({ limit: 100 }))).toEqual([10, 9, 8, 7, 6, 5, 4].map((n) => rec(n).id));
        // Through core: the retention (90 days by default) counted from the run's instant, in batches.
        const app = createPlantgate({ storage: off, clock: () => T0 + 97 * DAY, logger: { error() {}, warn() {} } });
        const counts = await app.admin.prune({ batchSize: 2 });
        expect(counts).toStrictEqual({ refreshTokens: 0, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 4, complete: true } satisfies PruneCounts);
        expect(ids(await a.list({ limit: 100 }))).toEqual([10, 9, 8].map((n) => rec(n).id));
      } finally {
        await s.target.disconnect?.(off);
      }
    });

    it("appends racing pruning by age (four appenders and two pruners, on two instances when the target can open a second): no error, every record after the cutoff stays whole, every one at or before it is deleted once", { timeout: RACES_TIMEOUT }, async (t) => {
      const a = audit(t);
      await withOtherInstance(s, async (other) => {
        const b = other.audit;
        if (b === undefined) throw new Error("the second instance from target.connect() has no audit store, the first has one");
        const cutoff = T0 + 30 * DAY;
        // Every filter column set on some records, so each index of the table takes writes and deletes.
        const shaped = (n: number, time: number) =>
          rec(n, { time, clientId: n % 3 === 0 ? null : `app-${n % 4}`, accountId: n % 2 === 0 ? `acct-${n % 5}` : null, username: n % 5 === 0 ? `user-${n % 3}` : null, type: n % 2 === 0 ? "token.issued" : "account.login_failed" });
        // 120 stored before the race, all due: up to a day before the cutoff, 12 exactly at it.
        const old = Array.from({ length: 120 }, (_, n) => shaped(5000 + n, n % 10 === 0 ? cutoff : cutoff - 1 - n * 600_000));
        for (const r of old) await a.append(r);
        // Each appender: 30 newer records (the first 6 a millisecond after the cutoff, next to the
        // rows being deleted) and, among them, 10 more due ones (late arrivals of old events).
        const newer = Array.from({ length: 4 }, (_, w) => Array.from({ length: 30 }, (_, n) => shaped(6000 + w * 100 + n, n < 6 ? cutoff + 1 : cutoff + 1 + n * 1000 + w)));
        const late = Array.from({ length: 4 }, (_, w) => Array.from({ length: 10 }, (_, n) => shaped(7000 + w * 100 + n, n % 5 === 0 ? cutoff : cutoff - 1 - n * 60_000 - w)));
        let appending = 4;
        /** deleteExpired(cutoff, 5) while the appenders run, then until a batch comes back short; every batch's count. */
        const prune = async (store: AuditStore): Promise<number[]> => {
          const counts: number[] = [];
          for (;;) {
            const running = appending > 0;
            const n = await store.deleteExpired(cutoff, 5);
            counts.push(n);
            if (n < 5 && !running) return counts;
          }
        };
        const runs = await inParallel<number[]>(6, async (i) => {
          if (i >= 4) return prune(i === 4 ? a : b);
          try {
            const store = i % 2 === 0 ? a : b;
            for (let n = 0; n < 30; n++) {
              await store.append(newer[i]![n]!);
              if (n % 3 === 2) await store.append(late[i]![(n - 2) / 3]!);
            }
            return [];
          } finally {
            appending--;
          }
        });
        // A late arrival may land after both pruners' last batch: one more call takes what is left.
        const rest = await a.deleteExpired(cutoff);
        const deleted = runs.flat().reduce((x, y) => x + y, 0) + rest;
        expect(deleted, `deleted in all (pruners' batches: ${JSON.stringify(runs.slice(4))}, then ${rest})`).toBe(old.length + 40);
        expect(await a.deleteExpired(cutoff), "nothing at or before the cutoff is left").toBe(0);
        const kept = newer.flat().sort((x, y) => y.time - x.time || (x.id < y.id ? 1 : x.id > y.id ? -1 : 0));
        expect(await a.list({ limit: 500 }), "every record after the cutoff stays, whole").toStrictEqual(kept);
        if (b !== a) expect(await b.list({ limit: 500 }), "the other instance lists the same").toStrictEqual(kept);
      });
    });

    it("two pruners at once (on two instances when the target can open a second), beside appends of newer events: each record at or before the cutoff is deleted once, their counts add up, every newer record stays whole", async (t) => {
      const a = audit(t);
      await withOtherInstance(s, async (other) => {
        const b = other.audit;
        if (b === undefined) throw new Error("the second instance from target.connect() has no audit store, the first has one");
        /** What the store holds, by id, as this test wrote it. */
        const stored = new Map<string, AuditRecord>();
        const append = async (store: AuditStore, records: AuditRecord[]) => {
          for (const r of records) {
            await store.append(r);
            stored.set(r.id, r);
          }
        };
        /** deleteExpired(cutoff, 4) until a batch comes back short, as prune does; every batch's count. */
        const drain = async (store: AuditStore, cutoff: number): Promise<number[]> => {
          const counts: number[] = [];
          for (;;) {
            const n = await store.deleteExpired(cutoff, 4);
            counts.push(n);
            if (n < 4) return counts;
          }
        };
        const newestFirst = (records: AuditRecord[]) => [...records].sort((x, y) => y.time - x.time || (x.id < y.id ? 1 : x.id > y.id ? -1 : 0));
        // Round 0: both prune in batches of 4; round 1: the other instance in one call without a limit.
        for (const round of [0, 1]) {
          const cutoff = T0 + (50 + round) * DAY;
          const base = 1000 * (round + 1);
          // 40 at or before the cutoff (8 exactly at it, ties told apart by id), 10 after it (4 a
          // millisecond after), appended in an order unlike their times.
          const expired = Array.from({ length: 40 }, (_, n) => rec(base + n, { time: n % 5 === 0 ? cutoff : cutoff - (n + 1) * 3_600_000 }));
          const newer = Array.from({ length: 10 }, (_, n) => rec(base + 100 + n, { time: n < 4 ? cutoff + 1 : cutoff + n * 60_000 }));
          await append(a, expired.flatMap((r, n) => (n % 4 === 0 && newer[n / 4] ? [newer[n / 4]!, r] : [r])));
          const due = [...stored.values()].filter((r) => r.time <= cutoff);
          // Round 1's cutoff is a day later: what round 0 kept and saw arrive is due too.
          expect(due.length, `round ${round}: records due`).toBe(round === 0 ? 40 : 40 + 10 + 10);
          // Events keep arriving while the pruners run: one a millisecond after the cutoff, the rest later.
          const arriving = Array.from({ length: 10 }, (_, n) => rec(base + 200 + n, { time: cutoff + 1 + n * 1000 }));
          const runs = await inParallel<number[]>(4, (i) =>
            i === 0
              ? drain(a, cutoff)
              : i === 1
                ? round === 0
                  ? drain(b, cutoff)
                  : b.deleteExpired(cutoff).then((n) => [n])
                : append(i === 2 ? a : b, arriving.filter((_, n) => n % 2 === i - 2)).then(() => []),
          );
          for (const r of due) stored.delete(r.id);
          const total = runs.flat().reduce((x, y) => x + y, 0);
          expect(total, `round ${round}: deleted by both pruners (batches: ${JSON.stringify(runs.slice(0, 2))})`).toBe(due.length);
          expect(await a.deleteExpired(cutoff), `round ${round}: nothing at or before the cutoff is left`).toBe(0);
          expect(await a.list({ limit: 500 }), `round ${round}: every newer record stays, whole`).toStrictEqual(newestFirst([...stored.values()]));
          if (b !== a) expect(await b.list({ limit: 500 }), `round ${round}: the other instance lists the same`).toStrictEqual(newestFirst([...stored.values()]));
        }
      });
    });
  });
}
