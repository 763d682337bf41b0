import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** Default of `closeTimeout` ({@link closeGracefully}, `serve()`'s option): 10 s. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 10_000;

/** What of Node's server and sockets this reads: its list of connections (Node >= 18.2) and each one's answer in flight. */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null; parser?: { incoming?: IncomingMessage | null } | null };
type ConnectionList = { all(): Array<{ socket?: HttpSocket | null }> };

/** Throws the TypeError {@link closeGracefully} throws for a bad timeout (serve() checks it up front). */
export function checkCloseTimeout(timeoutMs: number): void {
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) throw new TypeError("closeTimeout must be a non-negative integer.");
}

const closing = new WeakMap<Server, Promise<void>>();

/** Per server (see {@link trackConnections}), every connection open since, upgraded ones included. */
const tracked = new WeakMap<Server, Set<Socket>>();

/**
 * Keeps a list of the server's connections from now on, for {@link closeGracefully}'s deadline:
 * Node's own list (what `closeAllConnections` ends) drops a connection once it is upgraded (a
 * WebSocket beside the app), and `close()` then waited for it to end, past any deadline (until
 * 2026-11-30). `answerMalformedRequests` (so `serve()` too) calls it; one listener per server, a
 * set entry per open connection.
 */
export function trackConnections(server: Server): void {
  if (tracked.has(server)) return;
  const sockets = new Set<Socket>();
  tracked.set(server, sockets);
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
}

/**
 * Closes a `node:http` server without cutting off the answers in flight (what `serve()`'s
 * `close()` does; call it on a server you create yourself, as the Express example does):
 *
 * - the server stops accepting connections; idle keep-alive connections, and connections that
 *   have not sent a byte yet, are closed at once; one whose answer went out before its upload had
 *   arrived closes once the rest of the upload has been read (and dropped);
 * - an answer not yet begun (a request in flight, or one arriving later on an open connection)
 *   goes out whole with `Connection: close`, and its connection closes after it; one already
 *   begun with keep-alive closes its connection once written;
 * - `timeoutMs` (default 10 000) after the call, every connection still open is destroyed: a
 *   request still unanswered, an upload still arriving (Node's own `headersTimeout` and
 *   `requestTimeout` stop being checked once a server closes), and, on a server given to
 *   `answerMalformedRequests` (or made by `serve()`), a connection the host upgraded (a WebSocket),
 *   which Node's own list no longer holds.
 *
 * Resolves once every connection is closed; with the server's close error (it was not listening)
 * otherwise. A second call returns the first one's promise.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { closeGracefully } from "@plantgate/node";
 *
 * const server = createServer(expressApp).listen(3000);
 * process.once("SIGTERM", () => void closeGracefully(server, 10_000).then(() => process.exit(0)));
 * ```
 */
export function closeGracefully(server: Server, timeoutMs: number = DEFAULT_CLOSE_TIMEOUT_MS): Promise<void> {
  const already = closing.get(server);
  if (already !== undefined) return already;
  checkCloseTimeout(timeoutMs);
  const promise = new Promise<void>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Stops accepting; closes the connections with nothing in flight (Node >= 19); the callback
    // runs once every connection has closed.
    server.close((error) => {
      clearTimeout(timer);
      if (error) reject(error);
      else resolve();
    });
    // A request arriving on a connection still open is answered, as the last one on it.
    const last = (_request: IncomingMessage, response: ServerResponse): void => {
      response.shouldKeepAlive = false;
    };
    server.prependListener("request", last);
    // Only where the server already answers `Expect: 100-continue` itself: Node emits
    // 'checkContinue' instead of 'request' as soon as it has a listener, so one added here to a
    // server without any (a plain createServer, the Express example) would take such a request
    // from the app: no 100, no answer, cut off at the deadline.
    if (server.listenerCount("checkContinue") > 0) server.prependListener("checkContinue", last);
    for (const socket of openSockets(server)) {
      const response = socket._httpMessage;
      // A connection that has not sent a byte yet has nothing in flight (Node counts it as busy,
      // so that headersTimeout covers it, and closeIdleConnections leaves it open).
      if (response == null && socket.bytesRead === 0) {
        socket.destroy();
        continue;
      }
      if (response == null) {
        // Answered before its upload had arrived (a refusal that needs no body), the rest still
        // being read and dropped: idle once the upload ends, and closed then, as idle connections
        // are (until 2026-11-30 it stayed open until keepAliveTimeout or the deadline, and close()
        // with it). A request pipelined behind it has its answer assigned by then, and closes after it.
        const incoming = socket.parser?.incoming;
        if (incoming != null && !incoming.complete) {
          incoming.once("end", () => {
            if (socket._httpMessage == null && !socket.destroyed) endSoon(socket);
          });
        }
        continue;
      }
      if (response.writableFinished) continue;
      if (!response.headersSent) response.shouldKeepAlive = false;
      else response.once("finish", () => endSoon(socket));
    }
    timer = setTimeout(() => {
      server.closeAllConnections();
      // Upgraded connections, which Node's list no longer holds (on a server whose connections are tracked).
      for (const socket of tracked.get(server) ?? []) socket.destroy();
    }, timeoutMs);
    timer.unref();
  });
  closing.set(server, promise);
  return promise;
}

/** Ends a socket once its answer is out (through the lingering close, when one is installed). */
function endSoon(socket: Socket): void {
  if (typeof socket.destroySoon === "function") socket.destroySoon();
  else socket.end();
}

function openSockets(server: Server): HttpSocket[] {
  // Node keeps its connections in a list under a symbol of its own (what closeIdleConnections and
  // closeAllConnections read); without it, answers in flight keep keep-alive and the deadline ends them.
  const key = Object.getOwnPropertySymbols(server).find((symbol) => symbol.description === "http.server.connections");
  const list = key === undefined ? undefined : ((server as unknown as Record<symbol, unknown>)[key] as ConnectionList | undefined);
  if (typeof list?.all !== "function") return [];
  return list.all().flatMap((connection) => (connection.socket == null ? [] : [connection.socket]));
}
