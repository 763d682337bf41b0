/**
 * Text every backend can store unchanged: no U+0000 (PostgreSQL text rejects it) and no lone
 * surrogates (UTF-8 cannot encode them). Its own module so that runtime code can check text
 * without pulling in the schemas.
 */
export function isStorableText(text: string): boolean {
  return !/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}
