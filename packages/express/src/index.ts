import type { NextFunction, Request as ExpressRequest, RequestHandler, Response as ExpressResponse } from "express";
import {
  checkUploadDiscardOptions,
  hasAmbiguousPath,
  HttpVersionNotSupportedError,
  isOtherHttpMajor,
  isRefusedUpload,
  lingerOnUnreadUpload,
  MisdirectedRequestError,
  originOf,
  PlantgateBodyConsumedError,
  refusedRequestAnswer,
  releaseRequestBody,
  toCheckedExchange,
  writeResponse,
  type FetchApp,
  type NodeApp,
  type NodeExchange,
  type PlainAnswer,
  type UploadDiscardOptions,
} from "@plantgate/node";

export type { FetchApp, HandleApp, NodeApp } from "@plantgate/node";

/**
 * Options for {@link plantgate}.
 *
 * @example
 * ```ts
 * import type { PlantgateExpressOptions } from "@plantgate/express";
 *
 * const options: PlantgateExpressOptions = { notFound: "respond" };
 * ```
 */
export interface PlantgateExpressOptions extends UploadDiscardOptions {
  /**
   * What to do with a path the app does not own (`app.owns(path)` is false, i.e.
   * plantgate would answer its "no such route" 404 `{"error":1404,...}`):
   * `"next"` (default) calls `next()` without asking the app, so the rest of the
   * Express app (its own routes, its 404 handler) gets the request;
   * `"respond"` lets the app answer (plantgate's 404 as it is). An app without
   * `owns` (any plain Web handler) answers every path itself.
   */
  notFound?: "next" | "respond";
}

/**
 * What {@link plantgate} serves: a plantgate app (`handle` and `owns`), or any Web handler with
 * `handle` or `fetch` (see `@plantgate/node`'s `NodeApp`).
 */
export type ExpressApp = NodeApp & {
  /** Whether the app answers this pathname with anything but its "no such route" 404. */
  owns?(path: string): boolean;
};

/**
 * What reading the request body fails with when a body parser (`express.json()`,
 * `express.urlencoded()`, `express.raw()`, multer, ...) read it before plantgate: `@plantgate/node`'s
 * class (code {@link BODY_CONSUMED}, a `HostFaultError` of `@plantgate/core`), with a message naming
 * Express's parsers. plantgate answers it with its 500 (`server_error`, or `{"error":1500}` on the
 * plant store and console), logs, and counts and traces it as that 500 (`error.type`
 * `PLANTGATE_BODY_CONSUMED`). Passed to `next(err)` (a 500 by `status`/`statusCode`, `expose`
 * false, for Express's error handling) when the app threw after reading, or answered anything but a
 * 5xx (a Web handler that took the failure for the client's). A request the app refuses without
 * reading its body (a JSON body to the form-only token endpoint) gets the app's answer, as without
 * the parser.
 */
export { BODY_CONSUMED, PlantgateBodyConsumedError } from "@plantgate/node";

const PARSER_FIRST =
  "plantgate: a body parser consumed the request body before plantgate; " +
  "mount plantgate before express.json()/express.urlencoded() (or mount those parsers only on your own routes)";

/** The authority of an absolute-form request target (`http://host/path`, RFC 9112 §3.2.2), if it is one. */
function targetAuthority(target: string): string | undefined {
  if (!ABSOLUTE_FORM.test(target)) return undefined;
  try {
    return new URL(target).host;
  } catch {
    return undefined;
  }
}
const ABSOLUTE_FORM = /^https?:\/\//i;

/** Any scheme's absolute form (`ftp://host/path`): Express's router (parseurl) routes it by its path. */
const ANY_ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\//i;

/** The pathname of a request target, origin-form or absolute-form; undefined when it has none. */
function targetPath(target: string): string | undefined {
  try {
    // Any scheme, not only http(s): Express routes `POST ftp://x/auth/token` as /auth/token, so
    // plantgate's own path got Express's HTML 404 (`Cannot POST /auth/token`) where the Node
    // listener answers its 400 JSON (until 2026-11-29).
    if (ANY_ABSOLUTE_FORM.test(target)) return new URL(target).pathname;
    // Concatenated as the listener does (a target starting with // is a path, not a host).
    return new URL(`http://localhost${target.startsWith("/") ? "" : "/"}${target}`).pathname;
  } catch {
    return undefined;
  }
}

/**
 * `scheme://host[:port]` as Express sees it, i.e. with its `trust proxy` setting applied.
 *
 * @throws MisdirectedRequestError for an absolute-form target naming the other scheme.
 */
