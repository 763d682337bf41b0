import { OAuthError } from "../errors/index.js";
import { OFFLINE_ACCESS } from "../scope-names.js";

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), separated by single spaces.
const SCOPE_SYNTAX = /^[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*$/;

/**
 * Parses a `scope` parameter into distinct scope tokens (order kept). `undefined` stays undefined
 * (omitted, RFC 6749 §3.3 lets the server pick a default).
 */
export function parseScope(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  if (!SCOPE_SYNTAX.test(value)) throw new OAuthError("invalid_scope", "The scope parameter is malformed.");
  return [...new Set(value.split(" "))];
}

/** Caps on a `scope` parameter. */
export interface ScopeLimits {
  /** Most space-separated scope tokens. */
  maxScopes: number;
  /** Most characters of one scope token. */
  maxScopeLength: number;
}

/**
 * Enforces {@link ScopeLimits} on a raw `scope` parameter (`invalid_scope`, RFC 6749 §5.2), before
 * any token is looked up, so a hostile list costs nothing.
 *
 * @example
 * checkScopeLimits(form.get("scope"), { maxScopes: 16, maxScopeLength: 128 });
 */
export function checkScopeLimits(value: string | undefined, limits: ScopeLimits): void {
  if (value === undefined) return;
  const tokens = value.split(" ");
  if (tokens.length > limits.maxScopes) throw new OAuthError("invalid_scope", `The scope parameter has more than ${limits.maxScopes} scopes.`);
  if (tokens.some((t) => t.length > limits.maxScopeLength)) {
    throw new OAuthError("invalid_scope", `A scope is longer than ${limits.maxScopeLength} characters.`);
  }
}

/** The description of `invalid_scope` for a scope this server does not know (never named: see grantScope). */
export const UNKNOWN_SCOPE = "A requested scope is unknown (the server's scopes are in scopes_supported of its metadata).";

/**
 * Decides the granted scope: the requested one when each token is known and allowed for the
 * client, else `invalid_scope`; when omitted, the client's allowed scopes minus `offline_access`.
 */
export function grantScope(requested: string[] | undefined, allowed: string[], known: string[]): string[] {
  if (requested === undefined) {
    // RFC 6749 §3.3: with no scope requested, use a default or fail; an empty default is a failure.
    const fallback = allowed.filter((s) => s !== OFFLINE_ACCESS && known.includes(s));
    if (fallback.length === 0) throw new OAuthError("invalid_scope", "No scope was requested and this client has no default scope.");
    return fallback;
  }
  for (const s of requested) {
    // An unknown scope is not named: it may be a credential sent in the wrong parameter (a refresh
    // token or a secret as `scope`), and the answer, which SDKs put in their errors, must not carry
    // it (until 2026-12-01 it did). A known one is a name the metadata publishes anyway.
    if (!known.includes(s)) throw new OAuthError("invalid_scope", UNKNOWN_SCOPE);
    if (!allowed.includes(s)) throw new OAuthError("invalid_scope", `The scope '${s}' is not allowed for this client.`);
  }
  return requested;
}
