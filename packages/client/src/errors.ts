/**
 * The client's typed errors. Every failure a call can report is one of these, so callers can
 * branch on `instanceof` and never have to parse messages:
 *
 * - {@link OAuthError}: the token endpoint said no (RFC 6749 §5.2 `{error, error_description}`);
 * - {@link ApiError}: an API route said no (the spec's `{error: int32, message}` body);
 * - {@link NetworkError}: there was no usable answer (fetch rejected, or the response was not the
 *   JSON the protocol promises).
 *
 * Secrets (client secret, password, tokens) never appear in any message. Text the server sent is
 * put into a message only through {@link serverText}: control characters escaped, length bounded.
 */

/** The most characters of one piece of server text in a message (after escaping); see {@link serverText}. */
export const SERVER_TEXT_MAX = 500;

/**
 * Characters a message never carries as they are: C0/C1 controls (a newline forges a log line, an
 * ESC drives a terminal), lone surrogates, the line and paragraph separators, and the bidi controls
 * (they reorder what a reader sees).
 */
const UNSAFE = /[\p{Cc}\p{Cs}\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;
const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * Server text made fit for a message that apps log: each unsafe character (see UNSAFE) written as
 * an escape (`\n`, `\r`, `\t`, else `\uXXXX`), and cut after `max` characters of the result with
 * `… (N more characters)`, N counting the characters of the server's text left out (UTF-16 units).
 *
 * @example
 * serverText("bad\n\u001b[31m"); // "bad\\n\\u001b[31m"
 */
export function serverText(text: string, max = SERVER_TEXT_MAX): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const ch = String.fromCodePoint(text.codePointAt(i)!);
    const piece = UNSAFE.test(ch) ? (NAMED[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`) : ch;
    if (out.length + piece.length > max) break;
    out += piece;
    i += ch.length;
  }
  return i < text.length ? `${out}… (${text.length - i} more characters)` : out;
}

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
 * `invalid_grant`, `invalid_scope`, ...), `error_description` the server's explanation. The message
 * is `error: error_description` through {@link serverText} (escaped, each part at most
 * {@link SERVER_TEXT_MAX} characters); the fields are the server's text as received: untrusted,
 * of any length and content up to `maxResponseBytes`, so escape them before logging or showing them.
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
    /**
     * The answer's `Retry-After` in seconds (delta-seconds, or an HTTP date counted from the
     * answer's `Date`), or null without one or with a value that is neither (ignored, RFC 9110
     * §10.2.3). On a 429 or 503 the client sends no token request
     * before it has passed (at most 300 s): calls until then reject with a new OAuthError like this
     * one, whose `retryAfter` is the seconds left of that wait (rounded up) and `cause` this error.
     * The same for a 429 or 5xx without one while the client backs off (see `NetworkError.retryAfter`).
     */
    readonly retryAfter: number | null = null,
    /**
     * `cause`: set only on the error of a call that sent nothing (the client waits out a
     * `Retry-After`, or backs off): the answer it waits after. `e.cause instanceof OAuthError` tells
     * such a call from an answer.
     */
    options?: { cause?: OAuthError },
  ) {
    super(body.error_description === undefined ? serverText(body.error) : `${serverText(body.error)}: ${serverText(body.error_description)}`, options);
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
 * once, so a 401 here means the fresh token was rejected too. The message is the body's `message`
 * through {@link serverText} (escaped, at most {@link SERVER_TEXT_MAX} characters); `body` and
 * `wwwAuthenticate` are as received: untrusted server text, escape them before logging them.
 *
 * @example
 * catch (e) { if (e instanceof ApiError && e.error === 1006) console.log("that plant id is taken"); }
 */
export class ApiError extends PlantgateClientError {
  override readonly name = "ApiError";
  /** The body's `error` number. */
  readonly error: number;
  /** The whole body as received (untrusted: `message` unescaped, of any length). */
  readonly body: ApiErrorBody;
  constructor(
    override readonly status: number,
    body: ApiErrorBody,
    /** The `WWW-Authenticate` challenge of a 401/403, if any. */
    readonly wwwAuthenticate: string | null = null,
    /**
     * The answer's `Retry-After` in seconds (delta-seconds, or an HTTP date counted from the
     * answer's `Date`), or null without one or with a value that is neither (ignored, RFC 9110
     * §10.2.3): plantgate sends it with a 503 whose storage is down
     * (5 s) and with a 429. The client does not wait it out for API calls; a caller retrying should.
     */
    readonly retryAfter: number | null = null,
  ) {
    super(serverText(body.message));
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
  /**
   * The seconds to wait before asking again, or null:
   * - on the error of a 429 or 503 answer (a proxy's or load balancer's page, an empty body, a
   *   gateway's JSON: `not_json`, `unexpected_response`, `response_too_large`), of an API call or of
   *   the token endpoint, the answer's `Retry-After` as on an {@link OAuthError} (null without a
   *   usable one); until 2026-12-02 it was null, and an API call's caller had nothing to back off by;
   * - when the client sent nothing: it backs off after token requests that got no usable answer, or
   *   waits out the `Retry-After` of a 429 or 503 without an OAuth error body, and this call needed
   *   a new token within that window. The seconds (rounded up) until it sends a token request
   *   again; `reason` and `status` are the last failure's (or that answer's), which is `cause`
   *   (`e.cause instanceof NetworkError` tells such a call from an answer).
   * Null on every other error.
   */
  readonly retryAfter: number | null;
  constructor(
    readonly reason: NetworkErrorReason,
    message: string,
    /** The response's status, when one arrived. */
    override readonly status: number | null = null,
    options?: { cause?: unknown; retryAfter?: number },
  ) {
    super(message, options !== undefined && "cause" in options ? { cause: options.cause } : undefined);
    this.retryAfter = options?.retryAfter ?? null;
  }
}