function expressOrigin(req: ExpressRequest): string {
  const encrypted = (req.socket as { encrypted?: boolean } | null)?.encrypted === true;
  const protocol = req.protocol.toLowerCase();
  const scheme = protocol === "http" || protocol === "https" ? protocol : encrypted ? "https" : "http";
  // The host checked (and cached) exactly as @plantgate/node's listener checks it, and as there a
  // forwarded host that is not a usable host[:port] falls back to the Host header (it is
  // req.host only under trust proxy; the Host header itself was checked, a bad one is a 400).
  // Which forwarded value counts is Express's rule, not the listener's: req.host takes the first
  // of several X-Forwarded-Host values, the listener the last (the nearest proxy's).
  // An absolute-form target's authority overrides the Host header (RFC 9112 §3.2.2), as on the
  // listener; a trusted forwarded host (req.host is then not the Host header) still comes first.
  // RFC 9110 §7.4: a target naming the other scheme (`GET https://host/...` over plain TCP) is the
  // listener's 421, not served under this connection's scheme (until 2026-11-30 it was).
  if (ABSOLUTE_FORM.test(req.originalUrl) && (req.originalUrl.charCodeAt(4) === 0x3a) !== (scheme === "http")) throw new MisdirectedRequestError();
  const authority = targetAuthority(req.originalUrl);
  const host = authority !== undefined && req.host === req.headers.host ? authority : req.host;
  return originOf(scheme, host, req.headers.host);
}

function hasBody(req: ExpressRequest): boolean {
  return req.method !== "GET" && req.method !== "HEAD";
}

function bodyConsumed(req: ExpressRequest): boolean {
  // The stream's own state, as @plantgate/node decides it: Node sets readableDidRead once a chunk
  // went to someone (a parser: Express 5's, body-parser 1.x's, multer, ...), never for an empty body
  // read to its end, which is still the empty body the client sent (until 2026-11-30 readableEnded
  // counted too: an empty form behind express.urlencoded() was a 500, not the client's 400). Not
  // req.body: body-parser 1.x sets it to {} on every request, also one whose body it left alone
  // (that was a 500 for every token request behind it).
  return req.readableDidRead;
}

/**
 * The exchange handed to the app when a body parser already consumed the request's body: the same
 * URL, method, headers, signal and client address, with a body that fails (a
 * {@link PlantgateBodyConsumedError}) as soon as anyone reads it, through `info.readBody`,
 * `request.body`, `text()`, `json()` or any other reader; `read()` says whether anyone tried.
 * Cancelling the body (a refusal that never reads it) is not reading. The stream pulls nothing
 * until asked (high-water mark 0), so building it reads nothing. Never an empty body: the app
 * would take it for what the client sent.
 */
function unreadableBody(exchange: NodeExchange): { exchange: NodeExchange; read(): boolean } {
  let read = false;
  const refuse = (): PlantgateBodyConsumedError => {
    read = true;
    return new PlantgateBodyConsumedError(PARSER_FIRST);
  };
  const original = exchange.request;
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        controller.error(refuse());
      },
    },
    { highWaterMark: 0 },
  );
  const init: RequestInit & { duplex: "half" } = { method: original.method, headers: original.headers, body, duplex: "half", signal: original.signal };
  const request = new Request(original.url, init);
  const clientIp = exchange.clientIp;
  return {
    exchange: {
      request,
      ...(clientIp === undefined ? {} : { clientIp }),
      ...(exchange.unixSocket === true ? { unixSocket: true } : {}),
      readBody: () => Promise.reject(refuse()),
    },
    read: () => read,
  };
}

