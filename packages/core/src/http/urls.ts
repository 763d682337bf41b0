import type { Context, Urls } from "../context.js";

/** Apps already warned that their URLs (and tokens' `iss`/`aud`) follow a non-loopback Host. */
const warned = new WeakSet<Context>();

/** The public URLs for one request: from options when set, else from the request URL's origin. */
export function urlsFor(ctx: Context, requestUrl: string): Urls {
  let baseUrl = ctx.baseUrl;
  if (baseUrl === undefined) {
    const url = new URL(requestUrl);
    baseUrl = `${url.origin}${ctx.basePath}`;
    if (!warned.has(ctx) && !isLoopback(url.hostname)) {
      // Finding 3 of the security review: without an issuer, the Host header decides `iss` and
      // `aud`; with an issuer that is no http(s) URL (a URN), it still decides the endpoints' URLs
      // in the metadata. Said once per app, at the first request from a non-loopback host.
      warned.add(ctx);
      ctx.logger.warn(
        ctx.issuer === undefined
          ? "plantgate: neither issuer nor baseUrl is configured, so token issuer and audience follow each request's Host; set issuer (or baseUrl) for any deployment reachable beyond loopback"
          : "plantgate: the issuer is not an http(s) URL and baseUrl is not configured, so the endpoint URLs in the metadata follow each request's Host (client assertions must name the issuer as aud); set baseUrl for any deployment reachable beyond loopback",
      );
    }
  }
  const issuer = ctx.issuer ?? baseUrl;
  return { baseUrl, issuer, audience: ctx.audience ?? issuer };
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}
