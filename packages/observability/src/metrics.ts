/**
 * Prometheus metrics of a plantgate app through prom-client: counted from the core's observer
 * hooks and security events, served on a listener of their own (never on the public port).
 */
import { createServer, maxHeaderSize, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { HotCounter, HotHistogram, type Series } from "./hot-metrics.js";
import type { EventBacklogReading, Observer, RequestObservation, SecurityEvent, StorageObservation } from "@plantgate/core";

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** Where the metrics are registered. Default: a new registry (never prom-client's global one). */
  registry?: Registry;
  /** Also collect prom-client's process and Node.js metrics (`process_cpu_seconds_total`, `nodejs_*`). Default true. */
  processMetrics?: boolean;
}

/** What {@link createMetrics} returns: the hooks to give plantgate, and the registry to serve. */
export interface PlantgateMetrics {
  registry: Registry;
  /** For `createPlantgate({ observer })`: counts requests, token requests, storage calls and lost events, and reads unfinished event deliveries at each scrape. */
  observer: Observer;
  /** For `createPlantgate({ onEvent })` (or called from your own hook): counts lock-outs and reuse. */
  countEvent(event: SecurityEvent): void;
  /** The text exposition (what `GET /metrics` answers). */
  text(): Promise<string>;
}

/** Seconds buckets from 1 ms to 10 s: a token request is a few ms, a password grant ~100 ms. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
const STORAGE_BUCKETS = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2];

/** Status codes as label text, one string per code (the series lookup compares them by identity first). */
const STATUS_TEXTS: string[] = [];
function statusText(status: number): string {
  if (!Number.isInteger(status) || status < 100 || status > 999) return String(status);
  return (STATUS_TEXTS[status] ??= String(status));
}

/** Kinds of request (and of storage call) whose series are remembered; a request's storage calls take turns among a few. */
const KINDS = 8;

/** The series one kind of request counts into (see createMetrics). */
interface RequestKind {
  epoch: number;
  route: string;
  method: string;
  status: number;
  grantType: string | undefined;
  result: string | undefined;
  requests: Series;
  duration: Series;
  token: Series | null;
  tokenDuration: Series | null;
}

/** The latency series of one store method. */
interface StorageKind {
  epoch: number;
  store: string;
  operation: string;
  duration: Series;
}

/** The `lock` label values of `plantgate_lockouts_total` (the `lock` of `account.locked_out`). */
const LOCKS = ["username_address", "username", "client_budget", "address_budget"] as const;

/** The `lock` label values of `plantgate_client_lockouts_total` (the `lock` of a throttled `client.authentication_failed`). */
const CLIENT_LOCKS = ["client_address", "address_budget"] as const;

/**
 * Creates the plantgate metrics (names in the README's "Metrics" table). Every label is from a
 * small fixed set: route templates, methods, status codes, grant types, OAuth error codes, store
 * and method names; never a client id, username or address.
 *
 * @example
 * const metrics = createMetrics();
 * const app = createPlantgate({ observer: metrics.observer, onEvent: metrics.countEvent });
 * const listener = await serveMetrics(metrics, { port: 9464 });
 */
export function createMetrics(options: MetricsOptions = {}): PlantgateMetrics {
  const registry = options.registry ?? new Registry();
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const requests = new HotCounter({
    name: "plantgate_http_requests_total",
    help: "Requests answered by plantgate, by route template, method and status code.",
    labelNames: ["route", "method", "status"],
    registers,
  });
  const requestDuration = new HotHistogram({
    name: "plantgate_http_request_duration_seconds",
    help: "Time from a request reaching plantgate to its answer being ready, by route template.",
    labelNames: ["route"],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const tokenRequests = new HotCounter({
    name: "plantgate_token_requests_total",
    help: "Token endpoint requests by grant_type and result (success, an OAuth error code, or locked_out); also the client lock-outs of the revocation and introspection endpoints (grant_type none, result locked_out).",
    labelNames: ["grant_type", "result"],
    registers,
  });
  const tokenDuration = new HotHistogram({
    name: "plantgate_token_request_duration_seconds",
    help: "Token endpoint latency by grant_type.",
    labelNames: ["grant_type"],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const lockouts = new HotCounter({
    name: "plantgate_lockouts_total",
    help: "Brute-force lock-outs begun (account.locked_out events), by lock: username_address, username, address_budget or client_budget.",
    labelNames: ["lock"],
    // Every lock's series from the start, and again after a reset: a rate() has a series to read.
    initial: LOCKS.map((lock) => [lock]),
    registers,
  });
  const clientLockouts = new HotCounter({
    name: "plantgate_client_lockouts_total",
    help: "Client-authentication lock-outs begun (the first refusal of a lock, as the instance that refused it counts), by lock: client_address or address_budget.",
    labelNames: ["lock"],
    initial: CLIENT_LOCKS.map((lock) => [lock]),
    registers,
  });
  const reuse = new HotCounter({
    name: "plantgate_refresh_token_reuse_total",
    help: "Refresh tokens presented again after rotation (their family was revoked).",
    registers,
  });
  const eventsLost = new HotCounter({
    name: "plantgate_events_lost_total",
    help: "Security events a receiver did not take, by receiver: hook (the onEvent hook, each part of a composed one, threw or rejected) or audit (the audit store's append failed or refused it, e.g. a full queue), or were not handed to it while its backlog was full (maxPendingEventDeliveries), or were let go unfinished after 60 s.",
    labelNames: ["receiver"],
    initial: [["hook"], ["audit"]],
    registers,
  });
  // The apps' readers of their unfinished deliveries (`observer.eventBacklog`), held weakly: an app
  // made and dropped again (a test, a host's reload) is not kept alive by its metrics.
  const backlogs = new Set<WeakRef<() => EventBacklogReading>>();
  new Gauge({
    name: "plantgate_event_deliveries_pending",
    help: "Deliveries of security events handed to a receiver and not yet finished, by receiver: hook (the onEvent hook, each part of a composed one, summed) or audit (the audit store); past maxPendingEventDeliveries per receiver events are not handed to it (plantgate_events_lost_total). Read at each scrape, summed over the apps that use these metrics.",
    labelNames: ["receiver"],
    registers,
    collect() {
      const sum = { hook: 0, audit: 0 };
      for (const ref of backlogs) {
        const read = ref.deref();
        if (read === undefined) {
          backlogs.delete(ref);
          continue;
        }
        try {
          const reading = read();
          sum.hook += reading.hook;
          sum.audit += reading.audit;
        } catch {
          // A reader that throws (none of core's does) counts nothing; the scrape still answers.
        }
      }
      this.set({ receiver: "hook" }, sum.hook);
      this.set({ receiver: "audit" }, sum.audit);
    },
  });
  const storageDuration = new HotHistogram({
    name: "plantgate_storage_operation_duration_seconds",
    help: "Storage call latency by store and operation.",
    labelNames: ["store", "operation"],
    buckets: STORAGE_BUCKETS,
    registers,
  });
  const storageErrors = new HotCounter({
    name: "plantgate_storage_errors_total",
    help: "Storage calls that failed (threw or rejected), by store and operation.",
    labelNames: ["store", "operation"],
    registers,
  });

  // The series the last few kinds of request and storage call counted into, by their label
  // values (compared by identity first: route, method, grant type, result, store and operation are
  // the same strings every time): a request of a kind seen lately finds its four series with a few
  // comparisons, instead of four label arrays and four lookups. Dropped when a reset (any epoch
  // change) drops the series.
  const epoch = () => requests.epoch + requestDuration.epoch + tokenRequests.epoch + tokenDuration.epoch + storageDuration.epoch;
  const requestKinds: RequestKind[] = [];
  const storageKinds: StorageKind[] = [];
  const requestKind = (o: RequestObservation, now: number): RequestKind => {
    for (let i = 0; i < requestKinds.length; i++) {
      const k = requestKinds[i]!;
      if (k.epoch === now && k.route === o.route && k.status === o.status && k.method === o.method && k.grantType === o.grantType && k.result === o.result) return k;
    }
    const token = o.grantType !== undefined;
    // `none` + `locked_out` is a client locked out at revocation or introspection (a token request
    // without grant_type is refused before its client is checked): counted, but not the token
    // endpoint's latency.
    const timed = token && !(o.grantType === "none" && o.result === "locked_out");
    const kind: RequestKind = {
      epoch: now,
      route: o.route,
      method: o.method,
      status: o.status,
      grantType: o.grantType,
      result: o.result,
      requests: requests.seriesOf([o.route, o.method, statusText(o.status)]),
      duration: requestDuration.seriesOf([o.route]),
      token: token ? tokenRequests.seriesOf([o.grantType!, o.result ?? "unknown"]) : null,
      tokenDuration: timed ? tokenDuration.seriesOf([o.grantType!]) : null,
    };
    if (requestKinds.unshift(kind) > KINDS) requestKinds.pop();
    return kind;
  };
  const storageKind = (o: StorageObservation, now: number): StorageKind => {
    for (let i = 0; i < storageKinds.length; i++) {
      const k = storageKinds[i]!;
      if (k.epoch === now && k.operation === o.operation && k.store === o.store) return k;
    }
    const kind: StorageKind = { epoch: now, store: o.store, operation: o.operation, duration: storageDuration.seriesOf([o.store, o.operation]) };
    if (storageKinds.unshift(kind) > KINDS) storageKinds.pop();
    return kind;
  };

  return {
    registry,
    observer: {
      request(o) {
        const seconds = o.durationMs / 1000;
        const kind = requestKind(o, epoch());
        requests.add(kind.requests);
        requestDuration.record(kind.duration, seconds);
        if (kind.token !== null) {
          tokenRequests.add(kind.token);
          if (kind.tokenDuration !== null) tokenDuration.record(kind.tokenDuration, seconds);
        }
      },
      storage(o) {
        storageDuration.record(storageKind(o, epoch()).duration, o.durationMs / 1000);
        if (o.failed) storageErrors.inc([o.store, o.operation]);
      },
      eventLost(o) {
        eventsLost.inc([o.receiver]);
      },
      eventBacklog(read) {
        backlogs.add(new WeakRef(read));
      },
    },
    countEvent(event) {
      if (event.type === "account.locked_out") lockouts.inc([event.lock]);
      // A client's lock has no event of its own: its first refusal (refused_count 1) is where it
      // begins, as the instance that refused it counts (client refusals are counted per instance).
      else if (event.type === "client.authentication_failed" && event.refused_count === 1 && event.lock !== undefined) clientLockouts.inc([event.lock]);
      else if (event.type === "refresh_token.reuse_detected") reuse.inc([]);
    },
    text: () => registry.metrics(),
  };
}

/** Options of {@link serveMetrics}. */
export interface ServeMetricsOptions {
  port: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /**
   * How long (ms) a client may take to send a request's line and headers (a scrape has no body);
   * then 408 and the connection is closed. Default 10 000 (Node's own: 60 000, checked every 30 s).
   */
  headersTimeout?: number;
  /**
   * How long (ms) a connection may go without traffic either way before it is destroyed (a client
   * that stopped reading its scrape); `0` turns it off. Default 30 000 (Node's own: never).
   */
  socketTimeout?: number;
  /** Most connections open at once; further ones are closed as soon as they are accepted, unanswered. Default 64 (Node's own: no limit). */
  maxConnections?: number;
}

/** The limits {@link serveMetrics} applies unless told otherwise. */
const METRICS_LISTENER_DEFAULTS = Object.freeze({ headersTimeout: 10_000, socketTimeout: 30_000, maxConnections: 64 });

/** A running metrics listener. */
export interface MetricsListener {
  /** E.g. `http://127.0.0.1:9464/metrics`. */
  url: string;
  close(): Promise<void>;
}

/** The path of a request target: origin form (`/metrics?x`) or absolute form (`http://host/metrics`, RFC 9112 §3.2.2). */
function targetPath(target: string): string {
  const path = target.split("?")[0]!;
  if (path.startsWith("/") || !/^https?:\/\//i.test(path)) return path;
  const slash = path.indexOf("/", path.indexOf("//") + 2);
  return slash < 0 ? "/" : path.slice(slash);
}

/** An absolute-form target naming `https` (RFC 9112 §3.2.2; the scheme is case-insensitive). */
const HTTPS_TARGET = /^https:\/\//i;

/** The type of every answer of this listener but the exposition. */
const TEXT = "text/plain; charset=utf-8";

/**
 * A whole answer with a text body, written on the socket itself (what Node answers before a request
 * exists); for a HEAD (`head`), its Content-Length and no body (RFC 9110 §9.3.2, §8.6).
 */
function rawAnswer(status: string, body: string, extra = "", head = false): string {
  return `HTTP/1.1 ${status}\r\ncontent-type: ${TEXT}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${head ? "" : body}`;
}

const MALFORMED_BODY = "Not an HTTP request this listener reads; the metrics are at GET /metrics.\n";
const MISDIRECTED_BODY = "The request's target is not served on this connection: this listener speaks plain HTTP.\n";
const VERSION_BODY = "The request's HTTP version is not supported; send it as HTTP/1.1.\n";

/** An answer written on the socket itself: to a GET (`body`) and to a HEAD (`head`, no body). */
interface Refusal {
  body: string;
  head: string;
}
const refusal = (status: string, body: string, extra = ""): Refusal => ({ body: rawAnswer(status, body, extra), head: rawAnswer(status, body, extra, true) });

const REFUSALS = {
  timeout: refusal("408 Request Timeout", "The request did not arrive in time.\n"),
  headers: refusal("431 Request Header Fields Too Large", "The request headers are too large.\n"),
  malformed: refusal("400 Bad Request", MALFORMED_BODY),
  // As the public port answers a major version other than 1 (@plantgate/node), in this listener's text.
  version: refusal("505 HTTP Version Not Supported", VERSION_BODY),
};
const CONNECT_REFUSAL = rawAnswer("405 Method Not Allowed", "Use GET.\n", "allow: GET, HEAD\r\n");

/** What of Node's socket, its answer in flight and its parser this reads. */
type HttpSocket = Duplex & {
  _httpMessage?: NodeJS.EventEmitter | null;
  parser?: { incoming?: { complete?: boolean } | null } | null;
};

/** Sockets already refused: Node reports each later chunk of such a connection as another error. */
const refused = new WeakSet<Duplex>();

/**
 * Ends `socket` (with `answer`, if any) and reads and drops what the client still sends until it
 * ends its side, 5 s at most: closed with its upload unread, the kernel resets the connection and
 * the client can lose the answer.
 */
function endAndDrain(socket: Duplex, answer?: string): void {
  if (!socket.writableEnded) socket.end(answer);
  socket.removeAllListeners("data");
  socket.on("data", () => {});
  socket.once("end", () => socket.destroy());
  socket.resume();
  // A client that never reads, or never stops sending, must not hold the socket.
  setTimeout(() => socket.destroy(), 5_000).unref();
}

/**
 * Refuses what Node's parser or timers refused on `socket`, or a version-less first line: `answer`
 * once every answer before it is written out (a scrape still being collected goes out first), or no
 * answer when the refused request had one already (answered at its head, its body then failing or
 * timing out: one answer a request), then the connection ends. What the client is still sending is
 * read and dropped until it ends its side (5 s at most): closed with its upload unread, the kernel
 * resets the connection, and the client can lose the answer (until 2026-12-01 the socket was
 * destroyed right after the write, and a refusal written ahead of an earlier scrape's answer took
 * its place).
 */
function refuse(socket: HttpSocket, answer: string): void {
  if (refused.has(socket)) return;
  refused.add(socket);
  if (!socket.writable) return void socket.destroy();
  // Node's parser stops with the request it refused: nothing after it is read as a request.
  const incoming = socket.parser?.incoming;
  const answered = incoming != null && incoming.complete === false;
  // Node hands the socket to each pipelined request's answer once the one before has emitted
  // 'finish' (which comes a tick after `writableFinished` turns true: until a review of 2026-12-01
  // that was taken for "done", and the refusal went out in place of the answers queued behind).
  // An answer that closes the connection (`Connection: close`) has ended the socket: nothing more.
  // Twin of the public port's wait in @plantgate/node's client-errors.ts (observability does not
  // depend on node), which sends its refusal after the answers too (since 2026-12-01).
  const afterAnswers = () => {
    const inFlight = socket._httpMessage;
    if (inFlight == null) endAndDrain(socket, answered || socket.writableEnded ? undefined : answer);
    else inFlight.once("finish", () => setImmediate(afterAnswers));
  };
  afterAnswers();
}

/**
 * A request line without an HTTP version: a method and a target, nothing after (HTTP/0.9's
 * `GET /metrics`, RFC 9112 §3's request-line requires one). Node's parser takes it for HTTP/0.9 and
 * waits for headers an HTTP/0.9 client never sends.
 */
const VERSIONLESS_LINE = /^[!-~]+ [!-~]+\r?$/;
/** A HEAD request line, with or without a version (as the public port's HEAD_LINE, and the version-less form the 505 answers). */
const HEAD_LINE = /^HEAD [!-~]+( HTTP\/\d\.\d)?\r?$/;
/** `refusal` to a request whose first line is `line`: to a HEAD, without its body. */
const toLine = (refusal: Refusal, line: string | undefined): string => (line !== undefined && HEAD_LINE.test(line) ? refusal.head : refusal.body);

/** A request line whose HTTP version has a major version other than 1 (RFC 9112 §2.3: one digit each side of the dot). */
const OTHER_MAJOR_LINE = /^[!-~]+ [!-~]+ HTTP\/[02-9]\.\d\r?$/;

/**
 * The first line of `data` without its LF, empty lines before it skipped (RFC 9112 §2.2; Node's
 * parser skips them too), or undefined while `data` holds no LF after them.
 */
// Twin of firstLine in @plantgate/node's client-errors.ts (observability does not depend on node).
function firstLine(data: Buffer): string | undefined {
  let from = 0;
  while (from < data.length && (data[from] === 13 || data[from] === 10)) from++;
  const end = data.indexOf(10, from);
  return end < 0 ? undefined : data.toString("latin1", from, end);
}

/**
 * What never reaches the request listener gets an answer with a body too. Node's own answers to
 * what its parser or timers refuse have none (400, 431, 408), an Expect other than 100-continue
 * got a bodiless 417 and the connection was kept, and a CONNECT (handed to a 'connect' listener,
 * closed without a word when there is none) got nothing at all. A connection whose first line has
 * no HTTP version gets the 505 of a major version other than 1 at once (as the public port's; to a
 * HEAD, its Content-Length and no body): HTTP/0.9 has no headers and no persistent
 * connections, so a client that sent one waits for an answer (until 2026-11-30 Node's parser waited
 * for headers, and the client got the 408 of the headers timeout 10 s later); one that Node's parser
 * did make a request of (a blank line sent after it) is refused by the request listener, which
 * `requested` tells.
 */
function answerRefusals(server: Server, requested: WeakSet<Duplex>): void {
  /** A connection's first line, as the 'connection' listener below found it. */
  const firstLines = new WeakMap<Duplex, string>();
  /** What that listener has seen of a connection while it looks for the first line. */
  const starts = new WeakMap<Duplex, Buffer>();
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (error.code === "ECONNRESET") return void socket.destroy();
    const raw = (error as { rawPacket?: unknown }).rawPacket;
    // A request line whose major version is not 1 that Node's parser refuses (`HTTP/3.0`: it hands
    // over 0.9, 1.0, 1.1 and 2.0 only) and HTTP/2's prior-knowledge preface (`PRI * HTTP/2.0` +
    // `SM`, curl --http2-prior-knowledge, where it stops: HPE_PAUSED_H2_UPGRADE) get the 505 of
    // `HTTP/2.0`, as on the public port (until 2026-12-01 the 400). The parser stops so at a `PRI`
    // line of any version: HTTP/1.1's stays 400. Judged by the first line of the read the failure
    // came in, as the public port does (a line that came in an earlier read stays 400).
    const line = (error.code === "HPE_INVALID_VERSION" || error.code === "HPE_PAUSED_H2_UPGRADE") && Buffer.isBuffer(raw) ? firstLine(raw) : undefined;
    const otherMajor = line !== undefined && OTHER_MAJOR_LINE.test(line);
    // To a HEAD, no body (RFC 9110 §9.3.2; until 2026-12-01 the 400, 408 and 431 carried one). Known
    // for the connection's first request only: its line as the watcher below found it, or else the
    // line of what the watcher has seen followed by the read the failure came in (Node's parser
    // reads a chunk before the watcher does): a read's own start is not known to be a request line
    // (`GET /` then `HEAD HTTP/1.1...`: the target /HEAD). A later request's refusal keeps its body:
    // the data may begin with an earlier request's line, and a body a GET's answer announces must come.
    const seen = starts.get(socket);
    const first = requested.has(socket) ? undefined : (firstLines.get(socket) ?? (Buffer.isBuffer(raw) ? firstLine(seen === undefined ? raw : Buffer.concat([seen, raw])) : undefined));
    refuse(
      socket,
      toLine(
        error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? REFUSALS.timeout
          : error.code === "HPE_HEADER_OVERFLOW" ? REFUSALS.headers
          : otherMajor ? REFUSALS.version
          : REFUSALS.malformed,
        first,
      ),
    );
  });
  server.on("connection", (socket: Duplex) => {
    // Node's parser has read each chunk before this listener (it was added first): a request it made
    // of the chunk has been answered already (the request listener, 'checkExpectation', 'connect').
    // Only the first line is looked at; a 'data' listener has Node feed its parser from JavaScript
    // rather than straight from the socket, which costs a scrape listener nothing worth counting.
    let start: Buffer = Buffer.alloc(0);
    const watchFirstLine = (chunk: Buffer): void => {
      start = start.length === 0 ? chunk : Buffer.concat([start, chunk]);
      starts.set(socket, start);
      const line = firstLine(start);
      // Looked for within Node's header limit (16 KiB unless --max-http-header-size says otherwise;
      // the server sets none of its own): past it, its parser refuses the request, 431.
      if (line === undefined && start.length < maxHeaderSize) return;
      socket.off("data", watchFirstLine);
      starts.delete(socket);
      if (line === undefined) return;
      firstLines.set(socket, line);
      if (requested.has(socket) || refused.has(socket) || socket.destroyed) return;
      if (VERSIONLESS_LINE.test(line)) refuse(socket, toLine(REFUSALS.version, line));
    };
    socket.on("data", watchFirstLine);
  });
  // Both read and drop what follows their answer, as a refusal does (until a review of 2026-12-01
  // they closed with it unread: a client that sent a body first got EPIPE and no answer, half the time).
  server.on("connect", (_req: IncomingMessage, socket: Duplex) => {
    requested.add(socket);
    socket.on("error", () => {});
    endAndDrain(socket, CONNECT_REFUSAL);
  });
  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
    requested.add(req.socket);
    res.shouldKeepAlive = false;
    // Node ends a connection whose answer closes it with destroySoon() once the answer is written.
    const socket = req.socket;
    Object.defineProperty(socket, "destroySoon", { value: () => endAndDrain(socket), configurable: true, writable: true });
    res.writeHead(417, { "content-type": TEXT }).end("Only Expect: 100-continue is understood.\n");
  });
}

/**
 * Serves `GET /metrics` (Prometheus text exposition) on its own `node:http` listener. Anything
 * else is 404 (405 for another method on `/metrics`, and for a `CONNECT` whatever its target; 421
 * for an absolute-form `https://` target, this listener being plain HTTP; 505 for a request line
 * without an HTTP version, HTTP/0.9's `GET /metrics`, or with `HTTP/0.9` or `HTTP/2.0`, HTTP/2's
 * prior-knowledge preface `PRI * HTTP/2.0` included, or with a version Node's parser refuses whose
 * major is not 1, `HTTP/3.0`, as the public port answers).
 * Keep it off the public network: it says how busy the server is and which errors it answers.
 *
 * @example
 * const listener = await serveMetrics(metrics, { port: 9464, host: "0.0.0.0" });
 */
export async function serveMetrics(metrics: Pick<PlantgateMetrics, "registry" | "text">, options: ServeMetricsOptions): Promise<MetricsListener> {
  const headersTimeout = options.headersTimeout ?? METRICS_LISTENER_DEFAULTS.headersTimeout;
  // Node's own limits let a client that sends its headers slowly hold a connection for up to 90 s,
  // and one that stops reading hold it (and its queued answers) for good, on any number of
  // connections.
  const limits = {
    headersTimeout,
    // A scrape has no body; a body sent anyway (to a 405) is bounded alike.
    requestTimeout: headersTimeout,
    connectionsCheckingInterval: Math.min(1_000, headersTimeout || 1_000),
  };
  const requested = new WeakSet<Duplex>();
  const server: Server = createServer({ ...limits, requireHostHeader: false }, (req, res) => {
    requested.add(req.socket);
    // A request line without a version (HTTP/0.9, a blank line after it) or with another major
    // version than 1 (`HTTP/2.0`) is 505, as on the public port: until 2026-11-30 both were served.
    if (req.httpVersionMajor !== 1) {
      res.shouldKeepAlive = false;
      res.writeHead(505, { "content-type": TEXT, "content-length": String(Buffer.byteLength(VERSION_BODY)) }).end(VERSION_BODY);
      return;
    }
    // RFC 9110 §7.4: an https target did not come over TLS (this listener is plain HTTP): 421, as on
    // the public port, whatever its path (until 2026-11-30 `GET https://x/metrics` was served).
    if (HTTPS_TARGET.test(req.url ?? "")) {
      res.writeHead(421, { "content-type": TEXT, "content-length": String(Buffer.byteLength(MISDIRECTED_BODY)) }).end(MISDIRECTED_BODY);
      return;
    }
    const path = targetPath(req.url ?? "/");
    if (path !== "/metrics") {
      res.writeHead(404, { "content-type": TEXT }).end("Not found; the metrics are at /metrics.\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": TEXT }).end("Use GET.\n");
      return;
    }
    const failed = () => {
      res.writeHead(500, { "content-type": TEXT }).end("Collecting the metrics failed.\n");
    };
    const answer = () => {
      // The client went away while this answer waited its turn.
      if (res.destroyed) return;
      // A text() of the host's own that throws at once, or hands back no string, is a 500 like a
      // rejection: until 2026-11-30 the first was an uncaught exception and the second an
      // unhandled rejection (Node ends the process on either), and the scrape was never answered.
      new Promise<unknown>((resolve) => resolve(metrics.text())).then(
        (text) => {
          if (typeof text !== "string") return failed();
          res.writeHead(200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" });
          res.end(req.method === "HEAD" ? undefined : text);
        },
        failed,
      );
    };
    // A pipelined request's answer gets the socket once the one before it is written out: only then
    // is its exposition collected. Collected at once, a client that pipelined 500 scrapes in one
    // write and read none had 500 collected and held (about 100 MB and 4 s of event loop at 200 KB
    // each, which every other listener of the process waited out); now, as many as the socket takes.
    if (res.socket !== null) answer();
    else res.once("socket", answer);
  });
  answerRefusals(server, requested);
  server.maxConnections = options.maxConnections ?? METRICS_LISTENER_DEFAULTS.maxConnections;
  // No 'timeout' listener: Node destroys a socket that stays silent this long.
  server.setTimeout(options.socketTimeout ?? METRICS_LISTENER_DEFAULTS.socketTimeout);
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  // A wildcard address is not something a client can dial on every platform (as serve()'s URL):
  // the banner printed http://0.0.0.0:9464/metrics before 2026-11-30.
  const dialled = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  const shown = dialled.includes(":") ? `[${dialled}]` : dialled;
  return {
    url: `http://${shown}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
