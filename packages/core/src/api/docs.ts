/**
 * `GET /docs` and `GET /docs/assets/{name}`: the API reference page, when one was given as the
 * `docs` option (`swaggerUi()` from `@plantgate/docs`). Core only serves it; the page, its files
 * and their headers (CSP included) come from that package.
 */
import { ApiError, ApiErrorCode } from "../errors/index.js";
import { json, type PlainResponse } from "../http/respond.js";
import type { ServedPage } from "../pages/static-page.js";

const ASSETS = "/docs/assets/";

/** Whether `path` (`/docs...`, relative to the base path) is the page or one of its files. */
export function docsOwns(docs: ServedPage, path: string): boolean {
  return path === "/docs" || (path.startsWith(ASSETS) && docs.asset(path.slice(ASSETS.length)) !== null);
}

/** Answers `path` (`/docs...`, relative to the base path); unknown paths are the usual 404. */
export function docsHandler(docs: ServedPage, path: string, method: string): PlainResponse {
  const answer = path === "/docs" ? docs.document() : path.startsWith(ASSETS) ? docs.asset(path.slice(ASSETS.length)) : null;
  if (!answer) throw new ApiError(404, ApiErrorCode.notFound, "Not found.");
  if (method !== "GET" && method !== "HEAD") {
    return json(405, { error: ApiErrorCode.methodNotAllowed, message: "Use GET, HEAD for this endpoint." }, { allow: "GET, HEAD" });
  }
  return answer;
}
