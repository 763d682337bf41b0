/**
 * Text every backend can store unchanged: no U+0000 (PostgreSQL text rejects it) and no lone
 * surrogates (UTF-8 cannot encode them). Its own module so that runtime code can check text
 * without pulling in the schemas.
 */
export function isStorableText(text: string): boolean {
  return !/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/**
 * The characters that show as nothing: white space (what `trim()` removes), control and format
 * characters (U+0085, U+200B zero-width space, U+2060 word joiner, U+00AD soft hyphen, U+200E and
 * other direction marks, U+FEFF) and the Hangul fillers; a character class body for RegExp `u`.
 */
export const INVISIBLE_CLASS = String.raw`\s\p{Cc}\p{Cf}\u115F\u1160\u3164\uFFA0`;
