import { HostFaultError } from "../errors/index.js";
import type { HandleInfo } from "./handle-info.js";

/** Why a body could not be read; the caller maps it to its own error shape. */
export type BodyFailure = "too_large" | "aborted" | "not_utf8";

/** Thrown by {@link readBodyText}. */
export class BodyReadError extends Error {
  override readonly name = "BodyReadError";
  constructor(readonly reason: BodyFailure) {
    super(reason);
  }
}

// Reused: a fatal decoder keeps no state between whole (non-streaming) decode() calls.
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Reads the body as UTF-8 text, stopping (and cancelling the stream) as soon as it passes
 * `maxBytes`, so a hostile client cannot make us buffer more than the limit. Through the
 * adapter's `info.readBody` when it gave one, else through `request.body`. A read that fails is
 * a {@link BodyReadError} (`aborted`), except a {@link HostFaultError}, which is thrown as it is.
 */
export async function readBodyText(request: Request, info: HandleInfo | undefined, maxBytes: number): Promise<string> {
  if (declaresOver(request, maxBytes)) {
    await request.body?.cancel().catch(() => {});
    throw new BodyReadError("too_large");
  }
  if (info?.readBody !== undefined) {
    let bytes: Uint8Array | null;
    try {
      bytes = await info.readBody(maxBytes);
    } catch (e) {
      throw readFailure(e);
    }
    if (bytes === null) throw new BodyReadError("too_large");
    return decodeStrict(bytes);
  }
  if (!request.body) return "";
  // A Request whose body the host read before handing it over (its own `request.text()`, a
  // middleware's), or is reading (a reader holds its stream: `locked`): the stream would read as
  // empty or refuse a reader, which plantgate took for the client's broken upload (a 400). One that
  // declares no bytes (`Content-Length: 0`) held none, whoever read it; any other is the host's
  // fault, as the adapters' taken bodies are.
  if (request.bodyUsed || request.body.locked) {
    if (request.headers.get("content-length") === "0") return "";
    throw new BodyAlreadyUsedError();
  }
  let bytes: Uint8Array | null;
  try {
    bytes = await readBounded(request.body, maxBytes);
  } catch (e) {
    throw readFailure(e);
  }
  if (bytes === null) throw new BodyReadError("too_large");
  return decodeStrict(bytes);
}

/**
 * The request handed to `app.fetch` (or a Worker's `fetch`) had a body something had already read
 * (`bodyUsed`, or a reader holds its stream): a {@link HostFaultError}, so plantgate's 500 and `error.type` `PLANTGATE_BODY_USED`.
 */
export class BodyAlreadyUsedError extends HostFaultError {
  override readonly name = "BodyAlreadyUsedError";
  readonly code = "PLANTGATE_BODY_USED";
  constructor() {
    super("the request's body was already read before plantgate got the request (bodyUsed, or its stream locked by a reader); hand plantgate the Request before anything reads its body, or a clone");
  }
}

/**
 * What a failed body read becomes: the upload broke (the client's, a 400), unless the adapter says
 * the host is at fault ({@link HostFaultError}: a 500, passed on as it is).
 */
function readFailure(error: unknown): Error {
  return error instanceof HostFaultError ? error : new BodyReadError("aborted");
}

/**
 * Whether the request's body carries a content coding (RFC 9110 §8.4: `Content-Encoding` other than
 * `identity`), which plantgate does not decode: a gzipped form was refused as "not UTF-8", and one
 * that happened to decode was read as its compressed bytes.
 */
export function contentCoded(request: Request): boolean {
  const value = request.headers.get("content-encoding");
  if (value === null) return false;
  return value.split(",").some((coding) => {
    const name = coding.trim().toLowerCase();
    return name !== "" && name !== "identity";
  });
}

/** Whether the message declares a valid `Content-Length` over `maxBytes` (refuse it unread). */
export function declaresOver(message: Request | Response, maxBytes: number): boolean {
  const declared = message.headers.get("content-length");
  return declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes;
}

/**
 * The whole of a stream in one buffer, read as it arrives; null (the stream cancelled) once it
 * passes `maxBytes`, so no more than that is ever held. A failing stream rejects.
 */
export async function readBounded(stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array | null> {
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
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  return bytes;
}

function decodeStrict(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes);
  } catch {
    throw new BodyReadError("not_utf8");
  }
}

