import { IncomingMessage, type ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { PlantgateBodyConsumedError } from "./body-consumed.js";
import { connectionGone, onConnectionClose } from "./connection-close.js";
import { AmbiguousPathError, hasAmbiguousPath, headersFromObject, headersFromRaw, isConsumed, parseTarget } from "./incoming.js";
import { readIncoming, readStream } from "./read-body.js";
import { createRequestBody, type AbortSource } from "./request-body.js";
import { parseHost, resolveOrigin } from "./request-origin.js";

/**
 * The one Request builder of this package (what `toRequest` and the request listener hand out), at
 * a fraction of the cost of undici's: `method`, `url`, `headers`, `signal`, `body`, `bodyUsed`,
 * `text()`, `arrayBuffer()` and `json()` are served from
 * the IncomingMessage directly, the signal and the body stream are only built when first read, and
 * every other member (`clone()`, `formData()`, `cache`, ...) is answered by a real undici `Request`
 * built once, on first use, over the same body stream and signal. Building an undici Request, an
 * AbortController, close listeners and a Web stream for every request cost several times the
 * whole work of a bare node:http server, while most requests to plantgate only read a few headers.
 *
 * The observable behaviour is the one `toRequest` documents, and `instanceof Request` holds.
 * Positional arguments: the listener calls this for every request and builds no options object.
 *
 * @throws HttpVersionNotSupportedError for a request Node's HTTP/1 parser read with a major version
 *   other than 1 (before anything else is looked at); TypeError for targets a Web Request cannot
 *   represent (`CONNECT`/`TRACE`/`TRACK`, `OPTIONS *`) and for a missing (HTTP/1.1), repeated or
 *   invalid Host header (RFC 9112 §3.2); a {@link TransferCodingError} for a transfer coding other
 *   than chunked (RFC 9112 §6.1); an {@link AmbiguousPathError} (a TypeError) for a target whose path
 *   holds a dot segment or a backslash (not looked at again when `incoming.url` is `checkedTarget`,
 *   a target the caller found unambiguous with `hasAmbiguousPath` itself).
 */
export function createNodeRequest(
  incoming: IncomingMessage,
  response: ServerResponse | undefined,
  origin: string | undefined,
  trustProxy: boolean,
  checkedTarget?: string,
): Request {
  // RFC 9112 §2.3, RFC 9110 §15.6.6: this server speaks HTTP/1.x. Node's HTTP/1 parser also hands
  // over `HTTP/0.9` and `HTTP/2.0` request lines, and a line without a version as HTTP/0.9's (its
  // Simple-Request): until 2026-11-30 each was served with an HTTP/1.1 answer (a version-less
  // `GET /plants` as http://localhost/plants, no Host asked for).
  if (isOtherHttpMajor(incoming)) throw new HttpVersionNotSupportedError();
  let method = incoming.method ?? "GET";
  const upper = method.toUpperCase();
  // Same refusal and the same normalisation as the Request constructor.
  if (FORBIDDEN_METHODS.has(upper)) throw new TypeError(`Unsupported method ${method}.`);
  if (NORMALISED_METHODS.has(upper)) method = upper;
  // An IncomingMessage shim (Express on AWS Lambda through serverless-http, say) leaves rawHeaders
  // empty and sets `headers`; Node's own requests keep to rawHeaders (see headersFromObject).
  const raw = incoming.rawHeaders;
  const headers = raw.length !== 0 ? headersFromRaw(raw) : headersFromObject(incoming.headers);
  // RFC 9112 §3.2: a request with more than one Host line is answered 400 (their values arrive
  // joined by a comma, which no Host value holds; not read as one of them: a proxy may have read
  // the other), and so are an HTTP/1.1 request without one and a Host value that is not a usable
  // host[:port]. Only HTTP/1.0, which has no Host requirement, falls back to localhost.
  let host = headers.get("host");
  // RFC 9113 §8.3.1: an HTTP/2 request (node:http2's compatibility API, whose raw headers start with
  // the pseudo-headers) names its authority in `:authority`, not Host; one that names none is the
  // 400 an HTTP/1.1 request without Host is, and a Host beside it naming another is malformed. Until
  // 2026-12-01 every HTTP/2 request was served as `localhost` (its tokens' issuer and the metadata's
  // URLs included, without `issuer`). One character compared on every other request.
  if (raw.length !== 0 && (raw[0] as string).charCodeAt(0) === 58) {
    const authority = pseudoHeader(raw, ":authority");
    if (authority === undefined ? host === null : host !== null && !sameAuthority(host, authority, incoming)) throw new TypeError("Missing, repeated or invalid Host header.");
    if (host === null) headers.set("host", (host = authority!));
  }
  if (host === null ? isHttp11(incoming) : parseHost(host) === undefined) throw new TypeError("Missing, repeated or invalid Host header.");
  // RFC 9112 §6.1: a transfer coding other than chunked (Node's parser takes `gzip, chunked` and
  // hands over the gzipped bytes) is one the server does not understand: 501, not read as the body.
  const coding = headers.get("transfer-encoding");
  if (coding !== null && coding.trim().toLowerCase() !== "chunked") throw new TransferCodingError();
  // A path the URL parser would turn into another (`/auth/x/../console`, `/auth\console`) is not
  // served as the path it resolves to: a host guard or a proxy rule matching the target as sent never
  // saw it as that path (until 2026-12-02 it was served, past such a guard).
  // Not again for the very target a caller already checked (`checkedTarget`: @plantgate/express
  // checks req.originalUrl first, to pass it on with next(), and sets req.url to it before this).
  const rawTarget = incoming.url ?? "/";
  if (rawTarget !== checkedTarget && hasAmbiguousPath(rawTarget)) throw new AmbiguousPathError();
  const target = parseTarget(rawTarget);
  const resolved = resolveOrigin({ incoming, headers, targetAuthority: target.authority, targetSecure: target.secure, origin, trustProxy });
  return new NodeRequest(incoming, response, method, normaliseUrl(resolved, target.path), headers) as unknown as Request;
}

/**
 * Whether Node's HTTP/1 parser read `incoming` with a major version other than 1 (the 505 of
 * {@link HttpVersionNotSupportedError}): the one check of both adapters, exported for
 * @plantgate/express and not meant for other use. Only a number is the parser's: an IncomingMessage
 * shim's value is not refused (serverless-http's subclass sets the string `"1"`, a hand-built
 * `new IncomingMessage(socket)` leaves null; until 2026-12-01 each of their requests got the 505),
 * nor is node:http2's compatibility request (real HTTP/2, major 2, not an IncomingMessage). One
 * compare on every request; the type and class checks only for another value. @internal
 */
export function isOtherHttpMajor(incoming: IncomingMessage): boolean {
  const major: unknown = incoming.httpVersionMajor;
  return major !== 1 && typeof major === "number" && incoming instanceof IncomingMessage;
}

/**
 * A request Node's HTTP/1 parser read with a major version other than 1: `HTTP/2.0` in HTTP/1 text
 * framing, `HTTP/0.9`, or a request line without a version (HTTP/0.9's form, which Node reports as
 * 0.9). Answered 505 with `Connection: close` (see {@link refusedRequestAnswer}).
 *
 * @example
 * ```ts
 * import { HttpVersionNotSupportedError, refusedRequestAnswer, toExchange, writeResponse } from "@plantgate/node";
 *
 * try {
 *   exchange = toExchange(req, { response: res });
 * } catch (error) {
 *   if (error instanceof HttpVersionNotSupportedError) console.warn("not an HTTP/1.x request");
 *   writeResponse(refusedRequestAnswer(error), res);
 * }
 * ```
 */
export class HttpVersionNotSupportedError extends Error {
  override readonly name = "HttpVersionNotSupportedError";
  constructor() {
    super("The request's HTTP version is not 1.x.");
  }
}

/** A request whose `Transfer-Encoding` is not just `chunked` (see {@link refusedRequestAnswer}). */
export class TransferCodingError extends Error {
  override readonly name = "TransferCodingError";
  constructor() {
    super("Unsupported transfer coding.");
  }
}

/**
 * Whether `incoming` is HTTP/1.1 (or a later 1.x), which must carry a Host (RFC 9112 §3.2). Node's
 * parser gives numbers. An IncomingMessage shim (serverless-http, @vendia/ and
 * @codegenie/serverless-express) sets the strings `"1"` and `"1"` with `httpVersion: "1.1"`: read as
 * HTTP/1.1 too (until 2026-12-01 such a request was taken for HTTP/1.0, so one without a Host was
 * served for `localhost`, its tokens' issuer included). The shim says 1.1, and what is in front of
 * it (API Gateway, an ALB) is an HTTP/1.1 or HTTP/2 server that always hands on a Host; a request
 * that still has none is the 400 it is on Node's own server, not an issuer guessed. Only those exact
 * strings: a hand-built `new IncomingMessage(socket)` (versions null) stays as before, as does every
 * number. Only asked when the Host is missing, so never on a request that has one.
 * HTTP/2 requests (node:http2's compatibility API) carry :authority instead and are not asked.
 */
const isHttp11 = (incoming: IncomingMessage): boolean => {
  const major: unknown = incoming.httpVersionMajor;
  const minor: unknown = incoming.httpVersionMinor;
  return major === 1 ? (minor as number) >= 1 : major === "1" && minor === "1";
};

/**
 * Whether a Host beside an HTTP/2 `:authority` names the same (RFC 9113 §8.3.1 after RFC 3986 §6.2's
 * normalisation: case, a default or empty port); a value that is no authority is not the same.
 */
function sameAuthority(host: string, authority: string, incoming: IncomingMessage): boolean {
  const scheme = (incoming.socket as { encrypted?: boolean } | null)?.encrypted === true ? "https://" : "http://";
  const normal = (value: string) => (/[/?#@\\\s]/.test(value) ? null : URL.canParse(scheme + value) ? new URL(scheme + value).host : null);
  const a = normal(host);
  return a !== null && a === normal(authority);
}

/** The value of an HTTP/2 pseudo-header in raw headers (the first), if any. */
function pseudoHeader(raw: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i] === name) return raw[i + 1];
  return undefined;
}

const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);
const NORMALISED_METHODS = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]);

