/**
 * Generated NewPlant bodies: valid ones, values mutated one field at a time (huge numbers, floats,
 * exponents, -0, int64 edges ± 1, wrong types, long strings, Unicode with lone surrogates and
 * U+0000), structural mutations (duplicate keys, BOM, deep nesting, non-object tops) and raw byte
 * corruption. `expectPlant` is the reference: which outcomes a correct server may give, written
 * from the OpenAPI NewPlant schema and the design's error table, not from core.
 */
import fc from "fast-check";
import { ApiErrorCode } from "@plantgate/core";

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
export const MAX_TEXT = 256;
export const MAX_BODY = 65_536;

/** A member value as JSON text plus what it means. */
export type IdSpec =
  | { k: "int"; v: bigint }
  | { k: "known" }
  | { k: "literal"; raw: string }
  | { k: "json"; raw: string }
  | { k: "absent" };

export type TextSpec = { k: "str"; s: string } | { k: "json"; raw: string } | { k: "absent" };

export type TextMutation =
  | { k: "truncate"; n: number }
  | { k: "insertByte"; pos: number; byte: number }
  | { k: "append"; text: string }
  | { k: "rawLoneSurrogate" }
  | { k: "rawControl"; byte: number };

export interface PlantSpec {
  id: IdSpec;
  name: TextSpec;
  tag: TextSpec;
  extras: [string, string][];
  dupKey: null | "id" | "name" | "tag";
  order: number;
  top: "object" | "array" | "string" | "number" | "null" | "deepArray";
  bom: boolean;
  deep: number | null;
  pad: number | null;
  textMutation: TextMutation | null;
  contentType: string | null;
  method: string;
}

const int64Edge = fc.constantFrom(INT64_MIN, INT64_MAX, INT64_MIN - 1n, INT64_MAX + 1n, 0n, -1n, 1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 2n ** 64n, -(2n ** 64n), 10n ** 30n);

/** Literals JSON allows for a number, with a doubtful integer meaning. */
const ID_LITERALS = ["-0", "1.0", "1e3", "1E3", "1e-3", "1.5", "-0.0", "1E400", "9223372036854775807.0", "9.223372036854775807e18", "0.1e1"];
/** Not JSON at all. */
const ID_INVALID = ["0x10", "01", "+1", "NaN", "Infinity", "-Infinity", ".5", "1.", "-", "1e", "- 1", "1_000", "０"];
const ID_WRONG_TYPE = ['"123"', '"9223372036854775807"', "true", "false", "[]", "[1]", "{}", '{"$numberLong":"1"}', '""'];

export const idArb: fc.Arbitrary<IdSpec> = fc.oneof(
  { weight: 8, arbitrary: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }).map((v) => ({ k: "int" as const, v })) },
  { weight: 2, arbitrary: int64Edge.map((v) => ({ k: "int" as const, v })) },
  { weight: 1, arbitrary: fc.constant({ k: "known" as const }) },
  { weight: 1, arbitrary: fc.constantFrom(...ID_LITERALS).map((raw) => ({ k: "literal" as const, raw })) },
  { weight: 1, arbitrary: fc.constantFrom(...ID_INVALID).map((raw) => ({ k: "json" as const, raw })) },
  { weight: 1, arbitrary: fc.constantFrom(...ID_WRONG_TYPE, "null").map((raw) => ({ k: "json" as const, raw })) },
  { weight: 1, arbitrary: fc.constant({ k: "absent" as const }) },
);

const unicodeText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  // "binary" includes lone surrogates; these are the named hostile ones.
  fc.constantFrom("\u0000", "a\u0000b", "\ud800", "x\udc00", "\udfff\ud800", "🌱", "e\u0301", "\u202e\u2066", "\ufeff", "\u2028\u2029", "<script>", "'; DROP TABLE pg_plants; --", "\\", '"'),
);

