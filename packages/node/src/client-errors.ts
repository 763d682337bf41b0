import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { trackConnections } from "./close-gracefully.js";
import { lingerOnUnreadUpload } from "./linger.js";
import { refusal, VERSION_NOT_SUPPORTED_DESCRIPTION } from "./to-request.js";
import { writeResponse } from "./write-response.js";
import type { Duplex } from "node:stream";

/** What Node's parser or timers refuse, answered as plantgate answers: status, reason, description. */
const ANSWERS = {
  timeout: [408, "Request Timeout", "The request did not arrive in time."],
  headers: [431, "Request Header Fields Too Large", "The request headers are too large."],
  malformed: [400, "Bad Request", "The request cannot be processed."],
  version: [505, "HTTP Version Not Supported", VERSION_NOT_SUPPORTED_DESCRIPTION],
} as const;

/** Sockets already refused: Node reports each later chunk of such a connection as another error. */
const refused = new WeakSet<Duplex>();
const ignore = (): void => {};

/** What of Node's socket, its answer in flight and its parser this reads. */
type HttpSocket = Duplex & {
  _httpMessage?: (NodeJS.EventEmitter & { _headerSent?: boolean; _header?: string | null; req?: unknown }) | null;
  parser?: { incoming?: IncomingMessage | null } | null;
};

/**
 * Refuses what Node's parser or timers refused on `socket`. `packet` is the data the parser failed
 * on (Node's `error.rawPacket`), if any: a refused request whose head had not been read whole is
 * known to be a HEAD only from it (see {@link startsWithHeadLine}).
 */
function refuse(socket: HttpSocket, [status, reason, description]: readonly [number, string, string], packet?: Buffer): void {
  // Node's parser fails again on every later chunk: the answer is already out, and a destroy here
  // with the client's upload unread was a reset that could destroy it (before 2026-11-29).
  if (refused.has(socket)) return;
  refused.add(socket);
  if (!socket.writable) return void socket.destroy();
  // What the client is still sending is read and dropped, so that the close is not a reset that
  // destroys an answer; the client's own end closes it.
  const drain = () => {
    socket.removeAllListeners("data");
    socket.on("data", () => {});
    socket.once("end", () => socket.destroy());
    socket.resume();
    // A client that never reads, or never stops sending, must not hold the socket.
    setTimeout(() => socket.destroy(), 5_000).unref();
  };
  const inFlight = socket._httpMessage;
  const incoming = socket.parser?.incoming;
  // The refused request's own answer, not begun: the refusal takes its place. (The parser's
  // request is the refused one only while incomplete: a failure in a pipelined request's headers
  // leaves the one before, complete, in its place.)
  const own = inFlight != null && inFlight.req !== undefined && inFlight.req === incoming && incoming?.complete === false;
  if (inFlight == null && incoming != null && incoming.complete === false) {
    // The refused request was answered already, before its body arrived whole (an answer that
    // needs no body: a 401, a size over the limit): Node made its answer when its head was read and
    // has sent it. Its body failing now (a FIN mid-body, the request timeout) gets no second answer
    // (until 2026-11-30 a 400 or 408 followed the 401 for the one request); the connection closes.
    socket.end();
    drain();
  } else if (inFlight == null || (own && inFlight._headerSent !== true)) {
    // Before 2026-11-29 this ran only while nothing had been written on the connection: a
    // keep-alive connection's later request was closed without an answer, and a refused request
    // behind one whose answer was still to come had its refusal sent in that answer's place.
    // RFC 9110 §9.3.2: the answer to a HEAD carries no content; its Content-Length is the one a GET
    // would have got (§8.6), as Node's own answers to HEAD say. Until 2026-11-30 the body went out
    // too, where a client keeping the connection reads a HEAD answer's end at its blank line.
    const head = own ? incoming?.method === "HEAD" : packet !== undefined && startsWithHeadLine(packet);
    socket.end(refusalText(status, reason, description, head));
    drain();
  } else {
    // An answer is on its way (an earlier request's, or this one's already begun): it goes out
    // whole, and so do those queued behind it (Node hands the socket to each once the one before
    // has emitted 'finish'; until 2026-12-01 the connection ended after the first, and the answers
    // queued behind it were lost), then the refusal (RFC 9112 §2.2: a server SHOULD answer what it
    // cannot parse with a 400 and close; until 2026-12-01 the connection closed after the answers
    // without one, and the client saw its request dropped unanswered), then the close. No refusal
    // when the refused request was handed to the app already (its body failed: its own answer is
    // among those, as in the branch above) or an answer closed the connection. Node's socket
    // timeout still bounds the wait. The refusal keeps its body: the read the failure came in may
    // begin with an earlier request's line, so a HEAD is not known here (as on the metrics
    // listener, for a later request). Twin of the metrics listener's wait in
    // @plantgate/observability's metrics.ts (`refuse`), which does not depend on this package.
    const answered = incoming != null && incoming.complete === false;
    if (answered) failBody(incoming);
    // The answer being written. Node's own 'finish' listener of an answer (added when it was made)
    // runs before this one's and hands the socket to the next answer queued, so the next is known
    // here at once.
    let current = socket._httpMessage ?? null;
    if (!answered) {
      // A client that half-closes (FIN) once its requests are sent: Node then marks the last answer
      // queued as the connection's last and ends the socket once that answer is written (its
      // `destroySoon()`, or the upload linger's in its place, both through a bare `end()`), and the
      // refusal after it was lost (until a review of 2026-12-01). That end waits for the refusal,
      // unless the answer said `Connection: close` itself (an answer marked so, or to HTTP/1.0
      // without keep-alive): the client reads nothing after it. Held at `end()`, not by replacing
      // `destroySoon`, which the linger of an unread upload replaces and deletes on its own (a
      // second review found the refusal lost that way).
      const end = socket.end;
      Object.defineProperty(socket, "end", {
        value: function (this: Duplex, ...args: unknown[]) {
          if (args.length === 0 && current !== null && !saysClose(current._header)) return this;
          return (end as (...a: unknown[]) => Duplex).apply(this, args);
        },
        configurable: true,
        writable: true,
      });
    }
    const afterAnswers = (): void => {
      const next = socket._httpMessage;
      current = next ?? null;
      if (next != null) return void next.once("finish", afterAnswers);
      // An answer that closed the connection has ended it already.
      if (!socket.writableEnded) socket.end(answered ? undefined : refusalText(status, reason, description, false));
      drain();
    };
    afterAnswers();
  }
}

