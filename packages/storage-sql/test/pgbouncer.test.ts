import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LATEST_SCHEMA_VERSION, openSqlStorage, StorageConfigError, TransactionPoolingError, type SqlStorage } from "../src/index.js";
import { openStorageFromEnv } from "../src/env.js";
import { transactionPoolingMessage } from "../src/pooler-probe.js";
import { TABLES } from "../src/schema.js";
import { describeWithPgBouncer, detections, directDb, freePort, startPgBouncer, type Bouncer } from "./pgbouncer-support.js";
import { clientRecord, POSTGRES_URL } from "./support.js";

// plantgate's PostgreSQL storage behind PgBouncer (a Debian package; .ci/run installs it), each
// describe with a PgBouncer of its own in front of the test PostgreSQL. In transaction (or
// statement) pooling mode the storage cannot keep its guarantees, and a review on 2026-12-02 saw all
// three break there: the client cache went live and served a rotated secret for 20 s (a change by
// another instance notified an idle server connection), a write told 503 committed afterwards (the
// per-connection statement_timeout and lock_timeout held only on the server connection that ran
// the SET), and starts at once migrated twice and left the migration lock held on a pooled server
// connection. openSqlStorage now refuses such a URL at open; session mode works as directly.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every message a refusal at open may carry (which evidence shows depends on the pooler's choices). */
const REFUSALS = ["a second connection ran in the first one's server session", "a connection's statements ran in different server sessions"].map((evidence) =>
  transactionPoolingMessage("openSqlStorage's url", evidence),
);

/** `url` with a password in it (PgBouncer's auth_type = trust here never asks for it), to show no message holds it. */
const withPassword = (url: string) => url.replace("postgres://postgres@", "postgres://postgres:pw-7f3a9c@");

/**
 * Runs `body` while `clients` connections through `url` send short statements without pause (other
 * instances serving requests through the same pooler and pool).
 */
async function underLoad<T>(url: string, clients: number, body: () => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: url, max: clients });
  let stop = false;
  const loops = Array.from({ length: clients }, async () => {
    while (!stop) await pool.query("select count(*) from pg_class where relname like 'pg_%'");
  });
  try {
    await sleep(50);
    return await body();
  } finally {
    stop = true;
    await Promise.all(loops);
    await pool.end();
  }
}

/** Tables, advisory locks held and connections of database `name`, as seen directly. */
async function leftBehind(dbs: ReturnType<typeof directDb>, name: string) {
  const tables = await dbs.query(name, "select count(*)::int as n from pg_tables where schemaname = 'public'");
  const locks = await dbs.query(name, "select count(*)::int as n from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())");
  return { tables: tables[0]!.n, advisoryLocks: locks[0]!.n };
}

