import type { IncomingMessage } from "node:http";
import { chunkBytes } from "./chunk-bytes.js";
import { continueReading } from "./expect-continue.js";

/** A Web stream over an incoming body, plus a way to stop feeding it. */
export interface RequestBody {
  stream: ReadableStream<Uint8Array>;
  /**
   * Stops delivering data to the stream and lets the rest of the upload flow
   * off the wire unread. Safe to call more than once.
   */
  discard(): void;
}

/**
 * The part of an `AbortSignal` the body stream uses. The request listener passes a lighter object
 * than a real signal, which is costly to create in Node 20 and only needed when the app asks.
 */
export interface AbortSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * Wraps `incoming` in a pull-based `ReadableStream` without buffering.
 *
 * `Readable.toWeb()` is deliberately not used: cancelling it destroys the
 * IncomingMessage, and Node then destroys the socket of an unfinished upload,
 * so the client would get ECONNRESET instead of the app's response. Here a
 * cancel only detaches the stream and drains the remaining bytes, which keeps
 * the connection usable for the response (and for keep-alive).
 *
 * @param signal when it aborts, the stream errors with `signal.reason`, so a
 *   reader blocked on a dead upload is released instead of hanging.
 * @param onIncomingError called when `incoming` errors; on a server that only
 *   happens when the connection breaks, and the caller is expected to abort
 *   `signal` so the app sees one consistent reason.
 */
export function createRequestBody(
  incoming: IncomingMessage,
  signal: AbortSource,
  onIncomingError: () => void,
): RequestBody {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  // idle: nobody has read yet, so nothing is attached and Node may still dump
  // the body itself; flowing: we own the data; done: closed, errored or discarded.
  let state: "idle" | "flowing" | "done" = "idle";

  const onData = (chunk: Buffer | string): void => {
    let bytes: Uint8Array;
    try {
      // A plain view rather than the Buffer itself, so consumers see exactly a Uint8Array (same
      // bytes, no copy); strings when the host called req.setEncoding() (see chunkBytes).
      bytes = chunkBytes(chunk, incoming);
    } catch (error) {
      // The host's fault, not a broken upload: the stream fails with it, the rest flows off.
      fail(error);
      incoming.resume();
      return;
    }
    controller?.enqueue(bytes);
    // With a high-water mark of 0 every chunk satisfies the pending read; pause
    // until the consumer asks again so a slow app slows the client down through
    // TCP instead of growing a queue here.
    if ((controller?.desiredSize ?? 0) <= 0) incoming.pause();
  };
  const onEnd = (): void => {
    if (state === "done") return;
    state = "done";
    detach();
    controller?.close();
  };
  const onError = (error: unknown): void => {
    onIncomingError();
    fail(signal.aborted ? signal.reason : error);
  };
  const onAbort = (): void => fail(signal.reason);

  function detach(): void {
    incoming.off("data", onData);
    incoming.off("end", onEnd);
    incoming.off("error", onError);
    signal.removeEventListener("abort", onAbort);
  }

  function fail(reason: unknown): void {
    if (state === "done") return;
    state = "done";
    detach();
    controller?.error(reason);
  }

  function discard(): void {
    if (state === "done") return;
    state = "done";
    detach();
    // Without 'data' listeners, flowing mode throws the bytes away.
    incoming.resume();
  }

  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        if (signal.aborted) {
          fail(signal.reason);
          return;
        }
        signal.addEventListener("abort", onAbort, { once: true });
        // Attached eagerly so a failure before the first read is remembered;
        // Node only emits 'error' on an IncomingMessage that has listeners, so
        // this listener is also what turns a reset into a stream error rather
        // than silence.
        incoming.on("error", onError);
      },
      pull() {
        if (state === "idle") {
          state = "flowing";
          continueReading(incoming);
          incoming.on("data", onData);
          incoming.once("end", onEnd);
        }
        if (state === "flowing") incoming.resume();
      },
      cancel() {
        discard();
      },
    },
    { highWaterMark: 0 },
  );

  return {
    stream,
    discard() {
      if (state === "done") return;
      discard();
      // Someone may still hold a reader; end it instead of leaving it pending.
      controller?.error(
        new DOMException("The response was sent before the request body was read.", "AbortError"),
      );
    },
  };
}
