import type { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import type { HandleInfo, PlainAnswer } from "./fetch-app.js";
import { createNodeRequest, HttpVersionNotSupportedError, readRequestBody, releaseBody, TransferCodingError } from "./node-request.js";
import type { lingerOnUnreadUpload } from "./linger.js";
import type { PlantgateBodyConsumedError } from "./body-consumed.js";
import { MisdirectedRequestError } from "./request-origin.js";
import { AmbiguousPathError } from "./incoming.js";

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
   * Honour the right-most value of `X-Forwarded-Proto` and `X-Forwarded-Host` (the one the proxy
   * in front of this server appended; values before it are the client's). Enable only behind
   * exactly one proxy that sets or appends these headers; otherwise any client can choose the
   * origin the app sees.
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
 * Builds a Web-standard {@link Request} from a Node `IncomingMessage`: the same lightweight
 * Request the request listener hands apps (`instanceof Request`; members it does not serve itself,
 * such as `clone()` or `formData()`, are answered by a real undici Request built on first use).
 *
 * - **URL**: `options.origin`, else (with `trustProxy`) the right-most
 *   `X-Forwarded-Proto` / `X-Forwarded-Host` values, else `http://` (`https://` on a TLS socket)
 *   + the authority of an absolute-form target or the `Host` header (an HTTP/2 request's
 *   `:authority`, RFC 9113 §8.3.1; an HTTP/1.0 request without one: `localhost`). An absolute-form target must name that scheme (RFC 9110 §7.4); one naming
 *   the other is refused (a {@link MisdirectedRequestError}, 421), unless `options.origin` is set.
 *   The path and query are kept as sent, except for the few characters the WHATWG URL parser
 *   percent-encodes in every `Request` (such as `{`). A path the parser would turn into another
 *   path (a `.` or `..` segment, also percent-encoded as `%2e`, or a backslash, which it reads as
 *   `/`) is refused with an {@link AmbiguousPathError}: a host guard or a proxy rule matching the
 *   target as sent did not see it as the path it resolves to. Node's parser already rejects raw
 *   non-ASCII bytes in the request target with a 400.
 * - **Headers**: copied from `rawHeaders` in order, combined per Fetch rules
 *   (`Set-Cookie` stays separate, see `headers.getSetCookie()`). An IncomingMessage shim that
 *   leaves `rawHeaders` empty and sets `headers` (serverless-http and the like, Express on AWS
 *   Lambda) has them read from `headers` (one field per array value, `cookie` values joined with
 *   `"; "`); its version given as the strings `"1"` and `"1"` is HTTP/1.1 (a Host required).
 * - **Body**: for methods other than GET and HEAD, the socket data is exposed
 *   as a `ReadableStream` (`duplex: "half"`), never buffered or re-serialised.
 *   If something already took bytes of the body from the IncomingMessage (a
 *   body parser such as `express.json()`, a middleware that drained or piped
 *   it), reading the body fails with a {@link PlantgateBodyConsumedError} (a
 *   host fault: plantgate answers its 500): the original bytes are gone and the
 *   adapter will not re-serialise a parsed value. An empty body something read
 *   to its end reads as the empty body it was. If the client disconnects
 *   during the upload, before or after this call, the stream errors with
 *   `request.signal.reason` instead of ending early or hanging.
 * - **Cancelling the body** (e.g. a size cap) detaches it and lets the rest of
 *   the upload be read and thrown away, without destroying the socket, so the
 *   app's response still reaches the client; on a keep-alive connection the
 *   next request then works as usual. With `Connection: close` (or HTTP/1.0)
 *   Node closes the socket as soon as the response is written, and a client still
 *   transmitting then gets a TCP reset that can destroy the answer: the request
 *   listener and `@plantgate/express` prevent that with a lingering close
 *   ({@link lingerOnUnreadUpload}); a hand-written adapter calls it before writing.
 *   An upload that never ends is drained until Node's `server.requestTimeout` cuts
 *   it off (300 s by Node's default, 60 s under `serve()`).
 * - **Signal**: aborts with an `AbortError` `DOMException` when the client goes
 *   away before the response has finished (upload phase only, unless
 *   `options.response` is given).
 *
 * @throws HttpVersionNotSupportedError for a request Node's parser read with a major version other
 *   than 1 (`HTTP/2.0` or `HTTP/0.9` in HTTP/1 text, a request line without a version), 505; a
 *   TypeError if the request cannot be represented as a Web Request
 *   (`CONNECT`/`TRACE`/`TRACK` methods, asterisk-form `OPTIONS *` target) or its Host is missing
 *   (HTTP/1.1), repeated or invalid (RFC 9112 §3.2), or its path holds a dot segment or a backslash
 *   (an {@link AmbiguousPathError}); a MisdirectedRequestError for an absolute-form target naming
 *   the other scheme.
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
  return createNodeRequest(incoming, options.response, options.origin, options.trustProxy === true);
}

/**
 * One request as an adapter hands it to an app: the {@link Request} ({@link toRequest}) and, as
 * this object itself, the {@link HandleInfo} for `app.handle(exchange.request, exchange)`: the socket
 * peer address and a direct body reader (`readBody`: the bytes from the IncomingMessage without a
 * Web stream; see `HandleInfo.readBody`).
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { createPlantgate } from "@plantgate/core";
 * import { toExchange, writeResponse } from "@plantgate/node";
 *
 * const app = createPlantgate();
 * createServer(async (req, res) => {
 *   const exchange = toExchange(req, { response: res });
 *   await writeResponse(await app.handle(exchange.request, exchange), res);
 * }).listen(3000);
 * ```
 */
export interface NodeExchange extends HandleInfo {
  readonly request: Request;
  readonly clientIp?: string;
  readBody(maxBytes: number): Promise<Uint8Array | null>;
}

// One object per request, standing in for the `{ clientIp }` literal an adapter would pass anyway
// (its own enumerable data is `clientIp` alone, or `unixSocket: true` on a Unix domain socket);
// the request and the body reader come with it.
class Exchange implements NodeExchange {
  readonly #request: Request;
  readonly clientIp?: string;
  readonly unixSocket?: true;

  constructor(request: Request, socket: IncomingMessage["socket"] | undefined) {
    this.#request = request;
    const clientIp = socket?.remoteAddress;
    if (clientIp !== undefined) this.clientIp = clientIp;
    else if (onUnixSocket(socket)) this.unixSocket = true;
  }

  get request(): Request {
    return this.#request;
  }

  readBody(maxBytes: number): Promise<Uint8Array | null> {
    return readRequestBody(this.#request, maxBytes);
  }
}

/**
 * Whether a socket without a peer address was accepted by a server listening on a Unix domain
 * socket (or a Windows named pipe): `server.address()` is then the path, a string; or, for one
 * handed over as a file descriptor (`server.listen({ fd: 3 })`, systemd socket activation), where
 * `address()` is null, the socket is an open one of node:net's with no local address either (a
 * TCP socket has one while it is open; a Unix domain one has none). Until 2026-12-02 only the
 * first was asked, and such a socket was not recognised. A TCP socket that lost its peer address
 * (closed before it was read) is not one: its server's address is an object, and the socket is
 * destroyed.
 */
function onUnixSocket(socket: IncomingMessage["socket"] | undefined): boolean {
  // Node sets `server` on every socket a net/http/tls server accepts; a shim's socket may have none.
  const server = (socket as { server?: { address?: () => unknown } } | undefined)?.server;
  try {
    if (typeof server?.address === "function" && typeof server.address() === "string") return true;
  } catch {
    return false;
  }
  return socket instanceof Socket && !socket.destroyed && socket.localAddress === undefined;
}

/**
 * Builds the {@link NodeExchange} of one request: {@link toRequest}'s Request, the socket peer
 * address (`incoming.socket.remoteAddress`, never a forwarded header: whom to believe is the app's
 * decision), or `unixSocket: true` on a Unix domain socket (which has none), and the direct body reader.
 *
 * @throws TypeError as {@link toRequest} does.
 *
 * @example
 * ```ts
 * const exchange = toExchange(req, { response: res, origin: "https://auth.example.com" });
 * const answer = await app.handle(exchange.request, exchange);
 * ```
 */
export function toExchange(incoming: IncomingMessage, options: ToRequestOptions = {}): NodeExchange {
  return exchangeOf(incoming, options.response, options.origin, options.trustProxy === true);
}

/** {@link toExchange} with positional arguments, for the request listener (no options object per request). */
export function exchangeOf(incoming: IncomingMessage, response: ServerResponse | undefined, origin: string | undefined, trustProxy: boolean, checkedTarget?: string): NodeExchange {
  return new Exchange(createNodeRequest(incoming, response, origin, trustProxy, checkedTarget), incoming.socket);
}

/**
 * {@link toExchange} for a caller that already ran `hasAmbiguousPath` on `checkedTarget` and found
 * it unambiguous (@plantgate/express, on req.originalUrl): the check is not run again when
 * `incoming.url` is that very string, and is run as ever when it is another. @internal
 */
export function toCheckedExchange(incoming: IncomingMessage, options: ToRequestOptions, checkedTarget: string): NodeExchange {
  return exchangeOf(incoming, options.response, options.origin, options.trustProxy === true, checkedTarget);
}

/** plantgate's `{"error":"invalid_request","error_description":...}` answer of `status`, not cached. @internal */
export const refusal = (status: number, description: string): PlainAnswer => {
  const body = new TextEncoder().encode(JSON.stringify({ error: "invalid_request", error_description: description }));
  return { status, headers: { "content-type": "application/json", "content-length": String(body.byteLength), "cache-control": "no-store" }, body };
};
const CANNOT_BE_PROCESSED = refusal(400, "The request cannot be processed.");
const UNKNOWN_TRANSFER_CODING = refusal(501, "The request's transfer coding is not supported.");
const MISDIRECTED = refusal(421, "The request's target is not served on this connection.");
const AMBIGUOUS_PATH = refusal(400, "The request target's path holds a dot segment or a backslash; send the path resolved.");
/** The description of the 505 (also answerMalformedRequests' for a version Node's parser refuses). @internal */
export const VERSION_NOT_SUPPORTED_DESCRIPTION = "The request's HTTP version is not supported; send it as HTTP/1.1.";
const versionRefusal = refusal(505, VERSION_NOT_SUPPORTED_DESCRIPTION);
// The connection closes after it: what else the client sent on it is not known to be HTTP/1.
const VERSION_NOT_SUPPORTED: PlainAnswer = { ...versionRefusal, headers: { ...versionRefusal.headers, connection: "close" } };

/**
 * Lets go of the request body of an exchange the app failed on, before the request is handed to
 * someone else (Express's `next(err)`, whose final handler reads the rest of the body before it
 * answers): a reader the app left behind gets an AbortError, and the rest of the upload flows off
 * unread instead of staying paused for that reader, which hung the answer. Does nothing when the
 * app never took the body stream (Node drains an unread body itself) or read it all, and for an
 * exchange whose request `toExchange` did not build.
 *
 * @example
 * ```ts
 * try {
 *   answer = await app.handle(exchange.request, exchange);
 * } catch (error) {
 *   releaseRequestBody(exchange);
 *   next(error);
 * }
 * ```
 */
export function releaseRequestBody(exchange: NodeExchange): void {
  releaseBody(exchange.request);
}

/**
 * The answer to a request {@link toExchange} refused: 505 `HTTP Version Not Supported` with
 * `Connection: close` for a major version other than 1 (an {@link HttpVersionNotSupportedError}; RFC
 * 9110 §15.6.6), 501 for a transfer coding other than chunked (RFC 9112 §6.1), 421 for an
 * absolute-form target whose scheme is not the connection's (RFC 9110 §7.4), 400 "The request
 * target's path holds a dot segment or a backslash; send the path resolved." for an
 * {@link AmbiguousPathError}, else 400 "The request cannot be processed." (a target a Web Request
 * cannot carry, a bad Host). Each has plantgate's
 * `{"error":"invalid_request","error_description":...}` body. Treat the answer as read-only: its
 * bytes are shared.
 *
 * @example
 * ```ts
 * try {
 *   exchange = toExchange(req, { response: res });
 * } catch (error) {
 *   writeResponse(refusedRequestAnswer(error), res);
 * }
 * ```
 */
export function refusedRequestAnswer(error: unknown): PlainAnswer {
  if (error instanceof HttpVersionNotSupportedError) return VERSION_NOT_SUPPORTED;
  if (error instanceof TransferCodingError) return UNKNOWN_TRANSFER_CODING;
  if (error instanceof AmbiguousPathError) return AMBIGUOUS_PATH;
  return error instanceof MisdirectedRequestError ? MISDIRECTED : CANNOT_BE_PROCESSED;
}
