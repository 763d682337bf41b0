/**
 * The D1 bridge the D1 tests use (d1-bridge.ts) answers as Miniflare's own binding proxy does:
 * the same rows, `meta` counts and errors for the same statements on the same database, since the
 * SQL runs in D1 either way and only the way there differs. A value it cannot carry is refused,
 * never changed; a request over workerd's message limit goes in parts.
 */
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectD1Bridge, d1BridgeWorker, type D1Bridge } from "./d1-bridge.js";

let mf: Miniflare;
let bridge: D1Bridge;
/** Miniflare's own proxy of the same database, used sequentially and sparingly (see d1-bridge.ts). */
let proxy: D1Like;

interface D1Like {
  prepare(sql: string): {
    bind(...values: unknown[]): ReturnType<D1Like["prepare"]>;
    all(): Promise<{ results: unknown[]; meta: { changes: number; last_row_id: number; rows_read: number; rows_written: number } }>;
    run(): Promise<{ meta: { changes: number } }>;
    first(column?: string): Promise<unknown>;
    raw(options?: { columnNames?: boolean }): Promise<unknown[][]>;
  };
  batch(statements: unknown[]): Promise<Array<{ results: unknown[]; meta: { changes: number } }>>;
}

beforeAll(async () => {
  mf = new Miniflare({
    workers: [{ name: "main", modules: true, script: "export default { fetch() { return new Response('main') } }", d1Databases: ["DB"] }, d1BridgeWorker("DB")],
  });
  bridge = await connectD1Bridge(mf);
  proxy = (await mf.getD1Database("DB")) as unknown as D1Like;
  await bridge.database.prepare("create table t (id integer primary key, name text not null unique, data blob)").run();
}, 30_000);
afterAll(async () => {
  await bridge?.close();
  await mf?.dispose();
});

/** What matters of an answer: everything but D1's timing. */
const shape = (r: { results: unknown[]; meta: Record<string, unknown> }) => ({ results: r.results, meta: { ...r.meta, duration: 0 } });
/** How `run` fails; D1's `bind` throws its type errors at once where the bridge's rejects from the run: both are caught here. */
const failure = async (run: () => Promise<unknown>) => {
  try {
    await run();
  } catch (e) {
    const err = e as Error;
    return { name: err.name, message: err.message, cause: err.cause instanceof Error ? { name: err.cause.name, message: err.cause.message } : err.cause };
  }
  throw new Error("expected a rejection");
};

