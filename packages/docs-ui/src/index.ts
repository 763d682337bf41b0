/**
 * Swagger UI's browser assets as strings, for servers without a file system (Cloudflare Workers)
 * and without a CDN: plantgate serves them under `{basePath}/docs/assets/`.
 */
import { SWAGGER_UI_BUNDLE_JS, SWAGGER_UI_BUNDLE_LICENSES, SWAGGER_UI_CSS, SWAGGER_UI_VERSION } from "./generated/swagger-ui.js";

/** One static asset: its media type and its text. */
export interface DocsAsset {
  contentType: string;
  text: string;
}

/**
 * The assets of the API reference page, by file name (as in swagger-ui-dist).
 *
 * @example
 * import { SWAGGER_UI_ASSETS } from "@plantgate/docs-ui";
 * const css = SWAGGER_UI_ASSETS["swagger-ui.css"]!;
 * new Response(css.text, { headers: { "content-type": css.contentType } });
 */
export const SWAGGER_UI_ASSETS: Readonly<Record<string, DocsAsset>> = {
  "swagger-ui-bundle.js": { contentType: "text/javascript; charset=utf-8", text: SWAGGER_UI_BUNDLE_JS },
  "swagger-ui.css": { contentType: "text/css; charset=utf-8", text: SWAGGER_UI_CSS },
  "swagger-ui-bundle.js.LICENSE.txt": { contentType: "text/plain; charset=utf-8", text: SWAGGER_UI_BUNDLE_LICENSES },
};

export { SWAGGER_UI_VERSION };
