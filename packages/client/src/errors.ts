/**
 * The client's typed errors. Every failure a call can report is one of these, so callers can
 * branch on `instanceof` and never have to parse messages:
 *
 * - {@link OAuthError}: the token endpoint said no (RFC 6749 §5.2 `{error, error_description}`);
 * - {@link ApiError}: an API route said no (the spec's `{error: int32, message}` body);
 * - {@link NetworkError}: there was no usable answer (fetch rejected, or the response was not the
 *   JSON the protocol promises).
 *
 * Secrets (client secret, password, tokens) never appear in any message.
 */

/**
 * Base class of every error `@plantgate/client` throws (argument mistakes aside, which are
 * `TypeError`s thrown synchronously by {@link createClient}).
 *
 * @example
 * try { await client.listAccounts(); } catch (e) { if (e instanceof PlantgateClientError) report(e); }
 */
export abstract class PlantgateClientError extends Error {
  /** HTTP status of the response, or `null` when there was none. */
  abstract readonly status: number | null;
}

/** The `grant_type` a token request used. */
export type GrantType = "client_credentials" | "password" | "refresh_token";

/** The RFC 6749 §5.2 error body of the token endpoint. */
export interface OAuthErrorBody {
  error: string;
  error_description?: string;
  error_uri?: string;
}

/**
 * The token endpoint rejected a request. `error` is the RFC 6749 §5.2 code (`invalid_client`,
 * `invalid_grant`, `invalid_scope`, ...), `error_description` the server's explanation.
 *
 * @example
 * catch (e) { if (e instanceof OAuthError && e.error === "invalid_client") rotateSecret(); }
 */
export class OAuthError extends PlantgateClientError {
  override readonly name = "OAuthError";
  /** RFC 6749 §5.2 error code. */
  readonly error: string;
  readonly error_description: string | undefined;
  readonly error_uri: string | undefined;
  constructor(
    override readonly status: number,
    body: OAuthErrorBody,
    /** Which grant the failed request used. */
    readonly grantType: GrantType,
  ) {
    super(body.error_description === undefined ? body.error : `${body.error}: ${body.error_description}`);
    this.error = body.error;
    this.error_description = body.error_description;
    this.error_uri = body.error_uri;
  }
}

/** The spec's Error schema: what every API route answers on failure. */
export interface ApiErrorBody {
  /** int32; see the README's error-code table (1001..1503). */
  error: number;
  message: string;
}

/**
 * An API route (`POST /plants`, `GetAccountList`, ...) answered with an error status and the
 * `{error, message}` body. After a 401 the client has already refreshed its token and retried
 * once, so a 401 here means the fresh token was rejected too.
 *
 * @example
 * catch (e) { if (e instanceof ApiError && e.error === 1006) console.log("that plant id is taken"); }
 */
export class ApiError extends PlantgateClientError {
  override readonly name = "ApiError";
  /** The body's `error` number. */
  readonly error: number;
  /** The whole body as received. */
  readonly body: ApiErrorBody;
  constructor(
    override readonly status: number,
    body: ApiErrorBody,
    /** The `WWW-Authenticate` challenge of a 401/403, if any. */
    readonly wwwAuthenticate: string | null = null,
  ) {
    super(body.message);
    this.error = body.error;
    this.body = { error: body.error, message: body.message };
  }
}

/** Why a {@link NetworkError} happened. */
export type NetworkErrorReason =
  /** `fetch` rejected, or reading the body failed (DNS, refused, reset, TLS, aborted). */
  | "fetch_failed"
  /** A response arrived but its body is not JSON (a proxy's HTML page, an empty 502, ...). */
  | "not_json"
  /** JSON arrived but not in the shape the protocol promises (wrong server, wrong base URL). */
  | "unexpected_response"
  /** The server answered with a redirect (3xx); it is never followed, since every call carries credentials. */
  | "redirect_refused"
  /**
   * No complete answer (status, headers and body) within the client's `timeoutMs` (a call's, a
   * token request's or a tokenCache hook's; the request was aborted), or a token answer that came
   * after the token's own lifetime had run out.
   */
  | "timeout"
  /** The body passed the client's `maxResponseBytes` (declared or as it arrived); reading stopped there. */
  | "response_too_large";

/**
 * No usable answer: the request never completed, or what came back is not plantgate's protocol.
 * Distinct from {@link OAuthError} and {@link ApiError}, which are answers. Safe to retry later.
 *
 * @example
 * catch (e) { if (e instanceof NetworkError) scheduleRetry(); }
 */
export class NetworkError extends PlantgateClientError {
  override readonly name = "NetworkError";
  constructor(
    readonly reason: NetworkErrorReason,
    message: string,
    /** The response's status, when one arrived. */
    override readonly status: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
