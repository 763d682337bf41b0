import { afterEach, expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { clientRecord, describeIfReachable, POSTGRES_URL, postgresEngine, probePostgres, type FreshDatabase } from "./support.js";

const withQuery = (url: string, params: Record<string, string>) => url + (url.includes("?") ? "&" : "?") + new URLSearchParams(params).toString().replace(/\+/g, "%20");

// The PostgreSQL client cache drops a client when a notification names its schema: the listening
// connection compares the notification's `s` (the trigger's `tg_table_schema`, the schema pg_clients
// is in) with its own `current_schema()`, the first existing schema on the search_path. The storage's
// statements (and the cache's own trigger check, `to_regclass('pg_clients')`) find pg_clients
// wherever it is on the search_path. When the first schema on the path is not the one holding the
// tables (PostgreSQL's default `"$user", public` with a schema named after the role, the tables in
// public, migrated by another role; the storage opened with `migrate: false`), the cache goes live
// (triggers found, probe heard) and then ignores every change: another instance's rotated secret or
// deleted client is served from memory for good.

const problem = await probePostgres();

const client = clientRecord();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeIfReachable("postgres client cache, tables not in the first schema of the search_path", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", problem, () => {
  const engine = postgresEngine();
  const open: SqlStorage[] = [];
  const dbs: FreshDatabase[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    for (const db of dbs.splice(0)) await db.drop();
  });

  it("a secret rotated and a client deleted through another instance are seen within 2 s (or the cache is bypassed)", async () => {
    const tables = await engine.fresh();
    const own = await engine.fresh(); // an empty schema first on the path (the role's "$user" schema)
    dbs.push(tables, own);
    const a = await openSqlStorage(tables.url);
    open.push(a);
    // Instance B: the same tables, found through the search_path behind an empty schema of its own.
    const bUrl = withQuery(POSTGRES_URL, { options: `-c search_path=${own.name},${tables.name}`, application_name: tables.name });
    const b = await openSqlStorage(bUrl, { migrate: false });
    open.push(b);
    expect(await a.clients.create(client)).toBe(true);
    await sleep(100);
    expect((await b.clients.get("reporting"))?.secrets.map((s) => s.hash)).toEqual(["hash-one"]);

    // A rotates the secret, then deletes the client.
    expect(await a.clients.replaceSecrets("reporting", { id: "s2", hash: "hash-two", createdAt: 1_700_000_100_000, expiresAt: null, lastUsedAt: null })).toBe(true);
    await sleep(2000);
    const afterRotation = (await b.clients.get("reporting"))?.secrets.map((s) => s.hash) ?? null;
    expect(await a.clients.delete("reporting")).toBe(true);
    await sleep(2000);
    const afterDelete = (await b.clients.get("reporting")) === null ? "deleted" : "still there";

    expect({ live: b.clientCache?.live(), afterRotation, afterDelete }).toEqual({ live: b.clientCache?.live(), afterRotation: ["hash-two"], afterDelete: "deleted" });
  });

  it("a pg_clients made later in the schema first on the path: the cache follows it within a check", async () => {
    const tables = await engine.fresh();
    const own = await engine.fresh();
    dbs.push(tables, own);
    const a = await openSqlStorage(tables.url);
    open.push(a);
    const bUrl = withQuery(POSTGRES_URL, { options: `-c search_path=${own.name},${tables.name}`, application_name: tables.name });
    const b = await openSqlStorage(bUrl, { migrate: false, clientCache: { checkIntervalMs: 200 } });
    open.push(b);
    expect(await a.clients.create(client)).toBe(true);
    await sleep(100);
    expect({ live: b.clientCache?.live(), hashes: (await b.clients.get("reporting"))?.secrets.map((s) => s.hash) }).toEqual({ live: true, hashes: ["hash-one"] });

    // Another storage migrates the empty schema: B's statements now find pg_clients there.
    const c = await openSqlStorage(own.url);
    open.push(c);
    expect(await c.clients.create({ ...client, secrets: [{ ...client.secrets[0]!, id: "c1", hash: "hash-c" }] })).toBe(true);
    await sleep(1000);
    const afterMove = { live: b.clientCache?.live(), hashes: (await b.clients.get("reporting"))?.secrets.map((s) => s.hash) };
    await sleep(100);
    expect(await c.clients.replaceSecrets("reporting", { id: "c2", hash: "hash-c2", createdAt: 1_700_000_100_000, expiresAt: null, lastUsedAt: null })).toBe(true);
    await sleep(500);
    const afterRotation = (await b.clients.get("reporting"))?.secrets.map((s) => s.hash) ?? null;
    expect(await c.clients.delete("reporting")).toBe(true);
    await sleep(500);
    const afterDelete = (await b.clients.get("reporting")) === null ? "deleted" : "still there";

    expect({ afterMove, afterRotation, afterDelete, live: b.clientCache?.live() }).toEqual({
      afterMove: { live: true, hashes: ["hash-c"] },
      afterRotation: ["hash-c2"],
      afterDelete: "deleted",
      live: true,
    });
  });
});
