/** Event lines written as bytes into the held stdout block are the text path's lines, byte for byte. */
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { SecurityEvent } from "@plantgate/core";
import { encodeEventLine, headBytes } from "../src/event-bytes.js";
import { createLog, eventLogger } from "../src/index.js";

const REDACTED = new Set(["password", "client_secret"]);
const HEAD = '{"level":"info","time":"2026-11-25T12:00:00.000Z",';

/** The line the text path writes for `event` (through a plain destination), with HEAD's time. */
function textLine(event: Record<string, unknown>): string {
  let text = "";
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  eventLogger(createLog({ destination: stream }))(event as unknown as SecurityEvent);
  return text.replace(/^\{"level":"info","time":"[^"]*",/, HEAD);
}

function byteLine(event: Record<string, unknown>, buf = new Uint8Array(4096), at = 0): string | null {
  const end = encodeEventLine(buf, at, headBytes(HEAD), event, REDACTED);
  return end < 0 ? null : Buffer.from(buf.subarray(at, end)).toString("utf8");
}

const ISSUED = {
  type: "token.issued",
  grant_type: "client_credentials",
  client_id: "reporting",
  subject: "client:reporting",
  scope: "Platform_UserAPIs offline_access",
  jti: "Zx9s8d7f6g5h4j3k2l1_-abcdefgHIJKLMNOPQRS12",
  expires_at: 1767232800000,
  family_id: null,
  client_ip: "203.0.113.7",
  id: "0b6a3c52-7a53-4f7e-9d47-3e1f8f0c2a11",
  time: 1767225600000,
};

describe("event lines as bytes", () => {
  it("are the text path's line for events as requests make them, including values repeated from the last event", () => {
    // Repeats and changes in turn: a member's bytes are kept once its value was seen twice running.
    const events = Array.from({ length: 12 }, (_, i) => ({
      ...ISSUED,
      client_id: i % 3 === 0 ? "reporting" : i % 3 === 1 ? "reporting" : `c${i}`,
      jti: `jti-${i}`,
      expires_at: 1767232800000 + Math.floor(i / 4) * 1000,
      family_id: i % 5 === 0 ? `fam-${i}` : null,
      id: `id-${i}`,
      time: 1767225600000 + i,
    }));
    for (const event of events) {
      const bytes = byteLine(event);
      expect(bytes, JSON.stringify(event)).not.toBeNull();
      expect(bytes).toBe(textLine(event));
    }
    // Numbers and other plain values as JSON writes them; members JSON leaves out are left out.
    const varied = { ...ISSUED, ratio: 1.5, negZero: -0, nan: Number.NaN, inf: -Infinity, big: 1e21, small: 5e-7, yes: true, no: false, gone: undefined, fn: () => 1, nothing: null };
    expect(byteLine(varied)).toBe(textLine(varied));
    expect(byteLine(varied)).toBe(textLine(varied));
  });

  it("leaves to the text path any line with a string to escape or not ASCII, an object value, a redacted name or an odd shape", () => {
    const odd: Array<Record<string, unknown>> = [
      { ...ISSUED, client_id: 'a"b' },
      { ...ISSUED, client_id: "back\\slash" },
      { ...ISSUED, client_id: "tab\there" },
      { ...ISSUED, client_id: "\u007f" },
      { ...ISSUED, client_id: "é" },
      { ...ISSUED, client_id: "🌱" },
      { ...ISSUED, roles: ["a"] },
      { ...ISSUED, nested: { a: 1 } },
      { ...ISSUED, count: 12n },
      { ...ISSUED, client_secret: "s3cret" },
      { ...ISSUED, 'we"ird': "x" },
      { ...ISSUED, type: 'token"issued' },
      { ...ISSUED, id: "id\n" },
      { time: ISSUED.time, type: ISSUED.type, id: ISSUED.id },
      { ...ISSUED, time: 1.5 },
      { ...ISSUED, toJSON: () => ({}) },
    ];
    for (const event of odd) expect(byteLine(event), JSON.stringify(Object.keys(event))).toBeNull();
    // After a value that needed the text path, the same member's next plain value is bytes again.
    expect(byteLine({ ...ISSUED, client_id: "reporting" })).toBe(textLine({ ...ISSUED, client_id: "reporting" }));
  });

  it("patch the last line of a type in place and stay the text path's line through any run of changes", () => {
    // Values of one length and of others, plain and not, members JSON leaves out, numbers of every
    // form: a line patched where its value changed, built anew, or left to the text path (a half
    // patched line must never be written later: the quote and the backslash come mid-string).
    const pool: Record<string, unknown[]> = {
      client_id: ["reporting", "reportinG", "report'ng", 'repo"ting', "repor\\ing", 'XXXXXXXX"', "rep", "é-client", undefined],
      jti: ["aaaa-1111", "bbbb-2222", "cccc-3333", "dd", "eeee\\4444", "ZZZZZZZ\u0001"],
      // Same-length times that differ only in their high digits (or only in their low ones) too.
      expires_at: [1767232800000, 1767232801000, 2767232800000, 1867232800000, 1767232800000 + 1e8, 1000000000007, 9007199254740991, 1000000000000000, 100000000, 999999999, 99999999, 10000000, 999, 1000, -1000, 1.5, Number.NaN, 1e21, -0, 0, 7],
      family_id: [null, "fam-1", "fam-2", false, true, () => 1],
      id: ["0b6a3c52-7a53-4f7e-9d47-3e1f8f0c2a11", "1c7b4d63-8b64-4a8f-8e58-4f2a9a1d3b22", "short-id", 12345],
      time: [1767225600000, 1767225600001, 1767225699999, 2767225600000, 1767325600001, 17, 1.5],
      // A string and a number whose texts are as long ("1" and 123): the quotes are not there to keep.
      extra: [123, "1", 45, "ab", 1234, "12", -1, "x", null, "nu", true, "tr", false, "fal"],
    };
    // Every ordered pair of one member's values, one after the other.
    for (const a of pool.extra!) {
      for (const b of pool.extra!) {
        for (const value of [a, b]) expect(byteLine({ ...ISSUED, extra: value }), `${String(a)} then ${String(b)}`).toBe(textLine({ ...ISSUED, extra: value }));
      }
    }
    const names = Object.keys(pool);
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    let event: Record<string, unknown> = { ...ISSUED };
    let written = 0;
    for (let round = 0; round < 3000; round++) {
      // Mostly one member at a time, as requests change them; now and then several.
      const changes = next(4) === 0 ? 3 : 1;
      event = { ...event };
      for (let c = 0; c < changes; c++) {
        const name = names[next(names.length)]!;
        const values = pool[name]!;
        event[name] = values[next(values.length)];
      }
      const bytes = byteLine(event);
      const plainEvent =
        typeof event.id === "string" &&
        Number.isSafeInteger(event.time) &&
        Object.values(event).every((v) => typeof v !== "string" || /^[\x20-\x7e]*$/.test(v.replace(/["\\]/g, "\u0000")));
      if (bytes === null) expect(plainEvent, JSON.stringify(event)).toBe(false);
      else {
        written++;
        expect(bytes, JSON.stringify(event)).toBe(textLine(event));
      }
    }
    expect(written).toBeGreaterThan(600);
  });

  it("write an event's own members only, in their order, when its shape's names are walked (inherited, added or reordered names)", () => {
    // The line of a type is patched while the event's names (walked with for...in, which also
    // walks inherited enumerable names) are the shape's; any other list of names builds the line anew.
    // client_id and subject as long as each other: swapped, each would fit the other's place.
    const base = { ...ISSUED, subject: "client:ab", jti: "same-length-jti-000000000000000000000001" };
    expect(byteLine(base)).toBe(textLine(base));
    const inheriting = Object.assign(Object.create({ inherited: "from the prototype" }) as Record<string, unknown>, { ...base, jti: "same-length-jti-000000000000000000000002" });
    const line = byteLine(inheriting);
    expect(line).not.toContain("inherited");
    expect(line).toBe(textLine(inheriting));
    const variants: Array<Record<string, unknown>> = [
      { ...base, jti: "same-length-jti-000000000000000000000003" },
      { ...base, extra: 1 },
      { ...base, jti: "same-length-jti-000000000000000000000004" },
      (({ subject, ...rest }) => ({ ...rest, subject }))(base),
      { ...base, jti: "same-length-jti-000000000000000000000005" },
      (({ type, grant_type, client_id, subject, ...rest }) => ({ type, grant_type, subject, client_id, ...rest }))(base),
      { ...base, jti: "same-length-jti-000000000000000000000006" },
      (({ scope: _scope, ...rest }) => rest)(base),
      { ...base, jti: "same-length-jti-000000000000000000000007" },
    ];
    for (const event of variants) expect(byteLine(event), JSON.stringify(Object.keys(event))).toBe(textLine(event));
  });

  it("leaves to the text path an event whose id or time is not its own member (inherited, or a getter of its class): it threw a TypeError", () => {
    // The checks read id and time through the prototype, the line's members come from Object.keys:
    // build placed a member it had no text for (before the fix: "Cannot read properties of undefined").
    const fromProto = (own: Record<string, unknown>, inherited: Record<string, unknown>) => Object.assign(Object.create(inherited) as Record<string, unknown>, own);
    const { id, time, ...rest } = ISSUED;
    class Issued {
      type = "token.custom";
      client_id = "reporting";
      get id() {
        return id;
      }
      time = time;
    }
    const odd: Array<Record<string, unknown>> = [
      fromProto({ ...rest, time }, { id }),
      fromProto({ ...rest, id }, { time }),
      fromProto(rest, { id, time }),
      new Issued() as unknown as Record<string, unknown>,
    ];
    for (const event of odd) {
      expect(byteLine(event), JSON.stringify(Object.keys(event))).toBeNull();
      // The text path writes it, as one JSON line with the event's id and time.
      const line = textLine(event);
      expect(line.endsWith("}\n") && line.indexOf("\n") === line.length - 1).toBe(true);
      expect(JSON.parse(line)).toMatchObject({ event: event.type, event_time: time, id, client_id: "reporting" });
    }
  });

  it("writes nothing past the end of the block: a line that does not fit is refused whole", () => {
    const full = byteLine(ISSUED)!;
    const length = Buffer.byteLength(full);
    for (const room of [0, 10, length - 1]) {
      const buf = new Uint8Array(100 + room).fill(0x2a);
      expect(byteLine(ISSUED, buf, 100)).toBeNull();
      // The bytes before the start are untouched (what was written is not counted: the caller keeps its end).
      expect([...buf.subarray(0, 100)].every((b) => b === 0x2a)).toBe(true);
    }
    expect(byteLine(ISSUED, new Uint8Array(100 + length), 100)).toBe(full);
  });
});
