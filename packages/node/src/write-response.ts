import type { ServerResponse } from "node:http";

/**
 * Writes a Web-standard {@link Response} to a Node `ServerResponse`.
 *
 * Status, status text and headers are copied as they are; each `Set-Cookie`
 * value (from `headers.getSetCookie()`) becomes its own header line. The body
 * is streamed chunk by chunk, waiting for `'drain'` whenever `res.write()`
 * reports a full buffer, so a slow client applies backpressure to the app's
 * stream instead of growing memory. Responses to HEAD requests send headers
 * only and cancel the body.
 *
 * Resolves once the response has been handed to the socket. If the client
 * disconnects first, the body is cancelled (so the producer can stop) and the
 * promise still resolves. If the body stream itself errors, or yields a chunk
 * that is not a `Uint8Array`, the connection is destroyed so the client cannot
 * mistake a truncated body for a complete one, and the promise rejects.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { writeResponse } from "@plantgate/node";
 *
 * createServer((req, res) => {
 *   const headers = new Headers({ "content-type": "text/plain" });
 *   headers.append("set-cookie", "a=1; Path=/");
 *   headers.append("set-cookie", "b=2; Path=/");
 *   void writeResponse(new Response("ok", { status: 200, headers }), res);
 * }).listen(3000);
 * ```
 */
export async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const body = response.body;
  // Fast path: a Response made by plantgate's core carries its complete body bytes under a
  // registered symbol (see `json()` in @plantgate/core), so it is written in one call without
  // going through the Web stream, which costs several times the bare server's work per request.
  // Only a body nobody has read yet; anything else streams as below.
  const known = (response as unknown as Record<symbol, unknown>)[KNOWN_BODY];
  if (known instanceof Uint8Array && body !== null && !response.bodyUsed && res.req?.method !== "HEAD") {
    if (isGone(res)) return;
    writeHead(response, res);
    res.setHeader("content-length", known.byteLength);
    res.end(known);
    await settled(res);
    return;
  }
  // Taking the reader first makes a locked or disturbed body fail before any
  // header is touched, so the caller can still answer with an error status.
  const reader = body?.getReader();

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
  res.once("close", onClose);

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
    res.off("close", onClose);
  }

  if (clientGone || isGone(res)) return;
  res.end();
  await settled(res);
}

/** Where @plantgate/core keeps the complete body of a Response it built (its `KNOWN_BODY`). */
const KNOWN_BODY = Symbol.for("plantgate.known-body");

function writeHead(response: Response, res: ServerResponse): void {
  res.statusCode = response.status;
  if (response.statusText !== "") res.statusMessage = response.statusText;
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") res.setHeader(name, value);
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.setHeader("set-cookie", cookies);
}

function isGone(res: ServerResponse): boolean {
  return res.destroyed || res.writableEnded;
}

async function cancelQuietly(reader: ReadableStreamDefaultReader<Uint8Array> | undefined): Promise<void> {
  try {
    await reader?.cancel();
  } catch {
    // A producer failing while being cancelled changes nothing for the client.
  }
}

function drained(res: ServerResponse): Promise<void> {
  return once(res, ["drain", "close"]);
}

function settled(res: ServerResponse): Promise<void> {
  if (res.writableFinished || res.destroyed) return Promise.resolve();
  return once(res, ["finish", "close"]);
}

function once(res: ServerResponse, events: readonly string[]): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      for (const event of events) res.off(event, done);
      resolve();
    };
    for (const event of events) res.once(event, done);
  });
}
