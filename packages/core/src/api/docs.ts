/**
 * `GET /docs` and `GET /docs/assets/{name}`: the API reference page, when one was given as the
 * `docs` option (`swaggerUi()` from `@plantgate/docs`). Core only serves it; the page, its files
 * and their headers (CSP included) come from that package.
 */
import { ApiError, ApiErrorCode } from "../errors/index.js";
import { notModified } from "../http/conditional.js";
import { API_NO_STORE, json, type PlainResponse } from "../http/respond.js";
import type { ServedPage } from "../pages/static-page.js";

const ASSETS = "/docs/assets/";

/**
 * On the JSON errors under `/docs` (404, 405): what keeps a browser from treating them as anything
 * but inert data, as the page's own answers are kept (nosniff, no framing, no referrer); a CSP
 * that allows nothing, since a JSON answer needs nothing.
 */
export const DOCS_ERROR_HEADERS: Record<string, string> = {
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** Whether `path` (`/docs...`, relative to the base path) is the page or one of its files. */
export function docsOwns(docs: ServedPage, path: string): boolean {
  return path === "/docs" || (path.startsWith(ASSETS) && docs.asset(path.slice(ASSETS.length)) !== null);
}

/** A path under `/docs` as a span's `url.path` may carry it: itself when it names the page or one of its files (all fixed text), else null. */
export function docsSpanPath(docs: ServedPage, path: string): string | null {
  return path === "/docs" || (path.startsWith(ASSETS) && Object.hasOwn(docs.assetTypes, path.slice(ASSETS.length))) ? path : null;
}

/**
 * Answers `path` (`/docs...`, relative to the base path): the file with its strong ETag, or a 304
 * when `ifNoneMatch` (the request's If-None-Match) names it or is `*` (RFC 9110 §13.1.2, GET and
 * HEAD); unknown paths are the usual 404, other methods 405, both with {@link DOCS_ERROR_HEADERS}.
 */
export async function docsHandler(docs: ServedPage, path: string, method: string, ifNoneMatch: string | null): Promise<PlainResponse> {
  const name = path === "/docs" ? null : path.startsWith(ASSETS) ? path.slice(ASSETS.length) : undefined;
  if (name === undefined || (name !== null && !Object.hasOwn(docs.assetTypes, name))) throw new ApiError(404, ApiErrorCode.notFound, "Not found.", DOCS_ERROR_HEADERS);
  if (method !== "GET" && method !== "HEAD") {
    return json(405, { error: ApiErrorCode.methodNotAllowed, message: "Use GET, HEAD for this endpoint." }, { allow: "GET, HEAD", ...DOCS_ERROR_HEADERS, ...API_NO_STORE });
  }
  const tagged = await docs.tagged(name)!;
  return notModified(ifNoneMatch, tagged.etag) ? tagged.notModified() : tagged.ok();
}
