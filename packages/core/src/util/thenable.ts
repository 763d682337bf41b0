/** Whether `value` is a promise or any other thenable (what a store method or a hook may return). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}
