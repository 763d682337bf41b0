/**
 * The span per request and the `observer.request` hook: a wrapper around the app's dispatch,
 * chosen once per app. Without a tracer and an observer the app dispatches directly.
 */
import { OAuthError, TooManyAttemptsError } from "../errors/index.js";
import { isUnavailable, type PlainResponse } from "../http/respond.js";
import { dropRejection } from "../util/thenable.js";
import { activeSpan, errorType, perf, quietly, SPAN_ERROR } from "./spans.js";
import type { Observer, TraceSpan, Tracer } from "./types.js";

/** What dispatch tells its observer about one request (filled as it goes). */
export interface RequestNote {
  /** See {@link RequestObservation.route}. */
  route: string;
  /** The token endpoint's `grant_type`, as read from the form; undefined elsewhere. */
  grantType: string | undefined;
  /** What dispatch caught, if anything. */
  error: unknown;
  /** When dispatch began ({@link perf}'s clock). */
  started: number;
  /** The request's span, if tracing. */
  span: TraceSpan | undefined;
  /** Called by dispatch with its answer, once, before it returns it: ends the span and reports to the observer. Never throws. */
  finish(request: Request, note: RequestNote, answer: PlainResponse): void;
}

/**
 * Each known method, to its own string: a label is then the same string object on every request
 * (the request's method is a new string each time), which a metric's series lookup compares by
 * identity before it compares characters.
 */
