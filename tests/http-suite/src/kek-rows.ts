/**
 * Signing-key rows sealed under a key encryption key, written here from README's description of
 * the stored form rather than by plantgate's code: `enc:A256GCM:<kek id>:<iv>:<ciphertext>`, AES-256-GCM
 * with the key's kid as associated data, the KEK id the first 8 bytes of SHA-256 over a fixed label
 * and the KEK, each part base64url. For tests of what the listings (`keys list`, the console) say
 * about such rows, and of rows an earlier version wrote (a signer's marker it sealed).
 */
import { createCipheriv, createHash, randomBytes } from "node:crypto";

/** The id plantgate gives a KEK (base64url text of 32 bytes): the listing's `kek`. */
export function kekId(kek: string): string {
  return createHash("sha256")
    .update(Buffer.concat([Buffer.from("plantgate key encryption key id\0"), Buffer.from(kek, "base64url")]))
    .digest()
    .subarray(0, 8)
    .toString("base64url");
}

/** `text` (a private JWK, or the `external` marker) sealed under `kek` for the row of `kid`. */
export function sealUnder(kek: string, kid: string, text: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", Buffer.from(kek, "base64url"), iv);
  cipher.setAAD(Buffer.from(kid));
  const ct = Buffer.concat([cipher.update(text, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `enc:A256GCM:${kekId(kek)}:${iv.toString("base64url")}:${ct.toString("base64url")}`;
}
