/**
 * The shared command timeout (deadlines.ts) on its own, with real timers: which commands carry
 * their slot's AbortSignal (those that may wait to be written), and when they fail.
 */
import { describe, expect, it } from "vitest";
import { CommandTimeoutError, deadlines, SIGNAL_FROM } from "../src/deadlines.js";

const never = () => new Promise<never>(() => {});

describe("deadlines", () => {
  it(`a command carries its slot's signal once ${SIGNAL_FROM} are pending (it may then wait to be written), not before; fewer pending, none`, async () => {
    const within = deadlines(200);
    const signals: (AbortSignal | null)[] = [];
    const calls = Array.from({ length: SIGNAL_FROM + 2 }, () =>
      within((signal) => {
        signals.push(signal);
        return never();
      }).catch((e: unknown) => e),
    );
    expect(signals.slice(0, SIGNAL_FROM)).toEqual(Array.from({ length: SIGNAL_FROM }, () => null));
    const [a, b] = signals.slice(SIGNAL_FROM);
    expect(a).toBeInstanceOf(AbortSignal);
    expect(b).toBe(a);
    expect(a!.aborted).toBe(false);
    const failures = await Promise.all(calls);
    expect(failures.every((f) => f instanceof CommandTimeoutError)).toBe(true);
    // Aborted when the slot expired: node-redis then drops the commands still waiting to be written.
    expect(a!.aborted).toBe(true);
  });

  it("after a slot expired with commands pending, every command carries its signal until a slot expires with none pending", async () => {
    const within = deadlines(40);
    await within(never).catch(() => {});
    let signal: AbortSignal | null = null;
    await within((s) => ((signal = s), Promise.resolve()));
    expect(signal).toBeInstanceOf(AbortSignal);
    // That slot (answered in time) expires with nothing pending: back to no signal.
    await new Promise((resolve) => setTimeout(resolve, 80));
    await within((s) => ((signal = s), Promise.resolve()));
    expect(signal).toBeNull();
  });

  it("a slot's signal with many listeners (a burst of commands waiting to be written) prints no MaxListenersExceededWarning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      const within = deadlines(1000);
      const settle: (() => void)[] = [];
      const calls = Array.from({ length: 100 }, () =>
        within((signal) => {
          signal?.addEventListener("abort", () => {}, { once: true });
          return new Promise<void>((resolve) => settle.push(resolve));
        }),
      );
      for (const resolve of settle) resolve();
      await Promise.all(calls);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(warnings).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
