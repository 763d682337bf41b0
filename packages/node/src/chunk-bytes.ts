import type { IncomingMessage } from "node:http";
import { PlantgateBodyConsumedError } from "./body-consumed.js";

/** Encodings whose strings turn back into exactly the bytes they were decoded from. */
const LOSSLESS = new Set<string>(["latin1", "hex", "base64", "base64url"]);

/**
 * The bytes of one `'data'` chunk of a request body, as a plain Uint8Array view (no copy of a Buffer).
 *
 * A host that called `req.setEncoding()` before plantgate read the body (a logging or framework
 * layer that sets it without reading) makes Node deliver strings. Until 2026-12-02 each string
 * counted as zero bytes, so the body read as empty and a valid token request got the client's 400
 * "The grant_type parameter is required.". A string of a lossless encoding (`latin1`/`binary`,
 * `hex`, `base64`, `base64url`) is turned back into its bytes; one of any other (`utf8`, `utf16le`,
 * `ascii`: decoding replaced bytes it could not map) throws a {@link PlantgateBodyConsumedError}, the
 * host fault plantgate answers with its 500, as for a body something else read first. An empty body
 * delivers no chunk, so it stays the empty body the client sent under any encoding.
 *
 * @throws PlantgateBodyConsumedError for a string chunk of an encoding that lost bytes.
 */
export function chunkBytes(chunk: Buffer | string, incoming: IncomingMessage): Uint8Array {
  if (typeof chunk !== "string") return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  // Node reports the decoder's own name (`binary` is `latin1`, `utf-8` is `utf8`).
  const encoding = incoming.readableEncoding;
  if (encoding !== null && LOSSLESS.has(encoding)) {
    const bytes = Buffer.from(chunk, encoding);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  throw new PlantgateBodyConsumedError(
    `plantgate: the request body was decoded to ${encoding ?? "strings"} (req.setEncoding()) before plantgate read it, ` +
      "and its bytes cannot be recovered; do not set an encoding on the requests plantgate answers",
  );
}
