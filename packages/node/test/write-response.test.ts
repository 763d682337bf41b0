import { createHash } from "node:crypto";
import { Agent } from "node:http";
import fetch from "node-fetch";
import { describe, expect, it } from "vitest";
import { writeResponse } from "../src/index.js";
import { deferred, delay, listenPlain, open, rawExchange, readResponse, start } from "./support.js";

describe("writeResponse", () => {
  it("writes status, status text, headers and body", async () => {
    const { url } = await start({
      async fetch() {
        return new Response("short and stout", {
          status: 418,
          statusText: "I'm A Teapot",
          headers: { "content-type": "text/plain; charset=utf-8", "x-custom": "1" },
        });
      },
    });
    const raw = await rawExchange(url, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(raw.status).toBe(418);
    expect(raw.statusText).toBe("I'm A Teapot");
    expect(raw.headers).toContainEqual(["content-type", "text/plain; charset=utf-8"]);
    expect(raw.headers).toContainEqual(["x-custom", "1"]);
    expect(raw.body.toString()).toBe("short and stout");

    const response = await fetch(url);
    expect(response.status).toBe(418);
    expect(response.statusText).toBe("I'm A Teapot");
    expect(await response.text()).toBe("short and stout");
  });

  it("adds the answer's Vary to one a host middleware set before (a cors() in front), plain answer and Response alike, instead of replacing it", async () => {
    const url = await listenPlain((req, res) => {
      res.setHeader("vary", "Origin");
      res.setHeader("access-control-allow-origin", "https://app.example");
      if (req.url === "/plain") writeResponse({ status: 200, headers: { "cache-control": "private, max-age=300", vary: "Host" }, body: new TextEncoder().encode("{}") }, res);
      else if (req.url === "/same") writeResponse({ status: 200, headers: { vary: "origin, Host" }, body: null }, res);
      else if (req.url === "/star") writeResponse({ status: 200, headers: { vary: "*" }, body: null }, res);
      else void writeResponse(new Response("{}", { headers: { vary: "Host" } }), res);
    });
    const get = async (path: string) => (await rawExchange(url, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).headers.filter(([name]) => name === "vary" || name === "access-control-allow-origin");
    expect(await get("/plain")).toEqual([["vary", "Origin, Host"], ["access-control-allow-origin", "https://app.example"]]);
    expect(await get("/response")).toEqual([["vary", "Origin, Host"], ["access-control-allow-origin", "https://app.example"]]);
    // A field named twice is named once; `*` stands for every field (RFC 9110 §12.5.5).
    expect(await get("/same")).toEqual([["vary", "Origin, Host"], ["access-control-allow-origin", "https://app.example"]]);
    expect(await get("/star")).toEqual([["vary", "*"], ["access-control-allow-origin", "https://app.example"]]);
  });

  it("sends each Set-Cookie as its own header line", async () => {
    const { url } = await start({
      async fetch() {
        const headers = new Headers();
        headers.append("set-cookie", "a=1; Path=/; HttpOnly");
        headers.append("set-cookie", "b=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT");
        headers.append("x-list", "one");
        headers.append("x-list", "two");
        return new Response(null, { status: 204, headers });
      },
    });
    const raw = await rawExchange(url, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(raw.status).toBe(204);
    expect(raw.headers.filter(([name]) => name === "set-cookie")).toEqual([
      ["set-cookie", "a=1; Path=/; HttpOnly"],
      ["set-cookie", "b=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT"],
    ]);
    expect(raw.headers).toContainEqual(["x-list", "one, two"]);

    const response = await fetch(url);
    expect(response.headers.raw()["set-cookie"]).toEqual([
      "a=1; Path=/; HttpOnly",
      "b=2; Expires=Wed, 21 Oct 2037 07:28:00 GMT",
    ]);
  });

  it("streams the body as it is produced", async () => {
    const clientSawFirst = deferred();
    const { url } = await start({
      async fetch() {
        const encoder = new TextEncoder();
        return new Response(
          new ReadableStream({
            async start(controller) {
              controller.enqueue(encoder.encode("first;"));
              // Only continues once the client has received the first chunk,
              // which cannot happen if the adapter buffered the whole body.
              await clientSawFirst.promise;
              controller.enqueue(encoder.encode("second"));
              controller.close();
            },
          }),
        );
      },
    });
    const response = await fetch(url);
    const received: string[] = [];
    for await (const chunk of response.body!) {
      received.push(Buffer.from(chunk as Uint8Array).toString());
      if (received.length === 1) clientSawFirst.resolve();
    }
    expect(received.join("")).toBe("first;second");
    expect(received[0]).toBe("first;");
  });

  it("streams a large body byte-exact", async () => {
    const chunkCount = 256;
    const chunkSize = 64 * 1024;
    const expectedHash = createHash("sha256");
    for (let i = 0; i < chunkCount; i++) expectedHash.update(Buffer.alloc(chunkSize, i % 251));
    const { url } = await start({
      async fetch() {
        let i = 0;
        return new Response(
          new ReadableStream({
            pull(controller) {
              if (i === chunkCount) controller.close();
              else controller.enqueue(new Uint8Array(chunkSize).fill(i++ % 251));
            },
          }),
          { headers: { "content-type": "application/octet-stream" } },
        );
      },
    });
    const response = await fetch(url);
    const hash = createHash("sha256");
    let length = 0;
    for await (const chunk of response.body!) {
      hash.update(chunk as Uint8Array);
      length += (chunk as Uint8Array).byteLength;
    }
    expect(length).toBe(chunkCount * chunkSize);
    expect(hash.digest("hex")).toBe(expectedHash.digest("hex"));
  });

  it("applies backpressure: a client that stops reading stops the producer", async () => {
    let produced = 0;
    const cancelled = deferred<unknown>();
    const { url } = await start({
      async fetch() {
        return new Response(
          new ReadableStream({
            async pull(controller) {
              // Bounded, and yielding to the event loop, so a broken adapter
              // fails the assertions below instead of exhausting memory.
              if (produced >= 128 * 1024 * 1024) return controller.close();
              await new Promise((resolve) => setImmediate(resolve));
              produced += 64 * 1024;
              controller.enqueue(new Uint8Array(64 * 1024));
            },
            cancel(reason) {
              cancelled.resolve(reason);
            },
          }),
        );
      },
    });
    const socket = await open(url);
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    socket.once("data", () => socket.pause());
    await delay(300);
    const plateau = produced;
    await delay(300);
    // Kernel and stream buffers hold a few MB at most; an adapter ignoring
    // write()'s return value would have produced hundreds of MB by now.
    expect(produced).toBe(plateau);
    expect(produced).toBeLessThan(32 * 1024 * 1024);
    socket.destroy();
    await cancelled.promise;
  }, 15_000);

  it("sends no body for HEAD and cancels the app's body", async () => {
    const cancelled = deferred();
    const { url } = await start({
      async fetch() {
        return new Response(
          new ReadableStream({
            pull(controller) {
              controller.enqueue(new TextEncoder().encode("body that must not be sent"));
            },
            cancel() {
              cancelled.resolve();
            },
          }),
          { headers: { "content-type": "text/plain", "content-length": "26" } },
        );
      },
    });
    const socket = await open(url);
    socket.write("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n");
    const head = await readResponse(socket, { head: true });
    expect(head.status).toBe(200);
    expect(head.headers).toContainEqual(["content-length", "26"]);
    expect(head.body.length).toBe(0);
    await cancelled.promise;
    // Had any body bytes been written they would precede this response.
    socket.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    const next = await readResponse(socket, { head: true });
    expect(next.status).toBe(200);
    socket.destroy();

    const response = await fetch(url, { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain");
    expect(await response.text()).toBe("");
  });

  it("sends an empty body for a null-body response", async () => {
    const { url } = await start({ fetch: async () => new Response(null, { status: 201 }) });
    const raw = await rawExchange(url, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    expect(raw.status).toBe(201);
    expect(raw.headers).toContainEqual(["content-length", "0"]);
    expect(raw.body.length).toBe(0);
  });

  it("cancels the body when the client disconnects mid-stream and keeps serving", async () => {
    const cancelled = deferred<unknown>();
    const { url } = await start({
      async fetch(request) {
        if (new URL(request.url).pathname === "/ok") return new Response("ok");
        return new Response(
          new ReadableStream({
            async pull(controller) {
              await delay(5);
              controller.enqueue(new TextEncoder().encode("tick\n"));
            },
            cancel(reason) {
              cancelled.resolve(reason);
            },
          }),
        );
      },
    });
    const abort = new AbortController();
    const response = await fetch(`${url}/stream`, { signal: abort.signal });
    const iterator = response.body![Symbol.asyncIterator]();
    await iterator.next();
    abort.abort();
    await cancelled.promise;

    const next = await fetch(`${url}/ok`);
    expect(await next.text()).toBe("ok");
  });

  it("a pipelined request whose answer waits behind another's: when the client goes, its signal aborts and its body is cancelled too (they never were, and its writer waited for good)", async () => {
    const seen: string[] = [];
    const both = deferred();
    const endless = (name: string): Response =>
      new Response(
        new ReadableStream<Uint8Array>(
          {
            pull(controller) {
              controller.enqueue(new Uint8Array(65_536));
            },
            cancel() {
              seen.push(`${name} cancelled`);
            },
          },
          { highWaterMark: 0 },
        ),
      );
    const { url } = await start({
      async fetch(request) {
        const name = new URL(request.url).pathname;
        request.signal.addEventListener("abort", () => seen.push(`${name} aborted`));
        if (name === "/second") both.resolve();
        return endless(name);
      },
    });
    const socket = await open(url);
    // Never read: the first answer fills the buffers, the second waits behind it with no socket.
    socket.pause();
    socket.write("GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n");
    await both.promise;
    await delay(200);
    socket.resetAndDestroy();
    await delay(500);
    expect(seen.sort()).toEqual(["/first aborted", "/first cancelled", "/second aborted", "/second cancelled"]);
  });

  it("a pipelined request answered after the client went: its body is cancelled at once, nothing waits", async () => {
    const seen: string[] = [];
    const gone = deferred();
    const { url } = await start({
      async fetch(request) {
        const name = new URL(request.url).pathname;
        if (name === "/first") return new Response(new ReadableStream({ pull: (controller) => controller.enqueue(new Uint8Array(65_536)) }, { highWaterMark: 0 }));
        await gone.promise;
        return new Response(new ReadableStream({ pull: () => void seen.push("pulled"), cancel: () => void seen.push("cancelled") }, { highWaterMark: 0 }));
      },
    });
    const socket = await open(url);
    socket.pause();
    socket.write("GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n");
    await delay(200);
    socket.resetAndDestroy();
    await delay(100);
    gone.resolve();
    await delay(200);
    expect(seen).toEqual(["cancelled"]);
  });

  it("destroys the connection when the app's body errors mid-stream, and reports it", async () => {
    const errors: unknown[] = [];
    const { url } = await start(
      {
        async fetch() {
          return new Response(
            new ReadableStream({
              start(controller) {
                controller.enqueue(new TextEncoder().encode("partial"));
                setTimeout(() => controller.error(new Error("producer broke")), 20);
              },
            }),
          );
        },
      },
      { onError: (error) => errors.push(error) },
    );
    const socket = await open(url);
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    // A truncated chunked body (no terminating chunk) followed by a close:
    // the client can tell the response is incomplete.
    await expect(readResponse(socket)).rejects.toThrow(/connection closed/);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe("producer broke");
  });

  it("keeps keep-alive connections reusable across responses", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const ports = new Set<number>();
    const { url } = await start({
      async fetch(request) {
        return new Response(new URL(request.url).search);
      },
    });
    try {
      for (let i = 0; i < 3; i++) {
        const response = await fetch(`${url}/?n=${i}`, { agent });
        expect(await response.text()).toBe(`?n=${i}`);
      }
      for (const sockets of Object.values(agent.freeSockets)) {
        for (const socket of sockets ?? []) ports.add(socket.localPort ?? -1);
      }
      expect(ports.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });
});
