/** What {@link waitAtMost} resolves to when the promise has not settled in time. */
export const LATE: unique symbol = Symbol("late");

/**
 * Waits for `promise` at most `ms` milliseconds, on a timer of the caller's own (cleared however
 * the wait ends): its value, or {@link LATE} once the time is up; a rejection is passed on as it is.
 * The promise itself is not cancelled and may still settle later.
 *
 * Why a timer of one's own: in workerd, work shared by several requests (the isolate's start, a
 * key reload, a `jwks_uri` fetch) runs in the context of the request that began it, and its own
 * timers go with that context. Should the context go (the request cancelled, or found hung), the
 * shared promise never settles; each waiter bounds its wait on a timer of its own context.
 *
 * `ms` is given to `setTimeout` as it is: 0 or less ends the wait at the next timer tick, unless the
 * promise has settled by then; keep it at most 2^31-1 (a longer delay fires at once).
 *
 * @example
 * const app = await waitAtMost(starting, 30_000);
 * if (app === LATE) throw new StorageError("the start did not finish within 30000 ms");
 */
export async function waitAtMost<T>(promise: PromiseLike<T>, ms: number): Promise<T | typeof LATE> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<typeof LATE>((resolve) => (timer = setTimeout(() => resolve(LATE), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
