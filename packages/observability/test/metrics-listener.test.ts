/**
 * The metrics listener under hostile input, over real sockets: whatever a client sends or fails to
 * read, the listener answers it in bounded time and memory and the process lives on.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { connect, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createMetrics, serveMetrics, type MetricsListener, type PlantgateMetrics } from "../src/index.js";

let listener: MetricsListener | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await listener?.close();
  listener = undefined;
});

/** Metrics with about 200 KB of exposition (many storage series), counting their collections. */
function bigMetrics(): { metrics: Pick<PlantgateMetrics, "registry" | "text">; collections: () => number } {
  const metrics = createMetrics({ processMetrics: false });
  for (let i = 0; i < 40; i++) {
    for (const operation of ["get", "put", "list", "delete"]) metrics.observer.storage!({ store: `store${i}`, operation, durationMs: 1, failed: false });
  }
  let collections = 0;
  return {
    metrics: {
      registry: metrics.registry,
      text: () => {
        collections++;
        return metrics.text();
      },
    },
    collections: () => collections,
  };
}

function open(url: string): Socket {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on("error", () => {});
  sockets.push(socket);
  return socket;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The URL a listener started by fixtures/serve-metrics.ts in `child` prints. */
function listenerUrl(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) resolve(out.trim());
    });
    child.once("exit", (code) => reject(new Error(`the listener exited (${code})`)));
  });
}

