import type { Context, Urls } from "../context.js";

/** The public URLs for one request: from options when set, else from the request URL's origin. */
export function urlsFor(ctx: Context, requestUrl: string): Urls {
  const baseUrl = ctx.baseUrl ?? `${new URL(requestUrl).origin}${ctx.basePath}`;
  const issuer = ctx.issuer ?? baseUrl;
  return { baseUrl, issuer, audience: ctx.audience ?? issuer };
}
