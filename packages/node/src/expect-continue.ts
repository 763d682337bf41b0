import type { IncomingMessage, ServerResponse } from "node:http";

/** Requests whose `Expect: 100-continue` is answered only once their body is read (see {@link serve}). */
const waiting = new WeakMap<IncomingMessage, ServerResponse>();

/**
 * Holds back the `100 Continue` of `incoming` until {@link continueReading} (Node sends it before
 * the listener runs): an answer decided without the body (a 401, a body declared too large) then
 * goes out instead, the client never sends its upload, and Node closes the connection after it.
 */
export function deferContinue(incoming: IncomingMessage, response: ServerResponse): void {
  waiting.set(incoming, response);
}

/** Called as reading `incoming`'s body starts: sends its held-back `100 Continue`, if any, once. */
export function continueReading(incoming: IncomingMessage): void {
  const response = waiting.get(incoming);
  if (response === undefined) return;
  waiting.delete(incoming);
  if (!response.headersSent && !response.writableEnded && !response.destroyed) response.writeContinue();
}
