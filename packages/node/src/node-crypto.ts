import { constants, createHash, KeyObject, sign } from "node:crypto";

/**
 * The crypto `nodeCrypto()` lends plantgate; structurally the `CryptoProvider` of
 * `@plantgate/core` (this package does not depend on core).
 */
export interface NodeCryptoProvider {
  sha256(data: Uint8Array): Uint8Array;
  sign(alg: string, key: CryptoKey, data: Uint8Array): Uint8Array | undefined;
}

/**
 * Synchronous SHA-256 and JWS signing with `node:crypto`, for `createPlantgate({ crypto })`.
 *
 * Web Crypto in Node runs every digest and signature as a thread-pool job, which costs more than
 * the operation itself for the small inputs of a token endpoint; `node:crypto` does the same work
 * in line. Signatures are standard JWS signatures (raw `r || s` for ES256/ES384, RSASSA-PSS with a
 * salt as long as the hash for PS256), so tokens are byte-for-byte what jose would produce apart
 * from the randomness ECDSA and PSS put in every signature. Keys are converted once and cached per
 * `CryptoKey`.
 *
 * @example
 * ```ts
 * import { createPlantgate } from "@plantgate/core";
 * import { nodeCrypto, serve } from "@plantgate/node";
 *
 * const app = createPlantgate({ crypto: nodeCrypto() });
 * await serve(app, { port: 3000 });
 * ```
 */
export function nodeCrypto(): NodeCryptoProvider {
  const keys = new WeakMap<CryptoKey, KeyObject>();
  const keyObject = (key: CryptoKey): KeyObject => {
    let converted = keys.get(key);
    if (converted === undefined) {
      converted = KeyObject.from(key);
      keys.set(key, converted);
    }
    return converted;
  };
  return {
    sha256(data) {
      return createHash("sha256").update(data).digest();
    },
    sign(alg, key, data) {
      // Only a private key made for exactly this algorithm, as jose insists too; anything else is
      // left to jose, which refuses it with its usual error.
      if (key.type !== "private" || !keyFits(alg, key.algorithm)) return undefined;
      switch (alg) {
        case "ES256":
          return sign("sha256", data, { key: keyObject(key), dsaEncoding: "ieee-p1363" });
        case "ES384":
          return sign("sha384", data, { key: keyObject(key), dsaEncoding: "ieee-p1363" });
        case "RS256":
          return sign("sha256", data, keyObject(key));
        case "PS256":
          return sign("sha256", data, {
            key: keyObject(key),
            padding: constants.RSA_PKCS1_PSS_PADDING,
            saltLength: 32,
          });
        case "EdDSA":
          return sign(null, data, keyObject(key));
        default:
          return undefined;
      }
    },
  };
}

function keyFits(alg: string, algorithm: KeyAlgorithm): boolean {
  const { name, namedCurve, hash } = algorithm as KeyAlgorithm & { namedCurve?: string; hash?: { name: string } };
  switch (alg) {
    case "ES256":
      return name === "ECDSA" && namedCurve === "P-256";
    case "ES384":
      return name === "ECDSA" && namedCurve === "P-384";
    case "RS256":
      return name === "RSASSA-PKCS1-v1_5" && hash?.name === "SHA-256";
    case "PS256":
      return name === "RSA-PSS" && hash?.name === "SHA-256";
    case "EdDSA":
      return name === "Ed25519";
    default:
      return false;
  }
}
