import { CorruptRowError, UnstorableValueError } from "./errors.js";
import type { SqlFamily } from "./schema.js";

// Values in and out. Drivers differ in what they return (pg hands BIGINT back as text, mysql2 as
// text with bigNumberStrings, better-sqlite3 as number or bigint), so every read goes through
// these converters, which accept each form and refuse anything that would lose precision.

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// ignoreBOM: a stored value that begins with U+FEFF is text, not a file: keep it (the default
// decoder drops it, so a plant named "\uFEFFx" came back from PostgreSQL's bytea as "x").
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();

export function toInt(value: unknown, column: string): number {
  const n = typeof value === "number" ? value : typeof value === "bigint" || (typeof value === "string" && /^-?\d+$/.test(value)) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new CorruptRowError(`column ${column} does not hold a safe integer`);
  return n;
}

export const toNullableInt = (value: unknown, column: string): number | null => (value === null || value === undefined ? null : toInt(value, column));

export function toStringArray(value: unknown, column: string): string[] {
  let parsed: unknown;
  try {
    parsed = typeof value === "string" ? JSON.parse(value) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.some((v) => typeof v !== "string")) throw new CorruptRowError(`column ${column} is not a JSON array of strings`);
  return parsed as string[];
}

export function toText(value: unknown, column: string): string {
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) {
    try {
      return utf8.decode(value);
    } catch {
      throw new CorruptRowError(`column ${column} is not UTF-8`);
    }
  }
  throw new CorruptRowError(`column ${column} is not text`);
}

export const toNullableText = (value: unknown, column: string): string | null => (value === null || value === undefined ? null : toText(value, column));

export function toPlantId(value: unknown): bigint {
  if (typeof value === "string" && /^-?\d+$/.test(value)) return BigInt(value);
  if (typeof value === "bigint") return value;
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  throw new CorruptRowError("column id of pg_plants is not an integer");
}

export const json = (items: string[]): string => JSON.stringify(items);

/** Guards for values going in: what the engine cannot store exactly is refused before any query. */
export interface ValueGuards {
  /** Whether a key can exist in the store at all; a lookup of one that cannot is simply absent. */
  storableKey(s: string): boolean;
  /** For a text column written: refuses what the engine would silently alter or reject. */
  text(s: string, field: string): string;
  nullableText(s: string | null, field: string): string | null;
  /** Free text keeps U+0000: PostgreSQL stores it as UTF-8 bytes in a bytea column. */
  free(s: string, field: string): string | Uint8Array;
  /**
   * Plant ids as parameters: pg and mysql2 bind bigint exactly; SQLite drivers differ (D1 binds
   * no bigint), so SQLite gets decimal text, which an INTEGER-affinity column stores and compares
   * as the exact 64-bit integer.
   */
  plantIdParam(id: bigint): bigint | string;
}

/** The {@link ValueGuards} of one engine family. */
export function valueGuards(family: SqlFamily): ValueGuards {
  const storableKey = (s: string): boolean => !LONE_SURROGATE.test(s) && !(family === "postgres" && s.includes("\u0000"));
  const text = (s: string, field: string): string => {
    if (LONE_SURROGATE.test(s)) throw new UnstorableValueError(`${field} contains a lone UTF-16 surrogate, which no SQL engine stores exactly`);
    if (family === "postgres" && s.includes("\u0000")) throw new UnstorableValueError(`${field} contains U+0000, which PostgreSQL text cannot hold`);
    return s;
  };
  const nullableText = (s: string | null, field: string): string | null => (s === null ? null : text(s, field));
  const free = (s: string, field: string): string | Uint8Array => {
    if (LONE_SURROGATE.test(s)) throw new UnstorableValueError(`${field} contains a lone UTF-16 surrogate, which no SQL engine stores exactly`);
    return family === "postgres" ? utf8Encoder.encode(s) : s;
  };
  const plantIdParam = (id: bigint): bigint | string => (family === "sqlite" ? id.toString() : id);
  return { storableKey, text, nullableText, free, plantIdParam };
}
