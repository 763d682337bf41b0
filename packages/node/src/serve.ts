import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { closeAfterUpgradeRequest, refuseMalformedRequests } from "./client-errors.js";
import { checkCloseTimeout, closeGracefully, DEFAULT_CLOSE_TIMEOUT_MS } from "./close-gracefully.js";
import { createRequestListener, type RequestListenerOptions } from "./create-request-listener.js";
import { deferContinue } from "./expect-continue.js";
import type { NodeApp } from "./fetch-app.js";

/**
 * Options for {@link serve}.
 *
 * @example
 * ```ts
 * import type { ServeOptions } from "@plantgate/node";
 *
 * const options: ServeOptions = { port: 8080, host: "0.0.0.0", trustProxy: true };
 * ```
 */
export interface ServeOptions extends RequestListenerOptions {
  /** TCP port; `0` picks a free ephemeral port. Defaults to `3000`. */
  port?: number;
  /**
   * Interface to bind. Defaults to `127.0.0.1` so nothing is exposed to the
   * network unless asked for; use `0.0.0.0` or `::` in containers.
   */
  host?: string;
  /**
   * How long (ms) a client may take to send the request line and headers; default 10 000 (Node's
   * own default is 60 000). The connection then gets a 408 and is closed.
   */
  headersTimeout?: number;
  /**
   * How long (ms) a client may take to send a whole request, headers and body, counted from its
   * first byte; default 60 000 (Node's own default is 300 000); `0` turns it off. It also bounds the
   * lingering close of a refused upload (`uploadDiscardMs`, default 30 000), whichever ends first.
   * Must not be less than `headersTimeout`, whose default is lowered to it when it is under 10 000.
   */
  requestTimeout?: number;
  /** How long (ms) an idle keep-alive connection stays open after a response; default 5 000 (Node's default). */
  keepAliveTimeout?: number;
  /**
   * Most connections open at once; further ones are closed as soon as they are accepted. Default
   * 1 024 (Node's own default: no limit).
   */
  maxConnections?: number;
  /**
   * How long (ms) a connection may go without traffic either way before it is destroyed; default
   * 60 000 (Node's own default: never); `0` turns it off. Node's other timers stop once a request
   * has been read, so without it a client that sends requests and never reads the answers (the
   * answers wait unsent in full buffers) holds its connection for good, and `maxConnections` such
   * clients shut everyone else out. Longer than any answer should take to start flowing, and than
   * the refresh-token grace window (30 s by default): a refresh whose answer is cut off is retried
   * with the old token, which the server takes for reuse once the window has passed. Default 62 000
   * since 2026-12-03 (60 000 before): longer than `requestTimeout` and Node's check of it (every
   * second), so a request whose upload stalls gets its 408; at 60 000, equal to `requestTimeout`,
   * the connection, silent as long from the upload's last byte, was destroyed first with no answer
   * at all. Given one at or under `requestTimeout`, such a request is closed unanswered.
   */
  socketTimeout?: number;
  /**
   * How long (ms) `close()` lets the answers in flight finish before it destroys every connection
   * still open; default 10 000. See {@link closeGracefully}.
   */
  closeTimeout?: number;
}

/** The limits {@link serve} applies unless told otherwise. */
export const SERVE_DEFAULTS = Object.freeze({
  headersTimeout: 10_000,
  requestTimeout: 60_000,
  keepAliveTimeout: 5_000,
  maxConnections: 1_024,
  socketTimeout: 62_000,
  closeTimeout: DEFAULT_CLOSE_TIMEOUT_MS,
});

/** How often Node checks connections against headersTimeout/requestTimeout (Node's default: 30 s). */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/**
 * A listening server returned by {@link serve}.
 *
 * @example
 * ```ts
 * import { serve, type ServeResult } from "@plantgate/node";
 *
 * const app = { fetch: async () => new Response("ok") };
 * const running: ServeResult = await serve(app, { port: 0 });
 * console.log(`listening on ${running.url}`);
 * await running.close();
 * ```
 */
export interface ServeResult {
  server: Server;
  /** Base URL actually bound, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  url: string;
  /**
   * Stops listening, closes idle keep-alive connections at once, lets the answers in flight go
   * out whole (each with `Connection: close`, its connection closed after it), destroys whatever
   * is still open `closeTimeout` ms after the call (default 10 000), and resolves once every
   * connection is closed (see {@link closeGracefully}). Safe to call more than once.
   */
  close(): Promise<void>;
}

