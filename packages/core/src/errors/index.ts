/**
 * Typed errors. Each carries a public description (safe to send) and an optional private
 * `detail` (for logs only). `http/respond.ts` is the only place that turns them into Responses.
 */

/** RFC 6749 §5.2 error codes, plus the §4.1.2.1 server codes used at the token endpoint. */
export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "invalid_scope"
  | "server_error"
  | "temporarily_unavailable";

const OAUTH_STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  server_error: 500,
  temporarily_unavailable: 503,
};

/**
 * An error of the token endpoint, rendered as `{error, error_description}` (RFC 6749 §5.2).
 *
 * @example
 * throw new OAuthError("invalid_grant", "The refresh token is invalid, expired or revoked.");
 */
export class OAuthError extends Error {
  override readonly name = "OAuthError";
  readonly status: number;
  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    readonly detail?: string,
  ) {
    super(`${code}: ${description}`);
    this.status = OAUTH_STATUS[code];
  }
}

/**
 * The documented `Error.error` numbers of the API routes (plants, account listing, bearer checks).
 * Each cause has its own number; the README's error table is generated from the same meaning.
 */
export const ApiErrorCode = {
  /** The body is not valid JSON (empty, truncated, malformed, or not UTF-8). */
  invalidJson: 1001,
  /** The body is JSON but not an object. */
  notAnObject: 1002,
  /** A required field is missing (or null). */
  missingField: 1003,
  /** A field has the wrong type. */
  wrongType: 1004,
  /** `id` is an integer outside the int64 range. */
  outOfRange: 1005,
  /** A plant with this `id` already exists. */
  duplicateId: 1006,
  /** The body is larger than the configured limit. */
  bodyTooLarge: 1007,
  /** The request's Content-Type is not application/json. */
  unsupportedMediaType: 1008,
  /** A field is out of its allowed bounds (e.g. too long a string). */
  invalidValue: 1009,
  /** `page` is not an integer >= 1. */
  invalidPage: 1101,
  /** `pageSize` is not an integer in 1..maxPageSize. */
  invalidPageSize: 1102,
  /** `page` or `pageSize` of GetAccountList was given more than once (other query parameters are ignored). */
  repeatedParameter: 1103,
  /** No bearer token was sent. */
  missingToken: 1201,
  /** The bearer token is malformed, expired, revoked, or its signature does not verify. */
  invalidToken: 1202,
  /** The token is valid but lacks a scope the route needs. */
  insufficientScope: 1203,
  /** The Authorization header is not a single well-formed Bearer credential. */
  invalidAuthorizationHeader: 1204,
  /** Console: no valid session (not signed in, signed out, expired, or the account was disabled). */
  consoleNotSignedIn: 1301,
  /** Console: the signed-in account does not have the console's admin role. */
  consoleNotAdmin: 1302,
  /** Console: a state-changing call without the session's CSRF token in `X-CSRF-Token`. */
  consoleCsrf: 1303,
  /** Console: a state-changing call from another origin (`Origin` / `Sec-Fetch-Site`). */
  consoleCrossOrigin: 1304,
  /** Console sign-in: the username or password is incorrect (never says which). */
  consoleBadCredentials: 1305,
  /** Console: the client or account named in the path does not exist. */
  consoleUnknownResource: 1306,
  /** Console: a client id or username that already exists. */
  consoleConflict: 1307,
  /** Console: an action that needs `confirm: true` (rotating the signing key now); the message says why. */
  consoleConfirmationRequired: 1308,
  /** No route matches the path. */
  notFound: 1404,
  /** The route exists but not for this method. */
  methodNotAllowed: 1405,
  /** An unexpected failure; nothing internal is disclosed. */
  internal: 1500,
  /** The storage backend is unavailable; retry later. */
  storageUnavailable: 1503,
  /** Too many failed attempts for this account or client; retry after `Retry-After` seconds. */
  tooManyAttempts: 1429,
} as const;

export type ApiErrorNumber = (typeof ApiErrorCode)[keyof typeof ApiErrorCode];

/**
 * An error of an API route, rendered as `{error: int32, message}` (the spec's Error schema).
 *
 * @example
 * throw new ApiError(400, ApiErrorCode.missingField, "name is required");
 */
export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: ApiErrorNumber,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * Thrown by a storage backend when it cannot do its job (connection lost, timeout).
 * Rendered as 503; `cause` is logged, never sent.
 *
 * @example
 * throw new StorageError("database unreachable", { cause: err });
 */