/**
 * Express 5 middleware serving a plantgate app (or any Web handler, {@link ExpressApp}).
 *
 * - **Mount at the root.** The Web Request carries the full original URL (`req.originalUrl`)
 *   and `app.owns()` decides which paths are plantgate's, so `expressApp.use(plantgate(app))`
 *   serves `basePath`'s routes and the RFC 8414 §3.1 metadata URL outside it
 *   (`/.well-known/oauth-authorization-server/auth` for `basePath: "/auth"`); every other path
 *   goes on with `next()`. Mounted at `basePath` (`expressApp.use("/auth", plantgate(app))`, the
 *   mount path then equal to `basePath`) it serves everything but that one URL.
 *   Metadata and JWKS URLs include `basePath`.
 * - **Origin** comes from `req.protocol` and `req.host`, so Express's
 *   `trust proxy` setting decides whether `X-Forwarded-Proto`/`-Host` count.
 * - **Body**: read raw from the socket (int64 ids stay exact). Mount plantgate
 *   *before* any body parser; if one already consumed the body of a request plantgate
 *   answers, the app gets a body that fails when read, with a {@link PlantgateBodyConsumedError}:
 *   its answer is sent when it never read the body (a refusal by media type, method or
 *   credentials, as without the parser) or answered the failure with a 5xx (plantgate's 500, a
 *   `HostFaultError`), else `next(err)` is called with that error (the host app's own routes keep
 *   their parsed bodies).
 * - **Unknown routes** (paths `app.owns()` says plantgate does not answer) go on
 *   with `next()`, before plantgate sees them, unless `options.notFound` is `"respond"`.
 * - A target whose path holds a `.` or `..` segment (also as `%2e`) or a backslash, which the URL
 *   parser would resolve to another path (`/auth/x/../connect/token` to the token endpoint) while
 *   Express's router and the host's guards match it as sent, goes on with `next()`, whatever
 *   `options.notFound` says: plantgate never serves it.
 * - Requests a Web Request cannot carry (`TRACE`, `TRACK`, `CONNECT`, `OPTIONS *`), or with a
 *   missing, repeated or invalid Host, get a 400 `invalid_request` for a path plantgate answers, as
 *   from `@plantgate/node`'s listener, without reaching the app; on the host app's own paths they
 *   go on with `next()`.
 * - Unexpected failures (the app throws, the response cannot be written before
 *   headers are out) go to `next(err)`, i.e. to Express's error handling, with the rest of the
 *   request body let go (a reader the app left behind gets an AbortError).
 * - Absolute-form targets (`POST http://host/auth/...`) are treated as on the listener: the
 *   target's authority is the host (RFC 9112 §3.2.2) unless a trusted forwarded host says otherwise.
 *   One naming the other scheme than `req.protocol` (`https://...` over plain TCP) gets the
 *   listener's 421 on a path plantgate answers (RFC 9110 §7.4). Another scheme's
 *   (`ftp://x/auth/...`) gets the listener's 400 on a path plantgate answers.
 * - A request whose HTTP major version is not 1 (a request line without a version, which Node's
 *   parser takes for HTTP/0.9's; `HTTP/0.9`; `HTTP/2.0` in HTTP/1 text) gets the listener's 505
 *   with `Connection: close` on a path plantgate answers (RFC 9110 §15.6.6), before the scheme or
 *   the Host is looked at; on the host app's own paths it goes on with `next()`.
 * - Under an IncomingMessage shim (serverless-http's, Express on AWS Lambda: empty `rawHeaders`,
 *   `headers` set, the version as the strings `"1"`/`"1"`) the headers are read from `headers` and
 *   the request is HTTP/1.1; a repeated Host line cannot be told there (the shim hands on one).
 *
 * @example
 * ```ts
 * import express from "express";
 * import { createPlantgate } from "@plantgate/core";
 * import { plantgate } from "@plantgate/express";
 *
 * const pg = createPlantgate({ basePath: "/auth" });
 * const app = express();
 * app.use(plantgate(pg));   // before express.json(); answers /auth/... and the RFC 8414 metadata URL
 * app.use(express.json());
 * app.listen(3000);
 * ```
 */
