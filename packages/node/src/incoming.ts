import type { IncomingMessage } from "node:http";

/** The request headers in wire order, combined per Fetch rules. */
export function headersFromRaw(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    // HTTP/2 compatibility objects list pseudo-headers (":path"), which are
    // not header names and would make Headers throw.
    if (name.startsWith(":")) continue;
    headers.append(name, raw[i + 1] as string);
  }
  return headers;
}

/**
 * The request headers of an IncomingMessage shim: an object standing in for Node's (serverless-http's
 * `ServerlessRequest` on AWS Lambda, @vendia/serverless-express, @codegenie/serverless-express) that
 * sets `headers` (lowercased names) and leaves `rawHeaders` empty. Read only when `rawHeaders` is
 * empty, so Node's own requests never come here (one with no header lines at all has an empty
 * `headers` too). Until 2026-12-01 such a request reached the app with no headers at all.
 *
 * - A value that is not a string (serverless-http's `content-length`, a number) is read as its
 *   string; `undefined` and `null` are no value.
 * - An array gives one field per value, as that many lines on the wire would, except `cookie`, whose
 *   values are joined with `"; "` (Node's joining rule, RFC 6265 §5.4: a cookie-string is one line).
 *   Where Node keeps only the first of several lines (`host`, `authorization`, `content-type`, ...)
 *   every value is kept: two Host values read as the comma-joined value plantgate refuses, as two
 *   Host lines are, rather than serving one of them.
 * - Which lines the client sent is not known here: a shim hands over one value per name (API
 *   Gateway and serverless-http have already picked one Host of several), so a repeated Host line
 *   cannot be detected behind one.
 * - Names starting with `:` (HTTP/2 pseudo-headers) are skipped, as in {@link headersFromRaw}; a
 *   name or value a Web Headers object refuses throws its TypeError (the request's 400).
 */
export function headersFromObject(object: IncomingMessage["headers"] | null | undefined): Headers {
  const headers = new Headers();
  if (object == null) return headers;
  for (const name of Object.keys(object)) {
    if (name.startsWith(":")) continue;
    const value: unknown = object[name];
    if (value === undefined || value === null) continue;
    if (!Array.isArray(value)) headers.append(name, String(value));
    else if (name.toLowerCase() === "cookie") headers.append(name, value.map(String).join("; "));
    else for (const item of value) headers.append(name, String(item));
  }
  return headers;
}

/** Whether something else already read from `incoming` (its body is then gone). */
export function isConsumed(incoming: IncomingMessage): boolean {
  // readableDidRead is set as soon as anyone reads or attaches 'data'; handing
  // over the remainder of a partly read body would corrupt it silently.
  return incoming.readableEnded || incoming.readableDidRead || incoming.destroyed;
}

/**
 * What the WHATWG URL parser (every `Request`, hence plantgate's routing) reads differently from a
 * matcher of the target as sent (Express's router, a host's `req.url` check, a proxy's prefix rule):
 * a backslash, which it takes for `/`; a `.` or `..` segment, also percent-encoded (`%2e`, `.%2e`,
 * `%2E%2e`, ...; also right before the query or fragment), which it resolves; a tab or line break, which it drops (Node's parser refuses those
 * itself; an IncomingMessage shim may not).
 *
 * Keep in step with `AMBIGUOUS_PATH` in packages/core/src/app.ts (`owns()`'s check), its twin: this
 * package depends on nothing of ours, so it cannot import core's. packages/express/test/
 * ambiguous-path.test.ts runs both on the same generated targets and fails when they disagree.
 * Exported for that test only (not from the package's index).
 */
export const AMBIGUOUS = /[\\\t\n\r]|(?:^|\/)(?:\.|%2e){1,2}(?:[/?#]|$)/i;
/** The scheme and authority of an absolute-form target (up to its path, or to a backslash). */
const SCHEME_AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/[^/\\]*/i;

/**
 * Whether the path of a request target (origin-form, or the path of an absolute-form one; its query
 * and fragment aside) holds a backslash, a dot segment or a tab or line break: a path the URL parser
 * turns into another (`/auth/x/../console` is `/auth/console`, `/auth\console` too), which a guard
 * matching the target as sent never saw as that path. @internal
 */
export function hasAmbiguousPath(target: string): boolean {
  // One test of the whole target for the common case; the exact look only when it matched.
  if (!AMBIGUOUS.test(target)) return false;
  let path = target;
  const end = path.search(/[?#]/);
  if (end >= 0) path = path.slice(0, end);
  if (!path.startsWith("/")) {
    const authority = SCHEME_AUTHORITY.exec(path);
    if (authority === null) return false;
    path = path.slice(authority[0].length);
  }
  return AMBIGUOUS.test(path);
}

/**
 * A request target whose path the URL parser reads as another path (see {@link hasAmbiguousPath}):
 * `GET /auth/x/../console`, `GET /auth\console`, `GET /auth/%2e%2e/plants`. Refused (the 400 of
 * `refusedRequestAnswer`) rather than served under the resolved path, which a host guard or a
 * proxy rule on that path never matched.
 */
export class AmbiguousPathError extends TypeError {
  override readonly name = "AmbiguousPathError";
  constructor() {
    super("The request target's path holds a dot segment or a backslash.");
  }
}

/** An absolute-form target whose authority holds an `@` (userinfo, empty or not). */
const USERINFO = /^https?:\/\/[^/?#]*@/i;

/** The request target split for the URL. */
export interface Target {
  /** Path and query, always starting with "/". */
  path: string;
  /** Host from an absolute-form target (proxy-style requests). */
  authority?: string;
  /** Whether an absolute-form target names `https` (else `http`); undefined for the origin form. */
  secure?: boolean;
}

/** Splits an origin-form or absolute-form request target; throws TypeError for anything else (`OPTIONS *`, userinfo). */
export function parseTarget(target: string): Target {
  if (target.startsWith("/")) return { path: target };
  if (/^https?:\/\//i.test(target)) {
    // RFC 9110 §4.2.4: userinfo in an http(s) URI received is an error. Refused as in a Host value
    // (until 2026-11-30 the URL parser dropped it and the host after it was served).
    if (USERINFO.test(target)) throw new TypeError("Unsupported request target.");
    const url = new URL(target);
    return { path: `${url.pathname}${url.search}`, authority: url.host, secure: url.protocol === "https:" };
  }
  throw new TypeError("Unsupported request target.");
}
