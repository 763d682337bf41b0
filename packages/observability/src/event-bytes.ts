/**
 * An event's JSON line written as bytes straight into the held stdout block (see logs.ts): the
 * same line, byte for byte, as the text path (`fastLine`, then UTF-8), for events whose every
 * string is printable ASCII with no quote or backslash, which is every event a normal request
 * makes. A token request logs one such line, so this is on the hot path.
 *
 * Each event type keeps the bytes of its last line (after the level and time head) and where each
 * member's value sits in them. The next event of the type with the same member names patches that
 * line where a value changed and the new value's text is as long as the old one (the event id, the
 * jti, the times: a request's changing values keep their length), then the head and the line go
 * into the block in two copies. Only when a value's length changes (another client, another
 * scope) is the line built anew from the event's values. Counted with callgrind over HTTP, the
 * member-by-member build of every line (kept bytes per repeated member, each copied, every other
 * character checked and copied) was about 9,000 instructions a token request; see the README's
 * performance section for the figures after.
 */

/** Where a line goes: bytes from `at`, up to the end of `buf`. */
type Bytes = Uint8Array;

/**
 * The last line of an event type with these member names: its bytes from after the head to the
 * newline, and per member (by index in `keys`) the value it holds and where that value's text is.
 */
interface LineShape {
  keys: readonly string[];
  /** `"event":"T","event_time":N,"id":"I"`, the members, `,"msg":"T"}` and a newline. */
  line: Bytes;
  /** By member index: the primitive value whose text is in `line`. */
  values: unknown[];
  /** By member index: where that text starts in `line` (-1: a member JSON leaves out, nothing written). */
  starts: Int32Array;
  /** By member index: the text's length in bytes. */
  lengths: Int32Array;
  /** By member index: 1 when the member's value changed in the last event patched. */
  changing: Uint8Array;
  /** Indexes of `id` (a string) and `time` (a safe integer) in `keys`. */
  idIndex: number;
  timeIndex: number;
}

const shapes = new Map<string, LineShape>();
/** The shape found last (events of one type come in runs): one comparison instead of a Map lookup. */
let lastType: string | null = null;
let lastShape: LineShape | null = null;

/** Whether two member-name lists are the same names in the same order (by identity, as `Object.keys` hands them). */
export function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether the UTF-16 unit `c` cannot go between quotes as it is, as one byte: not printable ASCII, or a quote or a backslash. */
function escaped(c: number): boolean {
  return c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c;
}

/** Whether `s` can go between quotes as it is, one byte a character (see {@link escaped}). */
function plain(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (escaped(s.charCodeAt(i))) return false;
  return true;
}

/** The text of a member's value as JSON writes it: null for a member JSON leaves out, undefined for one this does not write (the text path must). */
function valueText(value: unknown): string | null | undefined {
  switch (typeof value) {
    case "string":
      return plain(value) ? `"${value}"` : undefined;
    case "number":
      // JSON writes a finite number as its shortest text (what template literals do), others as null.
      return Number.isFinite(value) ? `${value}` : "null";
    case "boolean":
      return value ? "true" : "false";
    case "undefined":
    case "function":
    case "symbol":
      return null;
    default:
      return value === null ? "null" : undefined;
  }
}

/**
 * Builds the line of an event (checked by the caller: `type` first, a plain string `type` and
 * `id`, a safe integer `time`) as a new shape. Null when a name or a value needs the text path.
 */
