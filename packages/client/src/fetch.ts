import { ApiError, NetworkError, serverText, type ApiErrorBody } from "./errors.js";

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
  /**
   * Aborted when the client's `timeoutMs` passes or the caller's `signal` is aborted (absent with
   * `timeoutMs: 0` and no `signal`); a fetch may ignore it, the call ends at once anyway. Always the
   * client's own signal, never the caller's, so a fetch adds no listener to the caller's signal.
   */
  signal?: AbortSignal;
}

/** Status 0 is what a browser's fetch shows for a redirect under `redirect: "manual"` (an opaque redirect). */
function isRedirect(status: number): boolean {
  return status === 0 || (status >= 300 && status < 400);
}

/**
 * The part of a `Response` the client reads. The global Response and node-fetch's both fit. The
 * body is read from `body` when it is a Web `ReadableStream` or an async iterable of bytes
 * (node-fetch's Node stream), so that a body over `maxResponseBytes` is cut off while it arrives;
 * a response without one (a polyfill's, a test double) is read with `text()`, its size checked
 * after, and given up (as a stream is cancelled) once the request's signal is aborted.
 */
export interface FetchResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
  readonly body?: unknown;
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
 * When something must be done: `at` on the monotonic clock (`performance.now()`, never the
 * injectable `clock`, which may stand still in tests), and `ms`, the budget it was given (for
 * messages). Null: no deadline (`timeoutMs: 0`).
 */
export interface Deadline {
  readonly at: number;
  readonly ms: number;
}

/** A deadline `ms` from now; null for 0 (none). */
export function deadlineIn(ms: number): Deadline | null {
  return ms > 0 ? { at: performance.now() + ms, ms } : null;
}

/** The {@link NetworkError} `timeout` of something that got no complete answer by its deadline. */
export function timeoutError(what: string, ms: number, detail = ""): NetworkError {
  return new NetworkError("timeout", `${what} got no complete answer within ${ms} ms${detail}`);
}

/**
 * What a call rejects with when its caller's `signal` is aborted: the signal's `reason`, as fetch
 * does (an `AbortError` DOMException after `abort()`, a `TimeoutError` after `AbortSignal.timeout`,
 * whatever was given to `abort(reason)`); an `AbortError` for a signal without one (an old polyfill).
 */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/**
 * Checks a caller's `signal` option: absent, or an AbortSignal (judged by shape, so that a signal of
 * another realm or a polyfill's passes). A TypeError otherwise.
 */
export function checkSignal(signal: unknown): AbortSignal | undefined {
  if (signal === undefined) return undefined;
  const s = signal as { aborted?: unknown; addEventListener?: unknown; removeEventListener?: unknown } | null;
  if (s === null || typeof s !== "object" || typeof s.aborted !== "boolean" || typeof s.addEventListener !== "function" || typeof s.removeEventListener !== "function") {
    throw new TypeError("signal must be an AbortSignal");
  }
  return signal as AbortSignal;
}

/**
 * Settles as `work` does, or rejects with `onTimeout()` once `deadline` passes, or with the
 * signal's reason once `signal` is aborted (at once if it already is), whichever comes first,
 * whether or not `work` ever settles (a hook or a shared renewal that hangs): `work` is left to
 * finish on its own. No timer and no listener on `signal` outlives the call.
 */