export function plantgate(app: ExpressApp, options: PlantgateExpressOptions = {}): RequestHandler {
  const discard: UploadDiscardOptions = {
    ...(options.uploadDiscardBytes === undefined ? {} : { uploadDiscardBytes: options.uploadDiscardBytes }),
    ...(options.uploadDiscardMs === undefined ? {} : { uploadDiscardMs: options.uploadDiscardMs }),
  };
  // Checked here, once: checked per request it failed only after the app had answered (a token
  // issued, a refresh token rotated, then a 500), and a refused request lost its answer.
  checkUploadDiscardOptions(discard);
  const owns = (options.notFound ?? "next") === "next" && typeof app.owns === "function" ? app.owns.bind(app) : undefined;

  return (req: ExpressRequest, res: ExpressResponse, next: NextFunction): void => {
    void handle().catch((error: unknown) => {
      // Only reachable if next() itself throws; never leave a rejection behind.
      if (!res.headersSent) res.destroy(error instanceof Error ? error : undefined);
    });

    async function handle(): Promise<void> {
      // A target whose path the URL parser reads as another (`/auth/x/../connect/token`,
      // `/auth\console`, `%2e%2e`) is not plantgate's: Express's router, and any guard the host
      // mounted on plantgate's paths (a rate limiter, an allow-list), matched it as sent, so serving
      // the resolved path would let it past them (until 2026-12-02 it was served). The host app
      // handles it as it would without plantgate (its own routes, its 404).
      const target = req.originalUrl;
      if (hasAmbiguousPath(target)) {
        next();
        return;
      }
      let exchange: NodeExchange;
      const routedUrl = req.url;
      try {
        // toCheckedExchange (toExchange) reads the path from req.url, which Express rewrites to be
        // relative to the mount point; the app must see the full path.
        req.url = target;
        // RFC 9110 §15.6.6: a major version other than 1 (a request line without a version, which
        // Node's parser takes for HTTP/0.9's; `HTTP/0.9`; `HTTP/2.0` in text framing) is the
        // listener's 505, before the scheme (421) or the Host is looked at (until 2026-11-30 served).
        // The listener's own check: an IncomingMessage shim's "1" or null is served.
        if (isOtherHttpMajor(req)) throw new HttpVersionNotSupportedError();
        // Its clientIp is the raw socket address, not req.ip: Express's "trust proxy" and
        // plantgate's trustedProxies would otherwise be two places deciding whom to believe.
        // The target checked above is not checked again in there (it is req.url now); owns()
        // below runs core's twin of the check on the resolved pathname, its own contract (a host
        // may hand it a raw path). Until 2026-12-02 three runs a request, now two (one with
        // notFound "respond" or an app without owns()).
        exchange = toCheckedExchange(req, { origin: expressOrigin(req), response: res }, target);
      } catch (error) {
        req.url = routedUrl;
        // A request a Web Request cannot carry (TRACE, TRACK, CONNECT, `OPTIONS *`), with a bad
        // Host, another scheme's or HTTP version, or a transfer coding other than chunked: the Node
        // listener's 400, 421, 505 or 501 for a path plantgate answers, never next(err) (Express's
        // default handler would show a stack); the host app's own paths are its business.
        if (owns !== undefined) {
          const path = targetPath(req.originalUrl);
          if (path !== undefined && !owns(path)) {
            next();
            return;
          }
        }
        lingerOnUnreadUpload(req, res, discard);
        writeResponse(refusedRequestAnswer(error), res);
        return;
      }
      req.url = routedUrl;
      const request = exchange.request;
      // The pathname as the app will see it (normalised as every Request URL is).
      if (owns !== undefined && !owns(new URL(request.url).pathname)) {
        next();
        return;
      }
      // Only for a path plantgate answers: a parser mounted before it (express.json()) that read
      // the host app's own routes' bodies is none of plantgate's business (that was a 500 for
      // every JSON POST of the app). A consumed body is not refused up front: the app gets a body
      // that fails when read, and only a request it actually reads goes to next(err). One it
      // refuses unread (a JSON body to the form-only token endpoint, a body to a GET-only route,
      // missing credentials) gets that answer, exactly as without the parser (until 2026-11-30
      // every one was the 500, a server error for the client's bad input).
      const consumed = hasBody(req) && bodyConsumed(req) ? unreadableBody(exchange) : undefined;
      const info = consumed?.exchange ?? exchange;
      const appRequest = info.request;

      // plantgate's handle(): a plain answer written directly, no Web Response in between.
      let answer: PlainAnswer | Response;
      try {
        if (typeof app.handle === "function") answer = await app.handle(appRequest, info);
        else {
          const result: unknown = await (app as FetchApp).fetch(appRequest, info);
          if (!(result instanceof Response)) throw new TypeError("app.fetch() did not resolve to a Response.");
          answer = result;
        }
      } catch (error) {
        // The app failed on an upload Node's parser refused after it got the request (a bad chunk
        // size): the client is still there, and gets the 400 of its bad input in its turn (until
        // 2026-12-01 nothing was written, as for a client that went away, and the connection hung).
        if (isRefusedUpload(req)) {
          lingerOnUnreadUpload(req, res, discard);
          writeResponse(refusedRequestAnswer(error), res);
          return;
        }
        // The client went away; there is nobody to answer.
        if (request.signal.aborted && (error === request.signal.reason || error === appRequest.signal.reason)) return;
        if (consumed?.read() === true) {
          next(new PlantgateBodyConsumedError(PARSER_FIRST));
          return;
        }
        // Express's final handler reads the rest of the body before it answers; a reader the app
        // left behind kept it paused, and the request hung.
        releaseRequestBody(exchange);
        next(error);
        return;
      }
      if (consumed !== undefined && answer.status < 500 && consumed.read()) {
        // The app wanted the body the parser took and answered as if the client were at fault (a
        // Web handler that took the failure for a broken upload): nothing of that answer is sent.
        // plantgate itself answers a HostFaultError with its 500, sent below as it counted it
        // (until 2026-11-30 every such request went here, plantgate's metrics and spans a 400).
        if (answer instanceof Response) await answer.body?.cancel().catch(() => {});
        next(new PlantgateBodyConsumedError(PARSER_FIRST));
        return;
      }

      try {
        // An answer written before the upload was read still reaches the client: a lingering close
        // (the rest of the upload read and discarded within uploadDiscardBytes / uploadDiscardMs).
        lingerOnUnreadUpload(req, res, discard);
        const streaming = writeResponse(answer, res);
        if (streaming !== undefined) await streaming;
      } catch (error) {
        // With headers already sent, Express's final handler closes the connection.
        releaseRequestBody(exchange);
        next(error);
      }
    }
  };
}