// Paths made only of characters the WHATWG URL parser leaves alone, without dot segments (also
// percent-encoded ones, which the parser resolves too) or backslashes: for these the string is
// already what `new Request(url).url` would be, and the parse can be skipped.
const PLAIN_PATH = /^\/[A-Za-z0-9\-_~!$&()*+,;=:@/?]*$/;
const DOT_SEGMENT = /\/\.|\/%2e/i;

function normaliseUrl(origin: string, path: string): string {
  // Concatenated rather than resolved against a base: new URL("//evil/x", base)
  // would treat the path as a network-path reference and change the host.
  const url = origin + path;
  if (PLAIN_PATH.test(path) && !DOT_SEGMENT.test(path) && !path.startsWith("//")) return url;
  return new URL(url).href;
}

const textDecoder = new TextDecoder();

// @types/node only declares the Node stream overload; Node 20 answers for Web streams too.
const isDisturbed = (stream: ReadableStream<Uint8Array>): boolean =>
  Readable.isDisturbed(stream as unknown as NodeJS.ReadableStream);

class NodeRequest {
  readonly #incoming: IncomingMessage;
  readonly #response: ServerResponse | undefined;
  readonly #method: string;
  readonly #url: string;
  readonly #headers: Headers;
  #controller: AbortController | undefined;
  #watching = false;
  #abortReason: DOMException | undefined;
  #abortListeners: Set<() => void> | undefined;
  /** undefined: not built yet. */
  #body: ReadableStream<Uint8Array> | null | undefined;
  #real: Request | undefined;
  /** The body was taken by {@link NodeRequest.readBody} (the adapter's `info.readBody`). */
  #readDirectly = false;
  /** Lets go of the body stream's source (see {@link releaseRequestBody}); set once it is built. */
  #discardBody: (() => void) | undefined;