/**
 * Serves an app on `node:http` (see {@link createRequestListener}: plantgate's `handle`, or any
 * Web handler's `fetch`) and resolves once it is listening.
 *
 * The server's limits default to {@link SERVE_DEFAULTS} (tighter than Node's own): headers within
 * 10 s, the whole request within 60 s, idle keep-alive connections closed after 5 s, at most 1 024
 * connections, a connection silent both ways for 60 s destroyed (a client that stops reading); an answer written before the upload was read lingers (see
 * `UploadDiscardOptions`: up to 100 MiB / 30 s of the rest is read and discarded). `close()` lets
 * the answers in flight go out whole, for up to 10 s (`closeTimeout`, see {@link closeGracefully}).
 *
 * Rejects with a `TypeError` if `options.origin` or `options.closeTimeout` is invalid or
 * `headersTimeout` is more than a `requestTimeout` that is on, and with the
 * listen error (e.g. `EADDRINUSE`) if the port cannot be bound.
 *
 * @example
 * ```ts
 * import { serve } from "@plantgate/node";
 *
 * const app = { fetch: async (request: Request) => new Response("ok") };
 * const { url, close } = await serve(app, { port: 0 });
 * const response = await fetch(`${url}/health`);
 * await close();
 * ```
 */
export async function serve(app: NodeApp, options: ServeOptions = {}): Promise<ServeResult> {
  const requestTimeout = options.requestTimeout ?? SERVE_DEFAULTS.requestTimeout;
  // As Node's own default: no more than requestTimeout when that is on (0 turns it off), so a
  // requestTimeout under 10 s alone is not refused.
  const headersTimeout =
    options.headersTimeout ?? (requestTimeout > 0 ? Math.min(SERVE_DEFAULTS.headersTimeout, requestTimeout) : SERVE_DEFAULTS.headersTimeout);
  if (requestTimeout > 0 && headersTimeout > requestTimeout) {
    throw new TypeError(`headersTimeout (${headersTimeout}) must not be more than requestTimeout (${requestTimeout}).`);
  }
  const closeTimeout = options.closeTimeout ?? SERVE_DEFAULTS.closeTimeout;
  checkCloseTimeout(closeTimeout);
  const answer = createRequestListener(app, options);
  // answerMalformedRequests' upgrade check, inside the one 'request' listener (see there).
  const listener = (request: IncomingMessage, response: ServerResponse): void => {
    closeAfterUpgradeRequest(request, response);
    answer(request, response);
  };
  const server = createServer(
    {
      headersTimeout,
      requestTimeout,
      keepAliveTimeout: options.keepAliveTimeout ?? SERVE_DEFAULTS.keepAliveTimeout,
      connectionsCheckingInterval: Math.min(CONNECTIONS_CHECKING_INTERVAL_MS, headersTimeout || CONNECTIONS_CHECKING_INTERVAL_MS),
      // The listener answers an HTTP/1.1 request without Host itself, in plantgate's shape (Node's
      // own answer is a bodiless 400).
      requireHostHeader: false,
    },
    listener,
  );
  // Expect: 100-continue is answered once plantgate starts reading the body, not before the
  // request reaches it (Node's default): a request refused without its body (no token, a declared
  // size over the limit) is answered at once, and the client does not send an upload to be
  // discarded (up to 100 MiB, see linger). Only here: behind Express, the host's own routes read
  // bodies without sending it.
  server.on("checkContinue", (request: IncomingMessage, response: ServerResponse) => {
    deferContinue(request, response);
    listener(request, response);
  });
  server.maxConnections = options.maxConnections ?? SERVE_DEFAULTS.maxConnections;
  // No 'timeout' listener: Node destroys a socket that stays silent this long.
  server.setTimeout(options.socketTimeout ?? SERVE_DEFAULTS.socketTimeout);
  refuseMalformedRequests(server);
  const port = options.port ?? 3000;
  const host = options.host ?? "127.0.0.1";

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });

  return {
    server,
    url: listeningUrl(server.address() as AddressInfo),
    // Before 2026-11-29 close() destroyed every connection at once: a request in flight (a token
    // being issued on SIGTERM) lost its answer, and its handler ran on against a store being closed.
    close: () => closeGracefully(server, closeTimeout),
  };
}

/**
 * The URL a client dials for a server listening at `address` (`server.address()`): `http://` and
 * the address, except that a wildcard is the loopback address of its family (`0.0.0.0` ->
 * `127.0.0.1`, `::` -> `[::1]`), since a wildcard is not something a client can dial on every
 * platform. `serve()`'s `url`; for a server you create yourself (the Express example's issuer).
 */
export function listeningUrl(address: AddressInfo): string {
  let host = address.address;
  if (host === "0.0.0.0") host = "127.0.0.1";
  else if (host === "::") host = "::1";
  return `http://${address.family === "IPv6" || host.includes(":") ? `[${host}]` : host}:${address.port}`;
}