const METHODS = new Map(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"].map((m) => [m, m]));

/** OpenTelemetry's `http.request.method` rule: known methods as they are, anything else `_OTHER`. */
function methodLabel(method: string): string {
  return METHODS.get(method) ?? "_OTHER";
}

/**
 * The token endpoint's `result` label: success, the OAuth code of the answer, or `locked_out`. A
 * refusal for too many password checks at once (`maxConcurrentPasswordChecks`) is load, not a
 * lock-out: it is labelled by its answer's code, `temporarily_unavailable`.
 */
function tokenResult(note: RequestNote, status: number): string {
  if (status < 400) return "success";
  const error = note.error;
  if (error instanceof TooManyAttemptsError) return error.reason === "busy" ? "temporarily_unavailable" : "locked_out";
  if (error instanceof OAuthError) return error.code;
  if (isUnavailable(error)) return "temporarily_unavailable";
  return status === 405 ? "invalid_request" : "server_error";
}

/**
 * What stands for a part of a request's path a span does not carry (OpenTelemetry's placeholder
 * for scrubbed URL content): the whole `url.path` of a request no route matches, and a parameter
 * segment of a console path.
 */
export const SCRUBBED = "REDACTED";

type Dispatch<I> = (request: Request, info: I, note: RequestNote | undefined) => Promise<PlainResponse>;

/** What the wrapper needs to know of the app. */
export interface ObserveOptions {
  tracer: Tracer | undefined;
  observer: Observer | undefined;
  /** The token endpoint's route (base path included), whose requests get `grantType` and `result`. */
  tokenRoute: string;
  /** The grant types plantgate supports (others are labelled `unsupported`). */
  grantTypes: ReadonlySet<string>;
  /**
   * The revocation and introspection routes (base path included): a client's lock-out there is
   * reported as at the token endpoint (`result` `locked_out`), with `grantType` `none`.
   */
  clientRoutes: ReadonlySet<string>;
  /**
   * The span's `url.path` for a request's path (`URL.pathname`): the path itself where every
   * segment is a route's own fixed text, else with what the request put in it scrubbed (see the
   * app's `spanPath`). Called before the span starts, so a sampler sees it.
   */
  spanPath(path: string): string;
  /**
   * The span's `client.address`: the request's client address as the throttle and the events see
   * it (the adapter's `clientIp`, behind a trusted proxy the address its `X-Forwarded-For` vouches
   * for), or undefined when it has none. Called before the span starts (tracing only).
   */
  clientAddress(request: Request, info: unknown): string | undefined;
}

/**
 * Wraps `dispatch` with a server span (`POST /UserService/connect/token`, OpenTelemetry HTTP
 * attributes) and the `observer.request` call; returns `dispatch` untouched when neither is set.
 */
export function observeRequests<I>(dispatch: Dispatch<I>, options: ObserveOptions): (request: Request, info: I) => Promise<PlainResponse> {
  const { tracer, observer, tokenRoute, clientRoutes, spanPath, clientAddress } = options;
  // Each supported grant type to its own string, as METHODS does for methods (the form's value is a new string each time).
  const grantTypes = new Map([...options.grantTypes].map((g) => [g, g]));
  const report = observer?.request?.bind(observer);
  if (tracer === undefined && report === undefined) return (request, info) => dispatch(request, info, undefined);

  const finish = (request: Request, note: RequestNote, answer: PlainResponse) => {
    const span = note.span;
    const method = methodLabel(request.method);
    const isToken = note.route === tokenRoute;
    const grantType = isToken ? (note.grantType === undefined ? "none" : (grantTypes.get(note.grantType) ?? "unsupported")) : undefined;
    // A client locked out at revocation or introspection (too many failed client authentications,
    // the token endpoint's throttle): counted where the token endpoint's are, under `none`, which
    // a locked-out token request never has (its grant_type is checked before the client); until
    // 2026-12-02 these showed only as their route's 429.
    const lockedOut = !isToken && clientRoutes.has(note.route) && note.error instanceof TooManyAttemptsError && note.error.reason === "locked";
    if (span) {
      try {
        // OpenTelemetry's HTTP span name: `{method} {route}`, with `HTTP` for a method it calls `_OTHER`.
        const named = method === "_OTHER" ? "HTTP" : method;
        span.updateName(note.route === "unmatched" ? named : `${named} ${note.route}`);
        if (note.route !== "unmatched") span.setAttribute("http.route", note.route);
        span.setAttribute("http.response.status_code", answer.status);
        if (grantType !== undefined) span.setAttribute("plantgate.grant_type", grantType);
        if (answer.status >= 500) {
          span.setAttribute("error.type", note.error === undefined ? String(answer.status) : errorType(note.error));
          span.setStatus({ code: SPAN_ERROR });
        }
      } catch {
        // A tracer never changes an answer either.
      }
      // Ended whatever the calls above did: a tracer whose updateName or setAttribute threw left the
      // span open for good (never exported, held by the SDK) until 2026-11-30.
      quietly(() => span.end());
    }
    if (report) {
      try {
        dropRejection(report({
          route: note.route,
          method,
          status: answer.status,
          durationMs: perf.now() - note.started,
          grantType: lockedOut ? "none" : grantType,
          result: isToken ? tokenResult(note, answer.status) : lockedOut ? "locked_out" : undefined,
        }));
      } catch {
        // An observer never changes an answer.
      }
    }
  };

  // dispatch calls `finish` itself before it returns (no async frame around it).
  const run = (request: Request, info: I, span: TraceSpan | undefined) =>
    dispatch(request, info, { route: "unmatched", grantType: undefined, error: undefined, started: perf.now(), span, finish });
  if (tracer === undefined) return (request, info) => run(request, info, undefined);
  return (request, info) => {
    const url = new URL(request.url);
    const method = methodLabel(request.method);
    const scheme = url.protocol.slice(0, -1);
    const attributes: Record<string, string | number> = {
      "http.request.method": method,
      // Never the path as sent: a token or secret a client appended to a route, put in a `;`
      // parameter or behind a percent-encoded `?` was exported with the span until 2026-12-02.
      "url.path": spanPath(url.pathname),
      "url.scheme": scheme,
      // An IPv6 literal is the address itself, without the URL's brackets (as "10.1.2.80" is). A
      // name longer than DNS allows (253, 254 with a trailing dot) is no server's: the URL parser
      // checks no length, and until 2026-12-03 a Host of kilobytes went into every request's span.
      "server.address": url.hostname.length > 253 + (url.hostname.endsWith(".") ? 1 : 0) ? SCRUBBED : url.hostname.charCodeAt(0) === 91 ? url.hostname.slice(1, -1) : url.hostname,
      "server.port": url.port === "" ? (scheme === "https" ? 443 : 80) : Number(url.port),
    };
    // Recommended on HTTP server spans, and known at the start, so a sampler sees it. Until
    // 2026-12-03 spans carried none: a burst of failures could not be told apart by caller.
    let client: string | undefined;
    try {
      client = clientAddress(request, info);
    } catch {
      // An adapter's clientIp that is no string (a hand-written one's null): the request is answered
      // as without a tracer (dispatch meets it where a route reads the address); the span goes without.
    }
    if (client !== undefined && client !== "") attributes["client.address"] = client;
    // Required with `_OTHER`: the method as sent (a token of at most what the adapter accepted).
    if (method === "_OTHER") attributes["http.request.method_original"] = request.method;
    // A tracer that throws starting the span: the request runs without one (a tracer never changes an answer).
    return activeSpan(tracer, method === "_OTHER" ? "HTTP" : method, { kind: 1, attributes }, (span) => run(request, info, span));
  };
}