/**
 * Fails the body of a request the app has (its head was read whole) whose upload Node's parser then
 * refused (a bad chunk size): Node neither ends nor fails such a body, so an app reading it waited
 * until the socket timeout (60 s), and with it every answer queued behind an earlier one on the
 * connection (until 2026-12-01). Its readers now fail as for a client that went away, and
 * plantgate answers the request 400 ("could not be read"), in its turn. Node's IncomingMessage
 * destroys its socket with an unfinished upload, which would lose the answers queued before this
 * request's: for the synchronous `destroy()` call its `socket` is a stand-in whose prototype is the
 * socket and which reads as destroyed, so its 'aborted' listeners (emitted within the call) still
 * read the socket's properties (`req.socket.remoteAddress`, Express's `req.ip`; with `null` there,
 * as a second review found, they threw).
 */
function failBody(incoming: IncomingMessage): void {
  refusedUploads.add(incoming);
  const socket = incoming.socket;
  incoming.socket = Object.create(socket, { destroyed: { value: true } }) as typeof socket;
  try {
    incoming.destroy();
  } finally {
    incoming.socket = socket;
  }
}

/** The requests {@link failBody} failed. */
const refusedUploads = new WeakSet<IncomingMessage>();

/**
 * Whether `request`'s upload is one Node's parser refused after the app got the request (see
 * failBody): an app failing on it failed on the client's bad input, and the client is still there
 * for its answer, a 400 (not the 500 of an app's error, nor the silence kept for a client that went
 * away: until 2026-12-01 a FetchApp that let that read's rejection through got a 500 from serve()
 * and nothing at all under Express, which held the connection). @internal
 */
export function isRefusedUpload(request: IncomingMessage): boolean {
  return refusedUploads.has(request);
}

/** Whether an answer's header block (Node's `_header`) has a `Connection` line naming `close`. */
function saysClose(header: string | null | undefined): boolean {
  return typeof header === "string" && CONNECTION_CLOSE.test(header);
}

/** A `Connection` header line naming the `close` option, in a header block. */
const CONNECTION_CLOSE = /\r\nconnection:[ \t]*(?:[^\r]*,[ \t]*)?close[ \t]*(?:,|\r)/i;