const textArb = (absentWeight: number): fc.Arbitrary<TextSpec> =>
  fc.oneof(
    { weight: 8, arbitrary: unicodeText.map((s) => ({ k: "str" as const, s })) },
    { weight: 1, arbitrary: fc.constantFrom(MAX_TEXT - 1, MAX_TEXT, MAX_TEXT + 1, 1000, 70_000).map((n) => ({ k: "str" as const, s: "n".repeat(n) })) },
    { weight: 1, arbitrary: fc.constantFrom(MAX_TEXT / 2, MAX_TEXT / 2 + 1).map((n) => ({ k: "str" as const, s: "🌱".repeat(n) })) },
    { weight: 1, arbitrary: fc.constantFrom("null", "1", "true", "[]", '["x"]', "{}", "1e3").map((raw) => ({ k: "json" as const, raw })) },
    { weight: absentWeight, arbitrary: fc.constant({ k: "absent" as const }) },
  );

const textMutationArb: fc.Arbitrary<TextMutation> = fc.oneof(
  fc.record({ k: fc.constant("truncate" as const), n: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ k: fc.constant("insertByte" as const), pos: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ k: fc.constant("append" as const), text: fc.constantFrom(" ", "\n", "x", "}", ",", "//c", "/*c*/", "\u0000", "{}") }),
  fc.constant({ k: "rawLoneSurrogate" as const }),
  fc.record({ k: fc.constant("rawControl" as const), byte: fc.integer({ min: 0, max: 0x1f }) }),
);

export const PLANT_CONTENT_TYPES = [
  "application/json; charset=utf-8",
  "application/json;charset=UTF-8",
  "Application/JSON",
  "application/problem+json",
  "application/json; charset=latin1",
  "application/json; charset=utf-16",
  "text/json",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/jsonx",
  "",
];

