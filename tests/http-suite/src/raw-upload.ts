/**
 * Node-only helper (not part of the runtime-agnostic suite, like bundle-worker.ts): sends one
 * request over a fresh `node:net` socket exactly as many HTTP clients send an upload: the head and
 * the WHOLE body are written first, with `Connection: close`, and only then is the answer read.
 * Nothing is retried and a reset is never an answer: a socket error before a complete answer
 * rejects.
 *
 * Runner-independent: it needs only an `http://` URL, so the node, Express and workerd runners can
 * all use it (see {@link describeOversizedUploads}).
 */
import { connect } from "node:net";

/** One parsed HTTP/1.1 answer. */
export interface RawAnswer {
  status: number;
  /** Header names lower-cased; a repeated header keeps its last value. */
  headers: Map<string, string>;
  text: string;
}

export interface RawUploadOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Give up (reject) after this long; default 60 s. */
  timeoutMs?: number;
  /**
   * Half-close the connection (send FIN) once the request is written, as `nc -N`, some HTTP/1.0
   * clients and scripts ending their socket do, and still read the answer (RFC 9112 §9.6: a
   * half-closed connection does not mean the client lost interest in the answer). Default false.
   */
  halfClose?: boolean;
  /** Send `Connection: close` (default true); false sends no Connection header (keep-alive). */
  connectionClose?: boolean;
}

/**
 * Writes `method path` with `body` (Content-Length, `Connection: close` unless told otherwise) in
 * full, half-closes if told to, then reads the answer until it is complete by its framing (or,
 * without framing, until the server closes).
 * Rejects on a socket error (ECONNRESET, EPIPE), on a timeout, or on an answer cut short.
 */
export function rawUpload(url: string, body: Uint8Array | string, options: RawUploadOptions = {}): Promise<RawAnswer> {
  const target = new URL(url);
  if (target.protocol !== "http:") throw new Error(`rawUpload speaks plain http only: ${url}`);
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const lines = [
    `${options.method ?? "POST"} ${target.pathname}${target.search} HTTP/1.1`,
    `host: ${target.host}`,
    `content-length: ${bytes.byteLength}`,
    ...(options.connectionClose === false ? [] : ["connection: close"]),
    ...Object.entries(options.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
  ];
  const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
  return new Promise<RawAnswer>((resolve, reject) => {
    const socket = connect({ host: target.hostname, port: Number(target.port || 80) });
    // Not a byte of the answer is read until the whole upload is handed to the kernel: the answer
    // waits in the receive buffer, where a reset from the server would destroy it.
    socket.pause();
    const received: Buffer[] = [];
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      outcome();
    };
    const timeoutMs = options.timeoutMs ?? 60_000;
    socket.setTimeout(timeoutMs, () => settle(() => reject(new Error(`no complete answer within ${timeoutMs} ms`))));
    socket.on("error", (error) => settle(() => reject(error)));
    socket.on("data", (chunk: Buffer) => {
      received.push(chunk);
      // Complete by its own framing (Content-Length or the last chunk): done, whether or not the
      // server closes now or keeps the connection open despite `Connection: close`.
      try {
        const answer = completeAnswer(Buffer.concat(received), false);
        if (answer) settle(() => resolve(answer));
      } catch (error) {
        settle(() => reject(error as Error));
      }
    });
    socket.on("end", () => {
      try {
        const answer = completeAnswer(Buffer.concat(received), true)!;
        settle(() => resolve(answer));
      } catch (error) {
        settle(() => reject(error as Error));
      }
    });
    socket.on("connect", () => {
      socket.write(Buffer.concat([head, bytes]), (error) => {
        if (error) return;
        if (options.halfClose) socket.end();
        socket.resume();
      });
    });
  });
}

/**
 * The answer in `raw` once it is complete; undefined while more is due. At the end of the stream
 * (`ended`) an incomplete answer throws, and one without framing ends there.
 */
function completeAnswer(raw: Buffer, ended: boolean): RawAnswer | undefined {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) {
    if (!ended) return undefined;
    throw new Error(`the connection closed before a complete head (${raw.byteLength} bytes)`);
  }
  const [statusLine, ...headerLines] = raw.subarray(0, end).toString("latin1").split("\r\n");
  const m = /^HTTP\/1\.1 (\d{3})/.exec(statusLine!);
  if (!m) throw new Error(`not an HTTP/1.1 status line: ${statusLine}`);
  const headers = new Map<string, string>();
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  let payload: Buffer | undefined = raw.subarray(end + 4);
  if (headers.get("transfer-encoding")?.toLowerCase() === "chunked") payload = dechunk(payload);
  else if (headers.has("content-length")) {
    const length = Number(headers.get("content-length"));
    payload = payload.byteLength < length ? undefined : payload.subarray(0, length);
  } else if (!ended) payload = undefined;
  if (payload === undefined) {
    if (!ended) return undefined;
    throw new Error(`the connection closed before the whole answer body arrived: ${raw.subarray(0, 300).toString("latin1")}`);
  }
  return { status: Number(m[1]), headers, text: payload.toString("utf8") };
}

/** The body of a chunked answer; undefined while incomplete. */
function dechunk(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf("\r\n", at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.subarray(at, lineEnd).toString("latin1"), 16);
    if (Number.isNaN(size)) throw new Error("a malformed chunk size");
    if (size === 0) return data.indexOf("\r\n", lineEnd + 2) < 0 ? undefined : Buffer.concat(parts);
    if (lineEnd + 2 + size + 2 > data.byteLength) return undefined;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
