import { fromBase64 } from "../crypto/index.js";
import { OAuthError } from "../errors/index.js";
import { decodeFormComponent, FormError } from "./form.js";

/** Client credentials as presented, before they are checked. */
export interface PresentedClient {
  method: "client_secret_basic" | "client_secret_post";
  clientId: string;
  clientSecret: string;
}

const MAX_CREDENTIAL_LENGTH = 1024;

// Reused: a fatal decoder keeps no state between whole (non-streaming) decode() calls.
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Extracts client credentials from the Authorization header (`Basic`, RFC 6749 §2.3.1, with the App. B
 * form-decoding of id and secret) or from the body. Both at once is `invalid_request`; none is
 * `invalid_client`. The secret is never part of an error message.
 */
export function presentedClient(header: string | null, form: Map<string, string>): PresentedClient {
  const bodyId = form.get("client_id");
  const bodySecret = form.get("client_secret");
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
    throw new OAuthError("invalid_client", "Client authentication is required (HTTP Basic or client_id and client_secret).");
  }
  return check({ method: "client_secret_post", clientId: bodyId, clientSecret: bodySecret });
}

function check(c: PresentedClient): PresentedClient {
  if (c.clientId === "" || c.clientSecret === "" || c.clientId.length > MAX_CREDENTIAL_LENGTH || c.clientSecret.length > MAX_CREDENTIAL_LENGTH) {
    throw new OAuthError("invalid_client", "Client authentication failed.");
  }
  return c;
}
