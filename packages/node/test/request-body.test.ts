import { Agent, createServer } from "node:http";
import fetch from "node-fetch";
import { describe, expect, it } from "vitest";
import { createRequestListener, type FetchApp } from "../src/index.js";
import { deferred, delay, open, readResponse, start } from "./support.js";

const TWO_MB = 2 * 1024 * 1024;

/** Reads the first chunk, cancels the rest (as a size cap does) and answers 400. */
function cappingApp(seen: { firstChunk?: number; cancelled?: boolean } = {}): FetchApp {
  return {
    async fetch(request) {
      if (request.method === "GET") return new Response("still here");
      const reader = request.body!.getReader();
      const first = await reader.read();
      seen.firstChunk = first.value?.byteLength;
      await reader.cancel();
      seen.cancelled = true;
      return new Response('{"error":"invalid_request","error_description":"Body too large."}', {
        status: 400,
        headers: { "content-type": "application/json" },
      });
    },
  };
}

describe("request body: app cancels early", () => {
  it("delivers the app's 400 to a node-fetch client uploading 2 MB, then keeps the connection", async () => {
    const seen: { firstChunk?: number; cancelled?: boolean } = {};
    const { url } = await start(cappingApp(seen));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const response = await fetch(`${url}/token`, {
        method: "POST",
        body: Buffer.alloc(TWO_MB, 0x61),
        agent,
      });
      expect(response.status).toBe(400);
      expect(await response.text()).toBe('{"error":"invalid_request","error_description":"Body too large."}');
      expect(seen.cancelled).toBe(true);
      expect(seen.firstChunk).toBeGreaterThan(0);
      expect(seen.firstChunk).toBeLessThan(TWO_MB);

      const next = await fetch(`${url}/`, { agent });
      expect(await next.text()).toBe("still here");
    } finally {
      agent.destroy();
    }
  });

  it("delivers the 400 with Connection: close as well", async () => {
    const { url } = await start(cappingApp());
    const response = await fetch(`${url}/token`, {
      method: "POST",
      body: Buffer.alloc(TWO_MB, 0x62),
      headers: { connection: "close" },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("connection")).toBe("close");
    expect(await response.text()).toBe('{"error":"invalid_request","error_description":"Body too large."}');
  });

  it("answers before the upload is complete, discards the rest and reuses the connection (raw socket)", async () => {
    const { url } = await start(cappingApp());
    const socket = await open(url);
    socket.write(`POST /token HTTP/1.1\r\nHost: x\r\nContent-Length: ${TWO_MB}\r\n\r\n`);
    socket.write(Buffer.alloc(64 * 1024, 0x63));
    // The response arrives while 1.9 MB are still unsent.
    const first = await readResponse(socket);
    expect(first.status).toBe(400);
    expect(first.body.toString()).toBe('{"error":"invalid_request","error_description":"Body too large."}');

    socket.write(Buffer.alloc(TWO_MB - 64 * 1024, 0x63));
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    const second = await readResponse(socket);
    expect(second.status).toBe(200);
    expect(second.body.toString()).toBe("still here");
    socket.destroy();
  });

  it("discards a half-read body once the response has finished, keeping keep-alive usable", async () => {
    const { url } = await start({
      async fetch(request) {
        if (request.method === "GET") return new Response("next");
        // Reads one chunk and returns without cancelling or reading the rest.
        const reader = request.body!.getReader();
        await reader.read();
        return new Response("partial read");
      },
    });
    const socket = await open(url);
    socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${TWO_MB}\r\n\r\n`);
    socket.write(Buffer.alloc(TWO_MB, 0x64));
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    const first = await readResponse(socket);
    expect(first.body.toString()).toBe("partial read");
    const second = await readResponse(socket);
    expect(second.body.toString()).toBe("next");
    socket.destroy();
  });

  it("lets Node drain a body the app never touched", async () => {
    const { url } = await start({
      async fetch(request) {
        return new Response(request.method);
      },
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const response = await fetch(url, { method: "POST", body: Buffer.alloc(TWO_MB), agent });
      expect(await response.text()).toBe("POST");
      expect(await (await fetch(url, { agent })).text()).toBe("GET");
    } finally {
      agent.destroy();
    }
  });
});

describe("request body: client aborts the upload", () => {
  it("errors the body stream and aborts the signal, and the server keeps serving", async () => {
    const outcome = deferred<{ error: unknown; aborted: boolean; reason: unknown; received: number }>();
    const { url } = await start({
      async fetch(request) {
        if (request.method === "GET") return new Response("alive");
        let received = 0;
        const reader = request.body!.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            received += value.byteLength;
          }
          outcome.resolve({ error: undefined, aborted: request.signal.aborted, reason: undefined, received });
        } catch (error) {
          outcome.resolve({ error, aborted: request.signal.aborted, reason: request.signal.reason, received });
          // What an app typically does next: rethrow. Nobody is left to answer,
          // and the listener must not report the client's own disconnect.
          throw error;
        }
        return new Response("unreachable");
      },
    });
    const socket = await open(url);
    socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${TWO_MB}\r\n\r\n`);
    socket.write(Buffer.alloc(100 * 1024));
    await delay(50);
    socket.destroy();

    const result = await outcome.promise;
    expect(result.error).toBeInstanceOf(DOMException);
    expect((result.error as DOMException).name).toBe("AbortError");
    expect(result.aborted).toBe(true);
    expect(result.reason).toBe(result.error);
    expect(result.received).toBeGreaterThan(0);
    expect(result.received).toBeLessThan(TWO_MB);

    const next = await fetch(url);
    expect(await next.text()).toBe("alive");
  });

  it("errors a body the app only starts reading after the client is gone", async () => {
    const clientGone = deferred();
    const outcome = deferred<unknown>();
    const { url } = await start({
      async fetch(request) {
        await clientGone.promise;
        await delay(50);
        try {
          await request.arrayBuffer();
          outcome.resolve("resolved");
        } catch (error) {
          outcome.resolve(error);
        }
        return new Response("late");
      },
    });
    const socket = await open(url);
    socket.write(`PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n`);
    socket.write(Buffer.alloc(10));
    await delay(50);
    socket.destroy();
    clientGone.resolve();

    const error = await outcome.promise;
    expect((error as DOMException).name).toBe("AbortError");
  });

  it("aborts the signal when the client resets the connection after the upload but before the response", async () => {
    const aborted = deferred<unknown>();
    const { url } = await start({
      async fetch(request) {
        await request.text();
        request.signal.addEventListener("abort", () => aborted.resolve(request.signal.reason));
        // Simulates slow work that a disconnect should be able to cancel.
        await new Promise((resolve) => request.signal.addEventListener("abort", resolve));
        return new Response("too late");
      },
    });
    const socket = await open(url);
    socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
    await delay(50);
    socket.resetAndDestroy();
    const reason = await aborted.promise;
    expect((reason as DOMException).name).toBe("AbortError");
  });

  it("answers a client that half-closes (FIN) after the upload: the signal is not aborted, the answer arrives, then the connection ends", async () => {
    // RFC 9112 §9.6: a half-closed connection does not mean the client lost interest in the answer.
    // Until 2026-11-30 the FIN aborted the request (Node's default) and the answer was never sent.
    const { url } = await start({
      async fetch(request) {
        const body = await request.text();
        await delay(100);
        return new Response(`${body}: aborted=${request.signal.aborted}`);
      },
    });
    const socket = await open(url);
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const response = readResponse(socket);
    socket.end("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
    const answer = await response;
    expect({ status: answer.status, body: answer.body.toString("utf8") }).toEqual({ status: 200, body: "hello: aborted=false" });
    await closed;
  });

  it("does not crash when a chunked upload is cut inside a chunk", async () => {
    const outcome = deferred<unknown>();
    const { url } = await start({
      async fetch(request) {
        if (request.method === "GET") return new Response("alive");
        try {
          await request.text();
        } catch (error) {
          outcome.resolve(error);
        }
        return new Response("x");
      },
    });
    const socket = await open(url);
    socket.write("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + "a".repeat(100));
    await delay(50);
    socket.destroy();
    expect((await outcome.promise as DOMException).name).toBe("AbortError");
    expect(await (await fetch(url)).text()).toBe("alive");
  });

  it("reports an abort that happened before toRequest was called", async () => {
    const outcome = deferred<{ aborted: boolean; error: unknown }>();
    const listener = createRequestListener({
      async fetch(request) {
        const aborted = request.signal.aborted;
        try {
          await request.arrayBuffer();
          outcome.resolve({ aborted, error: undefined });
        } catch (error) {
          outcome.resolve({ aborted, error });
        }
        return new Response("x");
      },
    });
    // Stand-in for slow async middleware: the client is gone before the
    // adapter sees the request.
    const server = createServer((req, res) => req.once("close", () => listener(req, res)));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as { port: number };
      const socket = await open(`http://127.0.0.1:${port}`);
      socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly part");
      await delay(50);
      socket.destroy();
      const result = await outcome.promise;
      expect(result.aborted).toBe(true);
      expect((result.error as DOMException).name).toBe("AbortError");
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