/**
 * The media type of a Content-Type header, lower-cased, without parameters; null when absent.
 * Several Content-Type headers reach here joined by ", " (no media type holds a comma): the whole
 * value is returned then, which names no supported type, so the request is refused. Reading the
 * first one as the type accepted a request a proxy reading the last one took for another.
 */
export function mediaType(request: Request): string | null {
  const value = request.headers.get("content-type");
  if (value === null) return null;
  // A quoted parameter value may hold "," and ";" (RFC 9110 §5.6.6): read it whole (the common
  // value has no quote, and takes the two lines below).
  if (value.includes('"')) return parsedContentType(value)?.type ?? value.trim().toLowerCase();
  if (value.includes(",")) return value.trim().toLowerCase();
  return value.split(";")[0]!.trim().toLowerCase();
}

/**
 * The `charset` parameter of Content-Type, lower-cased; null when absent. Given twice, both values
 * joined by ",", which names no charset, so the request is refused: a proxy reading the other one
 * could take the body for another text (before 2026-11-29 the first was read, see mediaType).
 */
export function charset(request: Request): string | null {
  const value = request.headers.get("content-type");
  if (value === null) return null;
  if (value.includes('"')) {
    const parsed = parsedContentType(value);
    // A value that does not parse names no media type already (mediaType refuses it).
    if (parsed === null) return null;
    const given = parsed.parameters.filter(([name]) => name === "charset").map(([, v]) => v.toLowerCase());
    return given.length === 0 ? null : given.join(",");
  }
  CHARSET.lastIndex = 0;
  const m = CHARSET.exec(value);
  if (m === null) return null;
  const again = CHARSET.exec(value);
  CHARSET.lastIndex = 0;
  return (again === null ? m[1]! : `${m[1]!},${again[1]!}`).toLowerCase();
}
// The value may be empty (`charset=`, taken for no charset until 2026-12-03, while `charset=""`
// was refused): then it is "", which names no UTF-8.
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/gi;

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const JOINED_TYPE = /,[ \t]*[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+/;

/**
 * A Content-Type value read by RFC 9110 §5.6.6 and §8.3.1: `type "/" subtype *( OWS ";" OWS [ name
 * "=" ( token / quoted-string ) ] )`, the type and parameter names lower-cased, a quoted value
 * unquoted (`\x` read as `x`); null when it does not parse, a "," outside quotes included (several
 * Content-Type fields joined). Until 2026-12-01 any "," refused the request, one inside a quoted
 * value (`application/json; profile="a,b"`) too, and `charset` was looked for inside quoted values.
 */
function parsedContentType(value: string): { type: string; parameters: [string, string][] } | null {
  const n = value.length;
  let i = 0;
  const blanks = () => {
    while (i < n && (value[i] === " " || value[i] === "\t")) i++;
  };
  blanks();
  let start = i;
  while (i < n && value[i] !== ";" && value[i] !== " " && value[i] !== "\t") i++;
  const type = value.slice(start, i).toLowerCase();
  const slash = type.indexOf("/");
  if (slash <= 0 || !TOKEN.test(type.slice(0, slash)) || !TOKEN.test(type.slice(slash + 1))) return null;
  const parameters: [string, string][] = [];
  for (;;) {
    blanks();
    if (i >= n) return { type, parameters };
    if (value[i] !== ";") return null;
    i++;
    blanks();
    if (i >= n || value[i] === ";") continue;
    start = i;
    while (i < n && value[i] !== "=") i++;
    const name = value.slice(start, i).toLowerCase();
    if (i >= n || !TOKEN.test(name)) return null;
    i++;
    let text = "";
    if (value[i] === '"') {
      i++;
      for (;;) {
        if (i >= n) return null;
        const c = value[i]!;
        if (c === '"') break;
        if (c === "\\") {
          i++;
          if (i >= n) return null;
        }
        text += value[i];
        i++;
      }
      i++;
      // Two fields joined by ", " whose quotes pair across the join (`a="x` + `text/plain; b="`)
      // read as one value with a quoted `x, text/plain; b=`: a "," then a media type inside quotes
      // is taken for such a join, and refused as several fields are.
      if (JOINED_TYPE.test(text)) return null;
    } else {
      start = i;
      while (i < n && value[i] !== ";" && value[i] !== " " && value[i] !== "\t") i++;
      text = value.slice(start, i);
      if (!TOKEN.test(text)) return null;
    }
    parameters.push([name, text]);
  }
}
