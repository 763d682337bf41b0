import { describe, expect, it } from "vitest";
import { againOnDeadlock, DEADLOCK_ATTEMPTS, deadlockPause } from "../src/errors.js";

/** A driver error as mysql2 reports InnoDB's deadlock victim. */
const deadlock = () => Object.assign(new Error("Deadlock found when trying to get lock; try restarting transaction"), { code: "ER_LOCK_DEADLOCK", errno: 1213 });

describe("againOnDeadlock (MySQL/MariaDB deadlock victims)", () => {
  it("runs the work again after each deadlock, pausing between attempts, and returns its value", async () => {
    const pauses: number[] = [];
    let calls = 0;
    const value = await againOnDeadlock(
      async () => {
        calls++;
        if (calls < DEADLOCK_ATTEMPTS) throw deadlock();
        return "done";
      },
      async (attempt) => void pauses.push(attempt),
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
        async (attempt) => void pauses.push(attempt),
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
        async (attempt) => void pauses.push(attempt),
      ),
    ).rejects.toBe(other);
    expect([calls, pauses]).toEqual([1, []]);
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
