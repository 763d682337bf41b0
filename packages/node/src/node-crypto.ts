import * as nodeCryptoModule from "node:crypto";
import { constants, createCipheriv, createDecipheriv, createHash, hkdfSync, KeyObject, sign, type webcrypto } from "node:crypto";

/** Node's CryptoKey, not the DOM lib's global: the published declarations must type-check without "DOM". */
type CryptoKey = webcrypto.CryptoKey;

// crypto.hash() (Node 20.12+, 21.7+) is a one-shot digest at half the cost of createHash();
// the engines field allows any Node 20, so older ones keep createHash().
const oneShot = (nodeCryptoModule as { hash?: (algorithm: string, data: Uint8Array, encoding: "buffer") => Buffer }).hash;

/**
 * The crypto `nodeCrypto()` lends plantgate; structurally the `CryptoProvider` of
 * `@plantgate/core` (this package does not depend on core).
 */
export interface NodeCryptoProvider {
  sha256(data: Uint8Array): Uint8Array;
  sign(alg: string, key: CryptoKey, data: Uint8Array): Uint8Array | undefined | Promise<Uint8Array | undefined>;
  hkdfAesGcm: {
    encrypt(secret: Uint8Array, info: Uint8Array, iv: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array;
    decrypt(secret: Uint8Array, info: Uint8Array, iv: Uint8Array, aad: Uint8Array, data: Uint8Array): Uint8Array | null;
  };
}

const EMPTY = new Uint8Array(0);
const TAG_BYTES = 16;

/** HKDF-SHA-256 (empty salt) to a 32-byte AES key, as Web Crypto's deriveKey does. */
const hkdfKey = (secret: Uint8Array, info: Uint8Array): Buffer => Buffer.from(hkdfSync("sha256", secret, EMPTY, info, 32));

/** AES-256-GCM in line, in Web Crypto's layout (`ciphertext || tag`, 16-byte tag). */
const hkdfAesGcm: NodeCryptoProvider["hkdfAesGcm"] = {
  encrypt(secret, info, iv, aad, plaintext) {
    const cipher = createCipheriv("aes-256-gcm", hkdfKey(secret, info), iv);
    cipher.setAAD(aad);
    return Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  },
  decrypt(secret, info, iv, aad, data) {
    if (data.length < TAG_BYTES) return null;
    try {
      const decipher = createDecipheriv("aes-256-gcm", hkdfKey(secret, info), iv);
      decipher.setAAD(aad);
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      return Buffer.concat([decipher.update(data.subarray(0, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      return null;
    }
  },
};

/** Options of {@link nodeCrypto}. */
export interface NodeCryptoOptions {
  /**
   * Sign the tokens of all requests that arrive in one event-loop turn together, in a row, at
   * the end of that turn (`setImmediate`), instead of each in the middle of its own request.
   * Default true. See {@link nodeCrypto}.
   */
  batchSignatures?: boolean;
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
 * Signatures are batched by default (`batchSignatures`): the tokens of all requests that arrive in
 * one event-loop turn are signed back to back when the turn ends. An ECDSA signature made in the
 * middle of request handling cost about 2.5 times one made right after another (OpenSSL's tables
 * are no longer in the CPU cache by then); batched, client credentials went from ~180 to ~105 µs
 * of CPU per request. A request waits at most for the rest of its turn.
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
export function nodeCrypto(options: NodeCryptoOptions = {}): NodeCryptoProvider {
  const batch = options.batchSignatures !== false;
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
    hkdfAesGcm,
    sha256(data) {
      return oneShot !== undefined ? oneShot("sha256", data, "buffer") : createHash("sha256").update(data).digest();
    },
    sign(alg, key, data) {
      // Only a private key made for exactly this algorithm, as jose insists too; anything else is
      // left to jose, which refuses it with its usual error.
      if (key.type !== "private" || !keyFits(alg, key.algorithm)) return undefined;
      if (!batch) return signNow(alg, key, data);
      return new Promise((resolve, reject) => {
        queue.push(() => {
          try {
            resolve(signNow(alg, key, data));
          } catch (error) {
            reject(error);
          }
        });
        if (queue.length === 1) setImmediate(flush);
      });
    },
  };

  function signNow(alg: string, key: CryptoKey, data: Uint8Array): Uint8Array | undefined {
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
  }
}

const queue: Array<() => void> = [];

/** Runs every signature queued during this event-loop turn, back to back. */
function flush(): void {
  const jobs = queue.splice(0);
  for (const job of jobs) job();
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
