/** Whether `value` is a promise or any other thenable (what a store method or a hook may return). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

const ignore = (): void => undefined;

/**
 * Drops a rejection of what a host's hook returned (an `async` hook whose push failed): a hook that
 * throws is caught where it is called, but a rejected promise nobody handles ends a Node process
 * (`--unhandled-rejections=throw`, the default). Anything that is not a thenable is left alone, and
 * so is a thenable whose `then` throws (nothing was left pending). It makes no closure per call
 * (observer hooks run on every request). Until 2026-12-02 the observer's hooks and the tracer's calls
 * dropped throws only. `@plantgate/observability`'s `observers(...list)` uses it for each observer.
 *
 * @example
 * try {
 *   dropRejection(hook(observation)); // an async hook's rejection is dropped...
 * } catch {
 *   // ...and a sync one's throw is caught here
 * }
 */
export function dropRejection(value: unknown): void {
  if (typeof value !== "object" || value === null) return;
  try {
    if (typeof (value as { then?: unknown }).then === "function") (value as PromiseLike<unknown>).then(undefined, ignore);
  } catch {
    // A thenable whose then throws: nothing was left pending.
  }
}