export async function within<T>(deadline: Deadline | null, work: Promise<T>, onTimeout: () => Error, signal?: AbortSignal): Promise<T> {
  if (deadline === null && signal === undefined) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    if (deadline !== null) timer = setTimeout(() => reject(onTimeout()), Math.max(0, deadline.at - performance.now()));
    if (signal !== undefined) {
      onAbort = () => reject(abortReason(signal));
      signal.addEventListener("abort", onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([work, stopped]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal!.removeEventListener("abort", onAbort);
  }
}

/**
 * Sends one request; a rejected fetch or an unreadable body becomes a {@link NetworkError}. With a
 * `deadline`, the answer, body included, must be complete by then: past it the request's signal is
 * aborted and the call fails with a {@link NetworkError} `timeout`, whether or not the fetch heeds
 * the signal (a test double, an in-process app, a hook that hangs), so a hung server never holds
 * the caller, nor the callers waiting on one shared token request, for longer. A deadline already
 * passed fails at once, and nothing is sent. The caller's `signal` works the same way and rejects
 * with its reason (fetch's convention); whichever of the two comes first wins. An already aborted
 * signal rejects at once, and nothing is sent. `clock`: the client's, which an answer's HTTP dates
 * are read against (see {@link retryAfterOf}).
 */
export async function send(
  fetch: FetchLike,
  url: string,
  init: FetchInit,
  deadline: Deadline | null,
  maxResponseBytes: number,
  clock: () => number,
  signal?: AbortSignal,
): Promise<ReadResponse> {
  if (deadline === null && signal === undefined) return exchange(fetch, url, init, maxResponseBytes, clock);
  if (signal?.aborted) throw abortReason(signal);
  const expiredError = () => timeoutError(`${init.method} ${pathOf(url)}`, deadline!.ms);
  const left = deadline === null ? Infinity : deadline.at - performance.now();
  if (left <= 0) throw expiredError();
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    if (deadline !== null) {
      timer = setTimeout(() => {
        reject(expiredError());
        controller.abort();
      }, left);
    }
    if (signal !== undefined) {
      onAbort = () => {
        reject(abortReason(signal));
        controller.abort(abortReason(signal));
      };
      signal.addEventListener("abort", onAbort, { once: true });
    }
  });
  try {
    // The exchange's own rejection after the abort is handled by the race (and ignored).
    return await Promise.race([exchange(fetch, url, { ...init, signal: controller.signal }, maxResponseBytes, clock), stopped]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal!.removeEventListener("abort", onAbort);
  }
}

/**
 * The headers of the answer a {@link NetworkError} `response_too_large` refused: its body was not
 * read, but its head was, and a token endpoint's 429 or 503 holds by its `Retry-After` whatever its
 * body (see the token manager). Internal: not exported from the package's index.
 */
export const tooLargeHeads = new WeakMap<NetworkError, ReadResponse["headers"]>();

/** Default of the client's `maxResponseBytes`: far above any answer plantgate gives (a page of 100 accounts is about 30 KB). */
export const DEFAULT_MAX_RESPONSE_BYTES = 1_048_576;

async function exchange(fetch: FetchLike, url: string, init: FetchInit, maxResponseBytes: number, clock: () => number): Promise<ReadResponse> {
  let response: FetchResponse;
  try {
    response = await fetch(url, init);
  } catch (cause) {
    throw new NetworkError("fetch_failed", `${init.method} ${pathOf(url)} failed: ${describe(cause)}`, null, { cause });
  }
  if (isRedirect(response.status)) {
    // Never followed: the request carried credentials. The Location is not echoed (it is the
    // other side's choice and could carry anything); the status says what happened. Its body is
    // let go of, or the connection stays held while the server goes on sending.
    discard(response.body);
    throw new NetworkError(
      "redirect_refused",
      `${init.method} ${pathOf(url)} answered with a redirect (HTTP ${response.status}); redirects are not followed because the request carries credentials`,
      response.status,
    );
  }
  const tooLarge = () => {
    const error = new NetworkError(
      "response_too_large",
      `${init.method} ${pathOf(url)} answered HTTP ${response.status} with a body over ${maxResponseBytes} bytes (maxResponseBytes); it was not read further`,
      response.status,
      retryAfterOption(response, clock()),
    );
    tooLargeHeads.set(error, response.headers);
    return error;
  };
  // A declared length over the cap is refused before a byte is read.
  const declared = response.headers.get("content-length")?.trim();
  if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > maxResponseBytes) {
    discard(response.body);
    throw tooLarge();
  }
  let text: string | null;
  try {
    text = await readCapped(response, maxResponseBytes, init.signal);
  } catch (cause) {
    throw new NetworkError("fetch_failed", `reading the response of ${init.method} ${pathOf(url)} failed: ${describe(cause)}`, response.status, { cause });
  }
  if (text === null) throw tooLarge();
  return { status: response.status, headers: response.headers, text };
}

