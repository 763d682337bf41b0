/**
 * The storage as the handlers see it when tracing or an observer is on: every store method wrapped
 * once, when the options are resolved (never per request), in a span and a timing. Without a tracer
 * and an observer the storage is used as given.
 */
import type { Storage } from "../storage/types.js";
import { dropRejection, isThenable } from "../util/thenable.js";
import { activeSpan, errorType, perf, quietly, SPAN_ERROR } from "./spans.js";
import type { Observer, TraceSpan, Tracer } from "./types.js";

type AnyFunction = (...args: unknown[]) => unknown;

/** Every method of a store object, own or inherited (stores may be class instances). */
function methodNames(store: object): string[] {
  const names = new Set<string>();
  for (let o: object | null = store; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (name === "constructor") continue;
      const descriptor = Object.getOwnPropertyDescriptor(o, name);
      if (descriptor && typeof descriptor.value === "function") names.add(name);
    }
  }
  return [...names];
}

/** The stores of {@link Storage}: read once (through a getter too) and wrapped. */
const STORE_NAMES = ["clients", "accounts", "refreshTokens", "plants", "signingKeys", "attempts", "revokedTokens", "sessions", "audit", "auditPrune", "assertionJtis"] as const;

/**
 * A plain object standing in for `object`: its own enumerable properties copied as object spread
 * copies them (as before); every other member, own or inherited, string- or symbol-keyed, reaching
 * the original without being read now: an accessor as an accessor reading and writing
 * `object`'s, a method bound to `object`, any other value as it is. Until 2026-12-03 the copy was
 * object spread alone, which sees own enumerable properties only: a class's prototype getters
 * and methods were missing from it.
 */
function flatten(object: object): Record<PropertyKey, unknown> {
  const out: Record<PropertyKey, unknown> = { ...object };
  for (let o: object | null = object; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const key of Reflect.ownKeys(o)) {
      if (key === "constructor" || Object.prototype.hasOwnProperty.call(out, key)) continue;
      const descriptor = Object.getOwnPropertyDescriptor(o, key)!;
      const target = object as Record<PropertyKey, unknown>;
      if (descriptor.get !== undefined || descriptor.set !== undefined) {
        Object.defineProperty(out, key, {
          get: () => target[key],
          set: (value: unknown) => {
            target[key] = value;
          },
          enumerable: descriptor.enumerable ?? false,
          configurable: true,
        });
      } else {
        out[key] = typeof descriptor.value === "function" ? (descriptor.value as AnyFunction).bind(object) : descriptor.value;
      }
    }
  }
  return out;
}

/**
 * Only an observer (metrics, no tracer): the timing and nothing else, as lean as a wrapper can be
 * (no span, no closure per call but the two that watch the store's promise). Every storage call
 * of every request goes through it when metrics are on.
 *
 * The caller gets the store's own promise back (a native one: `then` has no side effects there),
 * and the timing is a second reaction on it (made first, so it runs first, in the same microtask
 * turn as the caller's). Returning a promise chained
 * after it instead (`result.then(...)` handing the value on) made every storage call one promise
 * resolution and one microtask later than without metrics. The reaction's own promise never
 * rejects (the rejection handler returns), so a store's rejection is seen once, by the caller.
 */
function timedMethod(store: object, fn: AnyFunction, storeName: string, operation: string, report: NonNullable<Observer["storage"]>): AnyFunction {
  const observe = (started: number, failed: boolean) => {
    try {
      dropRejection(report({ store: storeName, operation, durationMs: perf.now() - started, failed }));
    } catch {
      // An observer never changes a storage call's outcome.
    }
  };
  return (...args) => {
    const started = perf.now();
    let result: unknown;
    try {
      result = fn.apply(store, args);
    } catch (error) {
      observe(started, true);
      throw error;
    }
    if (result instanceof Promise && Object.getPrototypeOf(result) === Promise.prototype) {
      result.then(
        () => observe(started, false),
        () => observe(started, true),
      );
      return result;
    }
    if (!isThenable(result)) {
      observe(started, false);
      return result;
    }
    // Any other thenable is asked once, as the caller would (a query builder runs its query on `then`).
    return result.then(
      (value) => {
        observe(started, false);
        return value;
      },
      (error: unknown) => {
        observe(started, true);
        throw error;
      },
    );
  };
}

