import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";

// A response queued behind another on a pipelined connection has no socket until the one before
// it is written, and Node never emits 'close' on it when the connection goes meanwhile (its
// request's 'close' does not tell either: a request read to its end has closed already). Until
// 2026-11-30 such a request's signal never aborted, and a Response streamed to it waited for a
// 'drain' or 'finish' that never came, its producer never cancelled. Its request's socket tells.

/** Per socket, what the responses queued on it wait for; one 'close' listener however many. */
const queued = new WeakMap<Socket, Set<() => void>>();

/** Whether the connection of `res` is gone: `res` destroyed, or, while it is queued, its request's socket. */
export function connectionGone(res: ServerResponse): boolean {
  if (res.destroyed) return true;
  return res.socket == null && !res.writableFinished && res.req?.socket?.destroyed === true;
}

/**
 * Calls `listener` once when the connection of `res` closes: the response's own 'close' (which
 * Node also emits after a response finishes) or, while `res` is queued behind another answer, its
 * request's socket's. Returns a function that stops watching.
 */
export function onConnectionClose(res: ServerResponse, listener: () => void): () => void {
  let set: Set<() => void> | undefined;
  const fire = (): void => {
    stop();
    listener();
  };
  const assigned = (): void => {
    // From now on the response's own 'close' tells.
    set?.delete(fire);
  };
  function stop(): void {
    res.off("close", fire);
    res.off("socket", assigned);
    set?.delete(fire);
  }
  res.once("close", fire);
  const socket = res.socket == null && !res.writableFinished ? (res.req?.socket as Socket | null | undefined) : undefined;
  if (socket != null && !socket.destroyed) {
    set = queued.get(socket);
    if (set === undefined) {
      const waiting = new Set<() => void>();
      set = waiting;
      queued.set(socket, waiting);
      socket.once("close", () => {
        queued.delete(socket);
        for (const callback of [...waiting]) callback();
      });
    }
    set.add(fire);
    res.once("socket", assigned);
  }
  return stop;
}