describeWithPgBouncer("PgBouncer in transaction pooling mode: refused at open", () => {
  let bouncer: Bouncer;
  const dbs = directDb();
  beforeAll(async () => {
    bouncer = await startPgBouncer("transaction");
  });
  afterAll(async () => {
    await bouncer?.stop();
    await dbs.end();
  });

  it("openSqlStorage fails with TransactionPoolingError, whatever the options, and leaves nothing in the database", async () => {
    const name = await dbs.fresh();
    const url = withPassword(bouncer.url(name));
    for (const options of [{}, { migrate: false }, { migrate: false, clientCache: false as const }, { queryTimeoutMs: 0 }]) {
      const error = await openSqlStorage(url, options).then(
        async (storage) => {
          await storage.close();
          return null;
        },
        (e: unknown) => e,
      );
      expect(error, JSON.stringify(options)).toBeInstanceOf(TransactionPoolingError);
      expect(error).toBeInstanceOf(StorageConfigError);
      const { name: errorName, message } = error as Error;
      expect({ errorName, known: REFUSALS.includes(message), password: message.includes("pw-7f3a9c") }).toEqual({ errorName: "TransactionPoolingError", known: true, password: false });
    }
    expect(await leftBehind(dbs, name)).toEqual({ tables: 0, advisoryLocks: 0 });
  });

  // Before: two of the three migrated beside each other (duplicate key in pg_type) and a session
  // lock was left held on a pooled server connection; every later migrating start then failed
  // after 15 minutes.
  it("three starts at once on an empty database are all refused: nothing migrated, no lock left held", async () => {
    const name = await dbs.fresh();
    const opened = await Promise.allSettled([0, 1, 2].map(() => openSqlStorage(bouncer.url(name), { clientCache: false, migrationLock: { warnAfterMs: 1000, waitMs: 20_000 } })));
    for (const o of opened) if (o.status === "fulfilled") await o.value.close();
    expect(opened.map((o) => (o.status === "rejected" ? { name: (o.reason as Error).name, known: REFUSALS.includes((o.reason as Error).message) } : "opened"))).toEqual(
      [0, 1, 2].map(() => ({ name: "TransactionPoolingError", known: true })),
    );
    expect(await leftBehind(dbs, name)).toEqual({ tables: 0, advisoryLocks: 0 });
  });

  // With migrate: false a server that cannot be reached does not fail the open (the first call
  // does, with StorageError, 503): the check then comes with the first connection that works.
  it("opened with migrate: false while nothing answered, the first call that reaches a transaction pooler fails (StorageError with the refusal as its cause) and runs nothing", async () => {
    const name = await dbs.fresh();
    const direct = new URL(POSTGRES_URL);
    direct.pathname = `/${name}`;
    await (await openSqlStorage(direct.toString(), { clientCache: false })).close();
    const port = await freePort();
    const warnings: string[] = [];
    const storage = await openSqlStorage(`postgres://postgres@127.0.0.1:${port}/${name}`, { migrate: false, clientCache: false, onWarning: (m) => warnings.push(m) });
    const later = await startPgBouncer("transaction", "", port);
    try {
      const failures: unknown[] = [];
      for (let i = 0; i < 2; i++) await storage.clients.create(clientRecord()).then(() => failures.push("created"), (e: unknown) => failures.push(e));
      expect(failures.map((e) => ({ name: (e as Error).name, cause: ((e as Error).cause as Error | undefined)?.name, known: REFUSALS.includes(((e as Error).cause as Error | undefined)?.message ?? "") }))).toEqual([
        { name: "StorageError", cause: "TransactionPoolingError", known: true },
        { name: "StorageError", cause: "TransactionPoolingError", known: true },
      ]);
      expect({ warnings: warnings.map((w) => REFUSALS.map((r) => `plantgate: ${r}`).includes(w)), rows: await dbs.query(name, `select client_id from ${TABLES.clients}`) }).toEqual({ warnings: [true], rows: [] });
    } finally {
      await storage.close();
      await later.stop();
    }
  });

  // What the CLI (exit 2) and the example servers print: this message.
  it("openStorageFromEnv says which store, why, and what to do instead, without the password", async () => {
    const name = await dbs.fresh();
    const url = withPassword(bouncer.url(name));
    const error = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: url }, { cwd: "/" }).then(
      async (storage) => {
        await storage.close();
        return null;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StorageConfigError);
    expect((error as Error).cause).toBeInstanceOf(TransactionPoolingError);
    const display = url.replace("pw-7f3a9c", "***");
    expect(REFUSALS.map((reason) => `cannot open the store at ${display}: ${reason}`)).toContain((error as Error).message);
  });

  it("the probe finds it on every open, with other clients of the pooler busy or not", { timeout: 30_000 }, async () => {
    const name = await dbs.fresh();
    const url = bouncer.url(name);
    expect(await detections(url, 40)).toBe(40);
    expect(await underLoad(url, 6, () => detections(url, 60))).toBe(60);
  });
});

