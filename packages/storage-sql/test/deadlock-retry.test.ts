import pg from "pg";
import { describe, expect, it } from "vitest";
import { againOnDeadlock, DEADLOCK_ATTEMPTS, deadlockPause } from "../src/errors.js";
import { describeIfReachable, POSTGRES_URL, postgresEngine, probePostgres } from "./support.js";

/** A driver error as mysql2 reports InnoDB's deadlock victim. */
const deadlock = () => Object.assign(new Error("Deadlock found when trying to get lock; try restarting transaction"), { code: "ER_LOCK_DEADLOCK", errno: 1213 });

describe("againOnDeadlock (MySQL/MariaDB and PostgreSQL deadlock victims)", () => {
  it("runs the work again after each deadlock, pausing between attempts, and returns its value", async () => {
    const pauses: number[] = [];
    let calls = 0;
    const value = await againOnDeadlock(
      async () => {
        calls++;
        if (calls < DEADLOCK_ATTEMPTS) throw deadlock();
        return "done";
      },
      { pause: async (attempt) => void pauses.push(attempt) },
    );
    expect(value).toBe("done");
    expect(DEADLOCK_ATTEMPTS).toBe(8);
    expect(calls).toBe(DEADLOCK_ATTEMPTS);
    expect(pauses).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("throws the last deadlock after DEADLOCK_ATTEMPTS attempts, without a pause after it", async () => {
    const pauses: number[] = [];
    let calls = 0;
    const last = deadlock();
    await expect(
      againOnDeadlock(
        async () => {
          calls++;
          throw calls === DEADLOCK_ATTEMPTS ? last : deadlock();
        },
        { pause: async (attempt) => void pauses.push(attempt) },
      ),
    ).rejects.toBe(last);
    expect(calls).toBe(DEADLOCK_ATTEMPTS);
    expect(pauses).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("throws any other error at once", async () => {
    const other = Object.assign(new Error("Duplicate entry"), { code: "ER_DUP_ENTRY", errno: 1062 });
    let calls = 0;
    const pauses: number[] = [];
    await expect(
      againOnDeadlock(
        async () => {
          calls++;
          throw other;
        },
        { pause: async (attempt) => void pauses.push(attempt) },
      ),
    ).rejects.toBe(other);
    expect([calls, pauses]).toEqual([1, []]);
  });

  it("a MySQL lock-wait timeout (1205) is run again only with lockWaitTimeouts, and once only (each waited the server's whole lock wait); deadlocks between them still count to 8", async () => {
    const lockWait = () => Object.assign(new Error("Lock wait timeout exceeded; try restarting transaction"), { code: "ER_LOCK_WAIT_TIMEOUT", errno: 1205 });
    const run = async (options: { lockWaitTimeouts?: boolean }, failures: Array<() => Error>) => {
      let calls = 0;
      const pauses: number[] = [];
      const outcome = await againOnDeadlock(
        async () => {
          calls++;
          const failure = failures[calls - 1];
          if (failure !== undefined) throw failure();
          return "done";
        },
        { ...options, pause: async (attempt) => void pauses.push(attempt) },
      ).catch((e: unknown) => (e as { code?: string }).code);
      return { outcome, calls, pauses };
    };
    expect(await run({}, [lockWait])).toEqual({ outcome: "ER_LOCK_WAIT_TIMEOUT", calls: 1, pauses: [] });
    expect(await run({ lockWaitTimeouts: false }, [lockWait])).toEqual({ outcome: "ER_LOCK_WAIT_TIMEOUT", calls: 1, pauses: [] });
    expect(await run({ lockWaitTimeouts: true }, [lockWait])).toEqual({ outcome: "done", calls: 2, pauses: [1] });
    // A second lock-wait timeout is thrown (it was run again up to 8 times: 8 whole lock waits).
    expect(await run({ lockWaitTimeouts: true }, [lockWait, lockWait, lockWait])).toEqual({ outcome: "ER_LOCK_WAIT_TIMEOUT", calls: 2, pauses: [1] });
    expect(await run({ lockWaitTimeouts: true }, [deadlock, lockWait, deadlock, deadlock])).toEqual({ outcome: "done", calls: 5, pauses: [1, 2, 3, 4] });
  });

  it("deadlockPause waits a random time up to 2^attempt ms, capped at 100 ms", async () => {
    const realRandom = Math.random;
    const realSetTimeout = globalThis.setTimeout;
    const asked: number[] = [];
    try {
      Math.random = () => 0.999;
      globalThis.setTimeout = ((fn: () => void, ms: number) => {
        asked.push(ms);
        return realSetTimeout(fn, 0);
      }) as typeof setTimeout;
      for (let attempt = 1; attempt < DEADLOCK_ATTEMPTS; attempt++) await deadlockPause(attempt);
    } finally {
      Math.random = realRandom;
      globalThis.setTimeout = realSetTimeout;
    }
    expect(asked.map((ms) => Math.round(ms * 1000) / 1000)).toEqual([1.998, 3.996, 7.992, 15.984, 31.968, 63.936, 99.9]);
  });
});

const pgProblem = await probePostgres();

describeIfReachable("postgres: a deadlock victim (40P01) is run again", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => {
  const engine = postgresEngine();

  it("two transactions take two rows in opposite order; the one PostgreSQL aborts (40P01) is run again whole and both apply once", async () => {
    const fresh = await engine.fresh();
    const holder = new pg.Client(fresh.url);
    const victim = new pg.Client(fresh.url);
    const watcher = new pg.Client(POSTGRES_URL);
    let holderDone: Promise<unknown> | undefined;
    try {
      await Promise.all([holder.connect(), victim.connect(), watcher.connect()]);
      await holder.query("create table t (id int primary key, v int not null)");
      await holder.query("insert into t values (1, 0), (2, 0)");
      // The victim checks for a deadlock after 20 ms of waiting, the holder only after 10 s: the
      // victim is the one PostgreSQL aborts.
      await holder.query("set deadlock_timeout = '10s'");
      await victim.query("set deadlock_timeout = '20ms'");
      await holder.query("begin");
      await holder.query("update t set v = v + 1 where id = 1");
      const holderWaits = async () => {
        for (;;) {
          const { rows } = await watcher.query("select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'", [fresh.name]);
          if (rows[0].n === 1) return;
          await new Promise((r) => setTimeout(r, 5));
        }
      };
      const errors: unknown[] = [];
      let calls = 0;
      await againOnDeadlock(async () => {
        calls++;
        await victim.query("begin");
        try {
          await victim.query("update t set v = v + 1 where id = 2");
          if (holderDone === undefined) {
            // The holder now waits for row 2 (the victim's) while holding row 1, which the
            // victim asks for next: a cycle.
            holderDone = holder.query("update t set v = v + 1 where id = 2").then(() => holder.query("commit"));
            await holderWaits();
          }
          await victim.query("update t set v = v + 1 where id = 1");
          await victim.query("commit");
        } catch (e) {
          errors.push(e);
          await victim.query("rollback");
          throw e;
        }
      });
      await holderDone;
      expect(calls).toBe(2);
      expect(errors.map((e) => (e as { code?: string }).code)).toEqual(["40P01"]);
      expect((await watcher.query(`select id, v from "${fresh.name}".t order by id`)).rows).toEqual([
        { id: 1, v: 2 },
        { id: 2, v: 2 },
      ]);
    } finally {
      await victim.query("rollback").catch(() => {});
      await holderDone?.catch(() => {});
      await Promise.all([holder.end(), victim.end(), watcher.end()].map((p) => p.catch(() => {})));
      await fresh.drop();
    }
  });
});
