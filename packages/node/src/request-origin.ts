import type { IncomingMessage } from "node:http";

// host = IP-literal / IPv4 / reg-name, optionally followed by a port.
// Underscores are accepted because container and service-discovery names use
// them and the WHATWG URL parser accepts them too.
// A fully qualified name may end in a dot (`example.com.`), as clients send it when given one; the
// port may be empty (`example.com:`, RFC 3986 §3.2.3).
const HOST_PATTERN =
  /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?)(?::(\d{0,5}))?$/;

/**
 * Returns the normalised `host[:port]` if `value` is a syntactically valid
 * Host header value, otherwise `undefined`.
 *
 * The regular expression rejects everything the URL parser would silently
 * "repair" (paths, userinfo, whitespace, commas from repeated headers); the URL
 * parser then rejects what the expression cannot, such as `999.1.1.1`.
 */
export function parseHost(value: string | null | undefined): string | undefined {
  if (!value) return undefined;
  if (hostCache.has(value)) return hostCache.get(value);
  const host = parseHostUncached(value);
  remember(hostCache, value, host);
  return host;
}

// Every request carries a Host header, and nearly all carry one of a handful of values; parsing it
// with the WHATWG URL parser each time cost more than the rest of the origin logic. Bounded, since
// the values come from clients: when full, a cache starts over.
const CACHE_LIMIT = 256;
const hostCache = new Map<string, string | undefined>();
const originCache = new Map<string, string>();

function remember<V>(cache: Map<string, V>, key: string, value: V): void {
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(key, value);
}

function parseHostUncached(value: string): string | undefined {
  const match = HOST_PATTERN.exec(value);
  if (!match) return undefined;
  const port = match[1];
  if (port !== undefined && Number(port) > 65535) return undefined;
  try {
    return new URL(`http://${value}`).host;
  } catch {
    return undefined;
  }
}

/**
 * Validates a configured public origin such as `https://auth.example.com` and
 * returns it in its serialised form (no trailing slash, no path).
 *
 * @throws TypeError if `origin` is not an absolute `http:` or `https:` URL.
 */
export function parseOrigin(origin: string): string {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new TypeError(`Invalid origin: ${JSON.stringify(origin)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`Origin must use http: or https:, got ${JSON.stringify(url.protocol)}`);
  }
  return url.origin;
}

function lastValue(value: string | null): string | undefined {
  if (value === null) return undefined;
  // Each proxy appends its own entry, so only the right-most one is the trusted proxy's; the ones
  // before it are whatever the client (or a proxy nobody trusts) wrote.
  const comma = value.lastIndexOf(",");
  return (comma < 0 ? value : value.slice(comma + 1)).trim();
}

/** Inputs for {@link resolveOrigin}, separated so the decision is testable. */
export interface OriginInputs {
  incoming: IncomingMessage;
  headers: Headers;
  /** Authority taken from an absolute-form request target, if any. */
  targetAuthority: string | undefined;
  /** Whether an absolute-form request target names `https`; undefined for the origin form. */
  targetSecure?: boolean | undefined;
  origin: string | undefined;
  trustProxy: boolean;
}

/**
 * A request whose absolute-form target names a scheme other than the one this connection serves
 * (`GET https://host/...` over plain TCP, `http://` over TLS), answered 421 (see
 * {@link refusedRequestAnswer}).
 */
export class MisdirectedRequestError extends Error {
  override readonly name = "MisdirectedRequestError";
  constructor() {
    super("The request's target names a scheme this connection does not serve.");
  }
}

/**
 * Decides the origin (`scheme://host[:port]`) of the Web Request.
 *
 * @throws MisdirectedRequestError for an absolute-form target whose scheme is not the connection's
 *   (with `trustProxy`, the forwarded one), unless a fixed `origin` is configured.
 */
export function resolveOrigin(inputs: OriginInputs): string {
  if (inputs.origin !== undefined) return cachedOrigin(inputs.origin, () => parseOrigin(inputs.origin!));

  // Served by node:https the socket is a TLSSocket; keep the scheme truthful.
  let scheme = (inputs.incoming.socket as { encrypted?: boolean } | null)?.encrypted === true
    ? "https"
    : "http";
  let host: string | undefined;

  if (inputs.trustProxy) {
    const proto = lastValue(inputs.headers.get("x-forwarded-proto"))?.toLowerCase();
    if (proto === "http" || proto === "https") scheme = proto;
    host = parseHost(lastValue(inputs.headers.get("x-forwarded-host")));
  }

  // RFC 9112 §3.3: an absolute-form target is the target URI itself, scheme included, and RFC 9110
  // §7.4: a request for an https resource received over a connection that is not secured is
  // rejected, 421 (§15.5.20: its target does not match the connection it came on), as is an http
  // target on a TLS connection. Until 2026-11-30 the scheme was dropped and the authority read in
  // the connection's: `GET https://b:443/x` over plain TCP was served as `http://b/x` (port 80).
  if (inputs.targetSecure !== undefined && inputs.targetSecure !== (scheme === "https")) throw new MisdirectedRequestError();
  // RFC 9112 §3.2.2: an absolute-form target overrides the Host header.
  host ??= parseHost(inputs.targetAuthority) ?? parseHost(inputs.headers.get("host"));
  return originFromParts(scheme, host);
}

/**
 * The origin (`scheme://host[:port]`) of a request whose scheme and Host value an adapter already
 * decided (Express, say, after its own `trust proxy` rules): the host validated exactly as the
 * request listener validates it (see {@link parseHost}); when it is missing or malformed, `fallback`
 * (checked the same way: the listener falls back from a forwarded host to the Host header so),
 * else `localhost`. Results are cached (bounded), as the listener's are.
 *
 * @example
 * ```ts
 * import { originOf } from "@plantgate/node";
 *
 * originOf("https", "auth.example.com:443");                   // "https://auth.example.com"
 * originOf("http", "evil/path");                               // "http://localhost"
 * originOf("https", "evil/path", "auth.example.com");          // "https://auth.example.com"
 * ```
 */
export function originOf(scheme: "http" | "https", host: string | null | undefined, fallback?: string | null): string {
  return originFromParts(scheme, parseHost(host) ?? parseHost(fallback));
}

function originFromParts(scheme: string, host: string | undefined): string {
  // An unusable Host must not become part of URLs the app may reflect (links,
  // redirects, token audiences), so fall back to a harmless fixed host.
  const candidate = `${scheme}://${host ?? "localhost"}`;
  return cachedOrigin(candidate, () => new URL(candidate).origin);
}

function cachedOrigin(key: string, compute: () => string): string {
  let origin = originCache.get(key);
  if (origin === undefined) {
    origin = compute();
    remember(originCache, key, origin);
  }
  return origin;
}
