import { compactVerify, decodeJwt, decodeProtectedHeader, type JWTPayload } from "jose";
import type { Context, Urls } from "../context.js";
import { OAuthError } from "../errors/index.js";
import type { ClientRecord } from "../storage/types.js";
import { isWellFormed } from "../util/storable-text.js";
import { ASSERTION_ALGS, type AssertionAlg } from "./client-keys.js";

/** RFC 7523 §2.2 `client_assertion_type`. */
export const JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/** Longest `client_assertion` looked at (a PS256 JWT with a 4096-bit key is about 1 kB). */
export const MAX_ASSERTION_LENGTH = 8192;
/** Farthest in the future an assertion's `exp` may be. */
export const MAX_ASSERTION_LIFETIME_S = 300;
/** Clock skew allowed on `exp`, `nbf` and `iat`. */
const SKEW_S = 30;

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

const refuse = (description: string) => new OAuthError("invalid_client", description);

/**
 * The client id an assertion names (its `sub`), read without verifying anything: only to find
 * the client whose keys then verify it. Null when the assertion is not a readable JWT.
 */
export function assertionSubject(assertion: string): string | null {
  if (assertion.length > MAX_ASSERTION_LENGTH || !COMPACT_JWS.test(assertion)) return null;
  try {
    const sub = decodeJwt(assertion).sub;
    return typeof sub === "string" && sub !== "" ? sub : null;
  } catch {
    return null;
  }
}

/**
 * Verifies a `private_key_jwt` client assertion (RFC 7523 §3, RFC 7521 §4.2, OIDC Core §9) for
 * `client`: an accepted asymmetric `alg`, a signature by one of the client's keys, `iss` = `sub` =
 * client id, `aud` the issuer or the token endpoint URL, `exp` in the future and at most five
 * minutes ahead, a `jti` used only once (on every instance, through the store). Throws
 * `invalid_client`; the description names the rule, never the assertion.
 */
export async function verifyClientAssertion(ctx: Context, urls: Urls, tokenEndpoint: string, client: ClientRecord, assertion: string, now: number): Promise<void> {
  if (assertion.length > MAX_ASSERTION_LENGTH || !COMPACT_JWS.test(assertion)) throw refuse("The client assertion is not a signed JWT.");
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(assertion);
  } catch {
    throw refuse("The client assertion is not a signed JWT.");
  }
  const alg = header.alg;
  if (typeof alg !== "string" || !(ASSERTION_ALGS as readonly string[]).includes(alg)) {
    throw refuse(`The client assertion's algorithm is not accepted; use one of ${ASSERTION_ALGS.join(", ")}.`);
  }
  if (header.kid !== undefined && (typeof header.kid !== "string" || header.kid.length > 256)) throw refuse("The client assertion's kid is malformed.");
  if (header.crit !== undefined) throw refuse("The client assertion carries critical header parameters that are not supported.");

  let payload: JWTPayload | undefined;
  let signatureFailed = false;
  for (const refresh of [false, true]) {
    const keys = await ctx.clientKeys.candidates(client, alg as AssertionAlg, header.kid, refresh);
    for (const key of keys) {
      try {
        // The JWS only: the claims are checked below against our clock.
        const verified = await compactVerify(assertion, key, { algorithms: [alg] });
        payload = parsePayload(verified.payload);
        break;
      } catch (e) {
        if (e instanceof OAuthError) throw e;
        if ((e as { code?: string }).code === "ERR_JWS_SIGNATURE_VERIFICATION_FAILED") signatureFailed = true;
        else throw refuse("The client assertion is not a valid JWT.");
      }
    }
    // A jwks_uri client may have published a new key: look again (rate-limited) before refusing.
    if (payload || client.jwksUri === null) break;
  }
  if (!payload) throw refuse(signatureFailed ? "The client assertion's signature does not verify with the client's keys." : "No key of the client matches the client assertion.");

  const { iss, sub, aud, exp, nbf, iat, jti } = payload;
  if (iss !== client.clientId || sub !== client.clientId) throw refuse("The client assertion's iss and sub must both be the client id.");
  const audiences = typeof aud === "string" ? [aud] : Array.isArray(aud) ? aud : [];
  // RFC 7523 §3 item 3: aud names this server. The token endpoint's URL does only when the base URL
  // is configured (or follows an http(s) issuer): else it follows the request's Host, and an
  // assertion made for another server, replayed here with that server's Host, named "us" (before
  // 2026-11-29, with a non-URL issuer such as a URN). With no issuer either, both follow the Host
  // (the app warns of it once).
  const endpointIsOurs = ctx.baseUrl !== undefined || ctx.issuer === undefined;
  if (!audiences.some((a) => a === urls.issuer || (endpointIsOurs && a === tokenEndpoint))) {
    throw refuse(endpointIsOurs ? "The client assertion's aud must be the issuer or the token endpoint URL." : "The client assertion's aud must be the issuer.");
  }
  const nowS = now / 1000;
  if (typeof exp !== "number" || !Number.isFinite(exp)) throw refuse("The client assertion must have a numeric exp.");
  if (exp <= nowS - SKEW_S) throw refuse("The client assertion has expired.");
  if (exp > nowS + MAX_ASSERTION_LIFETIME_S + SKEW_S) throw refuse(`The client assertion's exp must be at most ${MAX_ASSERTION_LIFETIME_S} seconds ahead.`);
  if (nbf !== undefined && (typeof nbf !== "number" || nbf > nowS + SKEW_S)) throw refuse("The client assertion is not valid yet (nbf).");
  if (iat !== undefined && (typeof iat !== "number" || iat > nowS + SKEW_S)) throw refuse("The client assertion's iat is in the future.");
  if (typeof jti !== "string" || jti.length < 1 || jti.length > 256) throw refuse("The client assertion must have a jti (1-256 characters).");
  // The key below is the SHA-256 of UTF-8, where every lone surrogate is U+FFFD: "a\ud800" (a JSON
  // escape) would use up "a\udc00" and "a\ufffd" too (a false "already used", before 2026-11-30).
  if (!isWellFormed(jti)) throw refuse("The client assertion's jti must not contain unpaired surrogates.");
  // Kept at least until the assertion can no longer be accepted (exp plus the skew allowed).
  const key = await ctx.sha256(`${client.clientId}\n${jti}`);
  if (!(await ctx.storage.assertionJtis.use(key, Math.ceil(exp + SKEW_S) * 1000))) throw refuse("The client assertion was already used (jti).");
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function parsePayload(bytes: Uint8Array): JWTPayload {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch {
    throw refuse("The client assertion's payload is not a JSON object.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw refuse("The client assertion's payload is not a JSON object.");
  return value as JWTPayload;
}
