import { ApiError, NetworkError, type ApiErrorBody } from "./errors.js";

/**
 * What the client passes to `fetch`: always a URL string, a method, plain headers, a string body,
 * and `redirect: "manual"`: every call carries a client secret, a password, a refresh token or a
 * bearer token, and a followed redirect would send them to wherever the `Location` points.
 */
export interface FetchInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  redirect: "manual";
  /** Aborted when the client's `timeoutMs` passes (absent with `timeoutMs: 0`); a fetch may ignore it, the deadline holds anyway. */
  signal?: AbortSignal;
}

/** Status 0 is what a browser's fetch shows for a redirect under `redirect: "manual"` (an opaque redirect). */
function isRedirect(status: number): boolean {
  return status === 0 || (status >= 300 && status < 400);
}

/** The part of a `Response` the client reads. The global Response and node-fetch's both fit. */
export interface FetchResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/**
 * Any fetch: the global one (Node 20+, workerd, browsers), node-fetch 3, a test double, or an
 * in-process app (`(url, init) => app.fetch(new Request(url, init))`).
 *
 * @example
 * import nodeFetch from "node-fetch";
 * const client = createClient({ ...options, fetch: nodeFetch });
 */
export type FetchLike = (url: string, init: FetchInit) => Promise<FetchResponse>;

/** A response whose body has been read. */
export interface ReadResponse {
  status: number;
  headers: { get(name: string): string | null };
  text: string;
}

/**
 * Sends one request; a rejected fetch or an unreadable body becomes a {@link NetworkError}. With
 * `timeoutMs` (> 0), the answer, body included, must be complete by then: past it the request's
 * signal is aborted and the call fails with a {@link NetworkError} `timeout`, whether or not the
 * fetch heeds the signal (a test double, an in-process app, a hook that hangs), so a hung server
 * never holds the caller, nor the callers waiting on one shared token request, for longer.
 */
export async function send(fetch: FetchLike, url: string, init: FetchInit, timeoutMs = 0): Promise<ReadResponse> {
  if (timeoutMs <= 0) return exchange(fetch, url, init);
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new NetworkError("timeout", `${init.method} ${pathOf(url)} got no complete answer within ${timeoutMs} ms`));
      controller.abort();
    }, timeoutMs);
  });
  try {
    // The exchange's own rejection after the abort is handled by the race (and ignored).
    return await Promise.race([exchange(fetch, url, { ...init, signal: controller.signal }), expired]);
  } finally {
    clearTimeout(timer);
  }
}

async function exchange(fetch: FetchLike, url: string, init: FetchInit): Promise<ReadResponse> {
  let response: FetchResponse;
  try {
    response = await fetch(url, init);
  } catch (cause) {
    throw new NetworkError("fetch_failed", `${init.method} ${pathOf(url)} failed: ${describe(cause)}`, null, { cause });
  }
  if (isRedirect(response.status)) {
    // Never followed: the request carried credentials. The Location is not echoed (it is the
    // other side's choice and could carry anything); the status says what happened.
    throw new NetworkError(
      "redirect_refused",
      `${init.method} ${pathOf(url)} answered with a redirect (HTTP ${response.status}); redirects are not followed because the request carries credentials`,
      response.status,
    );
  }
  let text: string;
  try {
    text = await response.text();
  } catch (cause) {
    throw new NetworkError("fetch_failed", `reading the response of ${init.method} ${pathOf(url)} failed: ${describe(cause)}`, response.status, { cause });
  }
  return { status: response.status, headers: response.headers, text };
}

/** Parses a body as JSON; anything else is a {@link NetworkError} (`not_json`). */
export function parseJsonBody(response: ReadResponse, what: string): unknown {
  try {
    return JSON.parse(response.text) as unknown;
  } catch (cause) {
    const type = response.headers.get("content-type");
    throw new NetworkError("not_json", `${what}: HTTP ${response.status} with a body that is not JSON${type ? ` (${type})` : ""}`, response.status, { cause });
  }
}

/** A {@link NetworkError} for JSON of the wrong shape. */
export function unexpected(response: ReadResponse, what: string, detail: string): NetworkError {
  return new NetworkError("unexpected_response", `${what}: HTTP ${response.status}, ${detail}`, response.status);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Turns a non-2xx API response into an {@link ApiError} (or a {@link NetworkError} if it is not one). */
export function apiFailure(response: ReadResponse, what: string): ApiError | NetworkError {
  let body: unknown;
  try {
    body = parseJsonBody(response, what);
  } catch (error) {
    return error as NetworkError;
  }
  if (isObject(body) && Number.isInteger(body.error) && typeof body.message === "string") {
    return new ApiError(response.status, body as unknown as ApiErrorBody, response.headers.get("www-authenticate"));
  }
  return unexpected(response, what, "an error body without the {error: int32, message} shape");
}

/** The path of a URL, for messages: never its query (it could carry anything). */
function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return "(invalid URL)";
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    // undici puts the useful part (ECONNREFUSED, ...) in `cause`.
    const inner = cause.cause instanceof Error ? ` (${cause.cause.message})` : "";
    return `${cause.message}${inner}`;
  }
  return String(cause);
}