export class StorageError extends Error {
  override readonly name: string = "StorageError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * What an audit store's `append` rejects with when it did not keep the record and has told the
 * operator itself (the SQL store's full queue: one warn line a run of drops): core then logs
 * nothing more for it, and counts it as a lost event (`observer.eventLost`, the metric
 * `plantgate_events_lost_total{receiver="audit"}`) as it does every failed append. Since
 * 2026-12-03; before, such an append resolved and no metric saw the loss.
 *
 * @example
 * append: (record) => (queue.length >= MAX ? Promise.reject(new AuditNotKeptError("audit queue full")) : enqueue(record)),
 */
export class AuditNotKeptError extends StorageError {
  override readonly name = "AuditNotKeptError";
}

/**
 * The mark core reads to tell an {@link AuditNotKeptError} (`Symbol.for("plantgate.auditNotKept")`
 * on its prototype): also one of another copy of core (a storage package with its own nested
 * copy), which `instanceof` would miss, and core would then log a line a dropped record (the
 * flood the store's one line a run avoids). A value whose property read throws is not one.
 */
const AUDIT_NOT_KEPT: unique symbol = Symbol.for("plantgate.auditNotKept");
Object.defineProperty(AuditNotKeptError.prototype, AUDIT_NOT_KEPT, { value: true });

/** Whether `error` is an {@link AuditNotKeptError} of any copy of core (by its mark); never throws. */
export function isAuditNotKept(error: unknown): boolean {
  try {
    return typeof error === "object" && error !== null && (error as { [AUDIT_NOT_KEPT]?: unknown })[AUDIT_NOT_KEPT] === true;
  } catch {
    return false;
  }
}

/**
 * Thrown by an adapter when the host server, not the client, keeps plantgate from a request's body:
 * `@plantgate/node`'s `PlantgateBodyConsumedError` (also `@plantgate/express`'s: a body parser or
 * another middleware read the body before plantgate) is one. From `info.readBody` or the `Request`'s body stream it reaches plantgate as it
 * is, where any other failure to read is the client's upload breaking (its 400). Answered as an
 * unexpected failure, 500 `server_error` on the token, revocation and introspection endpoints and
 * 500 `{"error":1500}` elsewhere, logged with its name and message, and recorded so by the request
 * observer and span (`error.type` its `code` when it has one, else its name). Subclass it, or throw
 * it with a message for the operator (it is logged, never sent).
 *
 * An adapter that does not depend on core (`@plantgate/node`) marks its error instead:
 * `Symbol.for("plantgate.hostFault")` set to `true` on the error or its prototype. `error instanceof HostFaultError` holds for such an error
 * too (and for one of another copy of core); `instanceof` a subclass stays the plain prototype check.
 *
 * @example
 * readBody: () => Promise.reject(new HostFaultError("the framework already read the body; register plantgate before its body parser")),
 */
export class HostFaultError extends Error {
  override readonly name: string = "HostFaultError";

  // No `this` parameter: one typed as a constructor made `x instanceof Sub` fail to compile (TS2860)
  // for a subclass whose constructor is private or protected. `this` is the class on the right of
  // `instanceof`: HostFaultError or a subclass.
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    // Only HostFaultError itself answers for the mark: a subclass names one particular fault.
    return this === HostFaultError && typeof value === "object" && value !== null && (value as { [HOST_FAULT]?: unknown })[HOST_FAULT] === true;
  }
}

/**
 * The mark of a host fault from an adapter that cannot import {@link HostFaultError}:
 * `Object.defineProperty(MyError.prototype, Symbol.for("plantgate.hostFault"), { value: true })`.
 */
const HOST_FAULT: unique symbol = Symbol.for("plantgate.hostFault");
Object.defineProperty(HostFaultError.prototype, HOST_FAULT, { value: true });

/**
 * A value a store cannot hold exactly, refused before anything is written: a lone UTF-16
 * surrogate (UTF-8 cannot encode it; SQL drivers would silently turn it into U+FFFD) anywhere in
 * storage-sql, U+0000 in a PostgreSQL text column, and a client id with a lone surrogate in the
 * memory store (no `clients.listPage` cursor could carry it: since 2026-11-30). Not an outage, so
 * not a {@link StorageError}; the message names the field, never the value. storage-sql exports
 * this same class.
 *
 * @example
 * await storage.clients.create({ ...record, clientId: "a\uD800b" }); // rejects with UnstorableValueError
 */
export class UnstorableValueError extends TypeError {
  override readonly name = "UnstorableValueError";
}

/**
 * Thrown by the brute-force throttle when a username or client is locked (`reason` `locked`), and
 * by the password check when `maxConcurrentPasswordChecks` checks are already running (`busy`).
 * Rendered as 429 with `Retry-After`; the body is the same whether or not the credentials would
 * have been right.
 *
 * @example
 * throw new TooManyAttemptsError(900);
 */
export class TooManyAttemptsError extends Error {
  override readonly name = "TooManyAttemptsError";
  /**
   * @param retryAfter whole seconds until the lock ends (at least 1).
   * @param reason `locked`: a brute-force counter is past its limit; `busy`: too many password
   *   checks in flight at once (nothing was counted).
   * @param lock which key refused (its index in the keys given), whether this attempt is the one
   *   that locked it (the first refused), when that key's window ends (epoch ms), and this
   *   refusal's count within that lock (`refused`, 1 for the first); set by `Throttle.attempt` and
   *   `Throttle.check`, for the events.
   */
  constructor(
    readonly retryAfter: number,
    readonly reason: "locked" | "busy" = "locked",
    readonly lock?: { keyIndex: number; first: boolean; until: number; refused: number },
  ) {
    super(reason === "busy" ? "too many password checks at once" : "too many failed attempts");
  }
}
