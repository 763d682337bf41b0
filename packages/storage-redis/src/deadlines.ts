// Command timeouts without a timer per command.
//
// node-redis 6 arms `AbortSignal.timeout(commandOptions.timeout)` for every command (default 5 s)
// and removes its listener when the reply comes. On the client-credentials path that is one
// AbortSignal, one timer and two EventTarget listener changes per token request: measured at
// about 20 µs of CPU per command on the 2-core bench machine (EVALSHA of the throttle read:
// ~25 µs with it, ~5 µs without), most of the Redis cost of a request. The hot stores therefore
// send their scripts with node-redis's per-command timeout off (`withCommandOptions({ timeout: 0 })`)
// and keep the same bound here: commands started within one slot (a quarter of the timeout) share
// one timer, which rejects those still pending when the slot's youngest is `timeoutMs` old. A
// command is thus refused after between `timeoutMs` and `timeoutMs` + one slot, never earlier.
//
// As with node-redis's own timeout of a command already written to the socket, the late reply is
// still read (and dropped) by the client, which keeps the replies in order.

/** A command that got no reply within the timeout. */
export class CommandTimeoutError extends Error {
  override readonly name = "CommandTimeoutError";
}

/** Runs promises under one shared timeout. @internal */
export type Deadline = <T>(start: () => Promise<T>) => Promise<T>;

/** A {@link Deadline} of `timeoutMs` (see the module comment). @internal */
export function deadlines(timeoutMs: number): Deadline {
  const slotMs = Math.max(1, Math.ceil(timeoutMs / 4));
  type Fail = (error: Error) => void;
  let open: Set<Fail> | null = null;

  const slot = (): Set<Fail> => {
    if (open !== null) return open;
    const pending = new Set<Fail>();
    open = pending;
    const close = setTimeout(() => {
      if (open === pending) open = null;
    }, slotMs);
    const expire = setTimeout(() => {
      for (const fail of pending) fail(new CommandTimeoutError(`no reply within ${timeoutMs} ms`));
      pending.clear();
    }, timeoutMs + slotMs);
    // Neither keeps a process alive that has nothing else to do.
    close.unref?.();
    expire.unref?.();
    return pending;
  };

  return <T>(start: () => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      const pending = slot();
      let done = false;
      const fail: Fail = (error) => {
        if (done) return;
        done = true;
        pending.delete(fail);
        reject(error);
      };
      pending.add(fail);
      start().then(
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