/**
 * The body as text (UTF-8, a leading BOM dropped, as `Response.text()` reads it), or null once it
 * passes `limit` bytes: a stream is then cancelled where it stands, so a server that sends without
 * end costs the client at most `limit` bytes of memory. Reading also stops (the stream cancelled)
 * once `signal` is aborted (the deadline passed), even under a fetch that does not heed it, and on
 * any failure, so no exit leaves the connection held by a half-read body. A body read with
 * `text()` stops waiting for it then too, with the same rejection (the signal's reason).
 * Exported for the tests only (not from the package's index).
 */
export async function readCapped(response: FetchResponse, limit: number, signal: AbortSignal | undefined): Promise<string | null> {
  const body = response.body as { getReader?: unknown; [Symbol.asyncIterator]?: unknown } | null | undefined;
  const decoder = new TextDecoder();
  let size = 0;
  let text = "";
  /** Adds a chunk; false once the total passes the limit. */
  const add = (chunk: unknown): boolean => {
    const bytes = bytesOf(chunk);
    size += bytes.byteLength;
    if (size > limit) return false;
    text += decoder.decode(bytes, { stream: true });
    return true;
  };
  if (body !== null && typeof body === "object" && typeof body.getReader === "function") {
    const reader = (body as ReadableStream<unknown>).getReader();
    let finished = false;
    // A body that stalls mid-way is cancelled the moment the deadline passes, not at its next chunk.
    const onAbort = () => void reader.cancel().catch(() => undefined);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        signal?.throwIfAborted();
        const { done, value } = await reader.read();
        signal?.throwIfAborted();
        if (done) {
          finished = true;
          return text + decoder.decode();
        }
        if (!add(value)) return null;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      if (!finished) reader.cancel().catch(() => undefined);
    }
  }
  if (body !== null && typeof body === "object" && typeof body[Symbol.asyncIterator] === "function") {
    // Leaving the loop early (a return or a throw) ends the iteration, which destroys a Node
    // stream (node-fetch); at the deadline the stream is destroyed at once, even mid-wait.
    const stream = body as { destroy?: () => void };
    const onAbort = () => {
      try {
        stream.destroy?.();
      } catch {
        // Already closed.
      }
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const chunk of body as AsyncIterable<unknown>) {
        signal?.throwIfAborted();
        if (!add(chunk)) return null;
      }
      signal?.throwIfAborted();
      return text + decoder.decode();
    } catch (error) {
      // The stream destroyed at the abort ends the iteration with "Premature close": the reason
      // is the signal's, as on the other paths.
      signal?.throwIfAborted();
      throw error;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }
  // No stream to read (a polyfill's Response, an in-process stand-in): read with text(), the cap
  // checked after. It is raced against the signal as a stream's reads are, and rejects as they do
  // (the signal's reason) once it is aborted: a text() that never settles (a polyfill's body that
  // stalls) was otherwise awaited for good after the call had ended, holding the response and this
  // read with it, one more for every call that timed out or was aborted.
  signal?.throwIfAborted();
  const whole = await within(null, response.text(), unreachable, signal);
  return new TextEncoder().encode(whole).byteLength > limit ? null : whole;
}

/** The timeout of a {@link within} without a deadline: never called. */
function unreachable(): Error {
  return new Error("unreachable: no deadline");
}

/** A body chunk as bytes: a Uint8Array (or Buffer), another view or an ArrayBuffer (some polyfills), or text (a Node stream with an encoding). */
function bytesOf(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk;
  if (ArrayBuffer.isView(chunk)) return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  if (typeof chunk === "string") return new TextEncoder().encode(chunk);
  throw new TypeError("the response body gave a chunk that is not bytes");
}