  constructor(incoming: IncomingMessage, response: ServerResponse | undefined, method: string, url: string, headers: Headers) {
    this.#incoming = incoming;
    this.#response = response;
    this.#method = method;
    this.#url = url;
    this.#headers = headers;
  }

  get method(): string {
    return this.#method;
  }

  get url(): string {
    return this.#url;
  }

  get headers(): Headers {
    return this.#headers;
  }

  get signal(): AbortSignal {
    return this.#signal();
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#real !== undefined) return this.#real.body;
    return this.#ownBody();
  }

  get bodyUsed(): boolean {
    if (this.#real !== undefined) return this.#real.bodyUsed;
    if (this.#readDirectly) return true;
    // Like undici: the body counts as used once it was read from or cancelled.
    return this.#body != null && isDisturbed(this.#body);
  }

  async text(): Promise<string> {
    if (this.#real !== undefined) return this.#real.text();
    return textDecoder.decode(await this.#consume());
  }

  async json(): Promise<unknown> {
    if (this.#real !== undefined) return this.#real.json();
    return JSON.parse(textDecoder.decode(await this.#consume())) as unknown;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    if (this.#real !== undefined) return this.#real.arrayBuffer();
    // A fresh, exactly sized buffer, as undici returns, never one shared with Node's socket buffers.
    return (await this.#consume(true)).buffer as ArrayBuffer;
  }

  /** The real Request behind every member this class does not implement itself. */
  static real(request: NodeRequest): Request {
    return request.#toReal();
  }

  /** See {@link readRequestBody}. */
  static readBody(request: NodeRequest, maxBytes: number): Promise<Uint8Array | null> {
    return request.#readBody(maxBytes);
  }

  /** See {@link releaseRequestBody}. */
  static release(request: NodeRequest): void {
    // A Request built elsewhere (a hand-written adapter's own) has no such body: nothing to let go.
    if (#discardBody in request) request.#discardBody?.();
  }

  #signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      this.#watch();
      if (this.#abortReason !== undefined) controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  /** Starts noticing the client's disconnect (once); before that nobody could observe it. */
  #watch(): void {
    if (this.#watching) return;
    this.#watching = true;
    const incoming = this.#incoming;
    const response = this.#response;
    // A client that already left: the 'close' events below have fired by now. Only an incomplete
    // upload or an unfinished response means the client went away; once the response is out, an
    // upload cut short no longer affects the exchange.
    // (A response queued behind another on a pipelined connection has no 'close' of its own when
    // the connection goes: see connection-close.ts.)
    const gone =
      (incoming.destroyed && !incoming.complete && response?.writableFinished !== true) ||
      (response !== undefined && !response.writableFinished && connectionGone(response));
    if (gone) {
      this.#abort();
      return;
    }
    incoming.once("close", () => {
      if (!incoming.complete && response?.writableFinished !== true) this.#abort();
    });
    if (response !== undefined) {
      onConnectionClose(response, () => {
        if (!response.writableFinished) this.#abort();
      });
    }
  }

  #abort(): void {
    if (this.#abortReason !== undefined) return;
    const reason = new DOMException("The client disconnected.", "AbortError");
    this.#abortReason = reason;
    this.#controller?.abort(reason);
    const listeners = this.#abortListeners;
    this.#abortListeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener();
  }

  /** What the body stream watches instead of a real AbortSignal (same reason, same moment). */
  #abortSource(): AbortSource {
    const request = this; // the getters below have their own `this`
    return {
      get aborted() {
        return request.#abortReason !== undefined;
      },
      get reason() {
        return request.#abortReason;
      },
      addEventListener(_type, listener) {
        if (request.#abortReason !== undefined) return;
        (request.#abortListeners ??= new Set()).add(listener);
      },
      removeEventListener(_type, listener) {
        request.#abortListeners?.delete(listener);
      },
    };
  }

  /**
   * The whole body for `info.readBody`: straight from the IncomingMessage when nobody took the body
   * stream yet (no Web stream at all), else from that stream. Resolves to null past `maxBytes`, to
   * empty bytes for GET/HEAD or an empty body something else read to its end; rejects when the
   * upload breaks, with a PlantgateBodyConsumedError when something else took bytes of the body,
   * and with a TypeError once the body was read. Afterwards the body counts as used.
   */
  #readBody(maxBytes: number): Promise<Uint8Array | null> {
    if (this.#readDirectly) return Promise.reject(new TypeError("Body is unusable: Body has already been read"));
    const incoming = this.#incoming;
    if (this.#real !== undefined || this.#body !== undefined || isConsumed(incoming) || this.#abortReason !== undefined) {
      const body = this.body;
      if (body === null) return Promise.resolve(new Uint8Array(0));
      if (body.locked || isDisturbed(body)) return Promise.reject(new TypeError("Body is unusable: Body has already been read"));
      return readStream(body, maxBytes);
    }
    if (this.#method === "GET" || this.#method === "HEAD") {
      this.#body = null;
      return Promise.resolve(new Uint8Array(0));
    }
    this.#readDirectly = true;
    return readIncoming(incoming, maxBytes, () => this.#abort());
  }

  #ownBody(): ReadableStream<Uint8Array> | null {
    if (this.#body !== undefined) return this.#body;
    if (this.#readDirectly) {
      // Read already: an empty stream that counts as read, as undici's body is after text().
      const used = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.close();
        },
      });
      void used.getReader().read();
      this.#body = used;
      return used;
    }
    if (this.#method === "GET" || this.#method === "HEAD") {
      this.#body = null;
      return null;
    }
    this.#watch();
    const signal = this.#abortSource();
    const incoming = this.#incoming;
    if (isConsumed(incoming) && !signal.aborted) {
      // Something in the host read the stream before plantgate. Node sets readableDidRead once a
      // chunk went out ('data', read(), a pipe, async iteration, a bare resume() throwing it away),
      // never for an empty body read to its end: bytes are gone exactly when it is true. Then the
      // body fails when read, a host fault (until 2026-11-30 it read as empty, and plantgate
      // answered a 400 blaming the client); an empty body stays the empty body the client sent.
      // A client that went away (signal aborted) stays the client's broken upload, below.
      this.#body = incoming.readableDidRead ? takenBody() : new ReadableStream<Uint8Array>({
        start(controller) {
          controller.close();
        },
      });
      return this.#body;
    }
    const requestBody = createRequestBody(incoming, signal, () => this.#abort());
    this.#body = requestBody.stream;
    this.#discardBody = requestBody.discard;
    // Node drains an unread body by itself, but not one we started reading; without this a
    // half-read upload would stall the keep-alive connection.
    if (this.#response?.writableFinished === true) requestBody.discard();
    else this.#response?.once("finish", requestBody.discard);
    return this.#body;
  }

  /** The whole body; with `fresh`, in a buffer of its own even when it arrived in one chunk. */
  async #consume(fresh = false): Promise<Uint8Array> {
    const body = this.#ownBody();
    if (body === null) return new Uint8Array(0);
    if (body.locked || isDisturbed(body)) throw new TypeError("Body is unusable: Body has already been read");
    return (await readStream(body, Infinity, fresh))!;
  }

  #toReal(): Request {
    if (this.#real !== undefined) return this.#real;
    const init: RequestInit & { duplex: "half" } = {
      method: this.#method,
      headers: this.#headers,
      duplex: "half",
      signal: this.#signal(),
    };
    const body = this.#ownBody();
    let stand: "disturbed" | "locked" | undefined;
    if (body !== null && (body.locked || isDisturbed(body))) {
      // undici refuses a used stream; an equally used stand-in keeps bodyUsed, text() and clone()
      // answering as they would on the original.
      init.body = new ReadableStream<Uint8Array>();
      stand = isDisturbed(body) ? "disturbed" : "locked";
    } else {
      init.body = body;
    }
    const real = new Request(this.#url, init);
    if (stand === "disturbed") void real.body?.cancel();
    else if (stand === "locked") real.body?.getReader();
    this.#real = real;
    return real;
  }
}

/**
 * The body of a request whose bytes something else took: fails with a {@link PlantgateBodyConsumedError}
 * when read (through `info.readBody`, `request.body`, `text()`, ...). Pulls nothing until asked
 * (high-water mark 0), so building it (`clone()`, a real Request) fails nothing.
 */
function takenBody(): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        controller.error(new PlantgateBodyConsumedError());
      },
    },
    { highWaterMark: 0 },
  );
}

/** `info.readBody` for a Request made by {@link createNodeRequest} (see `NodeRequest.#readBody`). */
export function readRequestBody(request: Request, maxBytes: number): Promise<Uint8Array | null> {
  return NodeRequest.readBody(request as unknown as NodeRequest, maxBytes);
}

/**
 * Lets go of the body of a Request made by {@link createNodeRequest}: a reader of its stream gets an
 * AbortError, and the rest of the upload flows off the wire unread (no longer paused for a reader
 * that will never come back). Does nothing when the stream was never built. @internal
 */
export function releaseBody(request: Request): void {
  NodeRequest.release(request as unknown as NodeRequest);
}

// Everything else a Request has is answered by the real one; inheriting from Request.prototype
// makes `instanceof Request` hold.
for (const key of Reflect.ownKeys(Request.prototype)) {
  if (key === "constructor" || key === Symbol.toStringTag || Object.hasOwn(NodeRequest.prototype, key)) continue;
  const descriptor = Object.getOwnPropertyDescriptor(Request.prototype, key)!;
  const { value, get } = descriptor;
  if (typeof value === "function") {
    Object.defineProperty(NodeRequest.prototype, key, {
      configurable: true,
      writable: true,
      value(this: NodeRequest, ...args: unknown[]): unknown {
        return (value as (...a: unknown[]) => unknown).apply(NodeRequest.real(this), args);
      },
    });
  } else if (get !== undefined) {
    Object.defineProperty(NodeRequest.prototype, key, {
      configurable: true,
      get(this: NodeRequest): unknown {
        return get.call(NodeRequest.real(this));
      },
    });
  }
}
Object.setPrototypeOf(NodeRequest.prototype, Request.prototype);
