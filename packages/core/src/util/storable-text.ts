/**
 * Text every backend can store unchanged: no U+0000 (PostgreSQL text rejects it) and no lone
 * surrogates (UTF-8 cannot encode them). Its own module so that runtime code can check text
 * without pulling in the schemas.
 */
export function isStorableText(text: string): boolean {
  return !text.includes("\u0000") && isWellFormed(text);
}

/** A lone UTF-16 surrogate: text no store can hold (UTF-8 cannot encode it). */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether `text` is well-formed UTF-16: no lone surrogate (a high one not followed by a low one,
 * or a low one not preceded by a high one). UTF-8, which every store and every hash core makes
 * (`sha256`, PBKDF2) encodes text as, turns each lone surrogate into U+FFFD, so `"a\uD800"` and
 * `"a\uDC00"` would be one key; JSON text (a console body, a JWT's claims) carries them as
 * `"\ud800"` escapes. `String.prototype.isWellFormed` (ES2024: Node 20, workerd) where the runtime
 * has it, a few nanoseconds for a short string; else the regular expression.
 *
 * @example
 * isWellFormed("fern \uD83C\uDF31"); // true (a surrogate pair)
 * isWellFormed("fern \uD83C");       // false
 */
export const isWellFormed: (text: string) => boolean =
  typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function"
    ? (text) => (text as unknown as { isWellFormed(): boolean }).isWellFormed()
    : (text) => !LONE_SURROGATE.test(text);

/**
 * The characters that show as nothing: white space (what `trim()` removes), control and format
 * characters (U+0085, U+200B zero-width space, U+2060 word joiner, U+00AD soft hyphen, U+200E and
 * other direction marks, U+FEFF) and the Hangul fillers; a character class body for RegExp `u`.
 */
export const INVISIBLE_CLASS = String.raw`\s\p{Cc}\p{Cf}\u115F\u1160\u3164\uFFA0`;

/**
 * The bidirectional embedding, override and isolate controls (U+202A-U+202E, U+2066-U+2069): in a
 * name they reorder the text around it wherever it is shown (a log line, a terminal, the CLI's
 * JSON, another tool's page), so that "mal\u202Eyrol" reads as another name. Direction marks
 * (U+200E, U+200F, U+061C) reorder nothing beyond themselves and stay allowed inside a name.
 */
export const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/;

/** JavaScript's own string order, by UTF-16 code unit: the order the storage interfaces define for ids. */
export const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
