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
//
// The slot's commands share one AbortSignal too, aborted then: node-redis drops those not yet
// written to the socket, as its own timeout does, so they do not run when Redis answers again,
// long after their callers were told they failed. Any abort signal on a command costs node-redis
// 3-5 µs of CPU (measured on the 2-core machine with a signal whose listener calls do nothing; a
// signal on every command cost about 15% of client-credentials throughput on PostgreSQL + Redis
// in an A/B, 2026-11-29), so a command gets it only when it may wait to be written: when at least
// SIGNAL_FROM commands are already pending here, or while Redis is found slow (a slot expired with
// commands pending, until one expires with none; then the socket may still be backed up with the
// commands that timed out). Pending counts the commands written and awaiting their reply too, so
// SIGNAL_FROM is set well above what a healthy server under load keeps pending: at 16, 32
// concurrent client-credentials requests on PostgreSQL + Redis passed it often enough to cost
// 0.90x throughput in an A/B (CPU 245 against 219 µs a request); at 256 the healthy path carries
// none. In a hang the first SIGNAL_FROM commands (about 128 KB at 500 bytes a script call, most of
// it taken by the socket's buffers, which no signal could drop anyway) may still run late. Before
// 2026-11-29 the signal came only after a first slot had expired: everything started during the
// first 1.25 timeouts of a hang ran when Redis answered again (20,000 increments that had all
// failed counted 20,001).
//
// As with node-redis's own timeout of a command already written to the socket, the late reply is
// still read (and dropped) by the client, which keeps the replies in order.

import { setMaxListeners } from "node:events";

/** A command that got no reply within the timeout. */
export class CommandTimeoutError extends Error {
  override readonly name = "CommandTimeoutError";
}

/**
 * Runs promises under one shared timeout; `start` gets the signal that is aborted when its slot
 * expires, or null when the command need not carry one (see the module comment). @internal
 */
export type Deadline = <T>(start: (signal: AbortSignal | null) => Promise<T>) => Promise<T>;

/** Commands pending at once from which the next carries its slot's signal (see the module comment). @internal */
export const SIGNAL_FROM = 256;

/** A {@link Deadline} of `timeoutMs` (see the module comment). @internal */
export function deadlines(timeoutMs: number, now: () => number = () => performance.now()): Deadline {
  const slotMs = Math.max(1, Math.ceil(timeoutMs / 4));
  type Fail = (error: Error) => void;
  interface Slot {
    openedAt: number;
    pending: Set<Fail>;
    controller: AbortController;
  }
  let open: Slot | null = null;
  // Commands started and not yet settled (answered, failed, or timed out).
  let inFlight = 0;
  // A slot expired with commands still pending, and none has expired empty since.
  let slow = false;

  const slot = (): Slot => {
    const at = now();
    // Joined only within `slotMs` of its opening, by the clock rather than a timer: after the event
    // loop stalled (a long handler, a GC pause), a timer meant to close the slot had not run yet,
    // and a command started then joined a slot whose expiry was already due (a 503 after 1 ms from
    // a healthy Redis, before 2026-11-29).
    if (open !== null && at - open.openedAt < slotMs) return open;
    const current: Slot = { openedAt: at, pending: new Set(), controller: new AbortController() };
    // Every command of the slot that carries the signal adds a listener until it is written: past
    // ten, Node prints a MaxListenersExceededWarning per signal (a line on stderr per slot while
    // Redis hung, before 2026-11-29, and on a healthy burst of commands now).
    setMaxListeners(0, current.controller.signal);
    open = current;
    const expire = setTimeout(() => {
      if (open === current) open = null;
      // Commands of this slot still waiting to be written are dropped from the client's queue
      // (node-redis takes the signal), so they do not run when Redis answers again, long after
      // their callers were told they failed, and do not pile up in memory while it hangs (before
      // 2026-11-29 every one of them ran late: 100,000 failed increments counted once back).
      current.controller.abort();
      slow = current.pending.size > 0;
      for (const fail of current.pending) fail(new CommandTimeoutError(`no reply within ${timeoutMs} ms`));
      current.pending.clear();
    }, timeoutMs + slotMs);
    // Keeps no process alive that has nothing else to do.
    expire.unref?.();
    return current;
  };

  return <T>(start: (signal: AbortSignal | null) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      const current = slot();
      const signal = slow || inFlight >= SIGNAL_FROM ? current.controller.signal : null;
      let done = false;
      const fail: Fail = (error) => {
        if (done) return;
        done = true;
        inFlight--;
        current.pending.delete(fail);
        reject(error);
      };
      inFlight++;
      current.pending.add(fail);
      start(signal).then(
        (value) => {
          if (done) return;
          done = true;
          inFlight--;
          current.pending.delete(fail);
          resolve(value);
        },
        fail,
      );
    });
}

/** `promise`, or a rejection (after `onLate`) when it has not settled within `ms`. */
export async function withinMs<T>(promise: Promise<T>, ms: number, onLate: () => void, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          onLate();
          reject(new Error(message));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
