import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { createRequestBody, type AbortSource } from "./request-body.js";
import { resolveOrigin } from "./request-origin.js";
import { headersFromRaw, isConsumed, parseTarget } from "./to-request.js";

/** Inputs of {@link createNodeRequest}; `origin` is already validated by the caller. */
export interface NodeRequestOptions {
  origin: string | undefined;
  trustProxy: boolean;
  response: ServerResponse;
}

/**
 * A `Request` for the request listener that costs a fraction of undici's: `method`, `url`,
 * `headers`, `signal`, `body`, `bodyUsed`, `text()`, `arrayBuffer()` and `json()` are served from
 * the IncomingMessage directly, the signal and the body stream are only built when first read, and
 * every other member (`clone()`, `formData()`, `cache`, ...) is answered by a real undici `Request`
 * built once, on first use, over the same body stream and signal. Building an undici Request, an
 * AbortController, close listeners and a Web stream for every request cost several times the
 * whole work of a bare node:http server, while most requests to plantgate only read a few headers.
 *
 * The observable behaviour is the one {@link toRequest} documents (same URL, same header
 * combining, same body and abort semantics), and `instanceof Request` holds.
 *
 * @throws TypeError as {@link toRequest} does, for targets a Web Request cannot represent.
 */
export function createNodeRequest(incoming: IncomingMessage, options: NodeRequestOptions): Request {
  let method = incoming.method ?? "GET";
  const upper = method.toUpperCase();
  // Same refusal and the same normalisation as the Request constructor (and thus toRequest).
  if (FORBIDDEN_METHODS.has(upper)) throw new TypeError(`Unsupported method ${method}.`);
  if (NORMALISED_METHODS.has(upper)) method = upper;
  const headers = headersFromRaw(incoming.rawHeaders);
  const target = parseTarget(incoming.url ?? "/");
  const origin = resolveOrigin({
    incoming,
    headers,
    targetAuthority: target.authority,
    origin: options.origin,
    trustProxy: options.trustProxy,
  });
  return new NodeRequest(incoming, options.response, method, normaliseUrl(origin, target.path), headers) as unknown as Request;
}

/**
 * The lightweight `Request` the request listener hands apps, for adapters of other Node frameworks
 * (`@plantgate/express` uses it): the same URL, headers, body and abort semantics as
 * {@link toRequest}, at a fraction of the cost, with the body readable through plantgate's direct
 * read. `response` is the ServerResponse of the exchange (for noticing the client's disconnect).
 *
 * @throws TypeError as {@link toRequest} does: an invalid `origin`, or a target a Web Request
 *   cannot represent (`TRACE`, `CONNECT`).
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { toLightRequest } from "@plantgate/node";
 *
 * createServer((req, res) => {
 *   const request = toLightRequest(req, { response: res, origin: "https://auth.example.com" });
 *   res.end(request.url);
 * }).listen(3000);
 * ```
 */
export function toLightRequest(incoming: IncomingMessage, options: { response: ServerResponse; origin?: string; trustProxy?: boolean }): Request {
  return createNodeRequest(incoming, { response: options.response, origin: options.origin, trustProxy: options.trustProxy === true });
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

/** plantgate core's fast body read (`READ_BODY` in @plantgate/core); registered, so this package needs no core import. */
const READ_BODY = Symbol.for("plantgate.read-body");

class NodeRequest {
  readonly #incoming: IncomingMessage;
  readonly #response: ServerResponse;
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
  /** The body was taken by {@link NodeRequest.readBody} (plantgate core's fast path). */
  #readDirectly = false;

  constructor(incoming: IncomingMessage, response: ServerResponse, method: string, url: string, headers: Headers) {
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
    const gone =
      (incoming.destroyed && !incoming.complete && !response.writableFinished) ||
      (response.destroyed && !response.writableFinished);
    if (gone) {
      this.#abort();
      return;
    }
    incoming.once("close", () => {
      if (!incoming.complete && !response.writableFinished) this.#abort();
    });
    response.once("close", () => {
      if (!response.writableFinished) this.#abort();
    });
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
   * The whole body straight from the IncomingMessage, without a Web stream: what
   * `Symbol.for("plantgate.read-body")` answers (see `READ_BODY` in @plantgate/core). Resolves to
   * null once more than `maxBytes` arrived (the rest then flows off the wire unread, as after a
   * cancel, so the connection stays usable for the answer), to undefined when the body stream was
   * already handed out (the caller then reads that), and rejects when the upload breaks.
   * Afterwards the body counts as used, as after `text()`.
   */
  [READ_BODY](maxBytes: number): Promise<Uint8Array | null | undefined> {
    if (this.#real !== undefined || this.#body !== undefined || this.#readDirectly) return Promise.resolve(undefined);
    const incoming = this.#incoming;
    if (this.#method === "GET" || this.#method === "HEAD") {
      this.#body = null;
      return Promise.resolve(new Uint8Array(0));
    }
    if (isConsumed(incoming) || this.#abortReason !== undefined) return Promise.resolve(undefined);
    this.#readDirectly = true;
    return new Promise((resolve, reject) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      const detach = (): void => {
        incoming.off("data", onData);
        incoming.off("end", onEnd);
        incoming.off("error", onError);
        incoming.off("close", onClose);
      };
      const onData = (chunk: Buffer): void => {
        size += chunk.byteLength;
        if (size > maxBytes) {
          detach();
          // Without 'data' listeners, flowing mode throws the remaining bytes away.
          incoming.resume();
          resolve(null);
          return;
        }
        chunks.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      };
      const onEnd = (): void => {
        detach();
        if (chunks.length === 1) {
          resolve(chunks[0]!);
          return;
        }
        const bytes = new Uint8Array(size);
        let offset = 0;
        for (const chunk of chunks) {
          bytes.set(chunk, offset);
          offset += chunk.byteLength;
        }
        resolve(bytes);
      };
      const broken = (error: unknown): void => {
        detach();
        this.#abort();
        reject(error);
      };
      const onError = (error: unknown): void => broken(error);
      const onClose = (): void => {
        if (!incoming.complete) broken(new DOMException("The client disconnected.", "AbortError"));
      };
      incoming.on("data", onData);
      incoming.once("end", onEnd);
      incoming.on("error", onError);
      incoming.once("close", onClose);
      // A 'data' listener does not restart a stream someone paused explicitly (a middleware, say).
      incoming.resume();
    });
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
      this.#body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.close();
        },
      });
      return this.#body;
    }
    const requestBody = createRequestBody(incoming, signal, () => this.#abort());
    this.#body = requestBody.stream;
    // Node drains an unread body by itself, but not one we started reading; without this a
    // half-read upload would stall the keep-alive connection.
    if (this.#response.writableFinished) requestBody.discard();
    else this.#response.once("finish", requestBody.discard);
    return this.#body;
  }

  /** The whole body; with `fresh`, in a buffer of its own even when it arrived in one chunk. */
  async #consume(fresh = false): Promise<Uint8Array> {
    const body = this.#ownBody();
    if (body === null) return new Uint8Array(0);
    if (body.locked || isDisturbed(body)) throw new TypeError("Body is unusable: Body has already been read");
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
    if (chunks.length === 1 && !fresh) return chunks[0]!;
    const bytes = new Uint8Array(size);
    let offset = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return bytes;
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
