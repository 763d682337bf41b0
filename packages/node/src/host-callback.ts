/**
 * Calls a host's callback (a logger, `onError`) so that neither its throw nor the rejection of an
 * `async` one (a log sink or error tracker whose send fails) leaves this package: an unhandled
 * rejection ends a Node process (`--unhandled-rejections=throw`, the default). Until 2026-12-02 a
 * throw was caught and a rejection was not.
 */
export function callHost(call: () => unknown): void {
  try {
    dropRejection(call());
  } catch {
    // Nothing left to tell it with.
  }
}

const ignore = (): void => undefined;

/**
 * A copy of `@plantgate/core`'s `dropRejection` (core's src/util/thenable.ts, which
 * `@plantgate/observability`'s `observers(...list)` imports): this package depends on nothing of
 * ours at run time, core included (it declares the app's shape itself, so any Web handler can be
 * served), so it cannot import it. Keep the two alike.
 */
function dropRejection(value: unknown): void {
  if (typeof value !== "object" || value === null) return;
  try {
    if (typeof (value as { then?: unknown }).then === "function") (value as PromiseLike<unknown>).then(undefined, ignore);
  } catch {
    // A thenable whose then throws: nothing was left pending.
  }
}
