/**
 * The housekeeping schedule of the example servers: runs on its interval, never overlaps itself,
 * logs counts only, survives a failed run, stops cleanly (waiting for a run in progress).
 */
import { describe, expect, it } from "vitest";
import { schedulePrune, type PruneLogger } from "../src/index.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function recorder() {
  const lines: Array<{ level: "info" | "error"; message: string; fields: Record<string, unknown> }> = [];
  const logger: PruneLogger = {
    info: (message, fields) => void lines.push({ level: "info", message, fields }),
    error: (message, fields) => void lines.push({ level: "error", message, fields }),
  };
  return { lines, logger };
}

describe("schedulePrune", () => {
  it("prunes every interval, one run at a time even when a run outlasts the interval, and logs the counts", async () => {
    const { lines, logger } = recorder();
    const spans: Array<[number, number]> = [];
    let active = 0;
    let maxActive = 0;
    const admin = {
      async prune() {
        const start = performance.now();
        maxActive = Math.max(maxActive, ++active);
        await sleep(60); // longer than the 20 ms interval
        active--;
        spans.push([start, performance.now()]);
        return { refreshTokens: spans.length, sessions: 0 };
      },
    };
    const schedule = schedulePrune(admin, { intervalSeconds: 0.02, logger });
    expect(schedule.active).toBe(true);
    await sleep(400);
    await schedule.stop();
    expect(maxActive, "runs never overlap").toBe(1);
    expect(spans.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < spans.length; i++) {
      // The next run starts only after the previous one finished plus the interval.
      expect(spans[i]![0] - spans[i - 1]![1]).toBeGreaterThanOrEqual(15);
    }
    expect(lines.length).toBe(spans.length);
    lines.forEach((line, i) => {
      // The last run may have been under way at stop(), which aborted its signal (ignored here).
      const stopped = i === lines.length - 1 && line.fields.stopped === true ? { stopped: true } : {};
      expect(line).toEqual({ level: "info", message: "plantgate prune", fields: { refreshTokens: i + 1, sessions: 0, ...stopped, durationMs: expect.any(Number) } });
    });
  });

  it("stop() waits for a run in progress and no run starts afterwards", async () => {
    const { logger } = recorder();
    let runs = 0;
    let finished = 0;
    const schedule = schedulePrune(
      {
        async prune() {
          runs++;
          await sleep(80);
          finished++;
          return {};
        },
      },
      { intervalSeconds: 0.01, logger },
    );
    await sleep(40); // the first run is in progress
    expect(runs).toBe(1);
    expect(await schedule.stop()).toBe(true);
    expect(finished, "stop resolved after the run finished").toBe(1);
    expect(schedule.active).toBe(false);
    await sleep(100);
    expect(runs, "nothing ran after stop").toBe(1);
    await schedule.stop(); // idempotent
  });

  it("stop() aborts the run's signal: a prune that honours it ends at its next batch, stop resolves true, and the run's line says stopped", async () => {
    const { lines, logger } = recorder();
    let batches = 0;
    let inRun!: () => void;
    const running = new Promise<void>((resolve) => (inRun = resolve));
    const schedule = schedulePrune(
      {
        // As core's admin.prune: a batch at a time until the signal is aborted (a backlog: never done).
        async prune(options?: { signal?: AbortSignal }) {
          while (!options?.signal?.aborted) {
            batches++;
            inRun();
            await sleep(20);
          }
          return { revokedTokens: batches * 1000, complete: false };
        },
      },
      { intervalSeconds: 0.01, logger },
    );
    await running;
    const t0 = performance.now();
    expect(await schedule.stop()).toBe(true);
    expect(performance.now() - t0, "one batch, not the backlog").toBeLessThan(200);
    expect(lines).toEqual([{ level: "info", message: "plantgate prune", fields: { revokedTokens: batches * 1000, complete: false, stopped: true, durationMs: expect.any(Number) } }]);
  });

  it("a run that does not end within stopTimeoutMs: stop resolves false with one warn line (error for a logger without warn), and a later stop waits again", async () => {
    for (const withWarn of [true, false]) {
      const { lines, logger } = recorder();
      const warned: Array<[string, Record<string, unknown>]> = [];
      let release!: () => void;
      const hung = new Promise<void>((resolve) => (release = resolve));
      let inRun!: () => void;
      const running = new Promise<void>((resolve) => (inRun = resolve));
      const schedule = schedulePrune(
        {
          // Ignores the signal: a statement that does not come back.
          async prune() {
            inRun();
            await hung;
            return { sessions: 1 };
          },
        },
        { intervalSeconds: 0.01, logger: withWarn ? { ...logger, warn: (message, fields) => void warned.push([message, fields]) } : logger, stopTimeoutMs: 100 },
      );
      await running;
      const t0 = performance.now();
      expect(await schedule.stop()).toBe(false);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(95);
      expect(await schedule.stop(), "still running: waited again, said once").toBe(false);
      const line = ["plantgate prune: the run in progress did not end within stopTimeoutMs of stop(); it is still under way", { stopTimeoutMs: 100 }];
      if (withWarn) expect({ warned, lines }).toEqual({ warned: [line], lines: [] });
      else expect(lines).toEqual([{ level: "error", message: line[0], fields: line[1] }]);
      release();
      expect(await schedule.stop()).toBe(true);
      expect((withWarn ? lines : lines.slice(1)).map((l) => l.message)).toEqual(["plantgate prune"]);
    }
  });

  it("refuses a stopTimeoutMs that is not an integer 0-2147483647", () => {
    const admin = { prune: async () => ({}) };
    for (const bad of [-1, 1.5, Number.NaN, 2_147_483_648]) {
      expect(() => schedulePrune(admin, { intervalSeconds: 1, stopTimeoutMs: bad }), String(bad)).toThrow("stopTimeoutMs must be an integer 0-2147483647");
    }
  });

  it("a failed run is logged by its message only and the schedule goes on", async () => {
    const { lines, logger } = recorder();
    let calls = 0;
    const schedule = schedulePrune(
      {
        async prune() {
          calls++;
          if (calls === 1) throw new Error("database unavailable");
          return { sessions: 2 };
        },
      },
      { intervalSeconds: 0.01, logger },
    );
    await sleep(150);
    await schedule.stop();
    expect(lines[0]).toEqual({ level: "error", message: "plantgate prune failed", fields: { error: "database unavailable" } });
    expect(lines[1]).toEqual({ level: "info", message: "plantgate prune", fields: { sessions: 2, durationMs: expect.any(Number) } });
  });

  const failing = (how: "throws" | "rejects"): PruneLogger => {
    const fail = how === "throws" ? () => { throw new Error("log sink closed"); } : async () => { throw new Error("log sink down"); };
    return { info: fail, error: fail } as PruneLogger;
  };
  it.each(["throws", "rejects"] as const)(
    "a logger that %s (a remote sink that fails: async) neither ends the schedule nor leaves a rejection behind, after a failed run too (unhandled, it ended the example servers' process; the async one until 2026-12-02)",
    async (how) => {
      const rejections: unknown[] = [];
      const onRejection = (reason: unknown) => void rejections.push(reason);
      process.on("unhandledRejection", onRejection);
      try {
        let calls = 0;
        const schedule = schedulePrune(
          {
            prune: async () => {
              // The first run fails, so the error line is logged too.
              if (calls++ === 0) throw new Error("database unavailable");
              return { sessions: 0 };
            },
          },
          { intervalSeconds: 0.01, logger: failing(how) },
        );
        await sleep(150);
        await expect(schedule.stop()).resolves.toBe(true);
        await sleep(20);
        expect(calls).toBeGreaterThanOrEqual(3);
        expect(rejections).toEqual([]);
      } finally {
        process.off("unhandledRejection", onRejection);
      }
    },
  );

  it("interval 0 turns it off: nothing ever runs", async () => {
    let runs = 0;
    const schedule = schedulePrune({ prune: async () => (runs++, {}) }, { intervalSeconds: 0, logger: recorder().logger });
    expect(schedule.active).toBe(false);
    await sleep(50);
    expect(runs).toBe(0);
    await schedule.stop();
  });

  it("refuses a negative or non-finite interval", () => {
    const admin = { prune: async () => ({}) };
    for (const bad of [-1, Number.NaN, Infinity]) {
      expect(() => schedulePrune(admin, { intervalSeconds: bad }), String(bad)).toThrow("intervalSeconds must be a non-negative number");
    }
  });
});
