// Command timeouts without a timer per command.
//
// node-redis 6 arms `AbortSignal.timeout(commandOptions.timeout)` for every command (default 5 s)
// and removes its listener once the command is written to the socket (so its timeout covers only
// a command still waiting to be written: a hung server holds a written one without end). On the client-credentials path that is one
// AbortSignal, one timer and two EventTarget listener changes per token request: measured at
// about 20 µs of CPU per command on the 2-core bench machine (EVALSHA of the throttle read:
// ~25 µs with it, ~5 µs without), most of the Redis cost of a request. The hot stores therefore
// send their scripts with node-redis's per-command timeout off (`withCommandOptions({ timeout: 0 })`)
// and keep the same bound here: commands started within one slot (a quarter of the timeout) share
// one timer, which rejects those still pending when the slot's youngest is `timeoutMs` old. A
// command is thus refused after between `timeoutMs` and `timeoutMs` + one slot, never earlier.
// The slot's commands share one AbortSignal too, aborted then: node-redis drops those not yet
// written to the socket, as its own timeout does. The hot stores hand the signal over only once a
// slot has expired with commands still pending (Redis slow or hung) until one expires with none:
// node-redis adds and removes an abort listener per command that carries one, which cost about 15%
// of client-credentials throughput on PostgreSQL + Redis in an A/B (2026-11-29).
//
// As with node-redis's own timeout of a command already written to the socket, the late reply is
// still read (and dropped) by the client, which keeps the replies in order.

/** A command that got no reply within the timeout. */
export class CommandTimeoutError extends Error {
  override readonly name = "CommandTimeoutError";
}

/** Runs promises under one shared timeout; `start` gets the signal that is aborted when its slot expires. @internal */
export type Deadline = <T>(start: (signal: AbortSignal) => Promise<T>) => Promise<T>;

/** A {@link Deadline} of `timeoutMs` (see the module comment). @internal */
export function deadlines(timeoutMs: number, now: () => number = () => performance.now(), onExpired?: (failed: number) => void): Deadline {
  const slotMs = Math.max(1, Math.ceil(timeoutMs / 4));
  type Fail = (error: Error) => void;
  interface Slot {
    openedAt: number;
    pending: Set<Fail>;
    controller: AbortController;
  }
  let open: Slot | null = null;

  const slot = (): Slot => {
    const at = now();
    // Joined only within `slotMs` of its opening, by the clock rather than a timer: after the event
    // loop stalled (a long handler, a GC pause), a timer meant to close the slot had not run yet,
    // and a command started then joined a slot whose expiry was already due (a 503 after 1 ms from
    // a healthy Redis, before 2026-11-29).
    if (open !== null && at - open.openedAt < slotMs) return open;
    const current: Slot = { openedAt: at, pending: new Set(), controller: new AbortController() };
    open = current;
    const expire = setTimeout(() => {
      if (open === current) open = null;
      // Commands of this slot still waiting to be written are dropped from the client's queue
      // (node-redis takes the signal), so they do not run when Redis answers again, long after
      // their callers were told they failed, and do not pile up in memory while it hangs (before
      // 2026-11-29 every one of them ran late: 100,000 failed increments counted once back).
      current.controller.abort();
      const failed = current.pending.size;
      for (const fail of current.pending) fail(new CommandTimeoutError(`no reply within ${timeoutMs} ms`));
      current.pending.clear();
      onExpired?.(failed);
    }, timeoutMs + slotMs);
    // Keeps no process alive that has nothing else to do.
    expire.unref?.();
    return current;
  };

  return <T>(start: (signal: AbortSignal) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      const { pending, controller } = slot();
      let done = false;
      const fail: Fail = (error) => {
        if (done) return;
        done = true;
        pending.delete(fail);
        reject(error);
      };
      pending.add(fail);
      start(controller.signal).then(
        (value) => {
          if (done) return;
          done = true;
          pending.delete(fail);
          resolve(value);
        },
        fail,
      );
    });
}
