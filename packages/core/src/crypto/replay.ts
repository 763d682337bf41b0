/**
 * Sealed replay data of a rotated refresh token (Web Crypto only, no node:*).
 *
 * The answer of a refresh exchange is kept, so a retry of that exchange can be answered with the
 * very same tokens, but it must be useless to anyone who reads the store: it is encrypted with
 * AES-256-GCM under a key derived (HKDF-SHA-256) from the presented refresh token itself, which
 * the store never holds, with the token's stored hash as associated data (so a sealed answer moved
 * to another row does not open). Only someone presenting the old token can open it.
 */
import { base64url, fromBase64url, type RandomBytes } from "./index.js";
import type { HkdfAesGcm } from "./provider.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const INFO = encoder.encode("plantgate refresh-token replay v1");
const SALT = new Uint8Array(0);
const PREFIX = "v1.";
const FLATTEN = /[^A-Za-z0-9_.-]/;

async function replayKey(token: string, usage: "encrypt" | "decrypt"): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", encoder.encode(token), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: SALT, info: INFO }, material, { name: "AES-GCM", length: 256 }, false, [usage]);
}

/**
 * Seals `plaintext` for the holder of `token`: `v1.<iv>.<ciphertext+tag>` (base64url).
 *
 * @example
 * const sealed = await sealReplay(presented, await sha256(presented), JSON.stringify(answer), defaultRandomBytes);
 */
export async function sealReplay(token: string, tokenHash: string, plaintext: string, random: RandomBytes, cipher?: HkdfAesGcm): Promise<string> {
  const iv = random(12);
  const sealed = cipher
    ? cipher.encrypt(encoder.encode(token), INFO, iv, encoder.encode(tokenHash), encoder.encode(plaintext))
    : await crypto.subtle.encrypt(
        { name: "AES-GCM", iv: iv as BufferSource, additionalData: encoder.encode(tokenHash) },
        await replayKey(token, "encrypt"),
        encoder.encode(plaintext),
      );
  const text = `${PREFIX}${base64url(iv)}.${base64url(new Uint8Array(sealed))}`;
  // base64url builds its result piece by piece, which V8 keeps as a tree of ~400 small strings
  // (about 10 KB) until something reads the whole string; a store that keeps it (the memory store)
  // would keep that tree. Reading it once with a regex makes V8 flatten it in place.
  FLATTEN.test(text);
  return text;
}


/**
 * Opens what {@link sealReplay} sealed for `token`; null when it is malformed or was sealed for
 * another token (or another hash).
 *
 * @example
 * const answer = await openReplay(presented, tokenHash, record.replay);
 */
export async function openReplay(token: string, tokenHash: string, sealed: string, cipher?: HkdfAesGcm): Promise<string | null> {
  if (!sealed.startsWith(PREFIX)) return null;
  const [ivText, dataText, extra] = sealed.slice(PREFIX.length).split(".");
  if (ivText === undefined || dataText === undefined || extra !== undefined) return null;
  const iv = fromBase64url(ivText);
  const data = fromBase64url(dataText);
  if (!iv || iv.length !== 12 || !data || data.length < 16) return null;
  if (cipher) {
    const plain = cipher.decrypt(encoder.encode(token), INFO, iv, encoder.encode(tokenHash), data);
    return plain === null ? null : decoder.decode(plain);
  }
  try {
    const key = await replayKey(token, "decrypt");
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: iv as BufferSource, additionalData: encoder.encode(tokenHash) },
      key,
      data as BufferSource,
    );
    return decoder.decode(plain);
  } catch {
    return null;
  }
}
