// RSA key size, for clients' keys (private_key_jwt) and the server's own signing key.
import type { JWK } from "jose";
import { fromBase64url } from "./index.js";

/**
 * RS256 and PS256 need an RSA key of 2048 bits or more (RFC 7518 §3.3, §3.5), and jose refuses a
 * smaller one when signing and verifying, with a TypeError. A client's registration is refused such
 * a key, and one in a set stored before that rule or fetched from a `jwks_uri` is no candidate
 * (until 2026-12-01 such a key was registered, and an assertion tried against it was refused at
 * once as "not a valid JWT", without the client's other keys being tried). The server's own
 * `signingKey` or `signer` is refused such a key at start (until 2026-12-01 it was published, and
 * every token was a 500, or with `nodeCrypto()` or a signer issued and then refused by plantgate).
 */
export const MIN_RSA_BITS = 2048;

/** The bit length of an RSA JWK's modulus `n` (0 when it has none that decodes). */
export function rsaModulusBits(jwk: JWK): number {
  const n = typeof jwk.n === "string" ? fromBase64url(jwk.n) : null;
  if (n === null) return 0;
  let i = 0;
  while (i < n.length && n[i] === 0) i++;
  return i === n.length ? 0 : (n.length - i - 1) * 8 + (32 - Math.clz32(n[i]!));
}
