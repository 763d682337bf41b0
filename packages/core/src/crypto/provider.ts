// jose's CryptoKey, not the DOM lib's global: the published declarations must type-check in a
// Node-only project (no "DOM" in lib), which until 2026-12-01 they did not.
import type { CryptoKey } from "jose";
import { base64url, sha256 as webSha256 } from "./index.js";

/**
 * Synchronous crypto a host runtime can lend plantgate (see `@plantgate/node`'s `nodeCrypto()`).
 * Core itself only uses Web Crypto, which runs every digest and signature as a separate
 * asynchronous job; on a server that costs more than the work itself. Each member is optional;
 * whatever is missing (or answers `undefined`) is done with Web Crypto as before, so results are
 * the same either way: the provider changes the cost, never the bytes on the wire.
 *
 * @example
 * ```ts
 * import { createHash } from "node:crypto";
 * import { createPlantgate, type CryptoProvider } from "@plantgate/core";
 *
 * const crypto: CryptoProvider = { sha256: (data) => createHash("sha256").update(data).digest() };
 * const app = createPlantgate({ crypto });
 * ```
 */
export interface CryptoProvider {
  /** SHA-256 of `data`. */
  sha256?(data: Uint8Array): Uint8Array;
  /**
   * The JWS signature (RFC 7515/7518 form: raw `r || s` for ECDSA) of `data` with a private key
   * of plantgate's keyring, for `alg` (`ES256`, `ES384`, `RS256`, `PS256`, `EdDSA`); `undefined`
   * for an algorithm or key the provider does not handle. May answer with a promise (a provider
   * that batches signatures, say).
   */
  sign?(alg: string, key: CryptoKey, data: Uint8Array): Uint8Array | undefined | Promise<Uint8Array | undefined>;
  /**
   * AES-256-GCM under a key derived with HKDF-SHA-256 (empty salt, 32 bytes) from `secret` and
   * `info`, as Web Crypto's `deriveKey` + `encrypt`/`decrypt` do: `encrypt` answers
   * `ciphertext || tag`, `decrypt` the plaintext or null when it does not open. Seals the replay
   * data of rotated refresh tokens; three Web Crypto jobs per refresh otherwise.
   */
  hkdfAesGcm?: HkdfAesGcm;
}

/** See {@link CryptoProvider.hkdfAesGcm}. */
export interface HkdfAesGcm {
  encrypt(secret: Uint8Array, info: Uint8Array, iv: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array;
  decrypt(secret: Uint8Array, info: Uint8Array, iv: Uint8Array, aad: Uint8Array, data: Uint8Array): Uint8Array | null;
}

/** Signs a JWS signing input; see {@link CryptoProvider.sign}. */
export type JwsSigner = NonNullable<CryptoProvider["sign"]>;

const encoder = new TextEncoder();

/** SHA-256 of a UTF-8 string, base64url: the provider's when it has one, else Web Crypto's. */
export function sha256With(provider: CryptoProvider | undefined): (text: string) => Promise<string> {
  const digest = provider?.sha256?.bind(provider);
  if (digest === undefined) return webSha256;
  return async (text) => base64url(digest(encoder.encode(text)));
}
