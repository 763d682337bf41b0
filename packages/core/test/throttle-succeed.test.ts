/**
 * Throttle `succeed` after a success resets (or refunds) every key even when one of them fails:
 * before 2026-11-30 it stopped at the first key whose reset threw, so the keys after it stayed
 * counted (a user signing in correctly still drifted towards a lock-out). The first failure is
 * still thrown, so the callers (credentials.ts, token-endpoint.ts) warn as before.
 *
 * The store is the real memory attempt store; its `reset` is wrapped to fail for named storage
 * keys only (a fault injector, standing for a Redis whose ACL refuses DEL on some keys or a
 * database failing on one row).
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, type AttemptStore } from "../src/index.js";
import { StorageError } from "../src/errors/index.js";
import { createThrottle, type ThrottleKey } from "../src/security/throttle.js";

const NOW = 1_800_000_000_000;
const SETTINGS = { maxFailures: 10, windowSeconds: 900 };
const once = (key: string) => ({ key, count: 1, windowStart: NOW });

function faultyStore(): { store: AttemptStore; failing: Map<string, Error>; resets: string[] } {
  const real = createMemoryStorage().attempts;
  const failing = new Map<string, Error>();
  const resets: string[] = [];
  const store: AttemptStore = {
    increment: (key, now, windowMs) => real.increment(key, now, windowMs),
    get: (key) => real.get(key),
    reset: async (key) => {
      resets.push(key);
      const error = failing.get(key);
      if (error) throw error;
      return real.reset(key);
    },
    refund: (key, windowStart, count) => real.refund!(key, windowStart, count),
    deleteExpired: (before, limit) => real.deleteExpired(before, limit),
  };
  return { store, failing, resets };
}

describe("throttle succeed: every key is reset even when one fails", () => {
  it("after attempt: the first key's reset fails; the second key is still reset and the budget still refunded; the StorageError is thrown", async () => {
    const { store, failing } = faultyStore();
    const throttle = createThrottle(store, () => NOW, SETTINGS);
    const keys: ThrottleKey[] = [
      { key: "ui", factor: 1 },
      { key: "u", factor: 5 },
      { key: "budget", factor: 10, onSuccess: "refund" },
    ];
    await throttle.attempt([{ key: "budget", factor: 10 }]); // another username's failure on the budget
    const counted = await throttle.attempt(keys);
    const [ui, u, budget] = counted.counted.map((c) => c.storageKey);
    const down = new StorageError("NOPERM this user has no permissions to run the 'del' command");
    failing.set(ui!, down);
    await expect(throttle.succeed(counted)).rejects.toBe(down);
    expect([await store.get(ui!), await store.get(u!), await store.get(budget!)]).toEqual([
      once(ui!),
      null,
      once(budget!),
    ]);
  });

  it("after check: the first key's reset fails; the second key is still reset; the StorageError is thrown", async () => {
    const { store, failing } = faultyStore();
    const throttle = createThrottle(store, () => NOW, SETTINGS);
    const checked = await throttle.check(["a", "b"]);
    await throttle.fail(checked);
    const again = await throttle.check(["a", "b"]);
    expect(again.anyCounted).toBe(true);
    const down = new StorageError("reset failed");
    failing.set(again.storageKeys[0]!, down);
    await expect(throttle.succeed(again)).rejects.toBe(down);
    expect([await store.get(again.storageKeys[0]!), await store.get(again.storageKeys[1]!)]).toEqual([once(again.storageKeys[0]!), null]);
  });

  it("plain keys: two of three resets fail; every key is tried, the third is reset, and the FIRST failure is thrown", async () => {
    const { store, failing, resets } = faultyStore();
    const throttle = createThrottle(store, () => NOW, SETTINGS);
    await throttle.fail(["a", "b", "c"]);
    const { storageKeys } = await throttle.check(["a", "b", "c"]);
    const first = new StorageError("first");
    failing.set(storageKeys[0]!, first);
    failing.set(storageKeys[1]!, new StorageError("second"));
    await expect(throttle.succeed(["a", "b", "c"])).rejects.toBe(first);
    expect(resets).toEqual(storageKeys);
    expect(await Promise.all(storageKeys.map((k) => store.get(k)))).toEqual([once(storageKeys[0]!), once(storageKeys[1]!), null]);
  });
});
