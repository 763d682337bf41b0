/**
 * Validators for static answers (the docs page and its files, openapi.json): a strong ETag made
 * once from the bytes, and RFC 9110 §13.1.2's If-None-Match evaluated for GET and HEAD.
 */
import { base64url } from "../crypto/index.js";

/**
 * A strong entity tag for `bytes`: the SHA-256 of the bytes, base64url, quoted (RFC 9110 §8.8.3).
 * WebCrypto, so it runs in workerd too; callers make it once per file, not per request.
 *
 * @example
 * await strongEtag(new TextEncoder().encode("hi")); // '"j0NDRmSPa5bfid2pAcUXaxCm2Dlh3TwayItZstwyeqQ"'
 */
export async function strongEtag(bytes: Uint8Array): Promise<string> {
  return `"${base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)))}"`;
}

/**
 * Whether an `If-None-Match` field value (RFC 9110 §13.1.2) is false for a representation whose
 * current ETag is `etag`, i.e. whether a GET or HEAD is answered 304: `*` (the representation
 * exists), or a list holding a tag that matches `etag` by the weak comparison (`W/"x"` matches
 * `"x"`). An absent, empty or malformed field (anything outside `"*" / #entity-tag`, e.g. an
 * unquoted tag, or `*` inside a list) is ignored: the request is answered as if it had none.
 *
 * @example
 * notModified('W/"a", "b"', '"b"'); // true
 * notModified('b', '"b"'); // false (malformed: ignored)
 */
export function notModified(field: string | null, etag: string): boolean {
  if (field === null) return false;
  // Trimmed by index: `/[ \t]+$/` tries every start position, and a field of blanks with a character
  // after them (16 KiB on Node, 128 KB on Workers) cost hundreds of ms of CPU a request until
  // 2026-12-01, unauthenticated (openapi.json, the docs page).
  let start = 0;
  let end = field.length;
  while (start < end && (field.charCodeAt(start) === 0x20 || field.charCodeAt(start) === 0x09)) start++;
  while (end > start && (field.charCodeAt(end - 1) === 0x20 || field.charCodeAt(end - 1) === 0x09)) end--;
  const value = field.slice(start, end);
  if (value === "*") return true;
  const opaque = etag.startsWith("W/") ? etag.slice(2) : etag;
  let matched = false;
  let i = 0;
  const n = value.length;
  while (i < n) {
    // Empty list elements and the whitespace around commas (RFC 9110 §5.6.1.2).
    const c = value.charCodeAt(i);
    if (c === 0x2c || c === 0x20 || c === 0x09) {
      i++;
      continue;
    }
    if (value.startsWith("W/", i)) i += 2;
    if (value.charCodeAt(i) !== 0x22) return false;
    const open = i;
    i++;
    // etagc = %x21 / %x23-7E / obs-text: a comma is allowed inside the quotes.
    for (; i < n; i++) {
      const t = value.charCodeAt(i);
      if (t === 0x22) break;
      if (t < 0x21 || t === 0x7f || t > 0xff) return false;
    }
    if (i >= n) return false;
    i++;
    if (value.slice(open, i) === opaque) matched = true;
    // After a tag: whitespace, then a comma or the end.
    while (i < n && (value.charCodeAt(i) === 0x20 || value.charCodeAt(i) === 0x09)) i++;
    if (i < n && value.charCodeAt(i) !== 0x2c) return false;
  }
  return matched;
}
