import type { IncomingMessage } from "node:http";
import { chunkBytes } from "./chunk-bytes.js";
import { continueReading } from "./expect-continue.js";

/**
 * The whole body straight from the IncomingMessage, without a Web stream: the bytes, or null once
 * more than `maxBytes` arrived (the rest then flows off the wire unread, as after a cancel, so the
 * connection stays usable for the answer). Rejects, after calling `onBroken`, when the upload breaks,
 * and with a PlantgateBodyConsumedError when the host decoded the body to strings that lost bytes.
 */
export function readIncoming(incoming: IncomingMessage, maxBytes: number, onBroken: () => void): Promise<Uint8Array | null> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const detach = (): void => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
      incoming.off("close", onClose);
    };
    const onData = (chunk: Buffer | string): void => {
      let bytes: Uint8Array;
      try {
        // Strings when the host called req.setEncoding() (see chunkBytes).
        bytes = chunkBytes(chunk, incoming);
      } catch (error) {
        // The host's fault, not a broken upload: the request is not aborted, the rest flows off.
        detach();
        incoming.resume();
        reject(error);
        return;
      }
      size += bytes.byteLength;
      if (size > maxBytes) {
        detach();
        // Without 'data' listeners, flowing mode throws the remaining bytes away.
        incoming.resume();
        resolve(null);
        return;
      }
      chunks.push(bytes);
    };
    const onEnd = (): void => {
      detach();
      resolve(chunks.length === 1 ? chunks[0]! : concat(chunks, size));
    };
    const broken = (error: unknown): void => {
      detach();
      onBroken();
      reject(error);
    };
    const onError = (error: unknown): void => broken(error);
    const onClose = (): void => {
      if (!incoming.complete) broken(new DOMException("The client disconnected.", "AbortError"));
    };
    incoming.on("data", onData);
    incoming.once("end", onEnd);
    incoming.on("error", onError);
    incoming.once("close", onClose);
    continueReading(incoming);
    // A 'data' listener does not restart a stream someone paused explicitly (a middleware, say).
    incoming.resume();
  });
}

/**
 * The whole of a Web stream, or null (the stream cancelled) once it passes `maxBytes`. With
 * `fresh` false, a body that arrived in one chunk is returned as that chunk, without a copy.
 */
export async function readStream(stream: ReadableStream<Uint8Array>, maxBytes: number, fresh = true): Promise<Uint8Array | null> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return chunks.length === 1 && !fresh ? chunks[0]! : concat(chunks, size);
}

/** The chunks in one buffer of its own. */
export function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
