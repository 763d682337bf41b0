import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent, createServer as createHttpServer } from "node:http";
import { createServer, type Socket } from "node:net";
import fetch from "node-fetch";
import { describe, expect, it } from "vitest";
import { answerMalformedRequests, closeGracefully, serve, SERVE_DEFAULTS, type FetchApp } from "../src/index.js";
import { chunkedAnswers, deferred, delay, open, rawExchange, readResponse, slowThenBadChunk, textUntilClose } from "./support.js";

const hello: FetchApp = { fetch: async () => new Response("hello") };
/** The whole answer to a request Node's parser refuses (400), as the refusal is written on the socket. */
const REFUSED_400 =
  'HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncache-control: no-store\r\ncontent-length: 82\r\nconnection: close\r\n\r\n{"error":"invalid_request","error_description":"The request cannot be processed."}';

describe("serve", () => {
  it("listens on an ephemeral port and resolves with the real base URL", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1" });
    try {
      expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const port = Number(new URL(running.url).port);
      expect(port).toBeGreaterThan(0);
      expect(running.server.listening).toBe(true);
      expect(await (await fetch(`${running.url}/`)).text()).toBe("hello");
    } finally {
      await running.close();
    }
  });

  it("binds loopback by default", async () => {
    const running = await serve(hello, { port: 0 });
    try {
      expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await running.close();
    }
  });

  it("reports a dialable URL when bound to the IPv4 wildcard", async () => {
    const running = await serve(hello, { port: 0, host: "0.0.0.0" });
    try {
      expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(await (await fetch(running.url)).text()).toBe("hello");
    } finally {
      await running.close();
    }
  });

  it("brackets an IPv6 address (skipped, saying so, where the machine has no IPv6 loopback)", async (context) => {
    let running;
    try {
      running = await serve(hello, { port: 0, host: "::1" });
    } catch {
      context.skip("IPv6 loopback unavailable");
      return;
    }
    try {
      expect(running.url).toMatch(/^http:\/\/\[::1\]:\d+$/);
      expect(await (await fetch(running.url)).text()).toBe("hello");
    } finally {
      await running.close();
    }
  });

  it("close() resolves promptly while a keep-alive connection is open", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1" });
    const agent = new Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
    try {
      const response = await fetch(running.url, { agent });
      expect(await response.text()).toBe("hello");
      const idle = Object.values(agent.freeSockets).flat();
      expect(idle).toHaveLength(1);
      const socketClosed = deferred();
      idle[0]!.once("close", () => socketClosed.resolve());

      const started = Date.now();
      await running.close();
      // Node's keepAliveTimeout is 5 s; without closing connections this waits.
      expect(Date.now() - started).toBeLessThan(1000);
      expect(running.server.listening).toBe(false);
      await socketClosed.promise;
    } finally {
      agent.destroy();
    }
  });

  it("close() cuts off a request still unanswered closeTimeout after it was called, and can be called twice", async () => {
    const entered = deferred();
    const running = await serve(
      {
        async fetch() {
          entered.resolve();
          return new Promise<Response>(() => {});
        },
      },
      { port: 0, host: "127.0.0.1", closeTimeout: 300 },
    );
    const socket = await open(running.url);
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await entered.promise;
    const response = readResponse(socket);
    await Promise.all([running.close(), running.close()]);
    await expect(response).rejects.toThrow(/connection closed/);
  });

  it("close() lets the answers in flight go out whole, each with Connection: close, then resolves; idle connections close at once (it cut them off unanswered)", async () => {
    const release = deferred();
    let entered = 0;
    const allEntered = deferred();
    const running = await serve(
      {
        async fetch(request) {
          if (++entered === 2) allEntered.resolve();
          await release.promise;
          return new Response(`answer to ${new URL(request.url).pathname}`, { headers: { "x-kept": "yes" } });
        },
      },
      { port: 0, host: "127.0.0.1" },
    );
    // Two requests in flight: a GET, and a POST whose body the app never read.
    const get = await open(running.url);
    get.write("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
    const post = await open(running.url);
    post.write("POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
    // And one idle keep-alive connection.
    const idle = await open(running.url);
    const idleClosed = new Promise<void>((resolve) => idle.once("close", () => resolve()));
    await allEntered.promise;
    const getAnswer = readResponse(get);
    const postAnswer = readResponse(post);
    // Awaited below; a rejection (the connection cut off) must not go unhandled meanwhile.
    getAnswer.catch(() => {});
    postAnswer.catch(() => {});
    const getClosed = new Promise<void>((resolve) => get.once("close", () => resolve()));
    let closed = false;
    const closing = running.close().then(() => {
      closed = true;
    });
    await idleClosed;
    // Nothing in flight is cut off meanwhile, and close() waits for it.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(closed).toBe(false);
    expect(running.server.listening).toBe(false);
    release.resolve();
    for (const [answer, path] of [[await getAnswer, "/a"], [await postAnswer, "/b"]] as const) {
      expect(answer.status).toBe(200);
      expect(answer.headers.filter(([name]) => name !== "date")).toEqual([
        ["content-type", "text/plain;charset=UTF-8"],
        ["x-kept", "yes"],
        ["connection", "close"],
        ["transfer-encoding", "chunked"],
      ]);
      expect(answer.body.toString()).toBe(`answer to ${path}`);
    }
    await getClosed;
    await closing;
    post.destroy();
  });

  it("close(): a request whose headers were still arriving is answered whole with Connection: close (it was cut off)", async () => {
    const running = await serve({ fetch: async (request) => new Response(`ok ${new URL(request.url).pathname}`) }, { port: 0, host: "127.0.0.1" });
    let serverSide: Socket | undefined;
    running.server.once("connection", (s: Socket) => (serverSide = s));
    const socket = await open(running.url);
    socket.write("GET /late HTTP/1.1\r\nHost: x\r\n");
    // The bytes so far have reached the server before close() is called (a connection that has
    // sent nothing is closed at once).
    for (let i = 0; i < 500 && !(serverSide !== undefined && serverSide.bytesRead > 0); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(serverSide?.bytesRead).toBeGreaterThan(0);
    const closing = running.close();
    const answer = readResponse(socket);
    answer.catch(() => {});
    const socketClosed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.write("\r\n");
    const response = await answer;
    expect(response.status).toBe(200);
    expect(response.headers.filter(([name]) => name !== "date")).toEqual([
      ["content-type", "text/plain;charset=UTF-8"],
      ["connection", "close"],
      ["transfer-encoding", "chunked"],
    ]);
    expect(response.body.toString()).toBe("ok /late");
    socket.resume();
    await socketClosed;
    await closing;
  });

  it("closeGracefully on a server with no checkContinue listener (a plain createServer, the Express example): an Expect: 100-continue request arriving during the close still gets its 100 and its answer (it went to nobody and was cut off)", async () => {
    const server = createHttpServer((req, res) => {
      let length = 0;
      req.on("data", (chunk: Buffer) => (length += chunk.length));
      req.on("end", () => res.end(`got ${length}`));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    let serverSide: Socket | undefined;
    server.once("connection", (s: Socket) => (serverSide = s));
    const { port } = server.address() as { port: number };
    const socket = await open(`http://127.0.0.1:${port}`);
    try {
      socket.write("POST /upload HTTP/1.1\r\nHost: x\r\n");
      for (let i = 0; i < 500 && !(serverSide !== undefined && serverSide.bytesRead > 0); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      const closing = closeGracefully(server, 5_000);
      let received = "";
      socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
      socket.write("Expect: 100-continue\r\nContent-Length: 5\r\n\r\n");
      for (let i = 0; i < 300 && !received.includes("100 Continue"); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(received).toBe("HTTP/1.1 100 Continue\r\n\r\n");
      const socketClosed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.write("hello");
      const started = Date.now();
      await closing;
      await socketClosed;
      expect(Date.now() - started).toBeLessThan(4_000);
      expect(received).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n(?:.*\r\n)*Connection: close\r\n(?:.*\r\n)*\r\n(?:[0-9a-f]+\r\n)?got 5/);
    } finally {
      socket.destroy();
    }
  });

  it("close(): a keep-alive connection whose answer went out before its upload had arrived closes once the upload ends (it stayed open, idle, until keepAliveTimeout or closeTimeout)", async () => {
    // As plantgate answers a request refused before its body (no token): the answer is out with
    // keep-alive, the rest of the upload is still to be read and dropped.
    const early = { fetch: async () => new Response("refused early", { status: 401 }) };
    const running = await serve(early, { port: 0, host: "127.0.0.1", closeTimeout: 8_000 });
    const socket = await open(running.url);
    try {
      const answer = readResponse(socket);
      socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n${"x".repeat(1_000)}`);
      const response = await answer;
      expect([response.status, Object.fromEntries(response.headers).connection, response.body.toString()]).toEqual([401, "keep-alive", "refused early"]);
      const socketClosed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.resume();
      const closing = running.close();
      await delay(200);
      socket.write("x".repeat(99_000));
      const ended = Date.now();
      await closing;
      await socketClosed;
      expect(Date.now() - ended).toBeLessThan(2_000);
    } finally {
      socket.destroy();
    }
  });

  it("closeGracefully on a plain createServer: a route of the host's that answered before reading its upload, the same (idle once the upload ends, closed then)", async () => {
    const server = createHttpServer((_req, res) => res.end("early"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const socket = await open(`http://127.0.0.1:${port}`);
    try {
      const answer = readResponse(socket);
      socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n${"x".repeat(1_000)}`);
      expect((await answer).status).toBe(200);
      const socketClosed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.resume();
      const closing = closeGracefully(server, 8_000);
      await delay(200);
      socket.write("x".repeat(99_000));
      const ended = Date.now();
      await closing;
      await socketClosed;
      expect(Date.now() - ended).toBeLessThan(2_000);
    } finally {
      socket.destroy();
    }
  });

  it("rejects when the port is taken", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = blocker.address() as { port: number };
      await expect(serve(hello, { port, host: "127.0.0.1" })).rejects.toMatchObject({ code: "EADDRINUSE" });
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it("rejects an invalid origin before listening", async () => {
    await expect(serve(hello, { port: 0, origin: "nope" })).rejects.toThrow(TypeError);
  });
});

describe("serve limits", () => {
  it("applies its documented defaults, tighter than Node's", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1" });
    try {
      const { server } = running;
      expect({
        headersTimeout: server.headersTimeout,
        requestTimeout: server.requestTimeout,
        keepAliveTimeout: server.keepAliveTimeout,
        maxConnections: server.maxConnections,
        socketTimeout: server.timeout,
      }).toEqual({ headersTimeout: 10_000, requestTimeout: 60_000, keepAliveTimeout: 5_000, maxConnections: 1_024, socketTimeout: 62_000 });
      expect(SERVE_DEFAULTS).toEqual({ headersTimeout: 10_000, requestTimeout: 60_000, keepAliveTimeout: 5_000, maxConnections: 1_024, socketTimeout: 62_000, closeTimeout: 10_000 });
    } finally {
      await running.close();
    }
  });

  it("a requestTimeout under the default headersTimeout lowers headersTimeout to it, as Node's own default does; both given the wrong way round is a TypeError naming them", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1", requestTimeout: 4_000 });
    try {
      expect({ headersTimeout: running.server.headersTimeout, requestTimeout: running.server.requestTimeout }).toEqual({ headersTimeout: 4_000, requestTimeout: 4_000 });
      expect((await fetch(running.url)).status).toBe(200);
    } finally {
      await running.close();
    }
    // requestTimeout 0 turns Node's whole-request timer off; headersTimeout keeps its default.
    const unbounded = await serve(hello, { port: 0, host: "127.0.0.1", requestTimeout: 0 });
    try {
      expect({ headersTimeout: unbounded.server.headersTimeout, requestTimeout: unbounded.server.requestTimeout }).toEqual({ headersTimeout: 10_000, requestTimeout: 0 });
    } finally {
      await unbounded.close();
    }
    await expect(serve(hello, { port: 0, host: "127.0.0.1", headersTimeout: 5_000, requestTimeout: 2_000 })).rejects.toThrow(
      new TypeError("headersTimeout (5000) must not be more than requestTimeout (2000)."),
    );
  });

  it("answers 408 and closes a connection whose headers do not arrive within headersTimeout", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1", headersTimeout: 400, requestTimeout: 1_000 });
    try {
      const socket = await open(running.url);
      const startedAt = Date.now();
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      const answer = readResponse(socket, { untilClose: true });
      socket.write("GET / HTTP/1.1\r\nhost: x\r\n");
      const response = await answer;
      await closed;
      expect(response.status).toBe(408);
      expect(response.body.toString()).toBe('{"error":"invalid_request","error_description":"The request did not arrive in time."}');
      expect(Date.now() - startedAt).toBeLessThan(3_000);
    } finally {
      await running.close();
    }
  });

  it("a request whose upload stalls right after it starts gets requestTimeout's 408 when socketTimeout is 2 s longer (the defaults' relation since 2026-12-03, 60 s and 62 s; at an equal socketTimeout, the defaults' until then, the socket's timer and Node's request-timeout check race, and the connection may be closed unanswered: not asserted, it is not deterministic)", async () => {
    const reading = { fetch: async (request: Request) => new Response(await request.text()) };
    const stalled = async (socketTimeout: number) => {
      const running = await serve(reading, { port: 0, host: "127.0.0.1", headersTimeout: 1_000, requestTimeout: 1_000, socketTimeout });
      try {
        const socket = await open(running.url);
        const whole = textUntilClose(socket);
        // The head and 11 of the 29 bytes the body declares, in one write, then nothing.
        socket.write("POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 29\r\n\r\ngrant_type=");
        return await whole;
      } finally {
        await running.close();
      }
    };
    const answered = await stalled(3_000);
    expect(answered.slice(0, answered.indexOf("\r\n"))).toBe("HTTP/1.1 408 Request Timeout");
    expect(answered.slice(answered.indexOf("\r\n\r\n") + 4)).toBe('{"error":"invalid_request","error_description":"The request did not arrive in time."}');
  });

  it("destroys a connection whose client sends requests and never reads the answers, after socketTimeout; others are served meanwhile", async () => {
    // A big answer, so the buffers fill and the writes stall; made once (building 50 x 1 MiB of
    // text in this process, the client's too, held the loop past socketTimeout: the other
    // connection below was closed before its request was read, now and then).
    const bytes = new Uint8Array(1 << 20).fill(0x78);
    const pipelined = 50;
    let requests = 0;
    const burstTakenIn = deferred();
    const big = { fetch: async () => (++requests === pipelined && burstTakenIn.resolve(), new Response(bytes)) };
    const running = await serve(big, { port: 0, host: "127.0.0.1", socketTimeout: 500, maxConnections: 2 });
    try {
      const connections = () => new Promise<number>((resolve, reject) => running.server.getConnections((error, n) => (error ? reject(error) : resolve(n))));
      const stalled = await open(running.url);
      // Never read: the answers fill the buffers and the server's writes stall.
      stalled.pause();
      stalled.on("error", () => {});
      const startedAt = Date.now();
      stalled.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n".repeat(pipelined));
      // The other connection opens once the server has taken in the whole burst. Opened at once, it
      // was accepted (its socketTimeout running) while this process, its client too, answered the 50
      // requests: on a loaded machine that took past 500 ms before the client could send its
      // request, and the server closed the connection as silent, rightly (ECONNRESET, now and then).
      await burstTakenIn.promise;
      const other = await open(running.url);
      const answer = readResponse(other, { untilClose: true });
      other.write("GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
      expect((await answer).status).toBe(200);
      // The server's side of the stalled connection is destroyed (the paused client does not notice):
      // between one and two socketTimeouts after its writes stall (Node's timer lets a write in
      // progress one more round), ~1 s here; the bound is for a loaded machine, not a measure.
      while ((await connections()) > 0 && Date.now() - startedAt < 10_000) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await connections()).toBe(0);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(400);
      stalled.destroy();
    } finally {
      await running.close();
    }
  }, 20_000);

  it("what never reaches the listener gets a JSON answer too: Node's parser refusals 400, oversized headers 431, CONNECT 400 (it was closed with no answer)", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1" });
    const malformed = '{"error":"invalid_request","error_description":"The request cannot be processed."}';
    try {
      for (const [label, raw, status, body] of [
        ["two Content-Length", "POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello", 400, malformed],
        ["Content-Length beside Transfer-Encoding", "POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n", 400, malformed],
        ["a bad chunk size", "POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400, malformed],
        ["a lower-case method", "get / HTTP/1.1\r\nhost: x\r\n\r\n", 400, malformed],
        ["headers past 16 KiB", `GET / HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`, 431, '{"error":"invalid_request","error_description":"The request headers are too large."}'],
        ["CONNECT", "CONNECT a:443 HTTP/1.1\r\nhost: a:443\r\n\r\n", 400, malformed],
      ] as const) {
        const socket = await open(running.url);
        const answer = readResponse(socket, { untilClose: true });
        socket.write(raw);
        const response = await answer;
        const headers = Object.fromEntries(response.headers);
        expect([label, response.status, headers["content-type"], headers.connection, response.body.toString()]).toEqual([label, status, "application/json", "close", body]);
        socket.destroy();
      }
      // RFC 9112 §3.2: more than one Host line is 400 (the listener's answer, as for TRACE): read as
      // neither, where a proxy in front may have read the other.
      const twoHosts = await rawExchange(running.url, "GET / HTTP/1.1\r\nhost: a.example\r\nhost: b.example\r\n\r\n");
      expect([twoHosts.status, twoHosts.body.toString()]).toEqual([400, malformed]);
    } finally {
      await running.close();
    }
  });

  it("a keep-alive connection's later request that Node refuses gets its JSON answer too (it was closed with none once an answer had gone out)", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1" });
    const malformed = '{"error":"invalid_request","error_description":"The request cannot be processed."}';
    try {
      for (const [label, raw, status, body] of [
        ["two Content-Length", "POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello", 400, malformed],
        ["a lower-case method", "get / HTTP/1.1\r\nhost: x\r\n\r\n", 400, malformed],
        ["headers past 16 KiB", `GET / HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`, 431, '{"error":"invalid_request","error_description":"The request headers are too large."}'],
      ] as const) {
        const socket = await open(running.url);
        const first = readResponse(socket);
        socket.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n");
        expect((await first).status).toBe(200);
        const answer = readResponse(socket, { untilClose: true });
        socket.write(raw);
        const response = await answer;
        const headers = Object.fromEntries(response.headers);
        expect([label, response.status, headers["content-type"], headers.connection, response.body.toString()]).toEqual([label, status, "application/json", "close", body]);
        socket.destroy();
      }
    } finally {
      await running.close();
    }
  });

  it("a refused HEAD gets the status and headers it would get as a GET, Content-Length included, and no body (RFC 9110 §9.3.2; the body went out too)", async () => {
    const { promise: held, resolve: release } = deferred();
    const app = { fetch: async (request: Request) => (new URL(request.url).pathname === "/held" && (await held), new Response("hello")) };
    const running = await serve(app, { port: 0, host: "127.0.0.1" });
    /** Everything the server sends on a fresh connection after `writes` (one write each, apart), until it closes. */
    const whole = async (writes: string[], readFirst = false): Promise<string> => {
      const socket = await open(running.url);
      if (readFirst) {
        const first = readResponse(socket);
        socket.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n");
        expect((await first).status).toBe(200);
      }
      const received: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => received.push(chunk));
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.resume();
      for (const data of writes) {
        socket.write(data);
        await delay(50);
      }
      await closed;
      return Buffer.concat(received).toString("latin1");
    };
    const answer = (status: string, length: number) =>
      `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncache-control: no-store\r\ncontent-length: ${length}\r\nconnection: close\r\n\r\n`;
    const malformed = '{"error":"invalid_request","error_description":"The request cannot be processed."}';
    try {
      // The head refused by Node's parser, read in one read with the failure.
      expect(await whole(["HEAD / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n"])).toBe(answer("400 Bad Request", 82));
      expect(await whole([`HEAD / HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`])).toBe(answer("431 Request Header Fields Too Large", 84));
      // A keep-alive connection's later request.
      expect(await whole(["HEAD / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n"], true)).toBe(answer("400 Bad Request", 82));
      // Its head read whole and handed to the app, which has not answered; its body fails in a later read.
      expect(await whole(["HEAD /held HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n", "zz\r\n"])).toBe(answer("400 Bad Request", 82));
      // The same as a GET keeps its body.
      expect(await whole(["GET / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n"])).toBe(answer("400 Bad Request", 82) + malformed);
      expect(await whole(["GET /held HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n", "zz\r\n"])).toBe(answer("400 Bad Request", 82) + malformed);
    } finally {
      release();
      await running.close();
    }
  });

  it("answers written through Node's response to a HEAD carry no body either: the app's failure 500, a bad Host 400, an unsupported expectation 417, a plain answer", async () => {
    const app = {
      handle: async (request: Request) => {
        if (new URL(request.url).pathname === "/throw") throw new Error("the app failed");
        return { status: 200, headers: { "content-type": "text/plain", "content-length": "5" }, body: new TextEncoder().encode("hello") };
      },
      fetch: async () => new Response(null),
    };
    const running = await serve(app, { port: 0, host: "127.0.0.1", onError: () => {} });
    try {
      for (const [raw, status, length] of [
        ["HEAD /throw HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n", 500, "90"],
        ["HEAD / HTTP/1.1\r\nhost: a b\r\nconnection: close\r\n\r\n", 400, "82"],
        ["HEAD / HTTP/1.1\r\nhost: x\r\nexpect: something-else\r\n\r\n", 417, "99"],
        ["HEAD / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n", 200, "5"],
      ] as const) {
        const socket = await open(running.url);
        const whole = textUntilClose(socket);
        socket.write(raw);
        const text = await whole;
        const end = text.indexOf("\r\n\r\n");
        const lengthLine = /\r\ncontent-length: (\d+)\r\n/i.exec(text)?.[1];
        expect([raw, Number(text.slice(9, 12)), lengthLine, end > 0 ? text.slice(end + 4) : text]).toEqual([raw, status, length, ""]);
      }
    } finally {
      await running.close();
    }
  });

  it("a refused request behind one whose answer is still to come: that answer arrives whole, then the refusal, then the connection closes (nothing written ahead of the answer; until 2026-12-01 no refusal came)", async () => {
    const { promise: held, resolve: release } = deferred();
    const slow = { fetch: async () => (await held, new Response("slow answer")) };
    const running = await serve(slow, { port: 0, host: "127.0.0.1" });
    try {
      const socket = await open(running.url);
      const whole = textUntilClose(socket);
      socket.write("GET / HTTP/1.1\r\nhost: x\r\n\r\nPOST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello");
      await new Promise((resolve) => setTimeout(resolve, 200));
      release();
      const text = await whole;
      // Node's own default would write its 400 first, as if it answered the GET.
      const refusal = text.indexOf("HTTP/1.1 400 ");
      expect(text.startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
      expect(text.slice(0, refusal).endsWith("\r\n\r\nb\r\nslow answer\r\n0\r\n\r\n")).toBe(true);
      expect(text.slice(refusal)).toBe(REFUSED_400);
    } finally {
      await running.close();
    }
  });

  it("a refused request behind several whose answers are still to come: every one of them arrives whole, in order, then the refusal, then the connection closes (the answers queued behind the first were lost)", async () => {
    // Each answer held until released, one after the other: when one is written out, the next is
    // still being made (the refusal's wait goes from answer to answer).
    const gates = new Map<string, () => void>();
    const held = new Map(["/a", "/b", "/c"].map((path) => [path, new Promise<void>((resolve) => gates.set(path, resolve))]));
    const slow = {
      fetch: async (request: Request) => {
        const path = new URL(request.url).pathname;
        await held.get(path);
        return new Response(`answer to ${path}`);
      },
    };
    const release = async () => {
      for (const path of ["/a", "/b", "/c"]) {
        gates.get(path)!();
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const running = await serve(slow, { port: 0, host: "127.0.0.1" });
    try {
      const socket = await open(running.url);
      const whole = textUntilClose(socket);
      socket.write("GET /a HTTP/1.1\r\nhost: x\r\n\r\nGET /b HTTP/1.1\r\nhost: x\r\n\r\nGET /c HTTP/1.1\r\nhost: x\r\n\r\nPOST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello");
      await new Promise((resolve) => setTimeout(resolve, 200));
      await release();
      const text = await whole;
      const answers = chunkedAnswers(text);
      expect(answers).toEqual([
        ["200", "answer to /a"],
        ["200", "answer to /b"],
        ["200", "answer to /c"],
      ]);
      expect(text.slice(text.indexOf("HTTP/1.1 400 "))).toBe(REFUSED_400);
      expect(text.match(/HTTP\/1\.1 /g)?.length).toBe(4);
    } finally {
      await running.close();
    }
  });

  it("a refused request behind an answer still to come, from a client that half-closes (FIN) once it has sent them: the answer, then the refusal, then the close (Node ended the connection after the answer, and the refusal was lost); none after an answer that said Connection: close", async () => {
    let release!: () => void;
    let held = new Promise<void>((resolve) => (release = resolve));
    const slow = { fetch: async (request: Request) => (await held, new Response("slow answer", new URL(request.url).pathname === "/close" ? { headers: { connection: "close" } } : {})) };
    const running = await serve(slow, { port: 0, host: "127.0.0.1" });
    try {
      for (const path of ["/", "/close"]) {
        held = new Promise<void>((resolve) => (release = resolve));
        const socket = await open(running.url);
        const whole = textUntilClose(socket);
        socket.end(`GET ${path} HTTP/1.1\r\nhost: x\r\n\r\nPOST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello`);
        await delay(200);
        release();
        const began = Date.now();
        const text = await whole;
        const refusal = text.indexOf("HTTP/1.1 400 ");
        const answer = refusal < 0 ? text : text.slice(0, refusal);
        expect([path, answer.startsWith("HTTP/1.1 200 OK\r\n"), answer.endsWith("\r\n\r\nb\r\nslow answer\r\n0\r\n\r\n")]).toEqual([path, true, true]);
        expect([path, refusal < 0 ? "" : text.slice(refusal)]).toEqual([path, path === "/close" ? "" : REFUSED_400]);
        // Closed once written, not at the 5 s bound of the drain.
        expect(Date.now() - began).toBeLessThan(2000);
      }
    } finally {
      await running.close();
    }
  });

  it("a refused request behind answers, from a client that half-closes, where an earlier answer went out before its upload was read (the upload linger's own socket end): the refusal still follows the answers (a second review found it lost)", async () => {
    const { promise: held, resolve: release } = deferred();
    // Answers without reading the body, as plantgate refuses a request with no token.
    const app = { fetch: async (request: Request) => (new URL(request.url).pathname === "/slow" ? (await held, new Response("slow")) : new Response(`ok ${new URL(request.url).pathname}`)) };
    const running = await serve(app, { port: 0, host: "127.0.0.1" });
    try {
      const socket = await open(running.url);
      const whole = textUntilClose(socket);
      socket.write("GET /slow HTTP/1.1\r\nhost: x\r\n\r\nPOST /a HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\n");
      await delay(150);
      socket.end("helloGET /d HTTP/1.1\r\nhost: x\r\n\r\nPOST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello");
      await delay(150);
      release();
      const text = await whole;
      const refusal = text.indexOf("HTTP/1.1 400 ");
      const answers = chunkedAnswers(text.slice(0, refusal < 0 ? undefined : refusal));
      expect(answers).toEqual([
        ["200", "slow"],
        ["200", "ok /a"],
        ["200", "ok /d"],
      ]);
      expect(refusal < 0 ? "" : text.slice(refusal)).toBe(REFUSED_400);
    } finally {
      await running.close();
    }
  });

  it("the refused upload's request, failed for its app: its 'aborted' listeners still read the socket (its address), and the app's answer goes out in its turn", async () => {
    const { promise: held, resolve: release } = deferred();
    const seen: unknown[] = [];
    const server = createHttpServer((request, response) => {
      if (request.url === "/slow") return void held.then(() => response.end("slow"));
      request.on("aborted", () => seen.push(request.socket.remoteAddress));
      request.on("error", () => {});
      request.on("close", () => response.end(`upload ${request.complete ? "complete" : "failed"}`));
      request.resume();
    });
    answerMalformedRequests(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as { port: number };
      const { text } = await slowThenBadChunk(`http://127.0.0.1:${port}`, release, 150);
      // Node's own answers (res.end with the whole body: Content-Length), one after the other.
      const answers = text.split(/(?=HTTP\/1\.1 \d{3} )/).map((answer) => [answer.slice(9, 12), answer.slice(answer.indexOf("\r\n\r\n") + 4)]);
      expect([seen, answers, text.match(/HTTP\/1\.1 /g)?.length]).toEqual([
        ["127.0.0.1"],
        [
          ["200", "slow"],
          ["200", "upload failed"],
        ],
        2,
      ]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("a request pipelined behind an answer still to come, handed to the app, whose body then fails (a FIN mid-body): both answers arrive, in order, and no refusal after them (one answer a request)", async () => {
    const { promise: held, resolve: release } = deferred();
    // The second answer is made without its body, as plantgate refuses a request with no token.
    const app = { fetch: async (request: Request) => (new URL(request.url).pathname === "/slow" ? (await held, new Response("slow answer")) : new Response("refused early", { status: 401 })) };
    const running = await serve(app, { port: 0, host: "127.0.0.1" });
    try {
      const socket = await open(running.url);
      const whole = textUntilClose(socket);
      socket.write("GET /slow HTTP/1.1\r\nhost: x\r\n\r\nPOST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhe");
      await delay(100);
      socket.end();
      await delay(100);
      release();
      const text = await whole;
      const answers = chunkedAnswers(text);
      expect(answers).toEqual([
        ["200", "slow answer"],
        ["401", "refused early"],
      ]);
      expect(text.match(/HTTP\/1\.1 /g)?.length).toBe(2);
    } finally {
      await running.close();
    }
  });

  it("a request pipelined behind an answer still to come, handed to the app, whose chunked upload Node's parser then refuses (a bad chunk size): the app's read of it fails, whether it reads at once or later, through request.text() or info.readBody, and both answers arrive in order (Node left the body unended: the app waited until the socket timeout, the connection with it)", async () => {
    for (const [via, wait] of [["text", 0], ["text", 50], ["readBody", 0], ["readBody", 50]] as const) {
      const { promise: held, resolve: release } = deferred();
      const app: FetchApp = {
        fetch: async (request, info) => {
          if (new URL(request.url).pathname === "/slow") return (await held, new Response("slow answer"));
          if (wait > 0) await delay(wait);
          try {
            const body = via === "text" ? await request.text() : await info!.readBody!(1000);
            return new Response(`read ${body?.length ?? "nothing"}`);
          } catch (error) {
            return new Response(`read failed: ${(error as Error).name}`, { status: 400 });
          }
        },
      };
      const running = await serve(app, { port: 0, host: "127.0.0.1" });
      try {
        const { text, releasedAt: began } = await slowThenBadChunk(running.url, release, 200);
        const answers = chunkedAnswers(text);
        expect([via, wait, answers, text.match(/HTTP\/1\.1 /g)?.length]).toEqual([
          via,
          wait,
          [
            ["200", "slow answer"],
            ["400", "read failed: AbortError"],
          ],
          2,
        ]);
        expect(Date.now() - began).toBeLessThan(2000);
      } finally {
        await running.close();
      }
    }
  });

  it("the app lets the refused upload's read failure through (a FetchApp that does not catch it): its request gets the 400 of its bad input in its turn, not a 500 (the client is still there), and nothing is reported", async () => {
    const { promise: held, resolve: release } = deferred();
    const reported: unknown[] = [];
    const app: FetchApp = {
      fetch: async (request) => (new URL(request.url).pathname === "/slow" ? (await held, new Response("slow answer")) : new Response(await request.text())),
    };
    const running = await serve(app, { port: 0, host: "127.0.0.1", onError: (error) => void reported.push(error) });
    try {
      const text = (await slowThenBadChunk(running.url, release, 150)).text.replace(/\r\nDate: [^\r]*/gi, "");
      const answers = text.split(/(?=HTTP\/1\.1 \d{3} )/);
      expect([answers.length, answers[0]!.startsWith("HTTP/1.1 200 OK\r\n"), answers[0]!.endsWith("\r\n\r\nb\r\nslow answer\r\n0\r\n\r\n")]).toEqual([2, true, true]);
      expect(answers[1]).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(answers[1]!.slice(answers[1]!.indexOf("\r\n\r\n") + 4)).toBe('{"error":"invalid_request","error_description":"The request cannot be processed."}');
      expect(reported).toEqual([]);
    } finally {
      await running.close();
    }
  });

  it("a refused request behind one whose answer is still to come: what the client goes on sending adds no listener per chunk (one 'error' listener was added for each, a MaxListenersExceededWarning past 10)", async () => {
    const { promise: held, resolve: release } = deferred();
    const slow = { fetch: async () => (await held, new Response("slow answer")) };
    const running = await serve(slow, { port: 0, host: "127.0.0.1" });
    const accepted = new Promise<Socket>((resolve) => running.server.once("connection", resolve));
    try {
      const socket = await open(running.url);
      const serverSocket = await accepted;
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.resume();
      socket.write("GET / HTTP/1.1\r\nhost: x\r\n\r\nPOST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello");
      await delay(100);
      const afterRefusal = serverSocket.listenerCount("error");
      // Node's parser fails again on each later chunk, and each failure is another 'clientError'.
      for (let i = 0; i < 30; i++) {
        socket.write("more bytes\r\n");
        await delay(10);
      }
      await delay(100);
      const afterMore = serverSocket.listenerCount("error");
      release();
      // The answer goes out, then the connection closes once the client ends its side.
      socket.end();
      await closed;
      expect([afterRefusal, afterMore]).toEqual([2, 2]);
    } finally {
      await running.close();
    }
  });

  it("a request answered before its body arrived whole is not answered again when the body then fails (a FIN mid-body, or requestTimeout): one answer, then the close", async () => {
    // The app answers without reading the body, as plantgate does for a request refused before it
    // (no token, a declared size over the limit). Until 2026-11-30 the parser's failure at the FIN
    // (or Node's request timeout) was answered too: a 400 (or 408) after the 401, for one request.
    const early = { fetch: async () => new Response("refused early", { status: 401 }) };
    const running = await serve(early, { port: 0, host: "127.0.0.1", headersTimeout: 300, requestTimeout: 600 });
    try {
      for (const ending of ["a FIN mid-body", "the request timeout"] as const) {
        const socket = await open(running.url);
        const whole = textUntilClose(socket);
        socket.write("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhe");
        if (ending === "a FIN mid-body") {
          await new Promise((resolve) => setTimeout(resolve, 100));
          socket.end();
        }
        const text = await whole;
        expect([ending, text.startsWith("HTTP/1.1 401 Unauthorized\r\n"), text.endsWith("\r\n\r\nd\r\nrefused early\r\n0\r\n\r\n"), text.match(/HTTP\/1\.1 /g)?.length]).toEqual([ending, true, true, 1]);
      }
    } finally {
      await running.close();
    }
  });

  it("a refused request whose client writes its whole body (2 MB) before reading gets the 400, every time, not a reset (server in a process of its own)", async () => {
    // In the test's own process the client reads between the server's steps and the reset never
    // meets an unread answer; a server of its own got the 400 to 1 of 20 such clients before 2026-11-29.
    const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./fixtures/serve-hello.ts", import.meta.url))], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout!.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes("\n")) resolve(out.trim());
        });
        child.once("exit", (code) => reject(new Error(`the server exited (${code})`)));
      });
      for (let attempt = 0; attempt < 10; attempt++) {
        const socket = await open(url);
        // As curl does: the whole body written before the answer is read.
        socket.pause();
        socket.on("error", () => {});
        socket.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2000000\r\ncontent-length: 2000001\r\n\r\n`);
        const written = await new Promise<Error | null | undefined>((resolve) => socket.write(Buffer.alloc(2_000_000, 0x61), resolve));
        expect([attempt, written ?? null]).toEqual([attempt, null]);
        const response = await readResponse(socket, { untilClose: true });
        expect([attempt, response.status, response.body.toString()]).toEqual([attempt, 400, '{"error":"invalid_request","error_description":"The request cannot be processed."}']);
        socket.destroy();
      }
    } finally {
      child.kill();
    }
  }, 30_000);

  it("Expect: 100-continue: the 100 goes out only once the body is read; an answer decided without the body comes instead, and the connection closes", async () => {
    // Reads the body only when asked to (x-read), answers 401 otherwise, as plantgate does without a token.
    const app: FetchApp = {
      fetch: async (request) => (request.headers.get("x-read") === "1" ? new Response(`read ${(await request.arrayBuffer()).byteLength}`) : new Response("no", { status: 401 })),
    };
    const running = await serve(app, { port: 0, host: "127.0.0.1" });
    try {
      // Refused without the body: no 100 before the 401; the client never sends its 50 MB.
      const refused = await open(running.url);
      const received: Buffer[] = [];
      refused.on("data", (chunk: Buffer) => received.push(chunk));
      const closed = new Promise<void>((resolve) => refused.once("close", () => resolve()));
      refused.write("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 50000000\r\nexpect: 100-continue\r\n\r\n");
      await new Promise((resolve) => setTimeout(resolve, 300));
      const head = Buffer.concat(received).toString("latin1");
      expect(head.startsWith("HTTP/1.1 401 Unauthorized\r\n")).toBe(true);
      expect(head).not.toContain("100 Continue");
      expect(head.toLowerCase()).toContain("connection: close\r\n");
      // The client gives up its upload: the server closes once it has its end.
      refused.end();
      await closed;

      // Read: the 100 comes, then the body is sent and the answer follows.
      const reading = await open(running.url);
      const continued = new Promise<string>((resolve) => reading.once("data", (chunk: Buffer) => resolve(chunk.toString("latin1"))));
      reading.write("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nexpect: 100-continue\r\nx-read: 1\r\n\r\n");
      expect(await continued).toBe("HTTP/1.1 100 Continue\r\n\r\n");
      const answer = readResponse(reading);
      reading.write("hello");
      const response = await answer;
      expect([response.status, response.body.toString()]).toEqual([200, "read 5"]);
      reading.destroy();
    } finally {
      await running.close();
    }
  });

  it("a request asking for a protocol upgrade (Connection: upgrade), served as HTTP/1.1: its answer says Connection: close and the connection closes after it (Node dropped a request pipelined behind it unanswered, kept the connection, and the next answer went to the wrong request)", async () => {
    const app: FetchApp = { fetch: async (request) => new Response(`answer to ${new URL(request.url).pathname}`) };
    const running = await serve(app, { port: 0, host: "127.0.0.1" });
    try {
      for (const [label, first] of [
        ["websocket", "GET /first HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n"],
        ["h2c (curl --http2)", "GET /first HTTP/1.1\r\nhost: x\r\nconnection: keep-alive, Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"],
        ["with a body", "POST /first HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: foo\r\ncontent-length: 3\r\n\r\nabc"],
      ] as const) {
        const socket = await open(running.url);
        const received: Buffer[] = [];
        socket.on("data", (chunk: Buffer) => received.push(chunk));
        const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
        socket.write(`${first}GET /second HTTP/1.1\r\nhost: x\r\n\r\n`);
        await Promise.race([closed, delay(1_000)]);
        socket.destroy();
        const text = Buffer.concat(received).toString("latin1");
        expect([label, text.match(/HTTP\/1\.1 /g)?.length, /\r\nConnection: close\r\n/.test(text), text.endsWith("answer to /first\r\n0\r\n\r\n")]).toEqual([label, 1, true, true]);
      }
      // Without Connection: upgrade there is no upgrade, and the pipelined request is answered.
      const plain = await open(running.url);
      const first = readResponse(plain);
      plain.write("GET /first HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\n\r\nGET /second HTTP/1.1\r\nhost: x\r\n\r\n");
      expect([(await first).body.toString(), Object.fromEntries((await first).headers).connection, (await readResponse(plain)).body.toString()]).toEqual(["answer to /first", "keep-alive", "answer to /second"]);
      plain.destroy();
    } finally {
      await running.close();
    }
  });

  it("serve()'s server has one 'request' and one 'checkContinue' listener: the upgrade check runs inside plantgate's own (a second 'request' listener made Node's emit copy its listener array on every request)", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1" });
    try {
      expect([running.server.listenerCount("request"), running.server.listenerCount("checkContinue")]).toEqual([1, 1]);
      // The check still holds behind Expect: 100-continue (serve() answers it itself).
      const socket = await open(running.url);
      const received: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => received.push(chunk));
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.write("POST /first HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\nconnection: upgrade\r\nupgrade: foo\r\ncontent-length: 3\r\n\r\nabc");
      await Promise.race([closed, delay(1_000)]);
      socket.destroy();
      const text = Buffer.concat(received).toString("latin1");
      expect([/\r\nConnection: close\r\n/.test(text), text.endsWith("hello\r\n0\r\n\r\n") || text.endsWith("hello")]).toEqual([true, true]);
    } finally {
      await running.close();
    }
  });

  it("closeGracefully on a host that upgrades connections (a WebSocket server beside the app): a connection upgraded before the call is ended at the deadline too, and close resolves (Node drops upgraded sockets from its list: close waited for the WebSocket to end)", async () => {
    const server = createHttpServer((_req, res) => res.end("ok"));
    answerMalformedRequests(server);
    server.on("upgrade", (_req, socket: Socket) => {
      socket.on("error", () => {});
      socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const socket = await open(`http://127.0.0.1:${port}`);
    try {
      const switched = new Promise<string>((resolve) => socket.once("data", (chunk: Buffer) => resolve(chunk.toString("latin1"))));
      socket.write("GET /ws HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n");
      expect(await switched).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
      const socketClosed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      const started = Date.now();
      const outcome = await Promise.race([closeGracefully(server, 300).then(() => "closed"), delay(3_000).then(() => "still open after 3000 ms")]);
      expect(outcome).toBe("closed");
      await socketClosed;
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    } finally {
      socket.destroy();
      server.closeAllConnections();
    }
  });

  it("an expectation other than 100-continue: 417 in plantgate's shape, and the connection closes", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1" });
    try {
      const response = await rawExchange(running.url, "POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\nexpect: something-else\r\n\r\nhello", { untilClose: true });
      const headers = Object.fromEntries(response.headers);
      expect([response.status, headers["content-type"], headers.connection, response.body.toString()]).toEqual([
        417,
        "application/json",
        "close",
        '{"error":"invalid_request","error_description":"The Expect header\'s expectation is not supported."}',
      ]);
    } finally {
      await running.close();
    }
  });

  it("a second Host line after 2000 other header lines is still seen: 400 (Node kept the first 2000 lines and dropped the rest)", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1" });
    try {
      const filler = "a:\r\n".repeat(2000);
      const twoHosts = await rawExchange(running.url, `GET / HTTP/1.1\r\nhost: a.example\r\n${filler}host: b.example\r\n\r\n`);
      expect([twoHosts.status, twoHosts.body.toString()]).toEqual([400, '{"error":"invalid_request","error_description":"The request cannot be processed."}']);
      const oneHost = await rawExchange(running.url, `GET / HTTP/1.1\r\nhost: a.example\r\n${filler}\r\n`);
      expect([oneHost.status, oneHost.body.toString()]).toEqual([200, "hello"]);
    } finally {
      await running.close();
    }
  });

  it("RFC 9112 §6.1: a transfer coding other than chunked (Node's parser takes `gzip, chunked`) is 501, its body not read as the body; chunked alone is read", async () => {
    const echo: FetchApp = { fetch: async (request) => new Response(`got ${await request.text()}`) };
    const running = await serve(echo, { port: 0, host: "127.0.0.1" });
    try {
      for (const coding of ["gzip, chunked", "x-custom, chunked", "deflate,chunked"]) {
        const response = await rawExchange(running.url, `POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: ${coding}\r\nconnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n`);
        expect([coding, response.status, response.body.toString()]).toEqual([coding, 501, '{"error":"invalid_request","error_description":"The request\'s transfer coding is not supported."}']);
      }
      const chunked = await rawExchange(running.url, "POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: Chunked\r\nconnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
      expect([chunked.status, chunked.body.toString()]).toEqual([200, "got hello"]);
    } finally {
      await running.close();
    }
  });

  it("closes connections beyond maxConnections at once", async () => {
    const running = await serve(hello, { port: 0, host: "127.0.0.1", maxConnections: 1 });
    try {
      const first = await open(running.url);
      const firstAnswer = readResponse(first);
      first.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n");
      expect((await firstAnswer).status).toBe(200);
      const second = await open(running.url);
      const closed = new Promise<void>((resolve) => second.once("close", () => resolve()));
      second.on("error", () => {});
      second.write("GET / HTTP/1.1\r\nhost: x\r\n\r\n");
      await closed;
      first.destroy();
    } finally {
      await running.close();
    }
  });
});