function wrapMethod(store: object, storeName: string, operation: string, tracer: Tracer | undefined, observer: Observer | undefined): AnyFunction {
  const fn = (store as Record<string, AnyFunction>)[operation]!;
  const report = observer?.storage?.bind(observer);
  // instrumentStorage wraps only with a tracer or an observer: without a tracer, the timing alone.
  if (tracer === undefined) return report !== undefined ? timedMethod(store, fn, storeName, operation, report) : (...args) => fn.apply(store, args);
  const spanName = `plantgate.storage ${storeName}.${operation}`;
  const attributes = { "db.collection.name": storeName, "db.operation.name": operation };
  // `span` is undefined when the tracer threw starting it; a span call that throws is ignored (a
  // tracer never changes a storage call's outcome).
  const call = (args: unknown[], span: TraceSpan | undefined): unknown => {
    const started = report ? perf.now() : 0;
    const settle = (failed: boolean, error?: unknown) => {
      if (span !== undefined) {
        if (failed) {
          quietly(() => {
            span.setAttribute("error.type", errorType(error));
            span.setStatus({ code: SPAN_ERROR });
          });
        }
        // Ended whatever the calls above did (a setAttribute that threw left it open until 2026-11-30).
        quietly(() => span.end());
      }
      if (report) {
        try {
          dropRejection(report({ store: storeName, operation, durationMs: perf.now() - started, failed }));
        } catch {
          // An observer never changes a storage call's outcome.
        }
      }
    };
    let result: unknown;
    try {
      result = fn.apply(store, args);
    } catch (error) {
      settle(true, error);
      throw error;
    }
    if (!isThenable(result)) {
      settle(false);
      return result;
    }
    return result.then(
      (value) => {
        settle(false);
        return value;
      },
      (error: unknown) => {
        settle(true, error);
        throw error;
      },
    );
  };
  // The audit trail's writes run after the answer, in whatever request's context queued the
  // events (the drain of a step's events): a trace of their own, not a child of an ended span.
  const spanOptions = storeName === "audit" && operation === "append" ? { kind: 2 as const, attributes, root: true } : { kind: 2 as const, attributes };
  return (...args) => activeSpan(tracer, spanName, spanOptions, (span) => call(args, span));
}

/** A store with each method wrapped; other members (a class's accessors too) reaching the store's own. */
function wrapStore(store: object, storeName: string, tracer: Tracer | undefined, observer: Observer | undefined): object {
  const wrapped = flatten(store);
  for (const name of methodNames(store)) wrapped[name] = wrapMethod(store, storeName, name, tracer, observer);
  return wrapped;
}

/**
 * The storage with every store's methods wrapped in a span (`plantgate.storage clients.get`,
 * with `db.collection.name` and `db.operation.name`) and timed for `observer.storage`. Members
 * of the storage that are not store objects (functions, strings) are kept as they are.
 */
export function instrumentStorage(storage: Storage, tracer: Tracer | undefined, observer: Observer | undefined): Storage {
  if (tracer === undefined && observer?.storage === undefined) return storage;
  // Every member reaches the original, a class's prototype getters included: until 2026-12-03
  // this copied own enumerable properties only, and a storage class exposing its stores through
  // getters lost them all as soon as metrics or tracing were on (the start failed; without them
  // it worked).
  const out = flatten(storage);
  // The stores: every own enumerable object member (as before), and each of Storage's store names
  // wherever it is defined (a getter of the class is read here, once; no other member is read).
  const names = new Set<string>([...Object.keys(storage), ...STORE_NAMES]);
  for (const name of names) {
    const value = (storage as unknown as Record<string, unknown>)[name];
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      Object.defineProperty(out, name, { value: wrapStore(value, name, tracer, observer), enumerable: true, writable: true, configurable: true });
    }
  }
  return out as unknown as Storage;
}