describe("metrics listener", { timeout: 30_000 }, () => {
  it("bound to the wildcard address, its URL names one a client can dial (127.0.0.1), and a scrape there answers", async () => {
    listener = await serveMetrics(createMetrics({ processMetrics: false }), { port: 0, host: "0.0.0.0" });
    expect(listener.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const scraped = await fetch(listener.url);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain("# TYPE plantgate_http_requests_total counter");
  });
  it("bound to the IPv6 wildcard (::), its URL names ::1 in brackets, and a scrape there answers", async () => {
    listener = await serveMetrics(createMetrics({ processMetrics: false }), { port: 0, host: "::" });
    expect(listener.url).toMatch(/^http:\/\/\[::1\]:\d+\/metrics$/);
    const scraped = await fetch(listener.url);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain("# TYPE plantgate_http_requests_total counter");
  });
  it("a client that pipelines many scrapes and reads none gets one exposition collected at a time, not one per request (each held in memory until sent)", async () => {
    const { metrics, collections } = bigMetrics();
    expect((await metrics.text()).length).toBeGreaterThan(200_000);
    listener = await serveMetrics(metrics, { port: 0 });
    const socket = open(listener.url);
    socket.pause();
    // 500 requests in one write: Node's parser reads them all before it can pause the socket.
    socket.write("GET /metrics HTTP/1.1\r\nHost: metrics\r\n\r\n".repeat(500));
    // Until no collection has come for 1 s (and 2 s at least): without the fix they go on until all
    // 500 are made, however slowly a loaded machine makes them (a fixed 2 s let a slow run pass).
    const began = Date.now();
    let seen = collections();
    let quietSince = began;
    while (Date.now() - began < 20_000) {
      await sleep(100);
      if (collections() !== seen) {
        seen = collections();
        quietSince = Date.now();
      } else if (Date.now() - quietSince >= 1_000 && Date.now() - began >= 2_000) break;
    }
    // Before the fix all 500 were collected at once (~100 MB held, seconds of event-loop time that
    // every other listener of the process waited out); now only those whose answer reached the
    // socket, as far as the kernel's buffers take them.
    const whileStalled = collections() - 1;
    expect(whileStalled).toBeLessThan(60);
    // Reading again, the client gets every answer, whole and in order.
    let received = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.resume();
    // 500 collections of 200 KB, one after the other: 5 to 20 s and more on a loaded machine (464
    // of 500 had arrived when a 20 s deadline ran out, other files running). The deadline only
    // bounds a run that would never finish.
    const deadline = Date.now() + 90_000;
    while ((received.match(/\r\n0\r\n\r\n/g) ?? []).length < 500 && Date.now() < deadline) await sleep(50);
    expect((received.match(/^HTTP\/1\.1 200 OK\r\n/gm) ?? []).length).toBe(500);
    expect(collections() - 1).toBe(500);
  }, 150_000);

  it("a client that sends its headers a byte at a time is answered 408 and closed once the headers timeout has passed", async () => {
    listener = await serveMetrics(createMetrics({ processMetrics: false }), { port: 0, headersTimeout: 1_000 });
    const socket = open(listener.url);
    let received = "";
    let closed = false;
    socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
    socket.on("close", () => (closed = true));
    socket.write("GET /metrics HTTP/1.1\r\nHost: metrics\r\nX-Slow: ");
    const drip = setInterval(() => socket.writable && socket.write("a"), 100);
    try {
      const deadline = Date.now() + 5_000;
      while (!closed && Date.now() < deadline) await sleep(50);
    } finally {
      clearInterval(drip);
    }
    // Before: Node's 60 s headers timeout, checked every 30 s.
    expect(closed).toBe(true);
    expect(received).toBe("HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 36\r\nconnection: close\r\n\r\nThe request did not arrive in time.\n");
  });

  it("a HEAD whose headers do not arrive in time gets the 408 without its body (it carried one until 2026-12-01); a request answered before its body arrived gets no 408 after its answer when the body then times out", async () => {
    listener = await serveMetrics(createMetrics({ processMetrics: false }), { port: 0, headersTimeout: 500 });
    /** Everything the listener sends on a connection after `data` until it closes it (or 5 s pass). */
    const exchange = async (data: string) => {
      const socket = open(listener!.url);
      let received = "";
      socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
      const closed = new Promise<boolean>((resolve) => {
        socket.on("close", () => resolve(true));
        setTimeout(() => resolve(false), 5_000);
      });
      socket.write(data);
      return [await closed, received.replace(/\r\nDate: [^\r]*/g, "")];
    };
    const [head, post] = await Promise.all([
      exchange("HEAD /metrics HTTP/1.1\r\nHost: metrics\r\nX-Slow: a"),
      // Answered 405 at its head; its 5 bytes never come (until 2026-12-01 the request timeout's 408 followed the 405).
      exchange("POST /metrics HTTP/1.1\r\nHost: metrics\r\nContent-Length: 5\r\n\r\nab"),
    ]);
    expect(head).toEqual([true, "HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: 36\r\nconnection: close\r\n\r\n"]);
    expect(post).toEqual([true, "HTTP/1.1 405 Method Not Allowed\r\nallow: GET, HEAD\r\ncontent-type: text/plain; charset=utf-8\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nUse GET.\n\r\n0\r\n\r\n"]);
  });

  /** What the listener answers a request line written in two reads, 100 ms apart, followed by two Content-Lengths (a 400). */
  async function splitLine(first: string, second: string): Promise<string> {
    listener = await serveMetrics(createMetrics({ processMetrics: false }), { port: 0 });
    const socket = open(listener.url);
    let received = "";
    socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    socket.write(first);
    await sleep(100);
    socket.write(`${second}\r\nHost: m\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab`);
    await closed;
    return received;
  }
  const SPLIT_BODY = "Not an HTTP request this listener reads; the metrics are at GET /metrics.\n";
  const SPLIT_HEAD = `HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${SPLIT_BODY.length}\r\nconnection: close\r\n\r\n`;

  it("a GET whose request line came in two reads (`GET /` and `HEAD HTTP/1.1`, the target /HEAD) is refused with its body: the second read's start is not its line", async () => {
    expect(await splitLine("GET /", "HEAD HTTP/1.1")).toBe(SPLIT_HEAD + SPLIT_BODY);
  });

  it("a HEAD whose request line came in two reads (`HEAD /met` and `rics HTTP/1.1`) is refused without a body, as in one read", async () => {
    expect(await splitLine("HEAD /met", "rics HTTP/1.1")).toBe(SPLIT_HEAD);
  });

  it("a refused request whose client writes 2 MB after it before reading gets its whole answer, every time, not a reset (listener in a process of its own)", async () => {
    // In the test's own process the client reads between the listener's steps and a reset seldom
    // meets an unread answer. Until 2026-12-01 the listener destroyed the socket right after writing
    // its refusal, with the upload unread: the kernel then resets the connection.
    const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./fixtures/serve-metrics.ts", import.meta.url))], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const url = await listenerUrl(child);
      const malformed = "Not an HTTP request this listener reads; the metrics are at GET /metrics.\n";
      const tooLarge = "The request headers are too large.\n";
      const text = (status: string, body: string, extra = "") => `HTTP/1.1 ${status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${body.length}\r\n${extra}connection: close\r\n\r\n${body}`;
      const expectation = "Only Expect: 100-continue is understood.\n";
      const cases: Array<[string, string, string]> = [
        ["unknown method", "BREW /metrics HTTP/1.1\r\nHost: m\r\nContent-Length: 2000000\r\n\r\n", text("400 Bad Request", malformed)],
        ["two Content-Lengths", "POST /metrics HTTP/1.1\r\nHost: m\r\nContent-Length: 2000000\r\nContent-Length: 2000001\r\n\r\n", text("400 Bad Request", malformed)],
        ["headers past the limit", "GET /metrics HTTP/1.1\r\nHost: m\r\nX-Big: ", text("431 Request Header Fields Too Large", tooLarge)],
        // Answered by their own listeners ('connect', 'checkExpectation'): they too read what follows
        // (until a review of 2026-12-01 half of such clients got EPIPE and no answer).
        ["CONNECT", "CONNECT m:443 HTTP/1.1\r\nHost: m:443\r\n\r\n", text("405 Method Not Allowed", "Use GET.\n", "allow: GET, HEAD\r\n")],
        [
          "Expect: foo",
          "POST /metrics HTTP/1.1\r\nHost: m\r\nExpect: foo\r\nContent-Length: 2000000\r\n\r\n",
          `HTTP/1.1 417 Expectation Failed\r\ncontent-type: text/plain; charset=utf-8\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n${expectation.length.toString(16)}\r\n${expectation}\r\n0\r\n\r\n`,
        ],
      ];
      for (const [label, head, answer] of cases) {
        for (let attempt = 0; attempt < 10; attempt++) {
          const socket = open(url);
          // As curl does: the whole upload written before the answer is read.
          socket.pause();
          socket.write(head);
          await new Promise<void>((resolve) => socket.write(Buffer.alloc(2_000_000, 0x61), () => resolve()));
          let received = "";
          const outcome = await new Promise<string>((resolve) => {
            socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
            socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? "error"));
            socket.on("close", () => resolve("closed"));
            socket.resume();
          });
          expect([label, attempt, outcome, received.replace(/\r\nDate: [^\r]*/g, "")]).toEqual([label, attempt, "closed", answer]);
          socket.destroy();
        }
      }
    } finally {
      child.kill();
    }
  }, 60_000);

  it("a connection silent both ways (a client that stopped reading a scrape) is destroyed after the socket timeout", async () => {
    const { metrics } = bigMetrics();
    listener = await serveMetrics(metrics, { port: 0, socketTimeout: 1_000 });
    const socket = open(listener.url);
    socket.pause();
    socket.write("GET /metrics HTTP/1.1\r\nHost: metrics\r\n\r\n".repeat(100));
    await sleep(3_000);
    let received = "";
    let closed = false;
    socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
    socket.on("close", () => (closed = true));
    socket.resume();
    const deadline = Date.now() + 10_000;
    while (!closed && Date.now() < deadline) await sleep(50);
    // Before: Node sets no socket timeout, and the connection (with its queued answers) was held
    // for as long as the client kept it open, reading nothing.
    expect(closed).toBe(true);
    const answers = (received.match(/^HTTP\/1\.1 200 OK\r\n/gm) ?? []).length;
    expect(answers).toBeGreaterThan(0);
    expect(answers).toBeLessThan(100);
  });

  it("connections past maxConnections are closed at once; the ones within it are served, and a scrape works again once they are gone", async () => {
    listener = await serveMetrics(createMetrics({ processMetrics: false }), { port: 0, maxConnections: 4 });
    const idle = [0, 1, 2, 3].map(() => open(listener!.url));
    // Connected (the server's kernel holds them, in order, before a fifth is even tried)...
    await Promise.all(idle.map((socket) => new Promise((resolve) => socket.once("connect", resolve))));
    // ...and kept open by half-sent requests.
    for (const socket of idle) socket.write("GET /metrics HTTP/1.1\r\n");
    const extra = open(listener.url);
    let extraData = "";
    extra.setEncoding("latin1").on("data", (chunk: string) => (extraData += chunk));
    extra.write("GET /metrics HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n");
    await new Promise((resolve) => extra.once("close", resolve));
    expect(extraData).toBe("");
    // One of the four finishes its request and is answered.
    let first = "";
    idle[0]!.setEncoding("latin1").on("data", (chunk: string) => (first += chunk));
    idle[0]!.write("Host: metrics\r\nConnection: close\r\n\r\n");
    await new Promise((resolve) => idle[0]!.once("close", resolve));
    expect(first).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    for (const socket of idle) socket.destroy();
    // Until the listener has seen them close it is still full and closes a new connection at once;
    // tried again until a scrape gets through (it must, within the deadline).
    const deadline = Date.now() + 10_000;
    let again: Response | undefined;
    while (again === undefined && Date.now() < deadline) {
      again = await fetch(listener.url).catch(() => undefined);
      if (again === undefined) await sleep(20);
    }
    expect(again?.status).toBe(200);
    expect(await again!.text()).toContain("# TYPE plantgate_http_requests_total counter");
  });

  it("a text() that throws at once, rejects or hands back no string is a 500 with a body, and the process lives on (a throw at once was an uncaught exception; no string, an unhandled rejection)", async () => {
    const real = createMetrics({ processMetrics: false });
    const texts: Array<() => Promise<string>> = [
      () => {
        throw new Error("collect failed at once");
      },
      () => Promise.reject(new Error("collect failed later")),
      () => Promise.resolve(42 as unknown as string),
      () => real.text(),
    ];
    let turn = 0;
    listener = await serveMetrics({ registry: real.registry, text: () => texts[turn++]!() }, { port: 0 });
    const got: Array<[number, string, string | null]> = [];
    for (let i = 0; i < texts.length; i++) {
      const res = await fetch(listener.url);
      const body = await res.text();
      got.push([res.status, body.startsWith("# HELP") ? "<exposition>" : body, res.headers.get("content-type")]);
    }
    const failed: [number, string, string] = [500, "Collecting the metrics failed.\n", "text/plain; charset=utf-8"];
    expect(got).toEqual([failed, failed, failed, [200, "<exposition>", "text/plain; version=0.0.4; charset=utf-8"]]);
  });

  it("every request gets an answer with a body: odd methods, paths, targets, headers, HTTP/1.0, pipelining, CONNECT, no Host", async () => {
    listener = await serveMetrics(createMetrics({ processMetrics: false }), { port: 0 });
    const url = listener.url;
    /** What the listener sends back on a connection, until it closes it (or 2 s pass). */
    const exchange = (data: string) =>
      new Promise<string>((resolve) => {
        const socket = open(url);
        let received = "";
        socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
        // Every case ends in a close; 10 s only tells a connection left open from a slow machine
        // (then closed here, so nothing outlives the case).
        const timer = setTimeout(() => {
          resolve(`${received}<still open>`);
          socket.destroy();
        }, 10_000);
        socket.on("close", () => {
          clearTimeout(timer);
          resolve(received);
        });
        socket.write(data);
      });
    /** Status line and body of each answer in `raw` (chunked or not), Date headers aside. */
    const answers = (raw: string) => {
      const out: Array<[string, string]> = [];
      let rest = raw;
      while (rest.startsWith("HTTP/1.1 ")) {
        const end = rest.indexOf("\r\n\r\n");
        const head = rest.slice(0, end);
        rest = rest.slice(end + 4);
        let body = "";
        const length = /^content-length: (\d+)$/im.exec(head);
        if (length) {
          body = rest.slice(0, Number(length[1]));
          rest = rest.slice(body.length);
        } else if (/^transfer-encoding: chunked$/im.test(head)) {
          for (;;) {
            const line = rest.indexOf("\r\n");
            const size = parseInt(rest.slice(0, line), 16);
            rest = rest.slice(line + 2);
            if (size === 0) {
              rest = rest.slice(2);
              break;
            }
            body += rest.slice(0, size);
            rest = rest.slice(size + 2);
          }
        } else if (/^connection: close$/im.test(head)) {
          // Delimited by the close (HTTP/1.0).
          body = rest;
          rest = "";
        }
        // Else none (a HEAD answer on a kept connection).
        out.push([head.split("\r\n")[0]!, body.startsWith("# HELP") ? "<exposition>" : body]);
      }
      if (rest !== "") out.push(["<rest>", rest]);
      return out;
    };
    const use = "Use GET.\n";
    const notFound = "Not found; the metrics are at /metrics.\n";
    const cases: Array<[string, string, Array<[string, string]>]> = [
      ["CONNECT", "CONNECT metrics.example:443 HTTP/1.1\r\nHost: metrics.example:443\r\n\r\n", [["HTTP/1.1 405 Method Not Allowed", use]]],
      ["not HTTP", "HELLO\r\n\r\n", [["HTTP/1.1 400 Bad Request", "Not an HTTP request this listener reads; the metrics are at GET /metrics.\n"]]],
      ["unknown method", "BREW /metrics HTTP/1.1\r\nHost: m\r\n\r\n", [["HTTP/1.1 400 Bad Request", "Not an HTTP request this listener reads; the metrics are at GET /metrics.\n"]]],
      ["32 KB header", `GET /metrics HTTP/1.1\r\nHost: m\r\nX-Big: ${"a".repeat(32_000)}\r\n\r\n`, [["HTTP/1.1 431 Request Header Fields Too Large", "The request headers are too large.\n"]]],
      ["no Host", "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n", [["HTTP/1.1 200 OK", "<exposition>"]]],
      ["HTTP/1.0", "GET /metrics HTTP/1.0\r\n\r\n", [["HTTP/1.1 200 OK", "<exposition>"]]],
      ["query", "GET /metrics?name[]=x&y HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", [["HTTP/1.1 200 OK", "<exposition>"]]],
      ["absolute form", "GET http://m:1/metrics?x HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", [["HTTP/1.1 200 OK", "<exposition>"]]],
      ["Expect", "GET /metrics HTTP/1.1\r\nHost: m\r\nExpect: tea\r\n\r\n", [["HTTP/1.1 417 Expectation Failed", "Only Expect: 100-continue is understood.\n"]]],
      ["OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", [["HTTP/1.1 404 Not Found", notFound]]],
      ["TRACE", "TRACE /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", [["HTTP/1.1 405 Method Not Allowed", use]]],
      ["POST with a body", "POST /metrics HTTP/1.1\r\nHost: m\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", [["HTTP/1.1 405 Method Not Allowed", use]]],
      // To a HEAD: the refusal's Content-Length and no body (RFC 9110 §9.3.2), as the public port's (until 2026-12-01 with the body).
      ["HEAD, 32 KB header", `HEAD /metrics HTTP/1.1\r\nHost: m\r\nX-Big: ${"a".repeat(32_000)}\r\n\r\n`, [["HTTP/1.1 431 Request Header Fields Too Large", ""]]],
      ["HEAD, two Content-Lengths", "HEAD /metrics HTTP/1.1\r\nHost: m\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", [["HTTP/1.1 400 Bad Request", ""]]],
      // A refused request behind one still being answered: that answer first, then the refusal (until
      // 2026-12-01 the refusal went out at once in its place, the connection was destroyed, and the
      // scrape got the 400).
      [
        "a scrape, then one refused",
        "GET /metrics HTTP/1.1\r\nHost: m\r\n\r\nBREW /metrics HTTP/1.1\r\nHost: m\r\n\r\n",
        [
          ["HTTP/1.1 200 OK", "<exposition>"],
          ["HTTP/1.1 400 Bad Request", "Not an HTTP request this listener reads; the metrics are at GET /metrics.\n"],
        ],
      ],
      // Two answered at once ahead of a refused request: each gets its own answer, then the refusal
      // (until a review of 2026-12-01 the refusal went out after the first, in the second's place).
      [
        "two answered at once, then one refused",
        "GET /nope HTTP/1.1\r\nHost: m\r\n\r\nGET /nope2 HTTP/1.1\r\nHost: m\r\n\r\nGET /nope3 HTTP/1.1\r\nHost: m\r\n\r\nBREW / HTTP/1.1\r\nHost: m\r\n\r\n",
        [
          ["HTTP/1.1 404 Not Found", notFound],
          ["HTTP/1.1 404 Not Found", notFound],
          ["HTTP/1.1 404 Not Found", notFound],
          ["HTTP/1.1 400 Bad Request", "Not an HTTP request this listener reads; the metrics are at GET /metrics.\n"],
        ],
      ],
      // After an answer that closes the connection, nothing more.
      [
        "Connection: close, then one refused",
        "GET /nope HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\nBREW / HTTP/1.1\r\nHost: m\r\n\r\n",
        [["HTTP/1.1 404 Not Found", notFound]],
      ],
      // A later request's refusal keeps its body though the connection's first request was a HEAD.
      [
        "a HEAD, then a GET refused",
        "HEAD /nope HTTP/1.1\r\nHost: m\r\n\r\nGET /metrics HTTP/1.1\r\nHost: m\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        [
          ["HTTP/1.1 404 Not Found", ""],
          ["HTTP/1.1 400 Bad Request", "Not an HTTP request this listener reads; the metrics are at GET /metrics.\n"],
        ],
      ],
      [
        "pipelined",
        "GET /nope HTTP/1.1\r\nHost: m\r\n\r\nDELETE /metrics HTTP/1.1\r\nHost: m\r\n\r\nHEAD /metrics HTTP/1.1\r\nHost: m\r\n\r\nGET /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n",
        [
          ["HTTP/1.1 404 Not Found", notFound],
          ["HTTP/1.1 405 Method Not Allowed", use],
          ["HTTP/1.1 200 OK", ""],
          ["HTTP/1.1 200 OK", "<exposition>"],
        ],
      ],
    ];
    const got = await Promise.all(cases.map(async ([, data]) => answers(await exchange(data))));
    expect(Object.fromEntries(cases.map(([name], i) => [name, got[i]]))).toEqual(Object.fromEntries(cases.map(([name, , want]) => [name, want])));
    // And the listener still serves.
    expect((await fetch(url)).status).toBe(200);
  });

  it("an absolute-form https:// target is 421 (this listener is plain HTTP; it was served), an http:// one is served; a request line without a version (HTTP/0.9's `GET /metrics`) or with another major version than 1 is 505 (as on the public port) with a text body and Connection: close (a bare line waited for the headers timeout, then 408; one with a blank line after it, or HTTP/0.9 or 2.0, was served)", async () => {
    const metrics = createMetrics({ processMetrics: false });
    listener = await serveMetrics(metrics, { port: 0 });
    const url = listener.url;
    /** Everything the listener sends back until it closes (or 5 s pass, well before the 10 s headers timeout), Date lines left out. */
    const exchange = (data: string) =>
      new Promise<string>((resolve) => {
        const socket = open(url);
        let received = "";
        const done = (tail: string) => resolve(received.replace(/\r\nDate: [^\r]*/g, "") + tail);
        socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
        // Left open: closed here once read, so nothing outlives the case.
        const timer = setTimeout(() => {
          done("<still open>");
          socket.destroy();
        }, 5_000);
        socket.on("close", () => {
          clearTimeout(timer);
          done("");
        });
        // A reset instead of the close.
        socket.on("error", (error: NodeJS.ErrnoException) => done(`<${error.code}>`));
        socket.write(data);
      });
    const exposition = await metrics.text();
    const chunked = `${exposition.length.toString(16)}\r\n${exposition}\r\n0\r\n\r\n`;
    const served = `HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8\r\ncache-control: no-store\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}`;
    const misdirectedBody = "The request's target is not served on this connection: this listener speaks plain HTTP.\n";
    const misdirected = `HTTP/1.1 421 Misdirected Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${misdirectedBody.length}\r\nConnection: close\r\n\r\n${misdirectedBody}`;
    const malformedBody = "Not an HTTP request this listener reads; the metrics are at GET /metrics.\n";
    // What Node's parser refuses itself.
    const malformed = `HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${malformedBody.length}\r\nconnection: close\r\n\r\n${malformedBody}`;
    const versionBody = "The request's HTTP version is not supported; send it as HTTP/1.1.\n";
    // What the listener writes itself before a request exists...
    const refusedRaw = `HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${versionBody.length}\r\nconnection: close\r\n\r\n${versionBody}`;
    // ...and through Node's response once its parser made a request of the line.
    const refused = `HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${versionBody.length}\r\nConnection: close\r\n\r\n${versionBody}`;
    const cases: Array<[string, string]> = [
      ["GET http://other/metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", served],
      ["GET HTTP://other:9464/metrics?x HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", served],
      ["GET https://x/metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", misdirected],
      ["GET HTTPS://x:443/nope HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", misdirected],
      ["POST https://x/metrics HTTP/1.1\r\nHost: m\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", misdirected],
      ["GET /metrics\r\n", refusedRaw],
      ["\r\nGET /metrics\r\n", refusedRaw],
      ["GET http://m/metrics\r\nHost: m\r\n", refusedRaw],
      ["GET /metrics\r\n\r\n", refused],
      // A HEAD's has its Content-Length and no body (RFC 9110 §9.3.2), as on the public port (the raw one had the body).
      ["HEAD /metrics\r\n", refusedRaw.slice(0, -versionBody.length)],
      ["\r\nHEAD /metrics\r\n", refusedRaw.slice(0, -versionBody.length)],
      ["HEAD /metrics\r\n\r\n", refused.slice(0, -versionBody.length)],
      // Bare LFs after a version-less line are what Node's parser itself refuses (so before too).
      ["GET /metrics\n\n", malformed],
      ["GET /metrics HTTP/0.9\r\n\r\n", refused],
      ["GET /metrics HTTP/2.0\r\nHost: m\r\n\r\n", refused],
      // HTTP/2's prior-knowledge preface (curl --http2-prior-knowledge), alone and with the client's
      // SETTINGS frame behind it: Node's parser stops at it (it was the 400), at a PRI line of HTTP/1.1 too.
      ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", refusedRaw],
      ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00", refusedRaw],
      ["PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n", malformed],
      // A version Node's parser refuses itself whose major is not 1 (it was the 400), to a HEAD
      // without the body; a minor version it does not know stays its 400.
      ["GET /metrics HTTP/3.0\r\nHost: m\r\n\r\n", refusedRaw],
      ["\r\nGET /metrics HTTP/3.0\r\nHost: m\r\n\r\n", refusedRaw],
      ["HEAD /metrics HTTP/3.0\r\nHost: m\r\n\r\n", refusedRaw.slice(0, -versionBody.length)],
      ["GET /metrics HTTP/1.2\r\nHost: m\r\n\r\n", malformed],
      // Behind a scrape on a kept connection: that one is answered, then the refusal, then the close.
      ["GET /metrics HTTP/1.1\r\nHost: m\r\n\r\nGET /metrics\r\n\r\n", `${served.replace("Connection: close", "Connection: keep-alive\r\nKeep-Alive: timeout=5")}${refused}`],
    ];
    const got = await Promise.all(cases.map(([data]) => exchange(data)));
    expect(cases.map(([data], i) => [data, got[i]])).toEqual(cases);
    // And the listener still serves.
    expect((await fetch(url)).status).toBe(200);
  });

  it("a version-less first line is looked for within Node's header limit as --max-http-header-size sets it (a 20 KB one under 32 KiB got the 408 of the headers timeout: 16 KiB was written in)", async () => {
    const child = spawn(process.execPath, ["--max-http-header-size=32768", "--import", "tsx", fileURLToPath(new URL("./fixtures/serve-metrics.ts", import.meta.url))], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const url = await listenerUrl(child);
      const socket = open(url);
      let received = "";
      socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
      const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
      // Past 16 KiB before its end arrives, within the 32 KiB limit.
      const target = `/${"a".repeat(20_000)}`;
      socket.write(`GET ${target}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      socket.write("\r\n");
      await closed;
      const versionBody = "The request's HTTP version is not supported; send it as HTTP/1.1.\n";
      expect(received).toBe(`HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${versionBody.length}\r\nconnection: close\r\n\r\n${versionBody}`);
    } finally {
      child.kill();
    }
  }, 15_000);
});
