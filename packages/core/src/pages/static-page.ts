/**
 * The one seam between core and the optional browser pages (`@plantgate/docs` at `/docs`,
 * `@plantgate/console`'s page at `/console`). Core holds no page itself: a page package hands it
 * a {@link StaticPage} and core serves its files for GET and HEAD, with the headers the page asks for.
 */
import { strongEtag } from "../http/conditional.js";
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
 * (GET and HEAD; other methods are 405, unknown names 404); at `/docs` each with a strong ETag
 * it makes from the bytes, answering If-None-Match with 304. Nothing here runs server-side logic.
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

/** One file of a {@link ServedPage} with its strong ETag, for answering conditional requests. */
export interface TaggedFile {
  /** The file's strong ETag (quoted SHA-256 of its bytes, base64url). */
  etag: string;
  /** The 200: the file's headers, `content-type`, `content-length` and `etag`. */
  ok(): PlainResponse;
  /**
   * The 304 (RFC 9110 §15.4.5): no content, the `etag` and every header of the 200 but
   * `content-type` and `content-length` (its `cache-control` and its security headers included).
   */
  notModified(): PlainResponse;
}

/** A {@link StaticPage} ready to serve: bytes encoded once, on first use, per app. */
export interface ServedPage {
  /** The document's answer. */
  document(): PlainResponse;
  /** An asset's answer, or null for an unknown name. */
  asset(name: string): PlainResponse | null;
  /**
   * The document (`name` null) or an asset with its ETag, made on first use and kept for the
   * app's life; null for an unknown asset. The docs page is served this way, with 304s.
   */
  tagged(name: string | null): Promise<TaggedFile> | null;
  /** Asset name -> media type without parameters (for the OpenAPI document). */
  assetTypes: Readonly<Record<string, string>>;
}

/** One file, its bytes encoded on first use: its plain answer, and (on first ask) its tagged one. */
interface EncodedFile {
  answer(): PlainResponse;
  tagged(): Promise<TaggedFile>;
}

function encoded(file: PageFile): EncodedFile {
  let bytes: Uint8Array | undefined;
  let tagged: Promise<TaggedFile> | undefined;
  const body = () => (bytes ??= typeof file.body === "string" ? new TextEncoder().encode(file.body) : file.body);
  const makeTagged = async (): Promise<TaggedFile> => {
    const content = body();
    const etag = await strongEtag(content);
    const okHeaders = { ...file.headers, "content-type": file.contentType, etag };
    const notModifiedHeaders: Record<string, string> = { ...file.headers, etag };
    delete notModifiedHeaders["content-type"];
    delete notModifiedHeaders["content-length"];
    return { etag, ok: () => plain(200, content, okHeaders), notModified: () => plain(304, null, notModifiedHeaders) };
  };
  return {
    answer: () => plain(200, body(), { ...file.headers, "content-type": file.contentType }),
    tagged: () =>
      (tagged ??= makeTagged().catch((error: unknown) => {
        // Not kept: the next request tries again.
        tagged = undefined;
        throw error;
      })),
  };
}

/** Prepares a page for one app mounted at `mount`; called when options are resolved. */
export function servePage(page: StaticPage, mount: PageMount): ServedPage {
  let document: EncodedFile | undefined;
  const assets = new Map<string, EncodedFile>();
  for (const [name, file] of Object.entries(page.assets)) assets.set(name, encoded(file));
  return {
    document: () => (document ??= encoded(page.page(mount))).answer(),
    asset: (name) => assets.get(name)?.answer() ?? null,
    tagged: (name) => (name === null ? (document ??= encoded(page.page(mount))).tagged() : (assets.get(name)?.tagged() ?? null)),
    assetTypes: Object.fromEntries(Object.entries(page.assets).map(([name, f]) => [name, f.contentType.split(";")[0]!.trim()])),
  };
}
