/**
 * `GET /docs`: the API reference page (Swagger UI), served with its assets by plantgate itself so
 * it works offline and on every adapter, Workers included (the assets are bundled strings from
 * `@plantgate/docs-ui`). Every URL on the page is relative, so it works under any base path.
 */
import { SWAGGER_UI_ASSETS, type DocsAsset } from "@plantgate/docs-ui";
import { ApiError, ApiErrorCode } from "../errors/index.js";
import { plain, type PlainResponse } from "../http/respond.js";

/** Path of the page, relative to the base path. */
export const DOCS_PATH = "/docs";
/** Where the page's assets live, relative to the base path. */
export const DOCS_ASSETS_PATH = "/docs/assets/";

// The page's own start-up script: a file, not inline, so the CSP can forbid inline scripts.
// validatorUrl: null keeps Swagger UI from sending the document to an outside validator.
const INIT_SCRIPT = `"use strict";
window.addEventListener("DOMContentLoaded", function () {
  window.ui = SwaggerUIBundle({
    url: new URL("openapi.json", document.baseURI).href,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    displayOperationId: true,
    defaultModelsExpandDepth: 1,
    tryItOutEnabled: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
`;

const ASSETS: Readonly<Record<string, DocsAsset>> = {
  ...SWAGGER_UI_ASSETS,
  "docs-init.js": { contentType: "text/javascript; charset=utf-8", text: INIT_SCRIPT },
};

/** Asset file name -> media type (for the OpenAPI document). */
export const DOCS_ASSET_TYPES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(ASSETS).map(([name, a]) => [name, a.contentType.split(";")[0]!]),
);

// The empty data: icon stops the browser asking for /favicon.ico (a 404 in the console).
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Plant Store API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
<script src="docs/assets/swagger-ui-bundle.js" defer></script>
<script src="docs/assets/docs-init.js" defer></script>
</head>
<body>
<noscript>This page needs JavaScript. The API description itself is at <a href="openapi.json">openapi.json</a>.</noscript>
<div id="swagger-ui"></div>
</body>
</html>
`;

/**
 * Everything from this origin only; no inline script. Swagger UI sets element styles from script
 * (allowed) and its CSS inlines SVG icons as data: URLs. connect-src 'self' keeps "Try it out"
 * and the document fetch on this server.
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

const SECURITY_HEADERS = {
  "content-security-policy": DOCS_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/**
 * `GET /docs`. Relative URLs: `docs/assets/...` and `openapi.json` resolve against `{base}/docs`,
 * i.e. to `{base}/docs/assets/...` and `{base}/openapi.json`, wherever the app is mounted.
 */
export function docsPage(): PlainResponse {
  return plain(200, PAGE, { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", ...SECURITY_HEADERS });
}

/** `GET /docs/assets/{name}`; an unknown name is the usual 404. */
export function docsAsset(name: string): PlainResponse {
  const asset = Object.prototype.hasOwnProperty.call(ASSETS, name) ? ASSETS[name] : undefined;
  if (!asset) throw new ApiError(404, ApiErrorCode.notFound, "Not found.");
  let bytes = encodedAssets.get(name);
  if (bytes === undefined) {
    bytes = new TextEncoder().encode(asset.text);
    encodedAssets.set(name, bytes);
  }
  return plain(200, bytes, { "content-type": asset.contentType, "cache-control": "public, max-age=86400", ...SECURITY_HEADERS });
}

// Encoded once per asset on first request (the bundle is about 1.5 MB of text).
const encodedAssets = new Map<string, Uint8Array>();

/** The asset names, for the route table. */
export const DOCS_ASSET_NAMES: readonly string[] = Object.keys(ASSETS);
