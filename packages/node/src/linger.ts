import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/**
 * Bounds of the lingering close (see {@link lingerOnUnreadUpload}), named as `@plantgate/cloudflare`'s
 * `createWorker` options.
 *
 * @example
 * ```ts
 * import type { UploadDiscardOptions } from "@plantgate/node";
 *
 * const bounds: UploadDiscardOptions = { uploadDiscardBytes: 8 * 1024 * 1024, uploadDiscardMs: 10_000 };
 * ```
 */
export interface UploadDiscardOptions {
  /**
   * How many bytes of an upload the server still reads and throws away after it has answered
   * without reading them (an over-limit body, a refused request); default 104 857 600 (100 MiB).
   * An upload with more left than this is cut off (the connection is destroyed).
   */
  uploadDiscardBytes?: number;
  /**
   * How long (ms) reading and discarding the rest of an upload may take after the answer was
   * written; default 30 000. An upload still arriving after that is cut off.
   */
  uploadDiscardMs?: number;
}

/** Default of {@link UploadDiscardOptions.uploadDiscardBytes}: 100 MiB. */
export const DEFAULT_UPLOAD_DISCARD_BYTES = 100 * 1024 * 1024;
/** Default of {@link UploadDiscardOptions.uploadDiscardMs}: 30 s. */
export const DEFAULT_UPLOAD_DISCARD_MS = 30_000;

const lingering = new WeakSet<Socket>();
/** How often the discarded byte count is checked against the bound. */
const METER_MS = 20;

/** Checks the bounds once, up front. */
export function discardBounds(options: UploadDiscardOptions): { bytes: number; ms: number } {
  const bytes = options.uploadDiscardBytes ?? DEFAULT_UPLOAD_DISCARD_BYTES;
  const ms = options.uploadDiscardMs ?? DEFAULT_UPLOAD_DISCARD_MS;
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new TypeError("uploadDiscardBytes must be a non-negative integer.");
  if (!Number.isSafeInteger(ms) || ms < 0) throw new TypeError("uploadDiscardMs must be a non-negative integer.");
  return { bytes, ms };
}

/**
 * Checks {@link UploadDiscardOptions} once, up front (an adapter's creation), with the TypeError
 * {@link lingerOnUnreadUpload} would throw for every request.
 *
 * @example
 * ```ts
 * import { checkUploadDiscardOptions } from "@plantgate/node";
 *
 * checkUploadDiscardOptions({ uploadDiscardMs: 10_000 }); // fine
 * checkUploadDiscardOptions({ uploadDiscardMs: Infinity }); // TypeError
 * ```
 */
export function checkUploadDiscardOptions(options: UploadDiscardOptions): void {
  discardBounds(options);
}

/**
 * Makes an answer written before the upload was read reach the client (a lingering close, as
 * nginx's `lingering_close`). Call it before the answer is written; it does nothing when the request
 * body has already been read in full.
 *
 * Without it, Node closes a `Connection: close` (or HTTP/1.0) socket as soon as the answer is
 * written; upload bytes still arriving then make the kernel send a TCP reset, which can destroy the
 * answer before the client has read it. Instead:
 *
 * - the answer is written and the write side half-closed (FIN) as usual;
 * - the rest of the upload is read and thrown away, up to `uploadDiscardBytes` bytes and for up to
 *   `uploadDiscardMs` ms after the answer was written (the byte count is checked every 20 ms,
 *   so a fast upload may overshoot the byte bound by what arrives in that time);
 * - once the upload has ended, the socket is closed (a keep-alive connection stays open instead and
 *   serves its next request);
 * - an upload that exceeds either bound is cut off: the socket is destroyed.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { lingerOnUnreadUpload } from "@plantgate/node";
 *
 * createServer((req, res) => {
 *   lingerOnUnreadUpload(req, res);
 *   res.writeHead(413, { "content-length": "0" }).end();
 * }).listen(3000);
 * ```
 */
export function lingerOnUnreadUpload(incoming: IncomingMessage, response: ServerResponse, options: UploadDiscardOptions = {}): void {
  const { bytes, ms } = discardBounds(options);
  linger(incoming, response, bytes, ms);
}

/** {@link lingerOnUnreadUpload} with bounds already checked. */
export function linger(incoming: IncomingMessage, response: ServerResponse, maxBytes: number, maxMs: number): void {
  if (incoming.complete) return;
  const socket = incoming.socket as Socket | null;
  if (socket === null || socket.destroyed || response.writableEnded) return;
  // A declared body past the discard bound will be cut off (the socket destroyed): the answer says
  // `Connection: close` up front, not keep-alive, so the client knows not to send more on it
  // (before 2026-11-29 a 400 to `Content-Length: 10^12` said keep-alive). Reaching the bound is
  // what counts, so bytes already read are not subtracted.
  const declared = Number(incoming.headers["content-length"]);
  if (declared > maxBytes && !response.headersSent) response.shouldKeepAlive = false;

  // Node's server ends a closing connection with socket.destroySoon() right after the answer is
  // written (the FIN, then destroy() once it is flushed): destroying with upload bytes unread is
  // what makes the reset. This socket's destroySoon only half-closes while the upload is unread.
  if (!lingering.has(socket)) {
    lingering.add(socket);
    const lingerSoon = function (this: Socket): void {
      if (!this.writableEnded) this.end();
      if (incoming.complete) closeWhenFlushed(this);
      // Otherwise the watch below closes it once the upload has ended (or cuts it off).
    };
    Object.defineProperty(socket, "destroySoon", { value: lingerSoon, configurable: true, writable: true });
  }

  response.once("finish", () => {
    if (socket.destroyed) return;
    if (incoming.complete) {
      release(socket);
      return;
    }
    // Node's parser reads the socket itself, and an upload nobody read is dropped inside it
    // (no 'data' events), so the socket's byte count is what is watched.
    const startBytes = socket.bytesRead;
    const cutOff = (): void => {
      stop();
      socket.destroy();
    };
    const timer = setTimeout(cutOff, maxMs);
    timer.unref();
    const meter = setInterval(() => {
      if (socket.bytesRead - startBytes > maxBytes) cutOff();
    }, METER_MS);
    meter.unref();
    const onEnd = (): void => {
      stop();
      if (socket.writableEnded) closeWhenFlushed(socket);
      else release(socket);
    };
    const stop = (): void => {
      clearTimeout(timer);
      clearInterval(meter);
      incoming.off("end", onEnd);
      socket.off("close", stop);
    };
    incoming.once("end", onEnd);
    socket.once("close", stop);
    // Keeps the body flowing (Node has dumped it, or the app's reader has let it go); every byte
    // is thrown away.
    incoming.resume();
  });
}

function release(socket: Socket): void {
  if (!lingering.delete(socket)) return;
  delete (socket as { destroySoon?: unknown }).destroySoon;
}

function closeWhenFlushed(socket: Socket): void {
  release(socket);
  if (socket.destroyed) return;
  if (socket.writableFinished) socket.destroy();
  else socket.once("finish", () => socket.destroy());
}
