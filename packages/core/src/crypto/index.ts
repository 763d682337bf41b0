/**
 * Web Crypto only (no node:*), so the same code runs in Node and workerd.
 */

import { isWellFormed } from "../util/storable-text.js";

const encoder = new TextEncoder();

/** Source of randomness; injectable so tests can pin it. */
export type RandomBytes = (length: number) => Uint8Array;

const POOL_SIZE = 4096;
let pool = new Uint8Array(0);
let poolOffset = 0;

/**
 * Cryptographically secure random bytes from `crypto.getRandomValues`, drawn from a pool refilled
 * 4 KiB at a time (one call per ~100 tokens instead of one per token). Every byte is handed out
 * once and the pool is never shared with the caller.
 */
export const defaultRandomBytes: RandomBytes = (length) => {
  if (length > POOL_SIZE / 4) {
    const out = new Uint8Array(length);
    crypto.getRandomValues(out);
    return out;
  }
  if (poolOffset + length > pool.length) {
    pool = new Uint8Array(POOL_SIZE);
    crypto.getRandomValues(pool);
    poolOffset = 0;
  }
  const out = pool.slice(poolOffset, poolOffset + length);
  // Zeroed once handed out, so the pool holds only bytes nobody has seen.
  pool.fill(0, poolOffset, poolOffset + length);
  poolOffset += length;
  return out;
};

const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/** Every 12-bit group as its two base64url characters. */
const B64URL_PAIRS: string[] = Array.from({ length: 4096 }, (_, i) => B64URL[i >> 6]! + B64URL[i & 63]!);

/** base64url without padding (RFC 4648 §5). */
export function base64url(bytes: Uint8Array): string {
  let out = "";
  const n = bytes.length;
  const whole = n - (n % 3);
  let i = 0;
  for (; i < whole; i += 3) {
    const v = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += B64URL_PAIRS[v >> 12]! + B64URL_PAIRS[v & 4095]!;
  }
  if (n - whole === 1) {
    const v = bytes[i]! << 4;
    out += B64URL_PAIRS[v]!;
  } else if (n - whole === 2) {
    const v = (bytes[i]! << 10) | (bytes[i + 1]! << 2);
    out += B64URL_PAIRS[v >> 6]! + B64URL[v & 63]!;
  }
  return out;
}

/** Standard base64 with padding. */
export function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Decodes standard base64 (with or without padding); null when malformed. */
export function fromBase64(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.replace(/=+$/, "").length % 4 === 1) return null;
  try {
    const binary = atob(text);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

/** Decodes base64url (RFC 4648 §5, padding optional); null for any other text or when malformed. */
export function fromBase64url(text: string): Uint8Array | null {
  return /^[A-Za-z0-9_-]*$/.test(text) ? fromBase64(text.replace(/-/g, "+").replace(/_/g, "/")) : null;
}

/** A fresh opaque token of `bytes` random bytes (default 32 = 256 bits), base64url. */
export function randomToken(random: RandomBytes, bytes = 32): string {
  return base64url(random(bytes));
}

/** SHA-256 of a UTF-8 string, base64url. Secrets reach storage only in this form. */
export async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return base64url(new Uint8Array(digest));
}

/**
 * Compares two strings in time that depends only on their lengths, not on where they differ.
 * Callers compare fixed-length hashes, so the length leaks nothing.
 */
export function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  const n = Math.max(x.length, y.length);
  for (let i = 0; i < n; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** Options of the password hash. */
export interface PasswordHashOptions {
  /** PBKDF2-SHA256 iterations for new hashes. Default 600 000 (OWASP 2023). workerd caps PBKDF2 at 100 000. */
  iterations?: number;
}

const PBKDF2_DEFAULT_ITERATIONS = 600_000;
/**
 * The largest iteration count a stored hash is checked at (a hash past it verifies nothing: a
 * corrupt or hostile row cannot make one check cost minutes), and so the most the options take for
 * new hashes (MAX_PASSWORD_HASH_ITERATIONS).
 */
export const PBKDF2_MAX_ITERATIONS = 10_000_000;

async function pbkdf2(password: string, salt: Uint8Array, iterations: number, length: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt: salt as BufferSource, iterations },
    key,
    length * 8,
  );
  return new Uint8Array(bits);
}

/**
 * Spends the CPU of `iterations` PBKDF2-SHA256 iterations and throws the result away: every refused
 * password check is padded to the current cost with it (an unknown username's, which verifies
 * nothing, spends the whole cost here), so every refusal takes as long as a check at today's cost.
 */
export async function spendPasswordWork(iterations: number): Promise<void> {
  if (iterations >= 1) await pbkdf2("plantgate-padding", PADDING_SALT, Math.min(iterations, PBKDF2_MAX_ITERATIONS), 32);
}

const PADDING_SALT = new Uint8Array(16);

/**
 * PBKDF2-HMAC pads a password shorter than SHA-256's 64-byte block with zero bytes, so `pw` and
 * `pw` followed by U+0000 characters give the same hash. A password may not contain U+0000: it is
 * refused when hashed, and a presented one never verifies.
 */
const NUL = "\u0000";

