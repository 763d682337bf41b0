import type { Server } from "node:http";
import type { Duplex } from "node:stream";

/** What Node's parser or timers refuse, answered as plantgate answers: status, reason, description. */
const ANSWERS = {
  timeout: [408, "Request Timeout", "The request did not arrive in time."],
  headers: [431, "Request Header Fields Too Large", "The request headers are too large."],
  malformed: [400, "Bad Request", "The request cannot be processed."],
} as const;

function refuse(socket: Duplex & { bytesWritten?: number }, [status, reason, description]: readonly [number, string, string]): void {
  // Only before anything of an answer went out (a pipelined request's parse error may come after one).
  if (socket.writable && (socket.bytesWritten ?? 0) === 0) {
    const body = JSON.stringify({ error: "invalid_request", error_description: description });
    socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncache-control: no-store\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    // A client that never reads must not hold the socket: end() waits for the write to drain.
    setTimeout(() => socket.destroy(), 5_000).unref();
  } else socket.destroy();
}

/**
 * Answers what never reaches a request listener with plantgate's JSON error body instead of Node's
 * bare one (or nothing): requests Node's parser refuses (two Content-Length headers, Content-Length
 * beside Transfer-Encoding, a bad chunk size, an unknown method) get 400, headers past Node's size
 * limit 431, and a request that did not arrive within `headersTimeout`/`requestTimeout` 408, each
 * `{"error":"invalid_request","error_description":...}` and `Connection: close`; a `CONNECT` (which
 * Node hands to a 'connect' listener, and without one closes with no answer) gets the same 400 as
 * `TRACE`. {@link serve} installs it; call it on a server you create yourself (Express).
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { answerMalformedRequests } from "@plantgate/node";
 *
 * const server = createServer(expressApp);
 * answerMalformedRequests(server);
 * ```
 */
export function answerMalformedRequests(server: Server): void {
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A later error of this socket (the client resetting while the answer drains) is nobody's to
    // handle: without a listener it would be thrown as an uncaught 'error'.
    socket.on("error", () => {});
    if (error.code === "ECONNRESET") return void socket.destroy();
    refuse(socket, error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? ANSWERS.timeout : error.code === "HPE_HEADER_OVERFLOW" ? ANSWERS.headers : ANSWERS.malformed);
  });
  server.on("connect", (_request: unknown, socket: Duplex) => {
    socket.on("error", () => {});
    refuse(socket, ANSWERS.malformed);
  });
}