describe("the D1 bridge", () => {
  it("the main Worker still answers its own requests (the bridge has its own route)", async () => {
    expect(await (await mf.dispatchFetch("http://localhost/")).text()).toBe("main");
  });

  it("writes and reads as the proxy does: rows, meta counts, text with U+0000 and U+FEFF, blobs", async () => {
    const db = bridge.database;
    const inserted = await db.prepare("insert into t (id, name, data) values (?, ?, ?)").bind(1, "\uFEFFa\u0000b", new Uint8Array([0, 255, 7])).run();
    expect(inserted.meta.changes).toBe(1);
    expect(inserted.meta.last_row_id).toBe(1);
    await proxy.prepare("insert into t (id, name) values (?, ?)").bind(2, "from the proxy").run();
    const viaBridge = await db.prepare("select id, name, data from t order by id").all();
    const viaProxy = await proxy.prepare("select id, name, data from t order by id").all();
    expect(shape(viaBridge)).toEqual(shape(viaProxy));
    expect(viaBridge.results).toEqual([
      { id: 1, name: "\uFEFFa\u0000b", data: [0, 255, 7] },
      { id: 2, name: "from the proxy", data: null },
    ]);
    expect(await db.prepare("select name from t where id = ?").bind(2).first("name")).toBe(await proxy.prepare("select name from t where id = ?").bind(2).first("name"));
    expect(await db.prepare("select id, name from t order by id").raw({ columnNames: true })).toEqual(await proxy.prepare("select id, name from t order by id").raw({ columnNames: true }));
    const updated = await db.prepare("update t set name = name || '!' where id > ?").bind(0).run();
    expect(updated.meta.changes).toBe(2);
  });

  it("rejects with D1's own errors, as the proxy does (unique violation, undefined and bigint values, BEGIN)", async () => {
    const cases: Array<[string, unknown[]]> = [
      ["insert into t (id, name) values (?, ?)", [3, "from the proxy!"]],
      ["select ?", [undefined]],
      ["select ?", [10n]],
      ["begin", []],
      ["select * from no_such_table", []],
    ];
    for (const [sql, params] of cases) {
      const viaBridge = await failure(() => bridge.database.prepare(sql).bind(...params).all());
      const viaProxy = await failure(async () => proxy.prepare(sql).bind(...params).all());
      expect(viaBridge).toEqual(viaProxy);
    }
    expect((await failure(() => bridge.database.prepare("insert into t (id, name) values (3, 'from the proxy!')").run())).message).toMatch(/^D1_ERROR: UNIQUE constraint failed: t\.name/);
  });

  it("runs a batch as one transaction: a failing statement rolls back the ones before it", async () => {
    const db = bridge.database;
    const before = (await db.prepare("select count(*) as n from t").first("n")) as number;
    const err = await failure(() => db.batch([db.prepare("insert into t (id, name) values (10, 'ten')"), db.prepare("insert into t (id, name) values (11, 'ten')")]));
    expect(err.message).toMatch(/UNIQUE constraint failed: t\.name/);
    expect(await db.prepare("select count(*) as n from t").first("n")).toBe(before);
    const done = await db.batch([db.prepare("insert into t (id, name) values (10, 'ten')"), db.prepare("delete from t where id = ?").bind(10)]);
    expect(done.map((r) => r.meta.changes)).toEqual([1, 1]);
    await expect(db.batch([proxy.prepare("select 1")])).rejects.toThrow(TypeError);
  });

  it("carries a request over workerd's message limit in parts (40 MB here), and a large answer back", async () => {
    const db = bridge.database;
    const mb = "x".repeat(1_000_000);
    const lengths = await db.batch(Array.from({ length: 40 }, (_, i) => db.prepare("select ? as i, length(?) as n").bind(i, mb)));
    expect(lengths.map((r) => r.results)).toEqual(Array.from({ length: 40 }, (_, i) => [{ i, n: 1_000_000 }]));
    // A string near D1's own limit (about 2 MB) there and back.
    const big = "y".repeat(1_900_000);
    expect((await db.prepare("insert into t (id, name) values (?, ?)").bind(100, big).run()).meta.changes).toBe(1);
    expect(await db.prepare("select name from t where id = 100").first("name")).toBe(big);
    await db.prepare("delete from t where id = 100").run();
  });

  it("refuses a value it cannot carry exactly, before sending anything", async () => {
    await expect(bridge.database.prepare("select ?").bind(new Date(0)).all()).rejects.toThrow(/cannot carry a value of type Date/);
    await expect(bridge.database.prepare("select ?").bind({ nested: new Map() }).all()).rejects.toThrow(/cannot carry a value of type Map/);
  });

  it("many statements at once each get their own answer", async () => {
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => bridge.database.prepare("select ? as v").bind(i).first("v")));
    expect(answers).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it("after close, a call rejects at once", async () => {
    const other = await connectD1Bridge(mf);
    const inFlight = Array.from({ length: 5 }, () => other.database.prepare("select 1 as v").first("v").catch((e: unknown) => e));
    await other.close();
    for (const r of await Promise.all(inFlight)) expect(r === 1 || (r instanceof Error && r.message === "the D1 bridge closed")).toBe(true);
    await expect(other.database.prepare("select 1").all()).rejects.toThrow("the D1 bridge closed");
  });
});
