/**
 * The one seam between core and the optional browser pages (`@plantgate/docs` at `/docs`,
 * `@plantgate/console`'s page at `/console`). Core holds no page itself: a page package hands it
 * a {@link StaticPage} and core serves its files for GET and HEAD, with the headers the page asks for.
 */
import { plain, type PlainResponse } from "../http/respond.js";

/** One file of a {@link StaticPage}. */
export interface PageFile {
  /** The `Content-Type` of the answer, e.g. `text/css; charset=utf-8`. */
  contentType: string;
  /** The content: text (sent as UTF-8) or bytes. */
  body: string | Uint8Array;
  /** Further response headers, lower-case names (`content-security-policy`, `cache-control`, ...). */
  headers?: Readonly<Record<string, string>>;
}

/** Where core serves a page; given to {@link StaticPage.page} so the page can name its own URLs. */
export interface PageMount {
  /** The app's base path: `""` or e.g. `/auth`. */
  basePath: string;
  /** The page's own path, base path included: `{basePath}/docs` or `{basePath}/console`. */
  path: string;
}

/**
 * A browser page that a separate package plugs into plantgate: one HTML document and its static
 * files. Core serves the document at the page's path and each asset at `{path}/assets/{name}`
 * (GET and HEAD; other methods are 405, unknown names 404). Nothing here runs server-side logic.
 *
 * @example
 * const page: StaticPage = {
 *   page: () => ({ contentType: "text/html; charset=utf-8", body: "<!doctype html><title>Hi</title>" }),
 *   assets: { "app.css": { contentType: "text/css; charset=utf-8", body: "body{margin:0}" } },
 * };
 * createPlantgate({ docs: page });
 */
export interface StaticPage {
  /** The HTML document for this mount (called once per app, on first use). */
  page(mount: PageMount): PageFile;
  /** The page's files by name, served at `{path}/assets/{name}`. */
  assets: Readonly<Record<string, PageFile>>;
}

/** A {@link StaticPage} ready to serve: bytes encoded once, on first use, per app. */
export interface ServedPage {
  /** The document's answer. */
  document(): PlainResponse;
  /** An asset's answer, or null for an unknown name. */
  asset(name: string): PlainResponse | null;
  /** Asset name -> media type without parameters (for the OpenAPI document). */
  assetTypes: Readonly<Record<string, string>>;
}

function encoded(file: PageFile): () => PlainResponse {
  let bytes: Uint8Array | undefined;
  return () => {
    bytes ??= typeof file.body === "string" ? new TextEncoder().encode(file.body) : file.body;
    return plain(200, bytes, { ...file.headers, "content-type": file.contentType });
  };
}

/** Prepares a page for one app mounted at `mount`; called when options are resolved. */
export function servePage(page: StaticPage, mount: PageMount): ServedPage {
  let document: (() => PlainResponse) | undefined;
  const assets = new Map<string, () => PlainResponse>();
  for (const [name, file] of Object.entries(page.assets)) assets.set(name, encoded(file));
  return {
    document: () => (document ??= encoded(page.page(mount)))(),
    asset: (name) => assets.get(name)?.() ?? null,
    assetTypes: Object.fromEntries(Object.entries(page.assets).map(([name, f]) => [name, f.contentType.split(";")[0]!.trim()])),
  };
}
