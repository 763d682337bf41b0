import { callHost } from "./host-callback.js";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FetchApp, NodeApp, PlainAnswer } from "./fetch-app.js";
import { parseOrigin } from "./request-origin.js";
import { discardBounds, linger, type UploadDiscardOptions } from "./linger.js";
import { exchangeOf, refusedRequestAnswer, type NodeExchange } from "./to-request.js";
import { writeResponse } from "./write-response.js";
import { isRefusedUpload } from "./client-errors.js";

/**
 * Options for {@link createRequestListener}.
 *
 * @example
 * ```ts
 * import type { RequestListenerOptions } from "@plantgate/node";
 *
 * const options: RequestListenerOptions = {
 *   origin: "https://auth.example.com",
 *   onError: (error) => {
 *     console.error("fetch app failed:", error instanceof Error ? error.name : typeof error);
 *   },
 * };
 * ```
 */
export interface RequestListenerOptions extends UploadDiscardOptions {
  /** See {@link ToRequestOptions.origin}. Validated once, up front. */
  origin?: string;
  /** See {@link ToRequestOptions.trustProxy}. */
  trustProxy?: boolean;
  /**
   * Called with whatever `app.handle`/`app.fetch` threw or rejected with, or with the error
   * that broke a response body mid-stream. Defaults to logging the error's
   * name and message only: messages of a credential-handling app should not
   * end up in logs with stacks, causes or attached properties.
   * Not called when the app rejects with `request.signal.reason`, i.e. merely
   * passed on the client's disconnect.
   */
  onError?: (error: unknown) => void;
}

/** The exact body sent when the app fails; nothing about the error leaks. */
const SERVER_ERROR_BODY =
  '{"error":"server_error","error_description":"The server encountered an unexpected error."}';

/**
 * Turns an app into a `node:http` request listener: a plantgate app (or any {@link HandleApp}),
 * whose `handle(request, info)` is called, or any Web handler with only `fetch(request, info)`.
 *
 * Each request goes through {@link toExchange} (the Request, the socket peer address and a direct
 * body reader as `info`), the app, and {@link writeResponse}: a plain answer is written with one
 * `writeHead` and one `end`, a Response is streamed. If the app throws, rejects or resolves to
 * something it may not (`fetch`: anything but a `Response`; `handle`: anything but a plain answer
 * or a `Response`), the client gets a 500 with
 * `content-type: application/json` and the body
 * `{"error":"server_error","error_description":"The server encountered an unexpected error."}`,
 * and `onError` receives the error. Requests that cannot be represented as a
 * Web Request (`TRACE`, `OPTIONS *`) get a 400 with an `invalid_request` body
 * and never reach the app. The listener never throws and never leaves a
 * rejected promise behind.
 *
 * An answer written before the request body was read (an over-limit upload, a refused request)
 * reaches the client every time: the connection lingers, reading and discarding the rest of the
 * upload within `uploadDiscardBytes` / `uploadDiscardMs` (see {@link lingerOnUnreadUpload}).
 *
 * @throws TypeError if `options.origin` is not an http(s) URL.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { createRequestListener } from "@plantgate/node";
 *
 * const app = { fetch: async (request: Request) => new Response("ok") };
 * createServer(createRequestListener(app, { trustProxy: true })).listen(3000);
 * ```
 */
export function createRequestListener(
  app: NodeApp,
  options: RequestListenerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  // Fail at startup rather than on every request.
  const origin = options.origin === undefined ? undefined : parseOrigin(options.origin);
  const trustProxy = options.trustProxy === true;
  const onError = options.onError ?? logError;
  const bounds = discardBounds(options);
  const handleMethod = app.handle;
  const handleApp = typeof handleMethod === "function" ? handleMethod.bind(app) : undefined;
  const fetchApp = handleApp === undefined ? (app as FetchApp) : undefined;

  // A failing logger must not turn into an unhandled rejection that takes the process down: neither
  // its throw nor an async one's rejection (until 2026-12-02 that one did, on the first 500).
  const report = (error: unknown): void => callHost(() => onError(error));

  return (req, res) => {
    void handle();

    async function handle(): Promise<void> {
      let exchange: NodeExchange;
      try {
        exchange = exchangeOf(req, res, origin, trustProxy);
      } catch (error) {
        linger(req, res, bounds.bytes, bounds.ms);
        writeResponse(refusedRequestAnswer(error), res);
        return;
      }
      const request = exchange.request;

      let answer: PlainAnswer | Response;
      try {
        if (handleApp !== undefined) answer = await handleApp(request, exchange);
        else {
          const result: unknown = await fetchApp!.fetch(request, exchange);
          if (!(result instanceof Response)) throw new TypeError("app.fetch() did not resolve to a Response.");
          answer = result;
        }
      } catch (error) {
        linger(req, res, bounds.bytes, bounds.ms);
        // The app failed on an upload Node's parser refused after it got the request: the client's
        // bad input, answered 400 in its turn (see isRefusedUpload), not reported.
        if (isRefusedUpload(req)) return void writeResponse(refusedRequestAnswer(error), res);
        if (!(request.signal.aborted && error === request.signal.reason)) report(error);
        sendJson(res, 500, SERVER_ERROR_BODY);
        return;
      }

      try {
        // An answer written before the upload was read still reaches the client: a lingering close.
        linger(req, res, bounds.bytes, bounds.ms);
        // A plain answer is written at once; only a streamed Response leaves something to wait for.
        const streaming = writeResponse(answer, res);
        if (streaming !== undefined) await streaming;
      } catch (error) {
        report(error);
        // Headers may already be out; then writeResponse has destroyed the
        // connection and there is nothing left to send.
        sendJson(res, 500, SERVER_ERROR_BODY);
      }
    }
  };
}

function sendJson(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent || res.destroyed || res.writableEnded) return;
  try {
    // Headers an earlier middleware or a failed writeResponse() set must not
    // leak into the error response (cookies in particular).
    for (const name of res.getHeaderNames()) res.removeHeader(name);
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      "cache-control": "no-store",
    });
    res.end(body);
  } catch {
    res.destroy();
  }
}

function logError(error: unknown): void {
  const description =
    error instanceof Error ? `${error.name}: ${error.message}` : `non-Error value (${typeof error})`;
  console.error(`[@plantgate/node] unhandled error: ${description}`);
}
