import type { IncomingMessage, ServerResponse } from "node:http";
import { createRequestBody } from "./request-body.js";
import { resolveOrigin } from "./request-origin.js";

/**
 * Options for {@link toRequest}.
 *
 * @example
 * ```ts
 * import type { ToRequestOptions } from "@plantgate/node";
 *
 * const behindProxy: ToRequestOptions = { trustProxy: true };
 * const fixedOrigin: ToRequestOptions = { origin: "https://auth.example.com" };
 * ```
 */
export interface ToRequestOptions {
  /**
   * Public origin (`https://auth.example.com`) used for `request.url` instead
   * of anything the client sent. Takes precedence over `trustProxy`.
   */
  origin?: string;
  /**
   * Honour the first value of `X-Forwarded-Proto` and `X-Forwarded-Host`.
   * Enable only behind a proxy that overwrites these headers; otherwise any
   * client can choose the origin the app sees.
   */
  trustProxy?: boolean;
  /**
   * The response paired with `incoming`. When given, `request.signal` also
   * aborts when the client disconnects after the upload finished but before
   * the response was fully sent, and an unread body is discarded once the
   * response has finished.
   */
  response?: ServerResponse;
}

/**
 * Builds a Web-standard {@link Request} from a Node `IncomingMessage`.
 *
 * - **URL**: `options.origin`, else (with `trustProxy`) the first
 *   `X-Forwarded-Proto` / `X-Forwarded-Host` values, else `http://` + the
 *   `Host` header. A missing or malformed host falls back to `localhost`.
 *   The path and query are kept as sent, except for what the WHATWG URL
 *   parser normalises in every `Request` (dot segments, a few characters
 *   such as `{` that it percent-encodes). Node's parser already rejects raw
 *   non-ASCII bytes in the request target with a 400.
 * - **Headers**: copied from `rawHeaders` in order, combined per Fetch rules
 *   (`Set-Cookie` stays separate, see `headers.getSetCookie()`).
 * - **Body**: for methods other than GET and HEAD, the socket data is exposed
 *   as a `ReadableStream` (`duplex: "half"`), never buffered or re-serialised.
 *   If something already read from the IncomingMessage (for example
 *   `express.json()`), the body is empty: the original bytes are gone and the
 *   adapter will not re-serialise a parsed value (`content-length` and
 *   `content-type` still describe the original). If the client disconnects
 *   during the upload, before or after this call, the stream errors with
 *   `request.signal.reason` instead of ending early or hanging.
 * - **Cancelling the body** (e.g. a size cap) detaches it and lets the rest of
 *   the upload be read and thrown away, without destroying the socket, so the
 *   app's response still reaches the client; on a keep-alive connection the
 *   next request then works as usual. With `Connection: close` (or HTTP/1.0)
 *   Node closes the socket as soon as the response is written; a client that
 *   is still transmitting at that moment can receive a TCP reset, and a client
 *   that has not yet read the response may then report ECONNRESET instead of
 *   it. (node-fetch and curl over loopback received the response in testing;
 *   across a network this is timing-dependent and outside the adapter's
 *   control.) An upload that never ends is drained until Node's
 *   `server.requestTimeout` (300 s by default) cuts it off.
 * - **Signal**: aborts with an `AbortError` `DOMException` when the client goes
 *   away before the response has finished (upload phase only, unless
 *   `options.response` is given).
 *
 * @throws TypeError if the request cannot be represented as a Web Request
 *   (`CONNECT`/`TRACE`/`TRACK` methods, asterisk-form `OPTIONS *` target).
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { toRequest, writeResponse } from "@plantgate/node";
 *
 * createServer(async (req, res) => {
 *   const request = toRequest(req, { response: res });
 *   await writeResponse(new Response(`You asked for ${request.url}`), res);
 * }).listen(3000);
 * ```
 */
export function toRequest(incoming: IncomingMessage, options: ToRequestOptions = {}): Request {
  const headers = headersFromRaw(incoming.rawHeaders);

  const target = parseTarget(incoming.url ?? "/");
  const origin = resolveOrigin({
    incoming,
    headers,
    targetAuthority: target.authority,
    origin: options.origin,
    trustProxy: options.trustProxy === true,
  });
  // Concatenated rather than resolved against a base: new URL("//evil/x", base)
  // would treat the path as a network-path reference and change the host.
  const url = origin + target.path;

  const abortController = new AbortController();
  const abort = (): void => {
    if (!abortController.signal.aborted) {
      abortController.abort(new DOMException("The client disconnected.", "AbortError"));
    }
  };
  const response = options.response;
  // Covers a client that left before this call (e.g. while async middleware
  // ran): the 'close' events below have already fired by then.
  if (
    (incoming.destroyed && !incoming.complete) ||
    (response !== undefined && response.destroyed && !response.writableFinished)
  ) {
    abort();
  }
  incoming.once("close", () => {
    // 'close' also fires after a complete body was consumed; only an
    // incomplete one means the client went away mid-upload. Once the response
    // is out, an upload cut short no longer affects the exchange.
    if (!incoming.complete && response?.writableFinished !== true) abort();
  });
  if (response) {
    response.once("close", () => {
      if (!response.writableFinished) abort();
    });
  }

  const method = incoming.method ?? "GET";
  let body: ReadableStream<Uint8Array> | null = null;
  if (method !== "GET" && method !== "HEAD") {
    if (isConsumed(incoming) && !abortController.signal.aborted) {
      body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.close();
        },
      });
    } else {
      const requestBody = createRequestBody(incoming, abortController.signal, abort);
      body = requestBody.stream;
      // Node drains an unread body by itself, but not one we started reading;
      // without this a half-read upload would stall the keep-alive connection.
      response?.once("finish", requestBody.discard);
    }
  }

  const init: RequestInit & { duplex: "half" } = {
    method,
    headers,
    body,
    duplex: "half",
    signal: abortController.signal,
  };
  return new Request(url, init);
}

/** The request headers in wire order, combined per Fetch rules (shared with the listener's request). */
export function headersFromRaw(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    // HTTP/2 compatibility objects list pseudo-headers (":path"), which are
    // not header names and would make Headers throw.
    if (name.startsWith(":")) continue;
    headers.append(name, raw[i + 1] as string);
  }
  return headers;
}

export function isConsumed(incoming: IncomingMessage): boolean {
  // readableDidRead is set as soon as anyone reads or attaches 'data'; handing
  // over the remainder of a partly read body would corrupt it silently.
  return incoming.readableEnded || incoming.readableDidRead || incoming.destroyed;
}

export interface Target {
  /** Path and query, always starting with "/". */
  path: string;
  /** Host from an absolute-form target (proxy-style requests). */
  authority?: string;
}

export function parseTarget(target: string): Target {
  if (target.startsWith("/")) return { path: target };
  if (/^https?:\/\//i.test(target)) {
    const url = new URL(target);
    return { path: `${url.pathname}${url.search}`, authority: url.host };
  }
  throw new TypeError("Unsupported request target.");
}
