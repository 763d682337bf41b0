import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Kysely, sql, SqliteDialect } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { cachingStatements } from "../src/statement-cache.js";

describe("cachingStatements (better-sqlite3 statements reused per SQL text)", () => {
  const cleanups: Array<() => void | Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** An in-memory database with a table t(k, v) of three rows, whose prepare() calls are counted. */
  function counted(size?: number) {
    const database = new Database(":memory:");
    database.exec("create table t (k integer primary key, v text); insert into t values (1, 'a'), (2, 'b'), (3, 'c')");
    const prepared: string[] = [];
    const counting = {
      prepare: (text: string) => {
        prepared.push(text);
        return database.prepare(text);
      },
      close: () => database.close(),
    };
    const cached = cachingStatements(counting, size);
    cleanups.push(() => {
      if (database.open) database.close();
    });
    return { database, cached, prepared };
  }

  it("hands out the same statement for the same SQL, preparing it once", () => {
    const { cached, prepared } = counted();
    const first = cached.prepare("select v from t where k = ?");
    const second = cached.prepare("select v from t where k = ?");
    const other = cached.prepare("select k from t where v = ?");
    expect(second).toBe(first);
    expect(other).not.toBe(first);
    expect(prepared).toEqual(["select v from t where k = ?", "select k from t where v = ?"]);
    // Bindings are per call: the reused statement answers each call with its own values.
    expect(first.all([1])).toEqual([{ v: "a" }]);
    expect(second.all([3])).toEqual([{ v: "c" }]);
    expect(first.reader).toBe(true);
    expect(cached.prepare("update t set v = ? where k = ?").run(["z", 2]).changes).toBe(1);
    expect(cached.prepare("select v from t where k = ?").all([2])).toEqual([{ v: "z" }]);
  });

  it("keeps the most recently used statements and prepares an evicted one afresh", () => {
    const { cached, prepared } = counted(2);
    const a = cached.prepare("select 1");
    const b = cached.prepare("select 2");
    expect(cached.prepare("select 1")).toBe(a); // a is now the most recent, b the eldest
    cached.prepare("select 3"); // evicts b
    expect(cached.prepare("select 1")).toBe(a);
    const b2 = cached.prepare("select 2");
    expect(b2).not.toBe(b);
    expect(b2.all([])).toEqual([{ 2: 2 }]);
    expect(prepared).toEqual(["select 1", "select 2", "select 3", "select 2"]);
  });

  it("never hands out a statement while an iterate() over it is open: the caller gets a fresh one", () => {
    const { cached, prepared } = counted();
    const text = "select k from t order by k";
    const iterating = cached.prepare(text);
    const rows = iterating.iterate([]);
    expect(rows.next().value).toEqual({ k: 1 });
    const meanwhile = cached.prepare(text);
    expect(meanwhile).not.toBe(iterating);
    expect(meanwhile.all([])).toEqual([{ k: 1 }, { k: 2 }, { k: 3 }]);
    expect([...rows]).toEqual([{ k: 2 }, { k: 3 }]);
    // The iteration is over, so the cached statement is handed out again.
    expect(cached.prepare(text)).toBe(iterating);
    expect(prepared).toEqual([text, text]);
  });

  it("follows schema changes: a cached SELECT * sees a column added after it was prepared", () => {
    const { database, cached } = counted();
    expect(cached.prepare("select * from t where k = ?").all([1])).toEqual([{ k: 1, v: "a" }]);
    database.exec("alter table t add column w text default 'x'");
    expect(cached.prepare("select * from t where k = ?").all([1])).toEqual([{ k: 1, v: "a", w: "x" }]);
  });

  it("close() closes the database", () => {
    const { database, cached } = counted();
    cached.prepare("select 1");
    cached.close();
    expect(database.open).toBe(false);
  });

  it("works under Kysely: execute, stream (also abandoned half-way) and transactions", async () => {
    const { cached, prepared } = counted();
    const db = new Kysely<{ t: { k: number; v: string } }>({ dialect: new SqliteDialect({ database: cached }) });
    const all = () => db.selectFrom("t").select(["k", "v"]).orderBy("k").execute();
    expect(await all()).toEqual([
      { k: 1, v: "a" },
      { k: 2, v: "b" },
      { k: 3, v: "c" },
    ]);
    const streamed: number[] = [];
    for await (const row of db.selectFrom("t").select(["k", "v"]).orderBy("k").stream()) {
      streamed.push(row.k);
      if (row.k === 2) break;
    }
    expect(streamed).toEqual([1, 2]);
    await db.transaction().execute(async (trx) => {
      await trx.updateTable("t").set({ v: "B" }).where("k", "=", 2).execute();
    });
    await expect(
      db.transaction().execute(async (trx) => {
        await trx.updateTable("t").set({ v: "never" }).where("k", "=", 3).execute();
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await all()).toEqual([
      { k: 1, v: "a" },
      { k: 2, v: "B" },
      { k: 3, v: "c" },
    ]);
    // The SELECT was prepared once for four runs (the stream, once ended, handed it back), and
    // so were BEGIN, COMMIT and ROLLBACK.
    const select = prepared.filter((s) => s.startsWith("select"));
    expect(select).toEqual(['select "k", "v" from "t" order by "k"']);
    expect(prepared.filter((s) => s === "begin")).toHaveLength(1);
    await db.destroy();
  });
});

describe("openSqlStorage on a SQLite file", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("runs in WAL mode with synchronous = NORMAL, also before anything was written to a new file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pg-sqlite-pragmas-"));
    dirs.push(dir);
    const url = `sqlite:${join(dir, "pragmas.db")}`;
    // Unmigrated, nothing is written yet: better-sqlite3's SQLite would still say FULL (2) here.
    const pragmas = async (migrate: boolean) => {
      const storage = await openSqlStorage(url, { migrate });
      try {
        const journal = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(storage.db);
        const synchronous = await sql<{ synchronous: number }>`pragma synchronous`.execute(storage.db);
        return { journal: journal.rows, synchronous: synchronous.rows };
      } finally {
        await storage.close();
      }
    };
    const expected = { journal: [{ journal_mode: "wal" }], synchronous: [{ synchronous: 1 }] };
    expect(await pragmas(false)).toEqual(expected);
    expect(await pragmas(true)).toEqual(expected);
    expect(await pragmas(true)).toEqual(expected);
  });
});
