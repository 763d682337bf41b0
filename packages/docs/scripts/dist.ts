/** Where the installed swagger-ui-dist lives, and which of its files are shipped (constant name -> file). */
import { createRequire } from "node:module";
import { dirname } from "node:path";

export const ASSET_FILES = {
  SWAGGER_UI_BUNDLE_JS: "swagger-ui-bundle.js",
  SWAGGER_UI_CSS: "swagger-ui.css",
  SWAGGER_UI_BUNDLE_LICENSES: "swagger-ui-bundle.js.LICENSE.txt",
} as const;

export function swaggerUiDistDir(): string {
  return dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
}
