/**
 * `composedHookResult`: an `onEvent` hook standing for several hands core its parts, which core
 * follows one by one (flushEvents waits for each, each rejection is logged on its own), whatever
 * the parts are: none, values, thenables that never settle, composed results themselves, or a
 * hostile array; a result core cannot read the parts of is followed as one. No rejection is left
 * unhandled (vitest fails a run on one).
 */
import { describe, expect, it } from "vitest";
import { composedHookResult, createPlantgate, type EventHook } from "../src/index.js";

const HOOK_PARTS = Symbol.for("plantgate.eventHookParts");
const never = () => new Promise<void>(() => {});
const later = (ms: number, fail?: string) => new Promise<void>((resolve, reject) => setTimeout(() => (fail === undefined ? resolve() : reject(new Error(fail))), ms));
/** The combined result as eventHooks makes it: settled once every part has, rejecting with the first failure. */
const combine = (parts: PromiseLike<unknown>[]) =>
  Promise.allSettled(parts).then((results) => {
    for (const r of results) if (r.status === "rejected") throw r.reason;
  });

/** An app whose `onEvent` is `hook`; `failures` holds the hook failures its logger was told, as "message: error". */
function appWith(hook: EventHook) {
  const failures: string[] = [];
  const app = createPlantgate({
    issuer: "https://hooks.plantgate.test",
    logger: { error: (message: string, context?: unknown) => void failures.push(`${message}: ${(context as { error?: string } | undefined)?.error}`), warn() {} },
    onEvent: hook,
  });
  // One event: client.created.
  const emit = () => app.admin.createClient({ clientId: "c1" });
  return { app, failures, emit };
}

describe("composedHookResult", () => {
  it("each part is waited for and each failure logged as it happens; a value part counts as done", async () => {
    let slowDone = false;
    const { app, failures, emit } = appWith(() => {
      const parts = [later(30), Promise.reject(new Error("fast failed")), 42 as unknown as PromiseLike<unknown>, later(80).then(() => void (slowDone = true))];
      return composedHookResult(combine(parts), parts);
    });
    await emit();
    expect(await app.flushEvents(10)).toBe(1);
    expect(failures).toEqual(["onEvent hook failed: fast failed"]);
    expect(await app.flushEvents()).toBe(0);
    expect(slowDone).toBe(true);
    // Logged once: the combined result's rejection (the same failure) is not reported again.
    expect(failures).toEqual(["onEvent hook failed: fast failed"]);
  });

  it("no parts: done at once, even when the combined result never settles (core follows the parts only)", async () => {
    const { app, failures, emit } = appWith(() => composedHookResult(never(), []));
    await emit();
    expect(await app.flushEvents(100)).toBe(0);
    expect(failures).toEqual([]);
  });

  it("a composed part is followed part by part too (eventHooks inside eventHooks): a hung part hides no failure", async () => {
    const { app, failures, emit } = appWith(() => {
      const inner = [never(), Promise.reject(new Error("inner sink failed"))];
      const outer = [Promise.resolve(), composedHookResult(combine(inner), inner)];
      return composedHookResult(combine(outer), outer);
    });
    await emit();
    expect(await app.flushEvents(100)).toBe(1);
    expect(failures).toEqual(["onEvent hook failed: inner sink failed"]);
  });

  it("parts that cannot be read (a throwing getter, a proxy whose length throws): reported, and the result followed as one", async () => {
    const getterThrows = () => {
      const combined = later(10, "combined failed");
      Object.defineProperty(combined, HOOK_PARTS, {
        get() {
          throw new Error("parts getter failed");
        },
      });
      return combined;
    };
    const lengthThrows = () => {
      const combined = later(10, "combined failed");
      const parts = new Proxy([] as unknown[], {
        get(target, key) {
          if (key === "length") throw new Error("length failed");
          return Reflect.get(target, key) as unknown;
        },
      });
      Object.defineProperty(combined, HOOK_PARTS, { value: parts });
      return combined;
    };
    for (const [hook, cause] of [[getterThrows, "parts getter failed"], [lengthThrows, "length failed"]] as const) {
      const { app, failures, emit } = appWith(hook);
      await emit();
      expect(await app.flushEvents(1000)).toBe(0);
      expect(failures).toEqual([`onEvent hook failed: ${cause}`, "onEvent hook failed: combined failed"]);
    }
  });

  it("a proxy list whose `slice` species or iterator answers something else: its parts are read index by index, as the length said (a `{}` species threw in the drain's microtask, an unhandled rejection, until a review of 2026-12-03)", async () => {
    const hook = () => {
      const part = later(5, "the part failed");
      const combined = combine([part]);
      const parts = new Proxy([part] as unknown[], {
        get(target, key, receiver) {
          if (key === "constructor") return { [Symbol.species]: function () { return {}; } };
          if (key === Symbol.iterator) return function* () { yield 42; };
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
      Object.defineProperty(combined, HOOK_PARTS, { value: parts });
      return combined;
    };
    const { app, failures, emit } = appWith(hook);
    await emit();
    expect(await app.flushEvents(1000)).toBe(0);
    expect(failures).toEqual(["onEvent hook failed: the part failed"]);
  });

  it("a host's own array changed while its parts are followed: the parts as they were when the hook returned are followed", async () => {
    const { app, failures, emit } = appWith(() => {
      const last = later(20);
      let popped = false;
      // A thenable whose `then` is read through a getter that takes the array's last part away.
      const first = {
        get then() {
          if (!popped) {
            popped = true;
            parts.pop();
          }
          return (resolve: () => void) => resolve();
        },
      };
      const parts: unknown[] = [first, last];
      const combined = combine([last]);
      Object.defineProperty(combined, HOOK_PARTS, { value: parts });
      return combined;
    });
    await emit();
    expect(await app.flushEvents(1000)).toBe(0);
    expect(failures).toEqual([]);
  });

  it("more than 1024 parts: the result is followed as one (its rejection logged once)", async () => {
    const { app, failures, emit } = appWith(() => {
      const parts = Array.from({ length: 1025 }, (_, i) => (i === 7 ? Promise.reject(new Error("part 7 failed")) : Promise.resolve()));
      return composedHookResult(combine(parts), parts);
    });
    await emit();
    expect(await app.flushEvents(1000)).toBe(0);
    expect(failures).toEqual(["onEvent hook failed: part 7 failed"]);
  });

  it("called twice on one promise replaces its parts; on a frozen promise it returns it as it is (no throw)", async () => {
    const shared = Promise.resolve();
    expect(composedHookResult(shared, [later(5)])).toBe(shared);
    expect(composedHookResult(shared, [])).toBe(shared);
    expect((shared as unknown as Record<symbol, unknown>)[HOOK_PARTS]).toEqual([]);
    const frozen = Object.freeze(Promise.resolve());
    expect(composedHookResult(frozen, [later(5)])).toBe(frozen);
    expect((frozen as unknown as Record<symbol, unknown>)[HOOK_PARTS]).toBeUndefined();
  });
});
