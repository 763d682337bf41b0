import type { Logger } from "../context.js";
import { ApiError, ApiErrorCode, OAuthError, StorageError, TooManyAttemptsError } from "../errors/index.js";
import { INTROSPECTION_PATH, REVOCATION_PATH, TOKEN_PATH } from "../oauth/metadata.js";
import { KeyEncryptionError } from "../crypto/key-encryption.js";

/**
 * A complete answer as plain data: what every plantgate handler returns. `fetch()` turns it into a
 * Web `Response`; adapters that can write status, headers and bytes directly (the Node adapter)
 * take it from `handle()` and skip building a Response and its body stream for every request.
 * Header names are lower-case; `body` is null for an empty body (no content-length is set then).
 * Treat `body` as read-only: the bytes of a static answer (the docs page's assets) are shared by
 * every response that serves them.
 */
export interface PlainResponse {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array | null;
}

/** A response with a complete body; sets content-length. */
export function plain(status: number, body: Uint8Array | string | null, headers: Record<string, string> = {}): PlainResponse {
  if (body === null) return { status, headers: { ...headers }, body: null };
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  return { status, headers: { ...headers, "content-length": String(bytes.byteLength) }, body: bytes };
}

/** A JSON response. `body` is serialized here unless it is already a string. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): PlainResponse {
  const bytes = encoder.encode(typeof body === "string" ? body : JSON.stringify(body));
  return { status, headers: { "content-type": "application/json", "content-length": String(bytes.byteLength), ...headers }, body: bytes };
}

/** The Web `Response` of a {@link PlainResponse}; for HEAD without the content (RFC 9110 §9.3.2), headers unchanged. */
export function toResponse(plainResponse: PlainResponse, head = false): Response {
  const { status, headers, body } = plainResponse;
  if (head || body === null) return new Response(null, { status, headers });
  return new Response(body as Uint8Array<ArrayBuffer>, { status, headers });
}

/**
 * A 503 for a request no plantgate app can answer yet (an embedding server still starting, a
 * Worker whose set-up failed), in the shape the request's endpoint answers: `{error:
 * "temporarily_unavailable", error_description}` with `Cache-Control: no-store` and `Pragma:
 * no-cache` on the token, revocation and introspection paths (RFC 6749 §5.2), `{error: 1503,
 * message}` elsewhere; `Retry-After` on both.
 *
 * @example
 * handle: async (request) => (app ? app.handle(request) : unavailableResponse(new URL(request.url).pathname, "The server is starting; retry shortly.", 1))
 */
export function unavailableResponse(pathname: string, message: string, retryAfterSeconds = 5): PlainResponse {
  const retry = { "retry-after": String(retryAfterSeconds) };
  // Whatever the base path before them (read here, not at load: the modules import each other).
  const oauth = pathname.endsWith(TOKEN_PATH) || pathname.endsWith(REVOCATION_PATH) || pathname.endsWith(INTROSPECTION_PATH);
  return oauth
    ? json(503, { error: "temporarily_unavailable", error_description: message }, { ...NO_STORE, ...retry })
    : json(503, { error: ApiErrorCode.storageUnavailable, message }, { "cache-control": "no-store", ...retry });
}

const encoder = new TextEncoder();

const TOO_MANY_ATTEMPTS = "Too many failed attempts; retry after the time in Retry-After.";
const TOO_MANY_CHECKS = "Too many sign-in attempts at once; retry after the time in Retry-After.";

/** Headers every token-endpoint response carries (RFC 6749 §5.1). */
export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" } as const;

/** What every `{error, message}` error answer carries: no cache keeps it. */
export const API_NO_STORE = { "cache-control": "no-store" } as const;

export function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `${error.cause.name}: ${error.cause.message}` : undefined;
    return { name: error.name, message: error.message, ...(cause ? { cause } : {}) };
  }
  return { value: typeof error };
}

/**
 * Whether `error` makes the answer a 503 (logged here): storage that fails, or stored signing keys
 * this instance cannot open (a key sealed under a key encryption key it lacks: another instance
 * sealed the keys, or rotated, under one it has; until 2026-12-01 each such request was a 500).
 */
function unavailable(error: unknown, logger: Logger): boolean {
  if (!isUnavailable(error)) return false;
  logger.error(error instanceof StorageError ? "storage unavailable" : "the signing keys cannot be loaded", describeError(error));
  return true;
}

/** Whether {@link errorResponse} answers `error` with a 503 (the metrics label it so too). */
export function isUnavailable(error: unknown): boolean {
  return error instanceof StorageError || error instanceof KeyEncryptionError;
}

/**
 * The only place errors become Responses. `surface` picks the wire shape: `oauth` for the token
 * endpoint (`{error, error_description}`), `api` for everything else (`{error: int32, message}`).
 */
export function errorResponse(error: unknown, surface: "oauth" | "api", logger: Logger): PlainResponse {
  if (error instanceof TooManyAttemptsError) {
    const retryAfter = String(error.retryAfter);
    const message = error.reason === "busy" ? TOO_MANY_CHECKS : TOO_MANY_ATTEMPTS;
    // OAuth: RFC 6749 defines no lock-out code; temporarily_unavailable (§4.1.2.1) is the registered
    // one clients already treat as "retry later", and it says nothing about the credentials.
    return surface === "oauth"
      ? json(429, { error: "temporarily_unavailable", error_description: message }, { ...NO_STORE, "retry-after": retryAfter })
      : json(429, { error: ApiErrorCode.tooManyAttempts, message }, { ...API_NO_STORE, "retry-after": retryAfter });
  }
  if (surface === "oauth") {
    let e: OAuthError;
    if (error instanceof OAuthError) e = error;
    else if (unavailable(error, logger)) {
      e = new OAuthError("temporarily_unavailable", "The service is temporarily unavailable; retry later.");
    } else {
      logger.error("unexpected error at the token endpoint", describeError(error));
      e = new OAuthError("server_error", "The server encountered an unexpected error.");
    }
    const headers: Record<string, string> = { ...NO_STORE };
    // RFC 6749 §5.2: a 401 invalid_client must name the scheme the client should use.
    if (e.status === 401) headers["www-authenticate"] = 'Basic realm="plantgate", charset="UTF-8"';
    if (e.code === "temporarily_unavailable") headers["retry-after"] = "5";
    return json(e.status, { error: e.code, error_description: e.description }, headers);
  }
  let e: ApiError;
  if (error instanceof ApiError) e = error;
  else if (unavailable(error, logger)) {
    e = new ApiError(503, ApiErrorCode.storageUnavailable, "The service is temporarily unavailable; retry later.", {
      "retry-after": "5",
    });
  } else {
    logger.error("unexpected error", describeError(error));
    e = new ApiError(500, ApiErrorCode.internal, "The server encountered an unexpected error.");
  }
  // No error answer may be kept by a cache: a 401/403 with its challenge, a 400 about this
  // request's query, a 404 or 405 (cacheable by default, RFC 9110 §15.1) alike; the API's 200 of
  // GetAccountList, its 429 and 503, and every token-endpoint answer say so too.
  return json(e.status, { error: e.code, message: e.message }, { ...e.headers, ...API_NO_STORE });
}
