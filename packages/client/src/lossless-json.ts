/**
 * A small strict JSON parser that keeps every number's source text, because `JSON.parse` rounds
 * integers past 2^53 and plant ids are int64 (`9223372036854775807` would come back as
 * `9223372036854775808`). Used for responses that carry int64 values.
 */

/** A JSON number exactly as written. */
export class JsonNumber {
  constructor(readonly raw: string) {}
  /** The value as a bigint when the literal is an integer (no fraction, no exponent), else null. */
  toBigInt(): bigint | null {
    return /^-?\d+$/.test(this.raw) ? BigInt(this.raw) : null;
  }
}

export type LosslessJson = null | boolean | string | JsonNumber | LosslessJson[] | { [key: string]: LosslessJson };

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const PLAIN = /[^"\\\u0000-\u001f]*/y;
const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
const MAX_DEPTH = 64;

/**
 * Parses `text` as one JSON value; throws `SyntaxError` (like `JSON.parse`) when it is not JSON.
 * Duplicate keys are an error: an ambiguous response is not one to act on.
 *
 * @example
 * const v = parseLosslessJson('{"id":9223372036854775807}') as { id: JsonNumber };
 * v.id.toBigInt(); // 9223372036854775807n
 */
export function parseLosslessJson(text: string): LosslessJson {
  let i = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`JSON: ${what} at position ${i}`);
  };
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const string = (): string => {
    i++;
    let out = "";
    for (;;) {
      PLAIN.lastIndex = i;
      const plain = PLAIN.exec(text)![0];
      out += plain;
      i += plain.length;
      const c = text[i];
      if (c === '"') {
        i++;
        return out;
      }
      if (c !== "\\") return fail("unterminated string or control character");
      const e = text[i + 1] ?? "";
      if (e === "u") {
        const hex = text.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) return fail("bad \\u escape");
        out += String.fromCharCode(parseInt(hex, 16));
        i += 6;
      } else {
        const decoded = ESCAPES[e];
        if (decoded === undefined) return fail("bad escape");
        out += decoded;
        i += 2;
      }
    }
  };
  const value = (depth: number): LosslessJson => {
    if (depth > MAX_DEPTH) fail("nesting too deep");
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const object: { [key: string]: LosslessJson } = Object.create(null);
      ws();
      if (text[i] === "}") {
        i++;
        return object;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a key");
        const key = string();
        if (Object.prototype.hasOwnProperty.call(object, key)) fail("duplicate key");
        ws();
        if (text[i++] !== ":") fail("expected ':'");
        object[key] = value(depth + 1);
        ws();
        const next = text[i++];
        if (next === "}") return object;
        if (next !== ",") fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const array: LosslessJson[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return array;
      }
      for (;;) {
        array.push(value(depth + 1));
        ws();
        const next = text[i++];
        if (next === "]") return array;
        if (next !== ",") fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, result] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return result;
      }
    }
    NUMBER.lastIndex = i;
    const number = NUMBER.exec(text)?.[0];
    if (number === undefined || number === "" || number === "-") return fail("unexpected token");
    i += number.length;
    return new JsonNumber(number);
  };
  const result = value(0);
  ws();
  if (i !== text.length) fail("unexpected data after the value");
  return result;
}
