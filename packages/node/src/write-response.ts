import type { ServerResponse } from "node:http";
import { connectionGone, onConnectionClose } from "./connection-close.js";
import type { PlainAnswer } from "./fetch-app.js";

/**
 * The one writer of this package: writes an app's answer, a Web-standard {@link Response} or a
 * {@link PlainAnswer}, to a Node `ServerResponse`.
 *
 * **A plain answer** goes out at once, status and headers in one `writeHead`, the body in one
 * `end`, nothing for a HEAD request (an empty body other than 204/304 is sent with
 * `content-length: 0`, not chunked), and nothing is returned. It throws a TypeError, before
 * anything is sent, for something that is not a plain answer or a header Node refuses.
 *
 * **A Response**: status, status text and headers are copied as they are; each `Set-Cookie`
 * value (from `headers.getSetCookie()`) becomes its own header line. The body is streamed chunk by
 * chunk, waiting for `'drain'` whenever `res.write()` reports a full buffer, so a slow client
 * applies backpressure to the app's stream instead of growing memory. Responses to HEAD requests
 * send headers only and cancel the body. The returned promise resolves once the response has been
 * handed to the socket. If the client disconnects first, the body is cancelled (so the producer
 * can stop) and the promise still resolves. If the body stream itself errors, or yields a chunk
 * that is not a `Uint8Array`, the connection is destroyed so the client cannot mistake a truncated
 * body for a complete one, and the promise rejects.
 *
 * Either way nothing is written to a response that is already finished or destroyed.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { writeResponse } from "@plantgate/node";
 *
 * const ok = new TextEncoder().encode("ok");
 * createServer((req, res) => {
 *   if (req.url === "/plain") {
 *     writeResponse({ status: 200, headers: { "content-type": "text/plain", "content-length": "2" }, body: ok }, res);
 *     return;
 *   }
 *   const headers = new Headers({ "content-type": "text/plain" });
 *   headers.append("set-cookie", "a=1; Path=/");
 *   headers.append("set-cookie", "b=2; Path=/");
 *   void writeResponse(new Response("ok", { status: 200, headers }), res);
 * }).listen(3000);
 * ```
 */
export function writeResponse(answer: Response | PlainAnswer, res: ServerResponse): Promise<void> | undefined {
  if (answer instanceof Response) return streamResponse(answer, res);
  writePlain(answer, res);
  return undefined;
}

/** Whether `value` has the shape of a {@link PlainAnswer} (integer status, headers object, bytes or null). */
function isPlainAnswer(value: unknown): value is PlainAnswer {
  if (typeof value !== "object" || value === null) return false;
  const { status, headers, body } = value as Record<string, unknown>;
  return Number.isInteger(status) && typeof headers === "object" && headers !== null && (body === null || body instanceof Uint8Array);
}

function writePlain(answer: PlainAnswer, res: ServerResponse): void {
  if (!isPlainAnswer(answer)) throw new TypeError("The app's answer is neither a Response nor a plain answer.");
  if (isGone(res)) return;
  const { status, body } = answer;
  let { headers } = answer;
  // Only the metadata documents carry a Vary (`Host`, without an issuer); the token path does not.
  if (headers.vary !== undefined && res.hasHeader("vary")) headers = { ...headers, vary: mergeVary(res.getHeader("vary"), headers.vary) };
  if (body === null && status >= 200 && status !== 204 && status !== 304 && headers["content-length"] === undefined) {
    // writeHead() before end() makes Node choose chunked encoding for an empty body; say it is
    // empty instead, as Node does for setHeader() + end() (HTTP/1.0 clients keep their keep-alive).
    res.writeHead(status, { ...headers, "content-length": "0" });
  } else {
    res.writeHead(status, headers);
  }
  if (body === null || res.req?.method === "HEAD") res.end();
  else res.end(body);
}

async function streamResponse(response: Response, res: ServerResponse): Promise<void> {
  // Taking the reader first makes a locked or disturbed body fail before any
  // header is touched, so the caller can still answer with an error status.
  const reader = response.body?.getReader();

  if (isGone(res)) {
    await cancelQuietly(reader);
    return;
  }

  writeHead(response, res);

  if (reader === undefined || res.req?.method === "HEAD") {
    await cancelQuietly(reader);
    res.end();
    await settled(res);
    return;
  }

  let clientGone = false;
  const onClose = (): void => {
    if (res.writableFinished) return;
    clientGone = true;
    // Also releases a read() that is waiting on a slow producer.
    void cancelQuietly(reader);
  };
  const stopWatching = onConnectionClose(res, onClose);

  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || clientGone) break;
      if (!(value instanceof Uint8Array)) {
        throw new TypeError("Response body chunks must be Uint8Array.");
      }
      if (value.byteLength === 0) continue;
      if (!res.write(value)) await drained(res);
      if (clientGone) break;
    }
  } catch (error) {
    if (clientGone) return;
    await cancelQuietly(reader);
    // Without an error argument: the socket is what must go, and an error here
    // would only resurface as a 'clientError' the server cannot act on.
    res.destroy();
    throw error;
  } finally {
    stopWatching();
  }

  if (clientGone || isGone(res)) return;
  res.end();
  await settled(res);
}

function writeHead(response: Response, res: ServerResponse): void {
  res.statusCode = response.status;
  if (response.statusText !== "") res.statusMessage = response.statusText;
  for (const [name, value] of response.headers) {
    if (name === "vary" && res.hasHeader("vary")) res.setHeader(name, mergeVary(res.getHeader("vary"), value));
    else if (name !== "set-cookie") res.setHeader(name, value);
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.setHeader("set-cookie", cookies);
}

/**
 * The answer's `Vary` added to one a host middleware set on `res` before it (a `cors()` in front
 * sets `Vary: Origin`), which writing the answer's headers replaced until 2026-12-01: a cache then
 * kept one origin's CORS answer for every origin. Each field once (compared without case), in the
 * order first named; `*` stands for all (RFC 9110 §12.5.5).
 */
function mergeVary(earlier: number | string | readonly string[] | undefined, ours: string): string {
  const names: string[] = [];
  const seen = new Set<string>();
  for (const list of [String(earlier ?? ""), ours]) {
    for (const part of list.split(",")) {
      const name = part.trim();
      if (name === "") continue;
      if (name === "*") return "*";
      const key = name.toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
      names.push(name);
    }
  }
  return names.join(", ");
}

function isGone(res: ServerResponse): boolean {
  return res.writableEnded || connectionGone(res);
}

async function cancelQuietly(reader: ReadableStreamDefaultReader<Uint8Array> | undefined): Promise<void> {
  try {
    await reader?.cancel();
  } catch {
    // A producer failing while being cancelled changes nothing for the client.
  }
}

function drained(res: ServerResponse): Promise<void> {
  return eventOrClose(res, "drain");
}

function settled(res: ServerResponse): Promise<void> {
  if (res.writableFinished || connectionGone(res)) return Promise.resolve();
  return eventOrClose(res, "finish");
}

/** `event` on `res`, or its connection closing (also while `res` is queued behind another answer). */
function eventOrClose(res: ServerResponse, event: string): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off(event, done);
      stopWatching();
      resolve();
    };
    res.once(event, done);
    const stopWatching = onConnectionClose(res, done);
  });
}
