import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, expect } from "vitest";
import { serve, type FetchApp, type ServeOptions, type ServeResult } from "../src/index.js";

const running: ServeResult[] = [];
const plain: Server[] = [];
const unexpectedErrors: unknown[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()));
  await Promise.all(plain.splice(0).map((server) => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))));
  // Tests that expect app errors pass their own onError; anything else is a bug.
  expect(unexpectedErrors.splice(0)).toEqual([]);
});

/** Serves `app` on an ephemeral loopback port; closed after each test. */
export async function start(app: FetchApp, options: ServeOptions = {}): Promise<ServeResult> {
  const result = await serve(app, {
    port: 0,
    host: "127.0.0.1",
    onError: (error) => unexpectedErrors.push(error),
    ...options,
  });
  running.push(result);
  return result;
}

/** A plain `createServer(options, handler)` on an ephemeral loopback port (a chain of your own in front of a listener); closed after each test. Returns its origin. */
export async function listenPlain(handler: (req: IncomingMessage, res: ServerResponse) => void, options: ServerOptions = {}): Promise<string> {
  const server = createServer(options, handler);
  plain.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

export function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** Opens a raw TCP connection to the server behind `url`. */
export function open(url: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(portOf(url), "127.0.0.1", () => {
      socket.off("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/** Sends raw bytes on a fresh connection and parses the first response. */
export async function rawExchange(
  url: string,
  data: string | Buffer,
  options: ReadOptions = {},
): Promise<ParsedResponse> {
  const socket = await open(url);
  try {
    const response = readResponse(socket, options);
    socket.write(data);
    return await response;
  } finally {
    socket.destroy();
  }
}

export interface ParsedResponse {
  status: number;
  statusText: string;
  /** Header lines in wire order, names lower-cased. */
  headers: Array<[string, string]>;
  body: Buffer;
}

export interface ReadOptions {
  /** The response answers a HEAD request: no body follows the headers. */
  head?: boolean;
  /** The body is delimited by the connection closing (HTTP/1.0 style). */
  untilClose?: boolean;
}

/** Reads one response from `socket`, de-chunking the body. */
export function readResponse(socket: Socket, options: ReadOptions = {}): Promise<ParsedResponse> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const onClose = (): void => {
      cleanup();
      const parsed = options.untilClose === true ? tryParse(buffer, false, true) : undefined;
      if (parsed) resolve(parsed.response);
      else reject(new Error(`connection closed; received ${JSON.stringify(buffer.toString("latin1"))}`));
    };
    const onData = (chunk: Buffer): void => {
      buffer = Buffer.concat([buffer, chunk]);
      const parsed = options.untilClose === true ? undefined : tryParse(buffer, options.head === true);
      if (parsed) {
        cleanup();
        if (parsed.rest.length > 0) socket.unshift(parsed.rest);
        resolve(parsed.response);
      }
    };
    function cleanup(): void {
      // Paused so that bytes of a following response (unshifted below or
      // arriving later) wait for the next readResponse() instead of being
      // emitted to no listener.
      socket.pause();
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("close", onClose);
    }
    socket.on("data", onData);
    socket.once("error", onError);
    socket.once("close", onClose);
    socket.resume();
  });
}

function tryParse(
  buffer: Buffer,
  head: boolean,
  untilClose = false,
): { response: ParsedResponse; rest: Buffer } | undefined {
  const end = buffer.indexOf("\r\n\r\n");
  if (end === -1) return undefined;
  const lines = buffer.subarray(0, end).toString("latin1").split("\r\n");
  const statusLine = /^HTTP\/1\.1 (\d{3}) ?(.*)$/.exec(lines[0] ?? "");
  if (!statusLine) throw new Error(`bad status line ${lines[0]}`);
  const headers = lines.slice(1).map((line): [string, string] => {
    const colon = line.indexOf(":");
    return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
  });
  const status = Number(statusLine[1]);
  const header = (name: string) => headers.find(([key]) => key === name)?.[1];
  let rest: Buffer = buffer.subarray(end + 4);
  let body: Buffer = Buffer.alloc(0);
  if (untilClose) {
    body = rest;
    rest = Buffer.alloc(0);
  } else if (!head && status !== 204 && status !== 304) {
    if (header("transfer-encoding") === "chunked") {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = rest.indexOf("\r\n");
        if (lineEnd === -1) return undefined;
        const size = Number.parseInt(rest.subarray(0, lineEnd).toString("latin1"), 16);
        if (rest.length < lineEnd + 2 + size + 2) return undefined;
        if (size === 0) {
          rest = rest.subarray(lineEnd + 4);
          break;
        }
        parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
        rest = rest.subarray(lineEnd + 2 + size + 2);
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(header("content-length") ?? "0");
      if (rest.length < length) return undefined;
      body = rest.subarray(0, length);
      rest = rest.subarray(length);
    }
  }
  return {
    response: { status, statusText: statusLine[2] ?? "", headers, body: Buffer.from(body) },
    rest: Buffer.from(rest),
  };
}

/**
 * On one connection to `url`, pipelines `GET /slow` and a `POST /up` whose chunked upload the parser
 * refuses (a bad chunk size after the first chunk); after `waitMs` calls `release` (what holds the
 * slow answer). Resolves with everything received until the close, and when `release` was called.
 */
export async function slowThenBadChunk(url: string, release: () => void, waitMs: number): Promise<{ text: string; releasedAt: number }> {
  const socket = await open(url);
  const whole = textUntilClose(socket);
  socket.write("GET /slow HTTP/1.1\r\nhost: x\r\n\r\nPOST /up HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n");
  await delay(waitMs);
  release();
  const releasedAt = Date.now();
  return { text: await whole, releasedAt };
}

/** A promise plus its resolver, for hand-offs between app and test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Everything the server sends on `socket`, as latin1 text, once the connection has closed (listening from the call on). */
export function textUntilClose(socket: Socket): Promise<string> {
  const received: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  return new Promise((resolve) => socket.once("close", () => resolve(Buffer.concat(received).toString("latin1"))));
}

/** The answers in `text` whose body is one chunk (`Transfer-Encoding: chunked`), each as [status, that chunk], in order. */
export function chunkedAnswers(text: string): Array<[string | undefined, string | undefined]> {
  return [...text.matchAll(/HTTP\/1\.1 (\d+) [^\r]*\r\n[\s\S]*?\r\n\r\n[0-9a-f]+\r\n([^\r]*)\r\n0\r\n\r\n/g)].map((m) => [m[1], m[2]]);
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Echoes method, URL, headers and body bytes (base64) as JSON. */
export const echoApp: FetchApp = {
  async fetch(request) {
    const body = request.body === null ? null : Buffer.from(await request.arrayBuffer()).toString("base64");
    return Response.json({
      method: request.method,
      url: request.url,
      headers: [...request.headers],
      setCookie: request.headers.getSetCookie(),
      body,
    });
  },
};

export interface Echo {
  method: string;
  url: string;
  headers: Array<[string, string]>;
  setCookie: string[];
  body: string | null;
}
