import { fromBase64 } from "../crypto/index.js";
import { OAuthError } from "../errors/index.js";
import { assertionSubject, JWT_BEARER_ASSERTION } from "../oauth/client-assertion.js";
import { isWellFormed } from "../util/storable-text.js";
import { decodeFormComponent, FormError } from "./form.js";

/** Client credentials as presented, before they are checked. */
export type PresentedClient = PresentedSecret | PresentedAssertion;

/** A client id and secret (HTTP Basic or the body). */
export interface PresentedSecret {
  method: "client_secret_basic" | "client_secret_post";
  clientId: string;
  clientSecret: string;
}

/** A `private_key_jwt` client assertion (RFC 7521 §4.2); the client id is its `sub` (or `client_id`, which must match). */
export interface PresentedAssertion {
  method: "private_key_jwt";
  clientId: string;
  assertion: string;
}

const MAX_CREDENTIAL_LENGTH = 1024;

// Reused: a fatal decoder keeps no state between whole (non-streaming) decode() calls.
// ignoreBOM: the credentials are taken byte for byte; the default decoder would drop a leading
// EF BB BF, so "\uFEFFapp-1:secret" would authenticate as app-1.
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Extracts client credentials from the Authorization header (`Basic`, RFC 6749 §2.3.1, with the App. B
 * form-decoding of id and secret) or from the body. Both at once is `invalid_request`; none is
 * `invalid_client`. The secret is never part of an error message.
 */
export function presentedClient(header: string | null, form: Map<string, string>): PresentedClient {
  const bodyId = form.get("client_id");
  const bodySecret = form.get("client_secret");
  const assertionType = form.get("client_assertion_type");
  const assertion = form.get("client_assertion");
  if (assertionType !== undefined || assertion !== undefined) {
    if (bodySecret !== undefined || (header !== null && /^basic(?:\s|$)/i.test(header))) {
      throw new OAuthError("invalid_request", "Use one client authentication method: a client assertion, HTTP Basic or client_secret, not several.");
    }
    if (assertionType !== JWT_BEARER_ASSERTION) {
      throw new OAuthError("invalid_client", `client_assertion_type must be ${JWT_BEARER_ASSERTION}, with a client_assertion.`);
    }
    if (assertion === undefined || assertion === "") throw new OAuthError("invalid_client", "client_assertion is required with client_assertion_type.");
    const sub = assertionSubject(assertion);
    if (sub === null) throw new OAuthError("invalid_client", "The client assertion is not a signed JWT with a sub.");
    // No client id holds one (core refuses them, and no store keeps one), so no client is looked
    // up or throttled by it: a malformed assertion, as the event says (since 2026-11-30).
    if (!isWellFormed(sub)) throw new OAuthError("invalid_client", "The client assertion's sub must not contain unpaired surrogates.");
    if (bodyId !== undefined && bodyId !== sub) throw new OAuthError("invalid_client", "client_id does not match the client assertion's sub.");
    if (sub.length > MAX_CREDENTIAL_LENGTH) throw new OAuthError("invalid_client", "Client authentication failed.");
    return { method: "private_key_jwt", clientId: sub, assertion };
  }
  if (header !== null && /^basic(?:\s|$)/i.test(header)) {
    if (bodySecret !== undefined) {
      throw new OAuthError("invalid_request", "Use one client authentication method: HTTP Basic or client_secret in the body, not both.");
    }
    const m = /^basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
    const raw = m ? fromBase64(m[1]!) : null;
    if (!raw) throw new OAuthError("invalid_client", "The Basic credentials are malformed.");
    let decoded: string;
    try {
      decoded = strictUtf8.decode(raw);
    } catch {
      throw new OAuthError("invalid_client", "The Basic credentials are malformed.");
    }
    const colon = decoded.indexOf(":");
    if (colon < 0) throw new OAuthError("invalid_client", "The Basic credentials are malformed.");
    let clientId: string;
    let clientSecret: string;
    try {
      clientId = decodeFormComponent(decoded.slice(0, colon));
      clientSecret = decodeFormComponent(decoded.slice(colon + 1));
    } catch (e) {
      if (e instanceof FormError) throw new OAuthError("invalid_client", "The Basic credentials are malformed.");
      throw e;
    }
    if (bodyId !== undefined && bodyId !== clientId) {
      throw new OAuthError("invalid_request", "client_id in the body does not match the Basic credentials.");
    }
    return check({ method: "client_secret_basic", clientId, clientSecret });
  }
  if (bodyId === undefined || bodySecret === undefined) {
    throw new OAuthError("invalid_client", "Client authentication is required (HTTP Basic, client_id and client_secret, or a client assertion).");
  }
  return check({ method: "client_secret_post", clientId: bodyId, clientSecret: bodySecret });
}

function check(c: PresentedSecret): PresentedSecret {
  if (c.clientId === "" || c.clientSecret === "" || c.clientId.length > MAX_CREDENTIAL_LENGTH || c.clientSecret.length > MAX_CREDENTIAL_LENGTH) {
    throw new OAuthError("invalid_client", "Client authentication failed.");
  }
  return c;
}
