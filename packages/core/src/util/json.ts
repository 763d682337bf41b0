/**
 * A strict, lossless JSON parser. Numbers keep their source text ({@link JsonNumber}) because
 * `JSON.parse` rounds integers past 2^53 and plant ids are int64. It also rejects what
 * `JSON.parse` silently accepts and what a hostile client could use: duplicate keys and deep nesting.
 */

/** A JSON number as written in the source. */
export class JsonNumber {
  constructor(readonly raw: string) {}
  /** True when the literal is an integer (no fraction, no exponent). */
  get isInteger(): boolean {
    return /^-?\d+$/.test(this.raw);
  }
}

export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | { [key: string]: JsonValue };

/** Thrown for malformed input; `message` says where, never echoes the input. */
export class JsonSyntaxError extends Error {
  override readonly name = "JsonSyntaxError";
}

const MAX_DEPTH = 64;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const STRING_PLAIN = /[^"\\\u0000-\u001f]*/y;

/**
 * Parses `text` as one JSON value.
 *
 * @example
 * const v = parseJson('{"id": 9223372036854775807}') as { id: JsonNumber };
 * BigInt(v.id.raw); // 9223372036854775807n, exact
 */
export function parseJson(text: string): JsonValue {
  let i = 0;
  const fail = (what: string): never => {
    throw new JsonSyntaxError(i >= text.length ? `unexpected end of JSON input` : `${what} at position ${i}`);
  };
  const ws = () => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else return;
    }
  };
  const str = (): string => {
    i++; // opening quote
    let out = "";
    for (;;) {
      STRING_PLAIN.lastIndex = i;
      const m = STRING_PLAIN.exec(text)!;
      out += m[0];
      i += m[0].length;
      const c = text[i];
      if (c === '"') {
        i++;
        return out;
      }
      if (c !== "\\") return fail("invalid character in string");
      const e = text[i + 1];
      i += 2;
      switch (e) {
        case '"': out += '"'; break;
        case "\\": out += "\\"; break;
        case "/": out += "/"; break;
        case "b": out += "\b"; break;
        case "f": out += "\f"; break;
        case "n": out += "\n"; break;
        case "r": out += "\r"; break;
        case "t": out += "\t"; break;
        case "u": {
          const hex = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) return fail("invalid unicode escape");
          out += String.fromCharCode(parseInt(hex, 16));
          i += 4;
          break;
        }
        default:
          i -= 2;
          return fail("invalid escape");
      }
    }
  };
  const value = (depth: number): JsonValue => {
    if (depth > MAX_DEPTH) fail("nesting too deep");
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const obj: { [key: string]: JsonValue } = Object.create(null);
      ws();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a string key");
        const key = str();
        if (Object.prototype.hasOwnProperty.call(obj, key)) fail("duplicate key");
        ws();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        obj[key] = value(depth + 1);
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return obj;
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const arr: JsonValue[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return arr;
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    if (text.startsWith("true", i)) {
      i += 4;
      return true;
    }
    if (text.startsWith("false", i)) {
      i += 5;
      return false;
    }
    if (text.startsWith("null", i)) {
      i += 4;
      return null;
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m && m[0].length > 0 && m[0] !== "-") {
      i += m[0].length;
      return new JsonNumber(m[0]);
    }
    return fail("unexpected token");
  };
  // body.ts decodes with ignoreBOM: false, so a leading BOM is already gone: RFC 8259 §8.1 lets a
  // parser ignore it. Any other stray byte fails here.
  const result = value(0);
  ws();
  if (i !== text.length) fail("unexpected data after JSON value");
  return result;
}