/** A refusal's whole HTTP/1.1 answer, `Connection: close`; to a HEAD (`head`), its headers alone. */
function refusalText(status: number, reason: string, description: string, head: boolean): string {
  const body = JSON.stringify({ error: "invalid_request", error_description: description });
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncache-control: no-store\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${head ? "" : body}`;
}

/**
 * Answers what never reaches a request listener with plantgate's JSON error body instead of Node's
 * bare one (or nothing): requests Node's parser refuses (two Content-Length headers, Content-Length
 * beside Transfer-Encoding, a bad chunk size, an unknown method) get 400, a request line with a
 * version Node's parser refuses whose major is not 1 (`HTTP/3.0`) 505 (as the listener answers
 * `HTTP/2.0`), and so does HTTP/2's prior-knowledge preface (`PRI * HTTP/2.0`), headers past
 * Node's size limit 431, and a request that did not arrive within
 * `headersTimeout`/`requestTimeout` 408, each
 * `{"error":"invalid_request","error_description":...}` and `Connection: close`; a `CONNECT` (which
 * Node hands to a 'connect' listener, and without one closes with no answer) gets the same 400 as
 * `TRACE`. A client that half-closes the connection once its request is sent (FIN, as `nc -N` and
 * some scripts do) still gets its answer: the connection ends after it. A request asking for a
 * protocol upgrade (`Connection: upgrade` and `Upgrade`), served as HTTP/1.1 without an `'upgrade'`
 * listener, gets its answer with `Connection: close` (Node's parser drops what was pipelined behind it). {@link serve} installs it;
 * call it on a server you create yourself (Express).
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
  refuseMalformedRequests(server);
  // On a server made elsewhere the check is a listener of its own, before the host's. serve() runs
  // it inside its one listener instead: with a second 'request' listener Node's emit copies the
  // listener array on every request (an allocation per request on the success path, 2026-11-30).
  server.prependListener("request", closeAfterUpgradeRequest);
  // Node emits 'checkContinue' instead of 'request' once it has a listener.
  if (server.listenerCount("checkContinue") > 0) server.prependListener("checkContinue", closeAfterUpgradeRequest);
}

/**
 * A request asking for a protocol upgrade (`Connection: upgrade` with an `Upgrade` header: a
 * WebSocket handshake, curl --http2's h2c) on a server without an 'upgrade' listener is served as
 * HTTP/1.1, but Node's parser stops at its end and drops the rest of that read: a request
 * pipelined behind it got no answer, the connection stayed open, and the next request's answer
 * went out in its place (to the wrong request; until 2026-11-30). Its answer closes the connection
 * instead, which tells the client to send the others again (RFC 9112 §9.3.2). Call it before the
 * app's listener. @internal
 */
export function closeAfterUpgradeRequest(request: IncomingMessage, response: ServerResponse): void {
  if (asksUpgrade(request)) response.shouldKeepAlive = false;
}

/** {@link answerMalformedRequests} but for the upgrade check, which serve() runs in its own listener. @internal */
export function refuseMalformedRequests(server: Server): void {
  trackConnections(server);
  // RFC 9112 §9.6: a half-closed connection does not mean the client lost interest in the answer.
  // Node's default (`httpAllowHalfOpen` false, a property its http server reads but does not
  // document or type) aborts the request in flight when the client's FIN arrives and closes the
  // connection, so any answer not ready at that moment (a password hash, a store call) was never
  // sent. With it on, Node ends the connection once the answer in flight is written instead.
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  // Every header line is kept: Node's default keeps the first 2000 and drops the rest without a
  // word, so a second Host line past them went unseen (RFC 9112 §3.2's check passed). The 16 KiB
  // header limit still bounds them.
  server.maxHeadersCount = 0;
  // RFC 9110 §10.1.1: an expectation other than 100-continue is 417, in plantgate's shape (Node's
  // own has no body), and the connection closes (the client may send its body anyway).
  server.on("checkExpectation", (request: IncomingMessage, response: ServerResponse) => {
    response.shouldKeepAlive = false;
    // A body sent anyway is read and dropped (within the default bounds) so the close is no reset.
    lingerOnUnreadUpload(request, response);
    writeResponse(refusal(417, "The Expect header's expectation is not supported."), response);
  });
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Refused already: Node's parser fails again on each later chunk of the connection while an
    // earlier answer is still to come, and reports each as another 'clientError'. Until 2026-11-30
    // each added one more 'error' listener below, a MaxListenersExceededWarning past ten chunks
    // and one listener per chunk for as long as the client went on sending.
    if (refused.has(socket)) return;
    // A later error of this socket (the client resetting while the answer drains) is nobody's to
    // handle: without a listener it would be thrown as an uncaught 'error'.
    socket.on("error", ignore);
    if (error.code === "ECONNRESET") return void socket.destroy();
    const raw = (error as { rawPacket?: unknown }).rawPacket;
    const packet = Buffer.isBuffer(raw) ? raw : undefined;
    // RFC 9110 §15.6.6: a request line whose major version is not 1 (HTTP/3.0; Node's parser
    // refuses every version but 0.9, 1.0, 1.1 and 2.0) is the request listener's 505 for HTTP/2.0,
    // not a malformed request (until 2026-11-30 it was the 400). So is HTTP/2's prior-knowledge
    // preface (`PRI * HTTP/2.0` + `SM`, curl --http2-prior-knowledge), where Node's parser stops
    // with HPE_PAUSED_H2_UPGRADE (it stops so for a `PRI` line of any version: HTTP/1.1's stays 400).
    const answer = error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? ANSWERS.timeout
      : error.code === "HPE_HEADER_OVERFLOW" ? ANSWERS.headers
      : (error.code === "HPE_INVALID_VERSION" || error.code === "HPE_PAUSED_H2_UPGRADE") && packet !== undefined && OTHER_MAJOR_LINE.test(firstLine(packet)) ? ANSWERS.version
      : ANSWERS.malformed;
    refuse(socket, answer, packet);
  });
  server.on("connect", (_request: unknown, socket: Duplex) => {
    socket.on("error", ignore);
    refuse(socket, ANSWERS.malformed);
  });
}

/**
 * A HEAD request line, as Node's parser reads one (a target of visible characters), with any
 * version of the HTTP-version syntax (one digit each side of the dot): HTTP/3.0 is refused for its
 * version, and its refusal to a HEAD has no body either.
 */
const HEAD_LINE = /^HEAD [!-~]+ HTTP\/\d\.\d\r?$/;

/** A request line whose HTTP version has a major version other than 1 (RFC 9112 §2.3: one digit each side of the dot). */
const OTHER_MAJOR_LINE = /^[!-~]+ [!-~]+ HTTP\/[02-9]\.\d\r?$/;

/**
 * The first line of the data Node's parser failed on, without its LF ("" if it holds none), empty
 * lines before it skipped (RFC 9112 §2.2; Node's parser skips them too): the refused request's own
 * request line when the failure came in the read that began it (see {@link startsWithHeadLine} for
 * when it is not).
 */
// Twin of firstLine in @plantgate/observability's metrics.ts (observability does not depend on node).
function firstLine(packet: Buffer): string {
  let from = 0;
  while (from < packet.length && (packet[from] === 13 || packet[from] === 10)) from++;
  const end = packet.indexOf(10, from);
  return end > from ? packet.toString("latin1", from, end) : "";
}

/**
 * Whether the data Node's parser failed on begins with a HEAD request line (empty lines before it
 * skipped, as {@link firstLine} does: until 2026-12-01 a HEAD line behind one got its refusal with a
 * body): the refused request's own head, read in the same read as the failure (two
 * `Content-Length` lines, headers past the limit, sent in one write). Node keeps no method for a
 * request whose head failed, and no header
 * line reads as a request line (a header's name holds no space), so a packet that begins with one is
 * that request's start (short of a read that splits a header value just before such text); a head that failed in a later read than its request line's (or a request
 * pipelined mid-packet, or a 408 with nothing read) is not known to be a HEAD and keeps its body.
 */
function startsWithHeadLine(packet: Buffer): boolean {
  return HEAD_LINE.test(firstLine(packet));
}

/**
 * Whether Node's parser took `request` for an upgrade: `Connection` names `upgrade` and `Upgrade` is
 * present. Read from `rawHeaders`, as the adapter reads every header: `request.headers` is built on
 * first use, an object per request that nothing else on the way to an answer makes. Names are
 * compared without `toLowerCase()` (a new string per `Connection`/`Referer` line, on every request),
 * and `Connection` is looked at only once an `Upgrade` line is found.
 */
function asksUpgrade(request: IncomingMessage): boolean {
  const raw = request.rawHeaders;
  let upgrade = false;
  for (let i = 0; i < raw.length && !upgrade; i += 2) upgrade = isName(raw[i]!, "upgrade");
  if (!upgrade) return false;
  for (let i = 0; i < raw.length; i += 2) {
    if (isName(raw[i]!, "connection") && CONNECTION_UPGRADE.test(raw[i + 1]!)) return true;
  }
  return false;
}

/**
 * Whether `name` is `lower` in any case. `lower` holds lowercase letters only: for those, a
 * character with bit 0x20 set equals it exactly when it is that letter in either case.
 */
function isName(name: string, lower: string): boolean {
  if (name.length !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) if ((name.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

/** A `Connection` value naming the `upgrade` option. */
const CONNECTION_UPGRADE = /(?:^|,)[ \t]*upgrade[ \t]*(?:,|$)/i;