/** Lets go of a body that will not be read (a stream is cancelled, so the connection can close). */
function discard(body: unknown): void {
  const stream = body as { cancel?: () => Promise<void>; destroy?: () => void } | null | undefined;
  try {
    if (typeof stream?.cancel === "function") stream.cancel().catch(() => undefined);
    else if (typeof stream?.destroy === "function") stream.destroy();
  } catch {
    // A locked or already closed stream: nothing more to let go of.
  }
}

/** Parses a body as JSON; anything else is a {@link NetworkError} (`not_json`). */
export function parseJsonBody(response: ReadResponse, what: string): unknown {
  try {
    return JSON.parse(response.text) as unknown;
  } catch {
    // No cause: the parser's message quotes the body (a short one whole), which may be a token.
    const type = response.headers.get("content-type");
    throw new NetworkError("not_json", `${what}: HTTP ${response.status} with a body that is not JSON${type ? ` (${serverText(type, 100)})` : ""}`, response.status);
  }
}

/** A {@link NetworkError} for JSON of the wrong shape. */
export function unexpected(response: ReadResponse, what: string, detail: string): NetworkError {
  return new NetworkError("unexpected_response", `${what}: HTTP ${response.status}, ${detail}`, response.status);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A response's `Retry-After` in whole seconds (RFC 9110 §10.2.3): delta-seconds, or an HTTP date
 * counted from the response's own `Date` (both the server's clock; without a `Date` that is an
 * HTTP date, ignored, as this host's clock may differ); null when absent, or when it is neither
 * (`1.5`, `-1`, an ISO 8601 date: ignored, as if absent). Dates are read by {@link httpDate}, never
 * by `Date.parse`, whose lenient rules read `1.5` and `-1` as dates in 2001 (retryAfter 0 until
 * 2026-12-02) and `12/25/2030` as a date to wait for. `now`: the client's clock (epoch ms), which
 * only places a `Date`'s two-digit RFC 850 year in its century (until 2026-12-02 `Date.now()` did,
 * whatever the client's `clock` said).
 */
export function retryAfterOf(response: Pick<ReadResponse, "headers">, now: number): number | null {
  const value = response.headers.get("retry-after")?.trim();
  if (value === undefined || value === "") return null;
  // Any number of digits (RFC 9110 `1*DIGIT`); past 10 read as 2^31 s, RFC 9111 §1.2.2's bound for
  // delta-seconds (the hold caps it anyway). Until 2026-12-02 such a value was not read: no hold.
  if (/^\d+$/.test(value)) {
    // Leading zeros count for nothing (`000000000005` is 5 s).
    const digits = value.replace(/^0+(?=\d)/, "");
    return digits.length > 10 ? 2 ** 31 : Number(digits);
  }
  // The Date first, its own two-digit RFC 850 year read against the client's clock; a two-digit
  // year of the Retry-After is read against the Date.
  const date = httpDate(response.headers.get("date")?.trim() ?? "", now);
  if (date === null) return null;
  const at = httpDate(value, date);
  if (at === null) return null;
  return Math.max(0, Math.ceil((at - date) / 1000));
}

const DAY_NAME = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)";
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const MONTH = `(${MONTHS.join("|")})`;
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
/** `Sun, 06 Nov 1994 08:49:37 GMT` */
const IMF_FIXDATE = new RegExp(`^${DAY_NAME}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
/** `Sunday, 06-Nov-94 08:49:37 GMT` */
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
/** `Sun Nov  6 08:49:37 1994` (the day of the month padded with a space) */
const ASCTIME_DATE = new RegExp(`^${DAY_NAME} ${MONTH} (\\d{2}| \\d) ${TIME} (\\d{4})$`);

/**
 * An HTTP-date (RFC 9110 §5.6.7) as epoch ms, or null: only the IMF-fixdate and the obsolete
 * RFC 850 and asctime forms, exactly (case-sensitive, as the grammar is), with a day that exists in
 * its month, hours to 23, minutes to 59 and seconds to 60 (a leap second); the day name is not
 * checked against the date. An RFC 850 date's two-digit year is the one within 50 years of
 * `reference` (epoch ms; a year more than 50 years ahead is taken from the century before, as
 * §5.6.7 says). Exported for the tests only (not from the package's index).
 */
export function httpDate(value: string, reference: number): number | null {
  let m: RegExpExecArray | null;
  let date: { day: string; month: string; year: number; time: string[] };
  if ((m = IMF_FIXDATE.exec(value)) !== null) {
    date = { day: m[1]!, month: m[2]!, year: Number(m[3]), time: m.slice(4, 7) };
  } else if ((m = RFC850_DATE.exec(value)) !== null) {
    const refYear = new Date(reference).getUTCFullYear();
    let year = Math.floor(refYear / 100) * 100 + Number(m[3]);
    if (year > refYear + 50) year -= 100;
    else if (year <= refYear - 50) year += 100;
    date = { day: m[1]!, month: m[2]!, year, time: m.slice(4, 7) };
  } else if ((m = ASCTIME_DATE.exec(value)) !== null) {
    date = { day: m[2]!, month: m[1]!, year: Number(m[6]), time: m.slice(3, 6) };
  } else {
    return null;
  }
  const month = MONTHS.indexOf(date.month);
  const day = Number(date.day.trim());
  const [hours, minutes, seconds] = date.time.map(Number) as [number, number, number];
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0-99 as 1900-1999.
  const lastDay = new Date(0);
  lastDay.setUTCFullYear(date.year, month + 1, 0);
  if (day < 1 || day > lastDay.getUTCDate() || hours > 23 || minutes > 59 || seconds > 60) return null;
  const at = new Date(0);
  at.setUTCFullYear(date.year, month, day);
  at.setUTCHours(hours, minutes, seconds, 0);
  return at.getTime();
}

/**
 * The `retryAfter` option of the {@link NetworkError} of an answer: its `Retry-After` on a 429 or
 * 503 (the statuses that hold token requests), when it has a usable one; `now` as for {@link retryAfterOf}.
 */
export function retryAfterOption(response: Pick<ReadResponse, "status" | "headers">, now: number): { retryAfter: number } | undefined {
  if (response.status !== 429 && response.status !== 503) return undefined;
  const seconds = retryAfterOf(response, now);
  return seconds === null ? undefined : { retryAfter: seconds };
}

/**
 * Turns a non-2xx API response into an {@link ApiError} (or a {@link NetworkError} if it is not one:
 * a proxy's page, a gateway's JSON, whose `retryAfter` is the answer's on a 429 or 503); `now`: the
 * client's clock, as for {@link retryAfterOf}.
 */
export function apiFailure(response: ReadResponse, what: string, now: number): ApiError | NetworkError {
  let body: unknown;
  let error: NetworkError;
  try {
    body = parseJsonBody(response, what);
    if (isObject(body) && Number.isInteger(body.error) && typeof body.message === "string") {
      return new ApiError(response.status, body as unknown as ApiErrorBody, response.headers.get("www-authenticate"), retryAfterOf(response, now));
    }
    error = unexpected(response, what, "an error body without the {error: int32, message} shape");
  } catch (notJson) {
    error = notJson as NetworkError;
  }
  // Until 2026-12-02 a proxy's 429 or 503 page (nginx's HTML, a load balancer's empty body) gave
  // its caller no retryAfter, though the answer said when to come back.
  const option = retryAfterOption(response, now);
  return option === undefined ? error : new NetworkError(error.reason, error.message, error.status, option);
}

/** The path of a URL, for messages: never its query (it could carry anything). */
export function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return "(invalid URL)";
  }
}

/**
 * What a fetch or body error says, for a message: its `message` and its `cause`'s (undici puts the
 * useful part, ECONNREFUSED and such, there), each through {@link serverText} (escaped, bounded):
 * a custom fetch's error may quote anything, a response included, of any length.
 */
function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = cause.cause instanceof Error ? ` (${serverText(String(cause.cause.message))})` : "";
    return `${serverText(String(cause.message))}${inner}`;
  }
  let text: string;
  try {
    text = String(cause);
  } catch {
    // An object without a usable toString (Object.create(null), a throwing one).
    text = "a value that is not an Error";
  }
  return serverText(text);
}
