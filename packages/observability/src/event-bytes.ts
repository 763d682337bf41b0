/**
 * An event's JSON line written as bytes straight into the held stdout block (see logs.ts): the
 * same line, byte for byte, as the text path (`fastLine`, then UTF-8), for events whose every
 * string is printable ASCII with no quote or backslash, which is every event a normal request
 * makes. A token request logs one such line, so this is on the hot path.
 *
 * The text path builds the line from a dozen pieces, which V8 keeps as a rope, then copies the
 * rope flat and converts it to UTF-8 in the write: counted with callgrind, that flattening and
 * conversion alone was about 4,000 instructions a line, the line's building as much again. Here
 * the members whose value is the same as in the last event of the type (grant type, client,
 * subject, scope, address: most of them) are copied as the bytes they made then, and the others
 * (id, jti, times) are copied a character at a time, each checked as it goes; no string is made.
 */

/** Where a line goes: bytes from `at`, up to the end of `buf`. */
type Bytes = Uint8Array;

/**
 * What is kept of an event type for the member names its events had last: the line's fixed
 * parts as bytes, and per member its `,"name":` and the value it had with the bytes it made.
 */
interface ByteShape {
  keys: readonly string[];
  /** `"event":"T","event_time":` */
  start: Bytes;
  /** `,"msg":"T"}` and a newline. */
  end: Bytes;
  /** By member index: `,"name":` (null for `type`, `id` and `time`, written in `start` and first). */
  prefixes: Array<string | null>;
  /** By member index: the last primitive value seen. */
  values: unknown[];
  /** By member index: the bytes (name and value) of that value, once it has been seen twice running. */
  bytes: Array<Bytes | undefined>;
}

const shapes = new Map<string, ByteShape>();

/** Whether two member-name lists are the same names in the same order (by identity, as `Object.keys` hands them). */
export function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The bytes of an ASCII string (caller checked). */
function ascii(s: string): Bytes {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Whether `s` can go between quotes as it is, one byte a character: printable ASCII, no quote or backslash. */
function plain(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return false;
  }
  return true;
}

function shapeOf(type: string, keys: readonly string[], redacted: ReadonlySet<string>): ByteShape | null {
  const known = shapes.get(type);
  if (known !== undefined && sameKeys(known.keys, keys)) return known;
  if (!plain(type)) return null;
  const prefixes: Array<string | null> = [];
  for (const key of keys) {
    // pino's redact paths are top-level names; a name that needs escaping is left to the text path.
    if (redacted.has(key) || !plain(key)) return null;
    prefixes.push(key === "type" || key === "id" || key === "time" ? null : `,"${key}":`);
  }
  const shape: ByteShape = { keys: [...keys], start: ascii(`"event":"${type}","event_time":`), end: ascii(`,"msg":"${type}"}\n`), prefixes, values: [], bytes: [] };
  // The core has a few dozen event types; a caller's own types beyond 1,000 are not kept.
  if (known !== undefined || shapes.size < 1000) shapes.set(type, shape);
  return shape;
}

/** Copies `s`, ASCII known to need no escape (names, numbers, `null`): the new end, or -1 past `end`. */
function raw(buf: Bytes, at: number, end: number, s: string): number {
  const n = s.length;
  if (at < 0 || at + n > end) return -1;
  for (let i = 0; i < n; i++) buf[at + i] = s.charCodeAt(i);
  return at + n;
}

/** `s` between quotes if {@link plain}: the new end, or -1 (past `end`, or a character to escape). */
function quoted(buf: Bytes, at: number, end: number, s: string): number {
  const n = s.length;
  if (at < 0 || at + n + 2 > end) return -1;
  buf[at++] = 0x22;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return -1;
    buf[at + i] = c;
  }
  buf[at + n] = 0x22;
  return at + n + 1;
}

function copy(buf: Bytes, at: number, end: number, bytes: Bytes): number {
  if (at < 0 || at + bytes.length > end) return -1;
  buf.set(bytes, at);
  return at + bytes.length;
}

/** A member's value as JSON after its prefix: the new end, -1 to leave the line to the text path, -2 when JSON leaves the member out. */
function member(buf: Bytes, at: number, end: number, prefix: string, value: unknown): number {
  switch (typeof value) {
    case "string":
      return quoted(buf, raw(buf, at, end, prefix), end, value);
    case "number":
      // JSON writes a finite number as its shortest text (what template literals do), others as null.
      return raw(buf, raw(buf, at, end, prefix), end, Number.isFinite(value) ? `${value}` : "null");
    case "boolean":
      return raw(buf, raw(buf, at, end, prefix), end, value ? "true" : "false");
    case "undefined":
    case "function":
    case "symbol":
      return -2;
    default:
      return value === null ? raw(buf, raw(buf, at, end, prefix), end, "null") : -1;
  }
}

/**
 * Writes the line of `event` after `head` (the line's `{"level":...,"time":...,` as bytes) into
 * `buf` from `at`: the new end, or -1 when the line is not one this writes (a string to escape or
 * not ASCII, an object or array value, a name pino redacts, a `toJSON`, no `type` first) or would
 * not fit before the end of `buf`. Nothing written counts until the caller takes the new end.
 */
export function encodeEventLine(buf: Bytes, at: number, head: Bytes, event: Record<string, unknown>, redacted: ReadonlySet<string>): number {
  if ("toJSON" in event) return -1;
  const keys = Object.keys(event);
  if (keys[0] !== "type") return -1;
  const { type, id, time } = event;
  if (typeof type !== "string" || typeof id !== "string" || !Number.isSafeInteger(time)) return -1;
  const shape = shapeOf(type, keys, redacted);
  if (shape === null) return -1;
  const end = buf.length;
  at = copy(buf, at, end, head);
  at = copy(buf, at, end, shape.start);
  at = raw(buf, at, end, `${time as number}`);
  at = quoted(buf, raw(buf, at, end, ',"id":'), end, id);
  const values = Object.values(event);
  const { prefixes, bytes } = shape;
  for (let i = 1; i < keys.length && at >= 0; i++) {
    const prefix = prefixes[i];
    if (prefix === null || prefix === undefined) continue;
    const value = values[i];
    const same = value === shape.values[i] && i in shape.values;
    const kept = same ? bytes[i] : undefined;
    if (kept !== undefined) {
      at = copy(buf, at, end, kept);
      continue;
    }
    const from = at;
    const next = member(buf, at, end, prefix, value);
    if (next === -1) return -1;
    shape.values[i] = value;
    // Bytes are kept for a value seen twice running (a member that changes every time keeps none).
    bytes[i] = same && next >= 0 ? buf.slice(from, next) : undefined;
    if (next >= 0) at = next;
  }
  return copy(buf, at, end, shape.end);
}

/** The bytes of a line's start (`{"level":"info","time":"...",`). */
export function headBytes(text: string): Bytes {
  return ascii(text);
}
