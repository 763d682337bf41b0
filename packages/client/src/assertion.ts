/**
 * `private_key_jwt` (RFC 7523 §2.2): client assertions signed with WebCrypto, so the SDK stays
 * free of dependencies and Node built-ins.
 */

/**
 * WebCrypto's `CryptoKey`, read off the global `crypto` (Node's and a browser's alike), and a JWK
 * object with the members of the DOM's `JsonWebKey`: the published declarations must type-check in
 * a Node-only project (no "DOM" lib), which until 2026-12-01 they did not.
 */
export type WebCryptoKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** A JSON Web Key (RFC 7517) object; a `JsonWebKey` from WebCrypto's `exportKey("jwk", ...)` is one. */
export interface JwkObject {
  kty?: string;
  alg?: string;
  crv?: string;
  d?: string;
  dp?: string;
  dq?: string;
  e?: string;
  ext?: boolean;
  k?: string;
  key_ops?: string[];
  n?: string;
  oth?: { d?: string; r?: string; t?: string }[];
  p?: string;
  q?: string;
  qi?: string;
  use?: string;
  x?: string;
  y?: string;
  kid?: string;
}

/** A private key for `private_key_jwt`: a WebCrypto `CryptoKey` or a private JWK (object or JSON text). */
export type PrivateKeyInput = WebCryptoKey | JwkObject | string;

/** The algorithms plantgate accepts for client assertions. */
export type AssertionAlg = "ES256" | "ES384" | "RS256" | "PS256" | "EdDSA";

interface Algorithm {
  alg: AssertionAlg;
  importParams: AlgorithmIdentifier | RsaHashedImportParams | EcKeyImportParams;
  signParams: AlgorithmIdentifier | EcdsaParams | RsaPssParams;
}

const ALGS: Record<AssertionAlg, Algorithm> = {
  ES256: { alg: "ES256", importParams: { name: "ECDSA", namedCurve: "P-256" }, signParams: { name: "ECDSA", hash: "SHA-256" } },
  ES384: { alg: "ES384", importParams: { name: "ECDSA", namedCurve: "P-384" }, signParams: { name: "ECDSA", hash: "SHA-384" } },
  RS256: { alg: "RS256", importParams: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, signParams: { name: "RSASSA-PKCS1-v1_5" } },
  PS256: { alg: "PS256", importParams: { name: "RSA-PSS", hash: "SHA-256" }, signParams: { name: "RSA-PSS", saltLength: 32 } },
  EdDSA: { alg: "EdDSA", importParams: { name: "Ed25519" }, signParams: { name: "Ed25519" } },
};

const encoder = new TextEncoder();

function b64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const b64urlJson = (value: unknown) => b64url(encoder.encode(JSON.stringify(value)));

function algOfJwk(jwk: JsonWebKey & { alg?: string }): AssertionAlg {
  if (jwk.alg !== undefined) {
    // Own keys only: `in` took an inherited name ("toString", "constructor") for an algorithm.
    if (typeof jwk.alg !== "string" || !Object.prototype.hasOwnProperty.call(ALGS, jwk.alg)) throw new TypeError(`privateKey: alg ${jwk.alg} is not one of ${Object.keys(ALGS).join(", ")}`);
    return jwk.alg as AssertionAlg;
  }
  if (jwk.kty === "EC" && jwk.crv === "P-256") return "ES256";
  if (jwk.kty === "EC" && jwk.crv === "P-384") return "ES384";
  if (jwk.kty === "OKP" && jwk.crv === "Ed25519") return "EdDSA";
  if (jwk.kty === "RSA") return "RS256";
  throw new TypeError("privateKey: unsupported key type; use EC P-256/P-384, RSA or Ed25519");
}

function algOfKey(key: CryptoKey): AssertionAlg {
  const a = key.algorithm as { name: string; namedCurve?: string; hash?: { name: string } };
  if (a.name === "ECDSA" && a.namedCurve === "P-256") return "ES256";
  if (a.name === "ECDSA" && a.namedCurve === "P-384") return "ES384";
  if (a.name === "Ed25519") return "EdDSA";
  if (a.name === "RSASSA-PKCS1-v1_5" && a.hash?.name === "SHA-256") return "RS256";
  if (a.name === "RSA-PSS" && a.hash?.name === "SHA-256") return "PS256";
  throw new TypeError("privateKey: unsupported CryptoKey algorithm; use ECDSA P-256/P-384, RSASSA-PKCS1-v1_5 or RSA-PSS with SHA-256, or Ed25519");
}

/** Signs client assertions for one client; see {@link createAssertionSigner}. */
export type AssertionSigner = (audience: string, nowMs: number) => Promise<string>;

/**
 * Validates the key now (synchronously, for the option errors of `createClient`) and returns a
 * signer that imports it once and makes a fresh assertion per call: `iss` = `sub` = client id,
 * `aud` the token endpoint URL, `exp` 60 s ahead, a random 128-bit `jti`.
 */
export function createAssertionSigner(clientId: string, privateKey: PrivateKeyInput, keyId?: string): AssertionSigner {
  let jwk: (JsonWebKey & { alg?: string; kid?: string }) | null = null;
  let alg: AssertionAlg;
  if (typeof privateKey === "string") {
    try {
      jwk = JSON.parse(privateKey) as JsonWebKey;
    } catch {
      throw new TypeError("privateKey: a string must be a private JWK as JSON");
    }
  } else if (typeof privateKey === "object" && privateKey !== null && "kty" in privateKey) jwk = privateKey as JsonWebKey;
  if (jwk !== null) {
    if (typeof jwk !== "object" || typeof jwk.d !== "string") throw new TypeError("privateKey: the JWK must be a private key (with d)");
    alg = algOfJwk(jwk);
  } else if (typeof privateKey === "object" && privateKey !== null && "algorithm" in privateKey && "type" in privateKey) {
    if ((privateKey as CryptoKey).type !== "private") throw new TypeError("privateKey: the CryptoKey must be a private key");
    alg = algOfKey(privateKey as CryptoKey);
  } else {
    throw new TypeError("privateKey must be a CryptoKey, a private JWK, or a private JWK as JSON");
  }
  const kid = keyId ?? jwk?.kid;
  const spec = ALGS[alg];
  let imported: Promise<CryptoKey> | undefined;
  const key = () => {
    if (jwk === null) return Promise.resolve(privateKey as CryptoKey);
    const { alg: _a, kid: _k, use: _u, key_ops: _o, ...material } = jwk as JsonWebKey & { kid?: string; use?: string };
    // A JWK that does not import (a malformed `d`) is an argument mistake found at the first use:
    // a TypeError as createClient's own checks throw, never WebCrypto's untyped DataError.
    return (imported ??= crypto.subtle.importKey("jwk", material, spec.importParams, false, ["sign"]).catch((error: unknown) => {
      imported = undefined;
      throw new TypeError(`privateKey: the JWK could not be imported (${error instanceof Error ? error.name : "error"})`);
    }));
  };
  return async (audience, nowMs) => {
    const now = Math.floor(nowMs / 1000);
    const header = { alg, typ: "JWT", ...(kid !== undefined ? { kid } : {}) };
    const payload = { iss: clientId, sub: clientId, aud: audience, iat: now, exp: now + 60, jti: b64url(crypto.getRandomValues(new Uint8Array(16))) };
    const input = `${b64urlJson(header)}.${b64urlJson(payload)}`;
    const signature = new Uint8Array(await crypto.subtle.sign(spec.signParams, await key(), encoder.encode(input)));
    return `${input}.${b64url(signature)}`;
  };
}