function build(type: string, keys: readonly string[], values: readonly unknown[], redacted: ReadonlySet<string>): LineShape | null {
  const n = keys.length;
  const texts: Array<string | null> = new Array<string | null>(n).fill(null);
  const starts = new Int32Array(n).fill(-1);
  const lengths = new Int32Array(n);
  let idIndex = -1;
  let timeIndex = -1;
  for (let i = 1; i < n; i++) {
    const key = keys[i]!;
    // pino's redact paths are top-level names; a name that needs escaping is left to the text path.
    if (redacted.has(key) || !plain(key)) return null;
    if (key === "id") idIndex = i;
    else if (key === "time") timeIndex = i;
    const text = valueText(values[i]);
    if (text === undefined) return null;
    texts[i] = text;
  }
  // `id` and `time` were checked as read (through the prototype too): a line needs them as own members.
  if (idIndex < 0 || timeIndex < 0) return null;
  // "event":"T","event_time":N,"id":"I" first, then the members in order, then "msg".
  let line = `"event":"${type}","event_time":`;
  const place = (i: number, text: string) => {
    starts[i] = line.length;
    lengths[i] = text.length;
    line += text;
  };
  place(timeIndex, texts[timeIndex]!);
  line += ',"id":';
  place(idIndex, texts[idIndex]!);
  for (let i = 1; i < n; i++) {
    const text = texts[i];
    if (i === idIndex || i === timeIndex || text === null || text === undefined) continue;
    line += `,"${keys[i]}":`;
    place(i, text);
  }
  line += `,"msg":"${type}"}\n`;
  return { keys: [...keys], line: headBytes(line), values: [...values], starts, lengths, changing: new Uint8Array(n), idIndex, timeIndex };
}

/** 10 ** n for n = 0..16 (exact doubles). */
const POW10 = Array.from({ length: 17 }, (_, n) => 10 ** n);

/** What {@link patch} did: could not (the line must be built anew), wrote the same bytes, or changed them. */
const FAILED = 0;
const SAME = 1;
const CHANGED = 2;

/**
 * Writes the text of `value` over the `length` bytes of `line` from `start`, where the text of
 * `prev` is: FAILED when it is not as long (or needs the text path, or a member JSON leaves out
 * must now be written or the other way), else whether the bytes changed.
 */
function patch(line: Bytes, start: number, length: number, value: unknown, prev: unknown): number {
  if (start < 0) return valueText(value) === null ? SAME : FAILED;
  let diff = 0;
  if (typeof value === "string") {
    // Only the characters are written: the quotes must be there already.
    if (typeof prev !== "string") return FAILED;
    const n = value.length;
    if (n + 2 !== length) return FAILED;
    for (let i = 0, at = start + 1; i < n; i++, at++) {
      const c = value.charCodeAt(i);
      // escaped(c), written out: as a call (inlined) it cost about 300 instructions more an event in
      // a callgrind count of this loop.
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return FAILED;
      diff |= line[at]! ^ c;
      line[at] = c;
    }
    return diff === 0 ? SAME : CHANGED;
  }
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) {
    // A time or an expiry: digits written from the right, no string made, in int32 arithmetic (the
    // low 8 digits, then the rest; a safe integer has at most 16).
    if (length > 16 || value >= POW10[length]! || (length > 1 && value < POW10[length - 1]!)) return FAILED;
    // `| 0` keeps both in int32 (hi < 2^27, lo < 10^8): as doubles, every `%` below is a call to C's fmod.
    let hi = Math.floor(value / 1e8) | 0;
    let lo = (value - hi * 1e8) | 0;
    // The digits of `prev` as well, when its text is as long and made the same way: where what is
    // left of both is the same number, the digits left in the line are already right (a time moves
    // by a few milliseconds from one event to the next: its last two or three digits change).
    let prevHi = -1;
    let prevLo = -1;
    if (typeof prev === "number" && Number.isSafeInteger(prev) && prev >= 0) {
      prevHi = Math.floor(prev / 1e8) | 0;
      prevLo = (prev - prevHi * 1e8) | 0;
    }
    let end = start + length;
    for (let k = hi === 0 ? length : 8; k > 0; k--) {
      if (lo === prevLo && hi === prevHi) return end === start + length ? SAME : CHANGED;
      line[--end] = 0x30 + (lo % 10);
      lo = (lo / 10) | 0;
      prevLo = (prevLo / 10) | 0;
    }
    while (end > start) {
      if (hi === prevHi) break;
      line[--end] = 0x30 + (hi % 10);
      hi = (hi / 10) | 0;
      prevHi = (prevHi / 10) | 0;
    }
    return end === start + length ? SAME : CHANGED;
  }
  const text = valueText(value);
  if (text === undefined || text === null || text.length !== length) return FAILED;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    diff |= line[start + i]! ^ c;
    line[start + i] = c;
  }
  return diff === 0 ? SAME : CHANGED;
}