describeWithPgBouncer("PgBouncer in session pooling mode: works as a direct connection", () => {
  let bouncer: Bouncer;
  const dbs = directDb();
  const open: SqlStorage[] = [];
  beforeAll(async () => {
    bouncer = await startPgBouncer("session");
  });
  afterAll(async () => {
    for (const s of open.splice(0)) await s.close().catch(() => {});
    await bouncer?.stop();
    await dbs.end();
  });
  const storage = async (url: string, options: Parameters<typeof openSqlStorage>[1] = {}) => {
    const s = await openSqlStorage(url, options);
    open.push(s);
    return s;
  };

  it("the probe never fires, through the pooler (busy or not) or directly", { timeout: 30_000 }, async () => {
    const name = await dbs.fresh();
    const direct = new URL(POSTGRES_URL);
    direct.pathname = `/${name}`;
    expect(await detections(bouncer.url(name), 40)).toBe(0);
    expect(await underLoad(bouncer.url(name), 6, () => detections(bouncer.url(name), 40))).toBe(0);
    expect(await detections(direct.toString(), 40)).toBe(0);
    expect(await underLoad(direct.toString(), 6, () => detections(direct.toString(), 40))).toBe(0);
  });

  // The client cache goes live, and a change made by another instance is seen at once.
  it("the client cache goes live, and a change by another instance is seen", async () => {
    const name = await dbs.fresh();
    const a = await storage(bouncer.url(name));
    const direct = new URL(POSTGRES_URL);
    direct.pathname = `/${name}`;
    const b = await storage(direct.toString(), { migrate: false, clientCache: false });
    expect(await b.clients.create(clientRecord())).toBe(true);
    const until = Date.now() + 12_000;
    while (!a.clientCache?.live() && Date.now() < until) await sleep(100);
    const live = a.clientCache?.live() ?? false;
    expect((await a.clients.get("reporting"))?.secrets.map((s) => s.hash)).toEqual(["hash-one"]);
    // Another instance rotates the secret (committed; the trigger NOTIFYs).
    const rotated = { id: "s2", hash: "hash-two", createdAt: 1_700_000_100_000, expiresAt: null, lastUsedAt: null };
    expect(await b.clients.replaceSecrets("reporting", rotated)).toBe(true);
    await sleep(200);
    const seen: string[] = [];
    const end = Date.now() + 1000;
    while (Date.now() < end) {
      seen.push((await a.clients.get("reporting"))?.secrets.map((s) => s.hash).join(",") ?? "null");
      await sleep(20);
    }
    expect({ live, last: seen.at(-1), stale: seen.filter((s) => s === "hash-one").length }).toEqual({ live: true, last: "hash-two", stale: 0 });
  });

  // The pool's per-connection SETs (statement_timeout, lock_timeout) hold for every statement, even
  // after PgBouncer replaced an aged server connection (server_lifetime = 1 s here): a write that
  // waits on a locked row is cancelled by the server, and nothing commits after its 503.
  it("a write that waits on a locked row past queryTimeoutMs is cancelled by the server, and does not commit after its 503", async () => {
    const aged = await startPgBouncer("session", "server_lifetime = 1");
    try {
      const name = await dbs.fresh();
      const direct = new URL(POSTGRES_URL);
      direct.pathname = `/${name}`;
      await (await openSqlStorage(direct.toString(), { clientCache: false })).close();
      const a = await storage(aged.url(name), { queryTimeoutMs: 2000, clientCache: false, migrate: false });
      expect(await a.clients.create(clientRecord())).toBe(true);
      const timeoutNow = async () => ((await a.db.executeQuery({ sql: "select current_setting('statement_timeout') as t", parameters: [], query: undefined } as never)).rows[0] as { t: string }).t;
      const before = await timeoutNow();
      await sleep(1500);
      await timeoutNow();
      const later = await timeoutNow();
      // Another session holds the client row locked for 5 s.
      const holder = new pg.Client({ connectionString: direct.toString() });
      await holder.connect();
      await holder.query("begin");
      await holder.query(`select * from ${TABLES.clients} where client_id = 'reporting' for update`);
      const started = Date.now();
      let failed: unknown = null;
      try {
        await a.clients.replaceSecrets("reporting", { id: "s2", hash: "hash-two", createdAt: 1_700_000_100_000, expiresAt: null, lastUsedAt: null });
      } catch (e) {
        failed = e;
      }
      const tookMs = Date.now() - started;
      await sleep(Math.max(0, 5000 - tookMs));
      await holder.query("commit");
      await holder.end();
      await sleep(500);
      const after = await dbs.query(name, `select secrets from ${TABLES.clients} where client_id = 'reporting'`);
      expect({ before, later, failed: (failed as Error | null)?.name, committedAfter503: JSON.stringify(after).includes("hash-two") }).toEqual({
        before: "1s",
        later: "1s",
        failed: "StorageError",
        committedAfter503: false,
      });
    } finally {
      await aged.stop();
    }
  });

  it("three starts at once on an empty database all succeed, each migration once, and no migration lock is left held", async () => {
    const name = await dbs.fresh();
    const opened = await Promise.allSettled(
      [0, 1, 2].map(() => openSqlStorage(bouncer.url(name), { clientCache: false, onWarning: () => {}, migrationLock: { warnAfterMs: 1000, waitMs: 20_000 } })),
    );
    for (const o of opened) if (o.status === "fulfilled") open.push(o.value);
    const failures = opened.flatMap((o) => (o.status === "rejected" ? [String((o.reason as Error)?.message ?? o.reason)] : []));
    const held = await dbs.query(name, "select pid from pg_locks where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())");
    const names = (await dbs.query(name, `select name from ${TABLES.migrations}`)).map((r) => String(r.name));
    expect({ failures, held, applied: names.length, distinct: new Set(names).size }).toEqual({ failures: [], held: [], applied: LATEST_SCHEMA_VERSION, distinct: LATEST_SCHEMA_VERSION });
  });
});
