/**
 * Hand-made JWS compact tokens (no JOSE library on the attacking side, so nothing "helpfully"
 * refuses to build a hostile token): raw header/payload JSON text, signed with the real key, an
 * attacker key, HMAC over public key material (algorithm confusion), or not at all.
 */
import { b64url, utf8 } from "./world.js";

export type Signer =
  | { k: "real" }
  | { k: "attacker" }
  | { k: "hmac"; secret: "jwkText" | "jwkCanonical" | "pem" | "pemNoNewline" | "x" | "empty" }
  | { k: "none" }
  | { k: "garbage"; bytes: number[] };

export interface SigningMaterial {
  realKey: CryptoKey;
  attackerKey: CryptoKey;
  publicJwkText: string;
  publicJwk: JsonWebKey;
  pem: string;
}

/** An attacker's own ES256 key pair, and its public JWK to embed in `jwk` headers. */
export async function attackerKeys(): Promise<{ privateKey: CryptoKey; publicJwk: JsonWebKey }> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const jwk = await crypto.subtle.exportKey("jwk", pair.publicKey);
  return { privateKey: pair.privateKey, publicJwk: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y } };
}

const hmacKeys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let k = hmacKeys.get(secret);
  if (!k) {
    // An empty HMAC key is not importable; a single zero byte stands in for "no secret".
    const raw = secret === "" ? new Uint8Array([0]) : utf8(secret);
    k = crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    hmacKeys.set(secret, k);
  }
  return k;
}

function hmacSecret(m: SigningMaterial, which: Extract<Signer, { k: "hmac" }>["secret"]): string {
  switch (which) {
    case "jwkText":
      return m.publicJwkText;
    case "jwkCanonical":
      return JSON.stringify({ crv: m.publicJwk.crv, kty: m.publicJwk.kty, x: m.publicJwk.x, y: m.publicJwk.y });
    case "pem":
      return m.pem;
    case "pemNoNewline":
      return m.pem.trimEnd();
    case "x":
      return m.publicJwk.x ?? "";
    case "empty":
      return "";
  }
}

/** Signs `header.payload` (both raw JSON text) and returns the compact serialization. */
export async function compact(headerJson: string, payloadJson: string, signer: Signer, m: SigningMaterial): Promise<string> {
  const input = `${b64url(utf8(headerJson))}.${b64url(utf8(payloadJson))}`;
  const data = utf8(input);
  let sig: Uint8Array;
  switch (signer.k) {
    case "real":
      sig = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, m.realKey, data));
      break;
    case "attacker":
      sig = new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, m.attackerKey, data));
      break;
    case "hmac":
      sig = new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(hmacSecret(m, signer.secret)), data));
      break;
    case "none":
      sig = new Uint8Array(0);
      break;
    case "garbage":
      sig = new Uint8Array(signer.bytes);
      break;
  }
  return `${input}.${b64url(sig)}`;
}

/** Decodes base64url strictly (alphabet, no padding, canonical trailing bits); null when it is not. */
export function strictB64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return null;
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  const out = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return b64url(out) === text ? out : null;
}
