import { SignJWT, jwtVerify, decodeProtectedHeader, type JWTPayload } from "jose";
import { base64url, randomToken, type RandomBytes } from "../crypto/index.js";
import type { JwsSigner } from "../crypto/provider.js";
import type { ActiveSigningKey, Keyring } from "./keys.js";
import { remember } from "../util/bounded-cache.js";

/** What a verified access token says. */
export interface AccessTokenClaims {
  sub: string;
  clientId: string;
  scope: string[];
  jti: string;
  iat: number;
  exp: number;
  /**
   * The refresh family (the grant) the token was issued with (a password grant with offline_access
   * and its refreshes); absent otherwise. Revoking the family's refresh token revokes the token too.
   */
  sid?: string;
  /**
   * The `generation` of the client it was issued to (claim `cgen`; see `ClientRecord.generation`);
   * absent on a token issued before 2026-12-02 or to a client without one.
   */
  generation?: string;
}

/** Prefix of the `sub` of a client-credentials token, so it can never equal a user's `sub`. */
export const CLIENT_SUBJECT_PREFIX = "client:";

const encoder = new TextEncoder();

/**
 * Issues a JWT access token per RFC 9068 (`typ: at+jwt`). With `sign` (the host's synchronous
 * signer) the compact JWS is assembled here, with the same header and claims, in the same order,
 * as jose's SignJWT produces; otherwise, or when the signer declines the key, jose signs.
 * `signing` is the keyring's signing key (`keyring.signingKey()`), read by the caller so it can name
 * the algorithm the token is signed with (its JWS header's `alg`) on the `plantgate.sign` span.
 */
export async function issueAccessToken(
  signing: ActiveSigningKey,
  input: {
    issuer: string;
    audience: string;
    subject: string;
    clientId: string;
    scope: string[];
    now: number;
    ttl: number;
    random: RandomBytes;
    sign?: JwsSigner | undefined;
    /** The token's `jti`; default: 128 random bits. */
    jti?: string;
    /** The refresh family it is issued with, as its `sid` claim (none: no claim). */
    sid?: string | undefined;
    /** The client's generation, as its `cgen` claim (none: no claim). */
    generation?: string | undefined;
  },
): Promise<string> {
  const { kid, alg, key, sign: external } = signing;
  const iat = Math.floor(input.now / 1000);
  const jti = input.jti ?? randomToken(input.random, 16);
  // The JWS is assembled here for an external signer (KMS, HSM) and for the host's signer
  // (`crypto.sign`, e.g. nodeCrypto()'s batching), with the same header and claims, in the same
  // order, as jose's SignJWT produces; otherwise, or when the host declines the key, jose signs.
  if (external !== null || (input.sign !== undefined && key !== null && !(key instanceof Uint8Array))) {
    const header = protectedHeader(alg, kid);
    const payload = base64url(
      encoder.encode(
        JSON.stringify({
          client_id: input.clientId,
          scope: input.scope.join(" "),
          ...(input.sid !== undefined ? { sid: input.sid } : {}),
          ...(input.generation !== undefined ? { cgen: input.generation } : {}),
          iss: input.issuer,
          sub: input.subject,
          aud: input.audience,
          iat,
          exp: iat + input.ttl,
          jti,
        }),
      ),
    );
    const signingInput = `${header}.${payload}`;
    const signature = external !== null ? await external(encoder.encode(signingInput)) : await input.sign!(alg, key as CryptoKey, encoder.encode(signingInput));
    if (signature !== undefined) return `${signingInput}.${base64url(signature)}`;
  }
  return new SignJWT({
    client_id: input.clientId,
    scope: input.scope.join(" "),
    ...(input.sid !== undefined ? { sid: input.sid } : {}),
    ...(input.generation !== undefined ? { cgen: input.generation } : {}),
  })
    .setProtectedHeader({ alg, kid, typ: "at+jwt" })
    .setIssuer(input.issuer)
    .setSubject(input.subject)
    .setAudience(input.audience)
    .setIssuedAt(iat)
    .setExpirationTime(iat + input.ttl)
    .setJti(jti)
    .sign(key!);
}

const headers = new Map<string, string>();

/** The encoded protected header of a key; the same for every token the key signs. */
function protectedHeader(alg: string, kid: string): string {
  const cacheKey = `${alg} ${kid}`;
  let header = headers.get(cacheKey);
  if (header === undefined) {
    header = base64url(encoder.encode(JSON.stringify({ alg, kid, typ: "at+jwt" })));
    // Keys rotate rarely; a bound keeps a long-running process from collecting retired ones.
    remember(headers, cacheKey, header, 64);
  }
  return header;
}

/** RFC 6750 §2.1 b64token, bounded so a huge header costs nothing. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const MAX_TOKEN_LENGTH = 8192;

/**
 * Verifies an access token: signature by one of our keys (by `kid`, with that key's algorithm only,
 * so `alg: none` and algorithm confusion fail), `typ`, issuer, audience, expiry and required claims.
 * Returns null for any invalid token; never throws for bad input.
 */
export async function verifyAccessToken(
  keyring: Keyring,
  token: string,
  expected: { issuer: string; audience: string; now: number },
  /** `lookNow`: an unknown kid is looked for in the store at once (see {@link Keyring.verificationKey}). */
  options: { lookNow?: boolean } = {},
): Promise<AccessTokenClaims | null> {
  if (token.length > MAX_TOKEN_LENGTH || !B64TOKEN.test(token)) return null;
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch {
    return null;
  }
  if (typeof kid !== "string") return null;
  const found = await keyring.verificationKey(kid, options);
  if (!found) return null;
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, found.key, {
      algorithms: [found.alg],
      typ: "at+jwt",
      issuer: expected.issuer,
      audience: expected.audience,
      currentDate: new Date(expected.now),
      requiredClaims: ["sub", "exp", "iat", "jti", "client_id", "scope"],
    }));
  } catch {
    return null;
  }
  const { sub, exp, iat, jti, client_id: clientId, scope, sid, cgen } = payload;
  if (
    typeof sub !== "string" ||
    typeof exp !== "number" ||
    typeof iat !== "number" ||
    typeof jti !== "string" ||
    typeof clientId !== "string" ||
    typeof scope !== "string" ||
    (sid !== undefined && typeof sid !== "string") ||
    (cgen !== undefined && typeof cgen !== "string")
  ) {
    return null;
  }
  const claims: AccessTokenClaims = { sub, clientId, scope: scope === "" ? [] : scope.split(" "), jti, iat, exp };
  if (sid !== undefined) claims.sid = sid;
  if (cgen !== undefined) claims.generation = cgen;
  return claims;
}