/**
 * The UTF-8 that PBKDF2 is given turns a lone surrogate into U+FFFD, so `pw\uD800`, `pw\uDC00` and
 * `pw\uFFFD` would be one password. A password must be well-formed UTF-16: one that is not is
 * refused when hashed and never verifies (since 2026-11-30; a form body cannot carry one, a JSON
 * body can).
 */
const passwordText = (password: string): boolean => !password.includes(NUL) && isWellFormed(password);

/**
 * Hashes a password as a PHC string: `$pbkdf2-sha256$i=600000,l=32$<salt>$<hash>` (base64, no padding).
 * PBKDF2 because it is the slow hash Web Crypto offers in every runtime (Node and workerd alike).
 * Throws a TypeError for a password that contains U+0000 or an unpaired surrogate (see {@link verifyPassword}).
 *
 * @example
 * const phc = await hashPassword("correct horse", defaultRandomBytes);
 */
export async function hashPassword(
  password: string,
  random: RandomBytes,
  options: PasswordHashOptions = {},
): Promise<string> {
  if (password.includes(NUL)) throw new TypeError("a password must not contain U+0000");
  if (!isWellFormed(password)) throw new TypeError("a password must not contain unpaired surrogates");
  const iterations = options.iterations ?? PBKDF2_DEFAULT_ITERATIONS;
  const salt = random(16);
  const hash = await pbkdf2(password, salt, iterations, 32);
  const b64 = (u: Uint8Array) => base64(u).replace(/=+$/, "");
  return `$pbkdf2-sha256$i=${iterations},l=32$${b64(salt)}$${b64(hash)}`;
}

const PHC = /^\$pbkdf2-sha256\$i=(\d{1,8}),l=(\d{1,3})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

/**
 * Verifies a password against a PHC string from {@link hashPassword}. A malformed hash verifies
 * nothing (returns false) rather than throwing, so a corrupt row cannot become a 5xx or a bypass.
 * A password with U+0000 in it verifies nothing, at once: PBKDF2-HMAC would take `pw` followed by
 * U+0000 for `pw` (see hashPassword). So does one with an unpaired surrogate, which UTF-8 makes
 * U+FFFD (since 2026-11-30). The early answer tells a caller nothing it did not send. (An account
 * created before these rules with such a password can no longer sign in with it as given; for a
 * lone surrogate, U+FFFD in its place still signs in.)
 *
 * @example
 * if (!(await verifyPassword(input, account.passwordHash))) throw invalidGrant;
 */
export async function verifyPassword(password: string, phc: string): Promise<boolean> {
  return (await verifyPasswordCounted(password, phc)).ok;
}

/**
 * {@link verifyPassword}, also saying how many PBKDF2 iterations it ran (0 when it refused before
 * hashing: a password with U+0000 or an unpaired surrogate, a hash that is not ours), so a caller can make every refusal
 * cost the same (see spendPasswordWork).
 */
export async function verifyPasswordCounted(password: string, phc: string): Promise<{ ok: boolean; iterations: number }> {
  if (!passwordText(password)) return { ok: false, iterations: 0 };
  const m = PHC.exec(phc);
  if (!m) return { ok: false, iterations: 0 };
  const iterations = Number(m[1]);
  const length = Number(m[2]);
  const salt = fromBase64(m[3]!);
  const expected = fromBase64(m[4]!);
  if (!salt || !expected || iterations < 1 || iterations > PBKDF2_MAX_ITERATIONS || length !== expected.length || length < 16) {
    return { ok: false, iterations: 0 };
  }
  const actual = await pbkdf2(password, salt, iterations, length);
  let diff = 0;
  for (let i = 0; i < length; i++) diff |= actual[i]! ^ expected[i]!;
  return { ok: diff === 0, iterations };
}

/** A random (version 4) UUID drawn from `random`, so tests that pin randomness pin ids too. */
export function uuidV4(random: RandomBytes): string {
  return uuidV4At(random(16), 0);
}

/**
 * The version 4 UUID of the 16 random bytes of `bytes` from `offset` (the version and variant
 * bits are set in the text, the bytes are not changed). Every event gets an id, so this is on the
 * token path when events are on: the 36 characters go into one flat string by one
 * `String.fromCharCode` (about 0.2 µs, against 0.35 for a rope of 20 joined pieces, which is then
 * flattened again when the id is written).
 */
export function uuidV4At(bytes: Uint8Array, offset: number): string {
  const out = UUID_CODES;
  let j = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out[j++] = 0x2d;
    let byte = bytes[offset + i]!;
    if (i === 6) byte = (byte & 0x0f) | 0x40;
    else if (i === 8) byte = (byte & 0x3f) | 0x80;
    out[j++] = HEX_CODES[byte >> 4]!;
    out[j++] = HEX_CODES[byte & 15]!;
  }
  return String.fromCharCode.apply(null, out);
}

/** The character codes of `0`-`9a`-`f`, and the 36 codes of the UUID being made. */
const HEX_CODES = [..."0123456789abcdef"].map((c) => c.charCodeAt(0));
const UUID_CODES: number[] = new Array<number>(36).fill(0);