/**
 * Writes the line of `event` after `head` (the line's `{"level":...,"time":...,` as bytes) into
 * `buf` from `at`: the new end, or -1 when the line is not one this writes (a string to escape or
 * not ASCII, an object or array value, a name pino redacts, a `toJSON`, no `type` first) or would
 * not fit before the end of `buf`. Nothing written counts until the caller takes the new end.
 */
export function encodeEventLine(buf: Bytes, at: number, head: Bytes, event: Record<string, unknown>, redacted: ReadonlySet<string>): number {
  if ("toJSON" in event) return -1;
  const type = event.type;
  if (typeof type !== "string") return -1;
  let shape = type === lastType ? lastShape : (shapes.get(type) ?? null);
  if (shape !== null && !patchLine(shape, event)) {
    // The line may be half patched: this shape is dropped, and the line built anew (or left to the text path).
    if (shapes.get(type) === shape) shapes.delete(type);
    lastType = null;
    lastShape = null;
    shape = null;
  }
  if (shape === null) {
    const keys = Object.keys(event);
    const { id, time } = event;
    if (keys[0] !== "type" || typeof id !== "string" || !Number.isSafeInteger(time) || !plain(type)) return -1;
    shape = build(type, keys, Object.values(event), redacted);
    if (shape === null) return -1;
    // The core has a few dozen event types; a caller's own types beyond 1,000 are not kept.
    if (shapes.has(type) || shapes.size < 1000) shapes.set(type, shape);
  }
  lastType = type;
  lastShape = shape;
  const line = shape.line;
  if (at < 0 || at + head.length + line.length > buf.length) return -1;
  buf.set(head, at);
  buf.set(line, at + head.length);
  return at + head.length + line.length;
}

/**
 * Patches the shape's line to hold the event's values: false when the event's member names are
 * not the shape's (same names, same order) or a value cannot be patched in (the line may then be
 * half patched, and the shape must go).
 *
 * The members are walked with `for...in`, which V8 runs from the object's enumeration cache with
 * each value read by its field index: no array of names and no array of values is made per event
 * (`Object.keys` and `Object.values` were about 800 instructions and two arrays a token request).
 * `for...in` also walks inherited enumerable names, which `Object.keys` does not: an event then
 * has more names than its shape, and goes through `build`, as an event of another shape would.
 */
function patchLine(shape: LineShape, event: Record<string, unknown>): boolean {
  const { keys, line, starts, lengths, changing, idIndex, timeIndex } = shape;
  const seen = shape.values;
  let i = 0;
  for (const key in event) {
    // for...in and Object.keys hand out the same internalized name strings: `!==` is then a pointer comparison.
    if (i >= keys.length || key !== keys[i]) return false;
    if (i > 0) {
      const value = event[key];
      // A member that changed in the last event (the id, the jti, the time) is patched without
      // comparing it first: comparing two strings of one length is a builtin call each time.
      if (changing[i] !== 0 || value !== seen[i]) {
        const fits = i === idIndex ? typeof value === "string" : i !== timeIndex || Number.isSafeInteger(value);
        const done = fits ? patch(line, starts[i]!, lengths[i]!, value, seen[i]) : FAILED;
        if (done === FAILED) return false;
        changing[i] = done === CHANGED ? 1 : 0;
        seen[i] = value;
      }
    }
    i++;
  }
  return i === keys.length;
}

/** The bytes of ASCII text (a line's start, `{"level":"info","time":"...",`, or a whole line built here). */
export function headBytes(text: string): Bytes {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}
