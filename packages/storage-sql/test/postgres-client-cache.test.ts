import type { ClientRecord } from "@plantgate/core";
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { pgClientCache, type ListenClientConstructor } from "../src/pg-client-cache.js";
import { TABLES } from "../src/schema.js";
import { clientRecord, describeIfReachable, POSTGRES_URL, postgresEngine, probePostgres, type FreshDatabase } from "./support.js";

// The PostgreSQL client cache (see src/pg-client-cache.ts): clients are kept in memory and dropped
// when the database's triggers report a change. These tests run two storages on one database (two
// instances), change a client through one, through plain SQL on a third connection, kill the
// listening connection, and expect the other to see every change within a bounded wait.

const problem = await probePostgres();

const client = clientRecord();
const rotated = { id: "s2", hash: "hash-two", createdAt: 1_700_000_100_000, expiresAt: null, lastUsedAt: null };

/** Polls `read` every 5 ms until `done` holds of its result; fails after 2 s. Returns how long it took. */
async function within2s<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<number> {
  const start = performance.now();
  let last: T | undefined;
  while (performance.now() - start < 2000) {
    last = await read();
    if (done(last)) return performance.now() - start;
    await sleep(5);
  }
  throw new Error(`not seen within 2 s; last read: ${JSON.stringify(last)}`);
}

async function until(condition: () => boolean, what: string, ms = 5000): Promise<void> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hashes = (record: ClientRecord | null) => record?.secrets.map((s) => s.hash) ?? null;

