/**
 * `@plantgate/docs`: the API reference page (Swagger UI) that plantgate serves at `{basePath}/docs`
 * when you pass it as the `docs` option. Swagger UI's browser files travel as strings (generated
 * from swagger-ui-dist), so the page works offline and on every adapter, Workers included, and
 * apps that leave it out carry none of it.
 */
import type { PageFile, StaticPage } from "@plantgate/core";
import { SWAGGER_UI_BUNDLE_JS, SWAGGER_UI_BUNDLE_LICENSES, SWAGGER_UI_CSS, SWAGGER_UI_VERSION } from "./generated/swagger-ui.js";

/** One static asset: its media type and its text. */
export interface DocsAsset {
  contentType: string;
  text: string;
}

/**
 * Swagger UI's own files, by file name (as in swagger-ui-dist).
 *
 * @example
 * import { SWAGGER_UI_ASSETS } from "@plantgate/docs";
 * const css = SWAGGER_UI_ASSETS["swagger-ui.css"]!;
 * new Response(css.text, { headers: { "content-type": css.contentType } });
 */
export const SWAGGER_UI_ASSETS: Readonly<Record<string, DocsAsset>> = {
  "swagger-ui-bundle.js": { contentType: "text/javascript; charset=utf-8", text: SWAGGER_UI_BUNDLE_JS },
  "swagger-ui.css": { contentType: "text/css; charset=utf-8", text: SWAGGER_UI_CSS },
  "swagger-ui-bundle.js.LICENSE.txt": { contentType: "text/plain; charset=utf-8", text: SWAGGER_UI_BUNDLE_LICENSES },
};

export { SWAGGER_UI_VERSION };

// The page's own start-up script: a file, not inline, so the CSP can forbid inline scripts.
// queryConfigEnabled: false: ?url=, ?configUrl= and ?config= in the page's address are ignored, so a
// link cannot make the page load another document (the swagger-ui phishing / XSS vector of
// GHSA-qrmm-w75w-3wpx). persistAuthorization: false: what "Authorize" is given (bearer token,
// client secret, password) lives in the tab's memory only, never in localStorage. Both are Swagger
// UI 5's defaults; they are written out so that no upgrade or preset can turn them on unnoticed.
// validatorUrl: null keeps Swagger UI from sending the document to an outside validator.
const INIT_SCRIPT = `"use strict";
window.addEventListener("DOMContentLoaded", function () {
  window.ui = SwaggerUIBundle({
    url: new URL("openapi.json", document.baseURI).href,
    queryConfigEnabled: false,
    persistAuthorization: false,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    displayOperationId: true,
    defaultModelsExpandDepth: 1,
    tryItOutEnabled: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    requestInterceptor: toThisServer
  });
});
// A request to the document's server URL (its baseUrl) goes to the server that served this page, at
// the same path: the page and the API are one app, and the CSP's connect-src 'self' refuses another
// origin. Opened at another name of the same server (localhost for 127.0.0.1, a container's address
// under HOST=0.0.0.0), every "Authorize" and "Try it out" was refused until 2026-12-01. A request to
// anywhere else is left as it is (and the CSP refuses it).
function toThisServer(request) {
  var servers = window.ui && window.ui.specSelectors.specJson().get("servers");
  var first = servers && servers.first && servers.first();
  var named = first && first.get && first.get("url");
  if (typeof named !== "string") return request;
  var from = named.replace(/[/]$/, "") + "/";
  var here = new URL(".", new URL("openapi.json", document.baseURI)).href;
  if (from !== here && request.url.indexOf(from) === 0) request.url = here + request.url.slice(from.length);
  return request;
}
`;

/**
 * Names this release's files: Swagger UI's version and a hash (FNV-1a) of the start-up script. The
 * page asks for `docs/assets/{name}?v={ASSETS_VERSION}`, so an upgrade changes every asset URL and
 * a browser fetches the new files at once (until 2026-11-29 the URLs never changed and were cached
 * for a day, so after an upgrade the new page could run a day-old script). The files stay cached
 * for a day, not for good: core serves a name whatever its query, so during a rolling deploy an old
 * instance can answer a new URL with its old file.
 */
export const ASSETS_VERSION = `${SWAGGER_UI_VERSION}-${fnv1a(INIT_SCRIPT)}`;

function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

// Every URL is relative: `docs/assets/...` and `openapi.json` resolve against `{base}/docs`, i.e. to
// `{base}/docs/assets/...` and `{base}/openapi.json`, wherever the app is mounted. The empty data:
// icon stops the browser asking for /favicon.ico (a 404 in the console).
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Plant Store API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="docs/assets/swagger-ui.css?v=${ASSETS_VERSION}">
<script src="docs/assets/swagger-ui-bundle.js?v=${ASSETS_VERSION}" defer></script>
<script src="docs/assets/docs-init.js?v=${ASSETS_VERSION}" defer></script>
</head>
<body>
<noscript>This page needs JavaScript. The API description itself is at <a href="openapi.json">openapi.json</a>.</noscript>
<div id="swagger-ui"></div>
</body>
</html>
`;

/**
 * The page's Content-Security-Policy: everything from this origin only; no inline script. Swagger
 * UI sets element styles from script (allowed) and its CSS inlines SVG icons as data: URLs.
 * connect-src 'self' keeps "Try it out" and the document fetch on this server.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

// X-Frame-Options: DENY says what frame-ancestors 'none' says, for browsers without CSP level 2
// (and as the console's page does).
const SECURITY_HEADERS = {
  "content-security-policy": DOCS_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const DOCUMENT: PageFile = {
  contentType: "text/html; charset=utf-8",
  body: PAGE,
  headers: { "cache-control": "no-cache", ...SECURITY_HEADERS },
};

const ASSET_HEADERS = { "cache-control": "public, max-age=86400", ...SECURITY_HEADERS };

const FILES: Readonly<Record<string, PageFile>> = Object.fromEntries(
  Object.entries({ ...SWAGGER_UI_ASSETS, "docs-init.js": { contentType: "text/javascript; charset=utf-8", text: INIT_SCRIPT } }).map(
    ([name, a]): [string, PageFile] => [name, { contentType: a.contentType, body: a.text, headers: ASSET_HEADERS }],
  ),
);

/**
 * The API reference page: Swagger UI over this server's `/openapi.json`, at `{basePath}/docs`
 * with its files under `{basePath}/docs/assets/`, all under a strict CSP. Pass it as the `docs`
 * option; without it, `/docs` is 404 (and `/openapi.json` is served all the same).
 *
 * @example
 * import { createPlantgate } from "@plantgate/core";
 * import { swaggerUi } from "@plantgate/docs";
 * const app = createPlantgate({ docs: swaggerUi() });
 */
export function swaggerUi(): StaticPage {
  return { page: () => DOCUMENT, assets: FILES };
}
