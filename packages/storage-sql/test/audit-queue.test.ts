/**
 * The SQL audit store never starves the request path: at most two appends run at once (two pool
 * connections), the records after them wait in memory (at most 1,000, written together once the
 * table takes them), and past that bound a record is not kept, with one warning per run of drops.
 * Until 2026-12-02 each event's append took a connection at once: while something held a lock on
 * the table (migration 0014's index build run by another process; here `LOCK TABLE ... IN SHARE
 * MODE`, the lock CREATE INDEX takes), ten events took PostgreSQL's whole pool of 10, and every
 * later statement waited 10 s for a connection and answered 503 (found by a review of 0014).
 */
import { AuditNotKeptError, createPlantgate, type AuditRecord } from "@plantgate/core";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { AUDIT_QUEUE_MAX } from "../src/stores/audit.js";
import { TABLES } from "../src/schema.js";
import { mysqlEngine, postgresEngine, probeMysql, probePostgres, sqliteEngine, type Engine, type FreshDatabase } from "./support.js";

const pgProblem = await probePostgres();
const mysqlProblem = await probeMysql();
const BASE = "https://as.example.test";

const record = (i: number, id = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`): AuditRecord => ({
  id,
  type: "token.issued",
  time: 1_700_000_000_000 + i,
  clientId: "app",
  accountId: null,
  username: null,
  data: JSON.stringify({ type: "token.issued", n: i, id }),
});

/** Holds `LOCK TABLE pg_audit_events IN SHARE MODE` (what CREATE INDEX takes) until `release()`. */
async function lockAuditTable(url: string) {
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  await locker.query("begin");
  await locker.query(`lock table ${TABLES.audit} in share mode`);
  return {
    release: () => locker.query("commit").then(() => undefined),
    end: () => locker.end(),
  };
}

/** How many times each outcome occurs. */
const tally = (outcomes: string[]): Record<string, number> => {
  const t: Record<string, number> = {};
  for (const o of outcomes) t[o] = (t[o] ?? 0) + 1;
  return t;
};

const settledWithin = async (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => "settled"), new Promise((resolve) => setTimeout(() => resolve("pending"), ms))]);

interface StoreUnderTest {
  engine: Engine;
  db: FreshDatabase;
  storage: SqlStorage;
  warnings: string[];
}

/**
 * A fresh PostgreSQL database with an audit store, its warnings collected; `lock()` locks its audit
 * table (once) and gives the lock's release; all undone after `body`.
 */
async function withStore(body: (t: StoreUnderTest & { lock: () => Promise<() => Promise<void>> }) => Promise<void>) {
  const engine = postgresEngine();
  const db = await engine.fresh();
  const warnings: string[] = [];
  const storage = await openSqlStorage(db.url, { audit: true, onWarning: (m) => void warnings.push(m) });
  let held: Awaited<ReturnType<typeof lockAuditTable>> | undefined;
  const lock = async () => {
    held = await lockAuditTable(db.url);
    return held.release;
  };
  try {
    await body({ engine, db, storage, warnings, lock });
  } finally {
    await held?.release().catch(() => {});
    await held?.end();
    await storage.close();
    await db.drop();
  }
}

/** {@link withStore} with the audit table locked before `body`. */
function withLockedStore(body: (t: StoreUnderTest & { release: () => Promise<void> }) => Promise<void>) {
  return withStore(async ({ lock, ...t }) => body({ ...t, release: await lock() }));
}

describe.skipIf(pgProblem !== null)("the audit store while its table is locked (PostgreSQL)", () => {
  it("token requests are answered 200 at once while appends are held, and every event is kept once the lock goes", () =>
    withStore(async ({ engine, db, storage, lock }) => {
      const errors: string[] = [];
      const emitted: string[] = [];
      const app = createPlantgate({
        storage,
        issuer: BASE,
        passwordHashIterations: 1000,
        onEvent: (e) => void emitted.push(e.id),
        logger: { error: (m: string) => void errors.push(m), warn() {} },
      });
      await app.admin.createAccount({ username: "alice", password: "alice-password-1" });
      const { clientSecret } = await app.admin.createClient({ clientId: "app" });
      const grant = async () => {
        const started = Date.now();
        const res = await app.fetch(
          new Request(`${BASE}/UserService/connect/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`app:${clientSecret}`)}` },
            body: new URLSearchParams({ grant_type: "password", username: "alice", password: "alice-password-1", scope: "offline_access" }).toString(),
          }),
        );
        const body = (await res.json()) as Record<string, unknown>;
        return { status: res.status, tokenType: body.token_type, ms: Date.now() - started };
      };
      expect((await grant()).status).toBe(200);
      const release = await lock();
      // Twelve sign-ins one after another (before: the eleventh waited 10 s for a connection, 503).
      const results = [];
      for (let i = 0; i < 12; i++) results.push(await grant());
      for (const r of results) expect(r, JSON.stringify(results)).toEqual({ status: 200, tokenType: "Bearer", ms: expect.any(Number) });
      for (const r of results) expect(r.ms, JSON.stringify(results)).toBeLessThan(2000);
      // Nothing of them is kept yet: the appends wait for the lock.
      expect(await app.flushEvents(200)).toBeGreaterThan(0);
      await release();
      expect(await app.flushEvents(20_000)).toBe(0);
      const kept = (await storage.audit!.list({ limit: 1000 })).map((r) => r.id);
      expect(kept.sort()).toEqual([...emitted].sort());
      expect(emitted.length).toBeGreaterThanOrEqual(13);
      expect(errors).toEqual([]);
    }), 60_000);

  it("core over the store with a full queue: each dropped event is counted lost (observer.eventLost) with no line of core's, only the store's warning; the answers stand", () =>
    withStore(async ({ engine, db, storage, warnings, lock }) => {
      const errors: string[] = [];
      const lost: string[] = [];
      const app = createPlantgate({
        storage,
        issuer: BASE,
        observer: { eventLost: (o) => void lost.push(`${o.receiver} ${o.type}`) },
        logger: { error: (m: string) => void errors.push(m), warn() {} },
      });
      const { clientSecret } = await app.admin.createClient({ clientId: "app" });
      await app.flushEvents();
      const release = await lock();
      const grant = () =>
        app.fetch(
          new Request(`${BASE}/UserService/connect/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`app:${clientSecret}`)}` },
            body: "grant_type=client_credentials",
          }),
        );
      // Two appends held by the lock, 1,000 events waiting, ten past them.
      const statuses: number[] = [];
      for (let i = 0; i < 2 + AUDIT_QUEUE_MAX + 10; i += 50) {
        const batch = await Promise.all(Array.from({ length: Math.min(50, 2 + AUDIT_QUEUE_MAX + 10 - i) }, () => grant()));
        statuses.push(...batch.map((r) => r.status));
      }
      expect(statuses.length).toBe(2 + AUDIT_QUEUE_MAX + 10);
      expect(new Set(statuses)).toEqual(new Set([200]));
      // Let every event reach the store (the held ones stay unfinished).
      await app.flushEvents(500);
      expect(lost).toEqual(Array.from({ length: 10 }, () => "audit token.issued"));
      expect(errors).toEqual([]);
      expect(warnings.filter((w) => w.startsWith("audit store append skipped"))).toHaveLength(1);
      await release();
      expect(await app.flushEvents(20_000)).toBe(0);
      expect(await engine.exec(db, `select count(*)::int as n from ${TABLES.audit} where type = 'token.issued'`)).toEqual([{ n: 2 + AUDIT_QUEUE_MAX }]);
      expect(errors).toEqual([]);
    }), 60_000);

  it("past 1,000 records waiting, a record is not kept: one warning at the first, one with the count when one is taken again; the pool stays free", () =>
    withLockedStore(async ({ engine, db, storage, warnings, release }) => {
      const audit = storage.audit!;
      // Two under way, AUDIT_QUEUE_MAX waiting, five past the bound.
      const held = Array.from({ length: 2 + AUDIT_QUEUE_MAX }, (_, i) => audit.append(record(i)));
      const past = Array.from({ length: 5 }, (_, i) => audit.append(record(5000 + i)));
      // Refused at once with core's AuditNotKeptError (core counts them lost; until 2026-12-03 they resolved).
      for (const p of past) expect(await settledWithin(p.catch((e: unknown) => e), 100)).toBe("settled");
      for (const p of past) await expect(p).rejects.toThrow(new AuditNotKeptError("audit store append skipped; event not kept: 1000 events already wait for the audit table"));
      for (const p of past) await expect(p).rejects.toBeInstanceOf(AuditNotKeptError);
      for (const p of held.slice(0, 3)) expect(await settledWithin(p, 100)).toBe("pending");
      expect(warnings).toEqual([
        `audit store append skipped; event not kept: 1000 events already wait for the audit table (token.issued ${record(5000).id}; later ones are counted, and the count is logged once one is taken again)`,
      ]);
      // Other statements still get a connection at once (before: 10 s waits, then StorageError).
      const started = Date.now();
      expect(await storage.clients.get("nobody")).toBeNull();
      expect(Date.now() - started).toBeLessThan(1000);
      await release();
      await Promise.all(held);
      expect(await engine.exec(db, `select count(*)::int as n from ${TABLES.audit}`)).toEqual([{ n: 2 + AUDIT_QUEUE_MAX }]);
      await audit.append(record(9000));
      expect(warnings.slice(1)).toEqual(["audit table taking events again; 5 events were not kept while 1000 waited for it"]);
      expect(await engine.exec(db, `select count(*)::int as n from ${TABLES.audit}`)).toEqual([{ n: 3 + AUDIT_QUEUE_MAX }]);
      const newest = await audit.list({ limit: 2 });
      expect(newest).toEqual([record(9000), record(1 + AUDIT_QUEUE_MAX)]);
    }), 60_000);

  it("closed while records wait: they are not written, one warning names them, and their appends reject with AuditNotKeptError (counted lost, not logged again; they resolved until 2026-12-03)", () =>
    withLockedStore(async ({ engine, db, storage, warnings, release }) => {
      const running = [storage.audit!.append(record(1)), storage.audit!.append(record(2))];
      const waiting = [3, 4, 5].map((i) => storage.audit!.append(record(i)));
      // The two under way hold their connections, waiting for the lock.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const closing = storage.close();
      for (const p of waiting) expect(await settledWithin(p.catch((e: unknown) => e), 100)).toBe("settled");
      for (const p of waiting) await expect(p).rejects.toThrow(new AuditNotKeptError("storage closing; audit event not kept (it was waiting for the audit table)"));
      for (const p of waiting) await expect(p).rejects.toBeInstanceOf(AuditNotKeptError);
      expect(warnings).toEqual(["storage closing; 3 audit events not kept (3 still waiting for the audit table)"]);
      await release();
      await Promise.all(running);
      await closing;
      expect(await engine.exec(db, `select id from ${TABLES.audit} order by id`)).toEqual([{ id: record(1).id }, { id: record(2).id }]);
    }), 30_000);

  it("a multi-row append that fails while the storage closes is not tried again row by row: its rows fail with its own error, none is sent to the closed pool", async () => {
    // A review of 2026-12-03 (its scratch test, adapted): the retry of a failed append re-queued
    // its rows after close() had discarded the queue, and each went to the destroyed pool
    // ("driver has already been destroyed", 100 error lines, nothing gained).
    const engine = postgresEngine();
    const db = await engine.fresh();
    const storage = await openSqlStorage(db.url, { audit: true });
    try {
      // The row of type "boom" fails its INSERT after 2 s: the 100-row append holding it is in flight at close.
      await engine.exec(db, `create function audit_boom() returns trigger language plpgsql as $$ begin if new.type = 'boom' then perform pg_sleep(2); raise exception 'boom'; end if; return new; end $$`);
      await engine.exec(db, `create trigger audit_boom before insert on ${TABLES.audit} for each row execute function audit_boom()`);
      const outcomes: string[] = [];
      const appends = Array.from({ length: 150 }, (_, i) => {
        const r = i === 50 ? { ...record(i), type: "boom" } : record(i);
        return storage.audit!.append(r).then(
          () => void outcomes.push("kept"),
          (e: unknown) => void outcomes.push(`refused: ${String((e as { cause?: { message?: string } }).cause?.message ?? (e as Error).message)}`),
        );
      });
      await appends[0];
      await appends[1];
      await new Promise((resolve) => setTimeout(resolve, 50));
      await storage.close();
      await Promise.all(appends);
      expect(tally(outcomes)).toEqual({ kept: 50, "refused: boom": 100 });
    } finally {
      await db.drop();
    }
  }, 30_000);
});

const engines: Array<[string, () => Engine, string | null]> = [
  ["sqlite", sqliteEngine, null],
  ["postgres", postgresEngine, pgProblem],
  ["mysql", mysqlEngine, mysqlProblem],
];

/** A trigger refusing every audit row of type "boom", per engine. */
const REFUSE_BOOM: Record<string, string[]> = {
  sqlite: [`create trigger audit_boom before insert on ${TABLES.audit} when new.type = 'boom' begin select raise(abort, 'boom'); end`],
  postgres: [
    `create function audit_boom() returns trigger language plpgsql as $$ begin if new.type = 'boom' then raise exception 'boom'; end if; return new; end $$`,
    `create trigger audit_boom before insert on ${TABLES.audit} for each row execute function audit_boom()`,
  ],
  mysql: [`create trigger audit_boom before insert on ${TABLES.audit} for each row begin if new.type = 'boom' then signal sqlstate '45000' set message_text = 'boom'; end if; end`],
};

for (const [label, make, problem] of engines) {
  describe.skipIf(problem !== null)(`waiting records written together (${label})`, () => {
    const engine = make();
    it("350 appends at once: all kept, by multi-row inserts; an id repeated within one changes nothing", async () => {
      const db = await engine.fresh();
      const storage = await openSqlStorage(db.url, { audit: true });
      try {
        const records = Array.from({ length: 350 }, (_, i) => record(i));
        // The same id twice among the waiting records, its second copy with other data.
        const again = { ...record(100), data: "{}" };
        await Promise.all([...records.map((r) => storage.audit!.append(r)), storage.audit!.append(again)]);
        const kept: AuditRecord[] = [];
        for (let page = await storage.audit!.list({ limit: 1000 }); page.length > 0; page = []) kept.push(...page);
        expect(kept).toEqual([...records].reverse());
      } finally {
        await storage.close();
        await db.drop();
      }
    });

    it("a multi-row append that fails (here one row the database refuses, by a trigger) is tried again one row at a time: only that row is lost", async () => {
      // Until 2026-12-03 a failed multi-row append lost all of its rows (up to 100 events, one
      // "not kept" line each), whatever failed: one row, or a moment of the connection.
      const db = await engine.fresh();
      const storage = await openSqlStorage(db.url, { audit: true });
      try {
        for (const statement of REFUSE_BOOM[label]!) await engine.exec(db, statement);
        const records = Array.from({ length: 350 }, (_, i) => record(i));
        const bad = { ...record(1000), type: "boom" };
        const outcomes = await Promise.all([...records.slice(0, 200), bad, ...records.slice(200)].map((r) => storage.audit!.append(r).then(() => "kept", () => `refused ${r.type}`)));
        const kept: AuditRecord[] = await storage.audit!.list({ limit: 1000 });
        expect({ kept: outcomes.filter((o) => o === "kept").length, refused: outcomes.filter((o) => o !== "kept") }).toEqual({ kept: 350, refused: ["refused boom"] });
        expect(kept).toEqual([...records].reverse());
      } finally {
        await storage.close();
        await db.drop();
      }
    });
  });
}