describeIfReachable("postgres client cache", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", problem, () => {
  const engine = postgresEngine();
  const open: SqlStorage[] = [];
  const dbs: FreshDatabase[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    for (const db of dbs.splice(0)) await db.drop();
  });
  const fresh = async () => {
    const db = await engine.fresh();
    dbs.push(db);
    return db;
  };
  const storage = async (db: FreshDatabase, options: Parameters<typeof openSqlStorage>[1] = {}) => {
    const s = await openSqlStorage(db.url, options);
    open.push(s);
    return s;
  };
  const sql = (db: FreshDatabase, statement: string) => engine.exec(db, statement);
  /** Changes the row without any notification (trigger off for one statement): only a cache keeps the old value. */
  const silently = async (db: FreshDatabase, statement: string) =>
    sql(db, `begin; alter table ${TABLES.clients} disable trigger plantgate_clients_notify; ${statement}; alter table ${TABLES.clients} enable trigger plantgate_clients_notify; commit`);

  /** Instance A with the client cached, instance B on the same database. */
  async function twoInstances(options: Parameters<typeof openSqlStorage>[1] = {}) {
    const db = await fresh();
    const a = await storage(db, options);
    const b = await storage(db, options);
    expect(a.clientCache?.live()).toBe(true);
    expect(await b.clients.create(client)).toBe(true);
    // Let the notification of that insert reach A first (else it drops what A reads next).
    await sleep(100);
    expect(await a.clients.get("reporting")).toEqual(client);
    // Cached for real: a change nobody reports is not seen by A, but is by a storage without the cache.
    await silently(db, `update ${TABLES.clients} set name = 'Changed quietly' where client_id = 'reporting'`);
    expect((await a.clients.get("reporting"))?.name).toBe("Reporting");
    const uncached = await storage(db, { clientCache: false });
    expect(uncached.clientCache).toBeUndefined();
    expect((await uncached.clients.get("reporting"))?.name).toBe("Changed quietly");
    return { db, a, b };
  }

  it("a migrated database has both triggers and the storage listens", async () => {
    const db = await fresh();
    const s = await storage(db);
    expect(s.clientCache?.live()).toBe(true);
    const triggers = await sql(db, `select tgname from pg_trigger where tgrelid = '${TABLES.clients}'::regclass and not tgisinternal order by tgname`);
    expect(triggers.map((r) => r.tgname)).toEqual(["plantgate_clients_notify", "plantgate_clients_notify_truncate"]);
  });

  it("a secret rotated through instance B is refused by instance A within the notification delay", async () => {
    const { a, b } = await twoInstances();
    expect(await b.clients.replaceSecrets("reporting", rotated)).toBe(true);
    const ms = await within2s(() => a.clients.get("reporting"), (r) => hashes(r)?.join() === "hash-two");
    expect(ms).toBeLessThan(2000);
    // A remembers the new value, and the next change is seen again.
    expect(await b.clients.addSecret("reporting", { ...rotated, id: "s3", hash: "hash-three" })).toBe(true);
    await within2s(() => a.clients.get("reporting"), (r) => hashes(r)?.join() === "hash-two,hash-three");
    expect(await b.clients.removeSecret("reporting", "s2", Date.now())).toBe(true);
    await within2s(() => a.clients.get("reporting"), (r) => hashes(r)?.join() === "hash-three");
  });

  it("a client deleted through instance B is gone from instance A, and one created again is seen", async () => {
    const { a, b } = await twoInstances();
    expect(await b.clients.delete("reporting")).toBe(true);
    await within2s(() => a.clients.get("reporting"), (r) => r === null);
    expect(await b.clients.create({ ...client, name: "Again" })).toBe(true);
    await within2s(() => a.clients.get("reporting"), (r) => r?.name === "Again");
  });

  it("changes made with plain SQL on another connection are seen (update, delete, truncate)", async () => {
    const { db, a } = await twoInstances();
    const secrets = JSON.stringify([{ id: "s9", hash: "by-hand", createdAt: 1, expiresAt: null, lastUsedAt: null }]);
    await sql(db, `update ${TABLES.clients} set secrets = '${secrets}' where client_id = 'reporting'`);
    await within2s(() => a.clients.get("reporting"), (r) => hashes(r)?.join() === "by-hand");
    await sql(db, `delete from ${TABLES.clients} where client_id = 'reporting'`);
    await within2s(() => a.clients.get("reporting"), (r) => r === null);
    expect(await a.clients.create(client)).toBe(true);
    expect(await a.clients.get("reporting")).toEqual(client);
    await sql(db, `truncate ${TABLES.clients}`);
    await within2s(() => a.clients.get("reporting"), (r) => r === null);
  });

  it("the instance that writes reads its own write at once (no wait for the notification)", async () => {
    const { a } = await twoInstances();
    expect(await a.clients.replaceSecrets("reporting", rotated)).toBe(true);
    expect(hashes(await a.clients.get("reporting"))).toEqual(["hash-two"]);
    expect(await a.clients.delete("reporting")).toBe(true);
    expect(await a.clients.get("reporting")).toBeNull();
  });

  it("another plantgate schema's notifications do not drop this one's cache", async () => {
    const { db, a } = await twoInstances();
    const other = await storage(await fresh());
    expect(await other.clients.create(client)).toBe(true);
    expect(await other.clients.delete("reporting")).toBe(true);
    await sleep(50);
    // Still A's cached (quietly stale) value: the other schema's changes named another table.
    expect((await a.clients.get("reporting"))?.name).toBe("Reporting");
    await sql(db, `update ${TABLES.clients} set name = 'Loud' where client_id = 'reporting'`);
    await within2s(() => a.clients.get("reporting"), (r) => r?.name === "Loud");
  });

  it("listening connections killed: A answers from the database meanwhile, then listens and caches again", async () => {
    const { db, a } = await twoInstances({ clientCache: { checkIntervalMs: 200 } });
    // A's and B's (pg_terminate_backend, as an administrator or a failover would).
    const killed = await sql(db, `select pg_terminate_backend(pid) as ok from pg_stat_activity where application_name = '${db.name}' and query like '%plantgate client cache%'`);
    expect(killed).toEqual([{ ok: true }, { ok: true }]);
    // The notification of this change goes to nobody in A: it must be seen all the same.
    await sql(db, `update ${TABLES.clients} set name = 'During the outage' where client_id = 'reporting'`);
    await within2s(() => a.clients.get("reporting"), (r) => r?.name === "During the outage");
    await until(() => a.clientCache?.live() === true, "the cache to listen again");
    expect((await a.clients.get("reporting"))?.name).toBe("During the outage");
    // Caching again (a quiet change is not seen) and hearing notifications again.
    await silently(db, `update ${TABLES.clients} set name = 'Quiet' where client_id = 'reporting'`);
    expect((await a.clients.get("reporting"))?.name).toBe("During the outage");
    await sql(db, `update ${TABLES.clients} set name = 'Heard' where client_id = 'reporting'`);
    await within2s(() => a.clients.get("reporting"), (r) => r?.name === "Heard");
  });

  it("triggers disabled or missing: the cache is bypassed until they are back", async () => {
    const { db, a } = await twoInstances({ clientCache: { checkIntervalMs: 50 } });
    await sql(db, `alter table ${TABLES.clients} disable trigger plantgate_clients_notify`);
    await until(() => a.clientCache?.live() === false, "the cache to notice the disabled trigger");
    // Bypassed: a change that sends no notification is seen at the next read.
    await sql(db, `update ${TABLES.clients} set name = 'Unannounced' where client_id = 'reporting'`);
    expect((await a.clients.get("reporting"))?.name).toBe("Unannounced");
    await sql(db, `alter table ${TABLES.clients} enable trigger plantgate_clients_notify`);
    await until(() => a.clientCache?.live() === true, "the cache to listen again");
    await sql(db, `update ${TABLES.clients} set name = 'Announced' where client_id = 'reporting'`);
    await within2s(() => a.clients.get("reporting"), (r) => r?.name === "Announced");
  });

  it("triggers missing at start (a database not migrated to 0009, opened with migrate: false): no cache", async () => {
    const db = await fresh();
    await (await storage(db, { clientCache: false })).clients.create(client);
    await sql(db, `drop trigger plantgate_clients_notify on ${TABLES.clients}`);
    const a = await storage(db, { migrate: false });
    expect(a.clientCache?.live()).toBe(false);
    expect((await a.clients.get("reporting"))?.name).toBe("Reporting");
    await sql(db, `update ${TABLES.clients} set name = 'Unannounced' where client_id = 'reporting'`);
    expect((await a.clients.get("reporting"))?.name).toBe("Unannounced");
  });

  it("clientCache: false opens no listening connection", async () => {
    const db = await fresh();
    const s = await storage(db, { clientCache: false });
    expect(s.clientCache).toBeUndefined();
    const listening = await sql(db, `select count(*)::int as n from pg_stat_activity where application_name = '${db.name}' and query like '%plantgate client cache%'`);
    expect(listening[0]?.n).toBe(0);
  });

  describe("a listening connection that hears nothing is found out by its probe", () => {
    /** pg.Client whose notifications can be swallowed (a half-open link, a pooler in transaction mode). */
    const deafness = () => {
      const made: Array<{ deaf: boolean }> = [];
      class Client extends pg.Client {
        readonly state = { deaf: false };
        constructor(config: pg.ClientConfig) {
          super(config);
          made.push(this.state);
        }
        override on(event: string, listener: (...args: any[]) => void): this {
          if (event !== "notification") return super.on(event as "error", listener);
          return super.on("notification", (message) => void (this.state.deaf ? undefined : listener(message)));
        }
      }
      return { Client: Client as unknown as ListenClientConstructor, made };
    };

    it("a connection that stops hearing is dropped (cache bypassed) and replaced", async () => {
      const db = await fresh();
      await storage(db, { clientCache: false });
      const { Client, made } = deafness();
      const pgCache = pgClientCache(Client, db.url, { checkIntervalMs: 50 });
      try {
        await pgCache.start();
        expect(pgCache.live()).toBe(true);
        made[0]!.deaf = true;
        await until(() => !pgCache.live(), "the deaf connection to be found out", 4000);
        await until(() => pgCache.live(), "a new connection to listen", 4000);
        expect(made.length).toBeGreaterThanOrEqual(2);
      } finally {
        await pgCache.close();
      }
    });

    it("a connection that stopped hearing is found out though the wall clock stepped back an hour while its probe was out", async () => {
      // Until 2026-12-01 the probe wait was on Date.now: a step back put the unheard probe's sentAt
      // in the future, so it was never late, no new probe went out, and the cache stayed live for
      // the step's length. It is on performance.now now.
      const db = await fresh();
      await storage(db, { clientCache: false });
      const { Client, made } = deafness();
      const pgCache = pgClientCache(Client, db.url, { checkIntervalMs: 50 });
      const realNow = Date.now.bind(Date);
      try {
        await pgCache.start();
        expect(pgCache.live()).toBe(true);
        made[0]!.deaf = true;
        // A probe goes out on the connection that no longer hears (checks every 50 ms)...
        await sleep(200);
        expect(pgCache.live()).toBe(true);
        // ...and then the wall clock steps back one hour; monotonic time (timers) runs on.
        vi.spyOn(Date, "now").mockImplementation(() => realNow() - 3_600_000);
        await until(() => !pgCache.live(), "the deaf connection to be found out", 4000);
      } finally {
        vi.restoreAllMocks();
        await pgCache.close();
      }
    });

    it("a connection that never hears its probe never serves from memory", async () => {
      const db = await fresh();
      await storage(db, { clientCache: false });
      const { Client, made } = deafness();
      const Deaf = class extends (Client as unknown as typeof pg.Client) {
        constructor(config: pg.ClientConfig) {
          super(config);
          made.at(-1)!.deaf = true;
        }
      };
      const pgCache = pgClientCache(Deaf as unknown as ListenClientConstructor, db.url, { checkIntervalMs: 50 });
      try {
        await pgCache.start();
        expect(pgCache.live()).toBe(false);
        await sleep(300);
        expect(pgCache.live()).toBe(false);
      } finally {
        await pgCache.close();
      }
    });
  });

  describe("a read racing a notification is not remembered", () => {
    it("the value loaded while a change was reported is returned but not cached", async () => {
      const db = await fresh();
      const writer = await storage(db, { clientCache: false });
      expect(await writer.clients.create(client)).toBe(true);
      const pgCache = pgClientCache(pg.Client as unknown as ListenClientConstructor, db.url, {});
      try {
        await pgCache.start();
        expect(pgCache.live()).toBe(true);
        const space = pgCache.cache.space<string>([TABLES.clients], (v) => v, 10, TABLES.clients);
        let loads = 0;
        // The load reads the old name, then (before returning it) the row changes and its
        // notification arrives: what it read must not be remembered.
        const racing = await space.get("reporting", async () => {
          loads++;
          const [row] = await sql(db, `select name from ${TABLES.clients} where client_id = 'reporting'`);
          await sql(db, `update ${TABLES.clients} set name = 'Renamed' where client_id = 'reporting'`);
          await sleep(100); // the notification's delay, generously
          return String(row!.name);
        });
        expect(racing).toBe("Reporting");
        const load = async () => {
          loads++;
          const [row] = await sql(db, `select name from ${TABLES.clients} where client_id = 'reporting'`);
          return String(row!.name);
        };
        expect(await space.get("reporting", load)).toBe("Renamed");
        expect(loads).toBe(2);
        // Without a race it is remembered: a third read loads nothing.
        expect(await space.get("reporting", load)).toBe("Renamed");
        expect(loads).toBe(2);
        // A notification about another client leaves it; one about this client drops it.
        const columns = "name, grant_types, scopes, created_at, secret_updated_at, auth_method, secrets";
        await sql(db, `insert into ${TABLES.clients} (client_id, ${columns}) select 'other', ${columns} from ${TABLES.clients} where client_id = 'reporting'`);
        await sleep(100);
        expect(await space.get("reporting", load)).toBe("Renamed");
        expect(loads).toBe(2);
        await sql(db, `update ${TABLES.clients} set name = 'Again' where client_id = 'reporting'`);
        await sleep(100);
        expect(await space.get("reporting", load)).toBe("Again");
        expect(loads).toBe(3);
      } finally {
        await pgCache.close();
      }
    });
  });
});