export const plantSpecArb: fc.Arbitrary<PlantSpec> = fc
  .record({
    id: idArb,
    name: textArb(1),
    tag: textArb(4),
    extras: fc.uniqueArray(fc.tuple(fc.oneof(fc.constantFrom("__proto__", "constructor", "ID", "Id", "id ", "extra", "prototype"), fc.string({ maxLength: 8 })).filter((k) => !["id", "name", "tag", "deep", "pad"].includes(k)), fc.constantFrom("1", "null", '"x"', "[1,2]", '{"a":{}}', "1e999", "-0")), { maxLength: 2, selector: ([k]) => k }),
    dupKey: fc.oneof({ weight: 12, arbitrary: fc.constant(null) }, fc.constantFrom("id" as const, "name" as const, "tag" as const)),
    order: fc.nat(5),
    top: fc.oneof({ weight: 20, arbitrary: fc.constant("object" as const) }, fc.constantFrom("array" as const, "string" as const, "number" as const, "null" as const, "deepArray" as const)),
    bomFlag: fc.integer({ min: 0, max: 15 }),
    deep: fc.oneof({ weight: 15, arbitrary: fc.constant(null) }, fc.constantFrom(10, 63, 64, 65, 200, 5000)),
    pad: fc.oneof({ weight: 15, arbitrary: fc.constant(null) }, fc.constantFrom(1000, 65_000, 70_000)),
    textMutation: fc.oneof({ weight: 10, arbitrary: fc.constant(null) }, textMutationArb),
    contentType: fc.oneof({ weight: 12, arbitrary: fc.constant("application/json") }, fc.constant(null), fc.constantFrom(...PLANT_CONTENT_TYPES)),
    method: fc.oneof({ weight: 20, arbitrary: fc.constant("POST") }, fc.constantFrom("GET", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")),
  })
  .map(({ bomFlag, ...s }): PlantSpec => ({ ...s, bom: bomFlag === 0 }));

/** Serializes a spec to the bytes sent. `knownId` is an id already stored. */
export function plantBytes(spec: PlantSpec, knownId: bigint): Uint8Array {
  const idText = spec.id.k === "int" ? spec.id.v.toString() : spec.id.k === "known" ? knownId.toString() : spec.id.k === "absent" ? null : spec.id.raw;
  const text = (t: TextSpec) => (t.k === "str" ? JSON.stringify(t.s) : t.k === "json" ? t.raw : null);
  const members: [string, string][] = [];
  if (idText !== null) members.push(["id", idText]);
  const n = text(spec.name);
  if (n !== null) members.push(["name", n]);
  const t = text(spec.tag);
  if (t !== null) members.push(["tag", t]);
  members.push(...spec.extras);
  if (spec.deep !== null) members.push(["deep", "[".repeat(spec.deep) + "]".repeat(spec.deep)]);
  if (spec.pad !== null) members.push(["pad", JSON.stringify("p".repeat(spec.pad))]);
  // Rotate the order: no member position may matter.
  const r = members.length === 0 ? 0 : spec.order % members.length;
  const ordered = [...members.slice(r), ...members.slice(0, r)];
  if (spec.dupKey !== null) {
    const first = ordered.find(([k]) => k === spec.dupKey);
    if (first) ordered.push([spec.dupKey, first[1]]);
    else ordered.push([spec.dupKey, '"dup"'], [spec.dupKey, '"dup"']);
  }
  const object = `{${ordered.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`;
  const top = { object, array: `[${object}]`, string: JSON.stringify(object), number: "42", null: "null", deepArray: "[".repeat(5000) + "]".repeat(5000) }[spec.top];
  let bytes = new TextEncoder().encode(top);
  const m = spec.textMutation;
  if (m) {
    if (m.k === "truncate") bytes = bytes.slice(0, Math.max(0, bytes.length - m.n));
    if (m.k === "insertByte") {
      const p = m.pos % (bytes.length + 1);
      bytes = Uint8Array.from([...bytes.slice(0, p), m.byte, ...bytes.slice(p)]);
    }
    if (m.k === "append") bytes = Uint8Array.from([...bytes, ...new TextEncoder().encode(m.text)]);
    if (m.k === "rawLoneSurrogate" || m.k === "rawControl") {
      // Inside the name string: ED A0 80 is a UTF-8-encoded lone surrogate (invalid UTF-8); a raw control byte is invalid JSON.
      const marker = new TextEncoder().encode('"name":"');
      const at = indexOf(bytes, marker);
      const insert = m.k === "rawLoneSurrogate" ? [0xed, 0xa0, 0x80] : [m.byte];
      if (at >= 0) bytes = Uint8Array.from([...bytes.slice(0, at + marker.length), ...insert, ...bytes.slice(at + marker.length)]);
      else bytes = Uint8Array.from([...bytes, ...insert]);
    }
  }
  if (spec.bom) bytes = Uint8Array.from([0xef, 0xbb, 0xbf, ...bytes]);
  return bytes;
}

function indexOf(hay: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const storable = (s: string) => !s.includes("\u0000") && !LONE.test(s);

/** What a correct server may answer for a body, once authentication passed. */
export interface PlantExpectation {
  /** Error numbers a correct server may give (400 family). */
  codes: Set<number>;
  /** The plant a 200 must echo and store; null when a 200 is wrong. */
  ok: { id: bigint; name: string; tag: string | null } | null;
  /** Whether the outcome is not fully determined (a corrupted body may or may not still parse). */
  loose: boolean;
}

/**
 * The reference. Every cause present adds its code; the server may report any one of them (the
 * order of checks is its choice). A body with no cause must be stored.
 */
export function expectPlant(spec: PlantSpec, bytes: Uint8Array, stored: (id: bigint) => boolean, knownId: bigint): PlantExpectation {
  const C = ApiErrorCode;
  const codes = new Set<number>();
  let okPossible = true;
  let loose = false;
  const mt = (spec.contentType ?? "").split(";")[0]!.trim().toLowerCase();
  const cs = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(spec.contentType ?? "")?.[1]?.toLowerCase();
  const jsonType = mt === "application/json" || (mt.startsWith("application/") && mt.endsWith("+json"));
  if (!jsonType || (cs !== undefined && cs !== "utf-8" && cs !== "utf8")) {
    codes.add(C.unsupportedMediaType);
    okPossible = false;
  }
  if (bytes.length > MAX_BODY) {
    codes.add(C.bodyTooLarge);
    okPossible = false;
  }
  if (spec.textMutation) {
    // Corrupted bytes: the result may or may not still be JSON; any body error is acceptable, and a
    // 200 is checked for consistency (what was echoed is what was stored) instead of against a value.
    for (const c of [C.invalidJson, C.notAnObject, C.missingField, C.wrongType, C.outOfRange, C.invalidValue, C.duplicateId]) codes.add(c);
    return { codes, ok: null, loose: true };
  }
  if (spec.bom) {
    // RFC 8259 §8.1: a parser MAY ignore a byte order mark; refusing the body is also allowed.
    codes.add(C.invalidJson);
    loose = true;
  }
  if (spec.top !== "object") {
    codes.add(C.notAnObject);
    // An array holding the (possibly malformed) object, or very deep nesting, may fail as JSON first.
    if (spec.top === "deepArray" || spec.top === "array") codes.add(C.invalidJson);
    return { codes, ok: null, loose: false };
  }
  if (spec.dupKey !== null) {
    codes.add(C.invalidJson);
    okPossible = false;
  }
  if (spec.deep !== null && spec.deep > 32) {
    // A nesting limit is a defence, not a rule of JSON: refusing or ignoring the member are both right.
    codes.add(C.invalidJson);
    loose = true;
  }
  let id: bigint | null = null;
  const idSpec = spec.id;
  if (idSpec.k === "absent") codes.add(C.missingField);
  else if (idSpec.k === "int" || idSpec.k === "known") {
    const v = idSpec.k === "known" ? knownId : idSpec.v;
    if (v < INT64_MIN || v > INT64_MAX) codes.add(C.outOfRange);
    else id = v;
  } else if (idSpec.k === "json") {
    if (idSpec.raw === "null") codes.add(C.missingField);
    else if (ID_INVALID.includes(idSpec.raw)) codes.add(C.invalidJson);
    else codes.add(C.wrongType);
  } else {
    // Valid JSON numbers with a doubtful integer meaning: "-0" is the integer 0; a fraction or an
    // exponent may be refused as not-an-integer or read as the integer it denotes.
    if (idSpec.raw === "-0") id = 0n;
    else {
      codes.add(C.wrongType);
      codes.add(C.outOfRange);
      loose = true;
      const exact = /^-?\d+(?:\.0+)?$/.test(idSpec.raw) ? BigInt(idSpec.raw.replace(/\.0+$/, "")) : idSpec.raw === "1e3" || idSpec.raw === "1E3" ? 1000n : idSpec.raw === "0.1e1" ? 1n : null;
      if (exact !== null && exact >= INT64_MIN && exact <= INT64_MAX) id = exact;
      else okPossible = false;
      if (idSpec.raw === "-0.0") id = 0n;
    }
  }
  if (id === null) okPossible = false;
  const checkText = (t: TextSpec, field: "name" | "tag"): string | null | undefined => {
    if (t.k === "absent") {
      if (field === "name") {
        codes.add(C.missingField);
        okPossible = false;
      }
      return null;
    }
    if (t.k === "json") {
      if (t.raw === "null") {
        if (field === "name") {
          codes.add(C.missingField);
          okPossible = false;
        }
        return null;
      }
      codes.add(C.wrongType);
      okPossible = false;
      return undefined;
    }
    const s = t.s;
    const codePoints = [...s].length;
    if ((field === "name" && s.length === 0) || codePoints > MAX_TEXT || !storable(s)) {
      codes.add(C.invalidValue);
      okPossible = false;
    } else if (s.length > MAX_TEXT) {
      // "256 characters": the README does not say in which unit; over 256 UTF-16 code units but
      // within 256 code points may go either way (see /work/briefs/h5-findings.md).
      codes.add(C.invalidValue);
      loose = true;
    }
    return s;
  };
  const name = checkText(spec.name, "name");
  const tag = checkText(spec.tag, "tag");
  if (id !== null && stored(id)) {
    codes.add(C.duplicateId);
    okPossible = false;
  }
  if (spec.id.k === "known") codes.add(C.duplicateId);
  return { codes, ok: okPossible && typeof name === "string" ? { id: id!, name, tag: typeof tag === "string" ? tag : null } : null, loose };
}
