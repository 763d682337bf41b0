import type { ServerResponse } from "node:http";
import type { PlainAnswer } from "./fetch-app.js";

/**
 * Whether `value` has the shape of a {@link PlainAnswer} (integer status, headers object, bytes or
 * null): what an adapter checks before writing what `FetchApp.handle` resolved to.
 *
 * @example
 * ```ts
 * import { isPlainAnswer } from "@plantgate/node";
 *
 * isPlainAnswer({ status: 204, headers: {}, body: null }); // true
 * isPlainAnswer(new Response(null));                        // false
 * ```
 */
export function isPlainAnswer(value: unknown): value is PlainAnswer {
  if (typeof value !== "object" || value === null) return false;
  const { status, headers, body } = value as Record<string, unknown>;
  return (
    Number.isInteger(status) &&
    typeof headers === "object" &&
    headers !== null &&
    (body === null || body instanceof Uint8Array)
  );
}

/**
 * Writes a {@link PlainAnswer} (what `FetchApp.handle` resolves to) to a Node `ServerResponse`:
 * status and headers in one `writeHead`, the body in one `end`, nothing for a HEAD request.
 * Does nothing when the response is already finished or destroyed.
 *
 * @throws TypeError (from Node) for a header name or value HTTP does not allow; nothing has been
 *   sent then.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { writePlainAnswer } from "@plantgate/node";
 *
 * const body = new TextEncoder().encode("ok");
 * createServer((_req, res) => {
 *   writePlainAnswer({ status: 200, headers: { "content-type": "text/plain", "content-length": String(body.byteLength) }, body }, res);
 * }).listen(3000);
 * ```
 */
export function writePlainAnswer(answer: PlainAnswer, res: ServerResponse): void {
  if (res.destroyed || res.writableEnded) return;
  const { status, headers, body } = answer;
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

