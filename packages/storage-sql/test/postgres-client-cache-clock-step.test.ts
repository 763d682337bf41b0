import pg from "pg";
import { afterEach, expect, it, vi } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { pgClientCache, type ListenClientConstructor } from "../src/pg-client-cache.js";
import { describeIfReachable, POSTGRES_URL, postgresEngine, probePostgres, type FreshDatabase } from "./support.js";

// The client cache's probe wait was measured on the wall clock (Date.now) until 2026-12-01: a wall
// clock stepped back (an NTP correction, a restored VM, an operator's `date`) put the probe's sentAt
// in the future, so an unheard probe was never late, no new probe went out, and a connection that
// stopped hearing (half-open) kept the cache live, serving changed and deleted clients, for as long
// as the step. It is measured on performance.now now.

const problem = await probePostgres();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, what: string, ms: number): Promise<void> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describeIfReachable("postgres client cache, wall clock stepped back", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", problem, () => {
  const engine = postgresEngine();
  const open: SqlStorage[] = [];
  const dbs: FreshDatabase[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const s of open.splice(0)) await s.close();
    for (const db of dbs.splice(0)) await db.drop();
  });

  /** pg.Client whose notifications can be swallowed (a half-open link). */
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

  it("a connection that stopped hearing is found out though the clock stepped back an hour while its probe was out", async () => {
    const db = await engine.fresh();
    dbs.push(db);
    open.push(await openSqlStorage(db.url, { clientCache: false }));
    const { Client, made } = deafness();
    const pgCache = pgClientCache(Client, db.url, { checkIntervalMs: 50 });
    try {
      await pgCache.start();
      expect(pgCache.live()).toBe(true);
      made[0]!.deaf = true;
      // A probe goes out on the connection that no longer hears (checks every 50 ms)...
      await sleep(200);
      expect(pgCache.live()).toBe(true);
      // ...and then the wall clock steps back one hour; monotonic time (timers, performance.now) runs on.
      const realNow = Date.now.bind(Date);
      vi.spyOn(Date, "now").mockImplementation(() => realNow() - 3_600_000);
      // Without the step: found out within max(checkIntervalMs, 2 s) plus a check (the test beside
      // this one, postgres-client-cache.test.ts, waits 4 s).
      await until(() => !pgCache.live(), "the deaf connection to be found out", 4000);
    } finally {
      await pgCache.close();
    }
  });
});
