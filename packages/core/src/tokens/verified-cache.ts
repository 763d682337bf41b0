import { decodeProtectedHeader } from "jose";
import type { AccessTokenClaims } from "./access-token.js";
import { verifyAccessToken } from "./access-token.js";
import type { Keyring } from "./keys.js";

interface Entry {
  claims: AccessTokenClaims;
  issuer: string;
  audience: string;
  kid: string;
  /** The verification key the signature was checked with; a different or no key invalidates the entry. */
  key: CryptoKey | Uint8Array;
}

/** Verifies access tokens, remembering the ones already verified (see {@link createVerifiedTokenCache}). */
export type TokenVerifier = (token: string, expected: { issuer: string; audience: string; now: number }) => Promise<AccessTokenClaims | null>;

/**
 * A bounded memory of verified access tokens, so a client calling the APIs with the same token
 * pays for its signature check once instead of on every request. Keyed by the exact token string;
 * only tokens that passed the full check are stored (a forged token never gets in). A hit is
 * re-checked for what can change after verification: expiry against the clock, and that the key
 * that verified it is still trusted by the keyring (a retired key past its last token's lifetime
 * is dropped, and with it every token it signed). Revocation is not cached: the caller checks the
 * revocation list on every request, hit or miss. Oldest entries are evicted first (FIFO) once
 * `maxEntries` is reached; 0 turns the memory off.
 */
export function createVerifiedTokenCache(keyring: Keyring, maxEntries: number): TokenVerifier {
  if (maxEntries <= 0) return (token, expected) => verifyAccessToken(keyring, token, expected);
  const entries = new Map<string, Entry>();
  return async (token, expected) => {
    const hit = entries.get(token);
    if (hit !== undefined && hit.issuer === expected.issuer && hit.audience === expected.audience) {
      // jose's rule: expired once `exp <= now` in whole seconds.
      if (hit.claims.exp <= Math.floor(expected.now / 1000)) {
        entries.delete(token);
        return null;
      }
      const found = await keyring.verificationKey(hit.kid);
      if (found !== null && found.key === hit.key) return hit.claims;
      entries.delete(token);
      // Fall through: a key replaced under the same kid is judged afresh.
    }
    const claims = await verifyAccessToken(keyring, token, expected);
    if (claims === null) return null;
    const kid = decodeProtectedHeader(token).kid!;
    const found = await keyring.verificationKey(kid);
    if (found === null) return claims;
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
    entries.set(token, { claims, issuer: expected.issuer, audience: expected.audience, kid, key: found.key });
    return claims;
  };
}
