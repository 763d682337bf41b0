/**
 * Calls a host's callback (a logger, `onError`) so that neither its throw nor the rejection of an
 * `async` one (a log sink or error tracker whose send fails) leaves this package: an unhandled
 * rejection ends a Node process (`--unhandled-rejections=throw`, the default). Until 2026-12-02 a
 * throw was caught and a rejection was not.
 */
export function callHost(call: () => unknown): void {
  try {
    const result = call();
    if (typeof result === "object" && result !== null && typeof (result as { then?: unknown }).then === "function") {
      (result as PromiseLike<unknown>).then(undefined, () => undefined);
    }
  } catch {
    // Nothing left to tell it with.
  }
}
