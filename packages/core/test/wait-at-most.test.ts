/**
 * `waitAtMost`: the shared wait of the key reload, the `jwks_uri` fetch and the Worker's start and
 * cron events. Its own timer is cleared however the wait ends: a Worker's request leaves no timer
 * behind, and a Node process is not held open by one.
 */
import { describe, expect, it } from "vitest";
import { LATE, waitAtMost } from "../src/index.js";

/** The Node timers now pending (this test's own and vitest's among them: compared, not counted). */
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;

describe("waitAtMost", () => {
  it("a promise that settles in time: its value, and the timer is gone", async () => {
    const before = timers();
    expect(await waitAtMost(Promise.resolve("keys"), 60_000)).toBe("keys");
    expect(timers()).toBe(before);
  });

  it("a promise that rejects in time: the same rejection, and the timer is gone", async () => {
    const before = timers();
    const failure = new Error("storage down");
    await expect(waitAtMost(Promise.reject(failure), 60_000)).rejects.toBe(failure);
    expect(timers()).toBe(before);
  });

  it("a promise that never settles: LATE once the time is up, not before", async () => {
    const started = Date.now();
    expect(await waitAtMost(new Promise<never>(() => {}), 50)).toBe(LATE);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });
});
