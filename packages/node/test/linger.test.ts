/**
 * The lingering close: an answer written before the upload was read reaches the client, a
 * keep-alive connection serves its next request afterwards, and an upload past the discard bounds
 * is cut off.
 */
import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import type { FetchApp } from "../src/index.js";
import { open, readResponse, start } from "./support.js";

/** Refuses any upload without reading it; answers GET with "ok". */
const refuser: FetchApp = {
  fetch: async (request) =>
    request.method === "GET"
      ? new Response("ok", { headers: { "content-type": "text/plain" } })
      : new Response('{"error":"too_large"}', { status: 413, headers: { "content-type": "application/json" } }),
};

function head(method: string, length: number, connection: "close" | "keep-alive"): string {
  return `${method} /upload HTTP/1.1\r\nhost: x\r\ncontent-length: ${length}\r\nconnection: ${connection}\r\n\r\n`;
}

function write(socket: Socket, data: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve())));
}

function closed(socket: Socket): Promise<{ hadError: boolean; at: number }> {
  return new Promise((resolve) => socket.once("close", (hadError) => resolve({ hadError, at: Date.now() })));
}

const answer413 = (r: { status: number; body: Buffer }) => ({ status: r.status, body: r.body.toString() });

describe("lingering close", () => {
  it("a keep-alive connection serves the next request after an unread 3 MB upload", async () => {
    const { url } = await start(refuser);
    const socket = await open(url);
    try {
      socket.on("error", () => {});
      // The whole upload first, the answer read only afterwards.
      const body = Buffer.alloc(3 * 1024 * 1024, 0x61);
      await write(socket, Buffer.concat([Buffer.from(head("POST", body.byteLength, "keep-alive")), body]));
      expect(answer413(await readResponse(socket))).toEqual({ status: 413, body: '{"error":"too_large"}' });
      const next = readResponse(socket);
      await write(socket, "GET /again HTTP/1.1\r\nhost: x\r\n\r\n");
      const second = await next;
      expect({ status: second.status, body: second.body.toString() }).toEqual({ status: 200, body: "ok" });
    } finally {
      socket.destroy();
    }
  });

  it("with Connection: close, a 10 MB upload written before reading gets the answer, then a clean close", async () => {
    const { url } = await start(refuser);
    for (let i = 0; i < 5; i++) {
      const socket = await open(url);
      const errors: Error[] = [];
      socket.on("error", (error) => errors.push(error));
      socket.pause();
      const body = Buffer.alloc(10 * 1024 * 1024, 0x62);
      await write(socket, Buffer.concat([Buffer.from(head("POST", body.byteLength, "close")), body]));
      const ended = closed(socket);
      expect(answer413(await readResponse(socket))).toEqual({ status: 413, body: '{"error":"too_large"}' });
      socket.resume();
      expect((await ended).hadError).toBe(false);
      expect(errors).toEqual([]);
    }
  });

  it("cuts off an upload that goes on past uploadDiscardBytes", async () => {
    const { url } = await start(refuser, { uploadDiscardBytes: 256 * 1024 });
    const socket = await open(url);
    socket.on("error", () => {});
    const ended = closed(socket);
    // Chunked: no declared length, so the answer keeps the connection (one declared past the bound
    // is told connection: close, and the client stops by itself; see the next test).
    await write(socket, "POST /upload HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n");
    expect(answer413(await readResponse(socket))).toEqual({ status: 413, body: '{"error":"too_large"}' });
    socket.resume();
    let sent = 0;
    let isClosed = false;
    void ended.then(() => (isClosed = true));
    const chunk = Buffer.concat([Buffer.from("10000\r\n"), Buffer.alloc(64 * 1024, 0x63), Buffer.from("\r\n")]);
    while (!isClosed && sent < 50 * 1024 * 1024) {
      await write(socket, chunk).catch(() => {});
      sent += chunk.byteLength;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await ended;
    // Cut off after the bound, long before the declared 50 MB.
    expect(sent).toBeGreaterThanOrEqual(256 * 1024);
    expect(sent).toBeLessThan(10 * 1024 * 1024);
  });

  it("an upload declared past uploadDiscardBytes is answered with connection: close (it will be cut off), one within it with keep-alive", async () => {
    const { url } = await start(refuser, { uploadDiscardBytes: 256 * 1024 });
    for (const [length, connection] of [
      [1_000_000_000_000, "close"],
      [256 * 1024 + 1, "close"],
      [256 * 1024, "keep-alive"],
    ] as const) {
      const socket = await open(url);
      try {
        socket.on("error", () => {});
        await write(socket, head("POST", length, "keep-alive"));
        const answered = await readResponse(socket);
        expect([answer413(answered), answered.headers.find(([name]) => name === "connection")], String(length)).toEqual([
          { status: 413, body: '{"error":"too_large"}' },
          ["connection", connection],
        ]);
      } finally {
        socket.destroy();
      }
    }
  });

  /** How long after its 413 a connection whose 1 MiB upload stops after 1,000 bytes is closed, with `uploadDiscardMs`. */
  async function closedAfterAnswer(uploadDiscardMs: number): Promise<number> {
    const { url } = await start(refuser, { uploadDiscardMs });
    const socket = await open(url);
    socket.on("error", () => {});
    const ended = closed(socket);
    await write(socket, `${head("POST", 1024 * 1024, "keep-alive")}${"d".repeat(1000)}`);
    const answered = await readResponse(socket);
    const answeredAt = Date.now();
    expect(answer413(answered)).toEqual({ status: 413, body: '{"error":"too_large"}' });
    socket.resume();
    const { at } = await ended;
    return at - answeredAt;
  }

  it("cuts off an upload still unfinished uploadDiscardMs after the answer", async () => {
    const ms = await closedAfterAnswer(300);
    expect(ms).toBeGreaterThanOrEqual(200);
    expect(ms).toBeLessThan(5_000);
  });

  it("uploadDiscardMs 0: no lingering, an upload still arriving after the answer is cut off at once (the 30 s default would hold it open)", async () => {
    expect(await closedAfterAnswer(0)).toBeLessThan(2_000);
  });

  it("refuses bounds that are not non-negative integers", async () => {
    await expect(start(refuser, { uploadDiscardBytes: -1 })).rejects.toThrow(new TypeError("uploadDiscardBytes must be a non-negative integer."));
    await expect(start(refuser, { uploadDiscardMs: 1.5 })).rejects.toThrow(new TypeError("uploadDiscardMs must be a non-negative integer."));
  });
});
