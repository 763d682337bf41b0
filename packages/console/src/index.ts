/**
 * `@plantgate/console`: the management console's web page. plantgate serves it at
 * `{basePath}/console` when you pass it as `console.page`; the admin API it talks to
 * (`/console/api/*`: session, sign-in, CSRF, clients, accounts, keys) is part of `@plantgate/core`.
 */
import type { PageFile, StaticPage } from "@plantgate/core";
import { CONSOLE_CSS, CONSOLE_HTML, CONSOLE_JS, FAVICON_SVG } from "./generated/page.js";

/**
 * The page's Content-Security-Policy: no inline script or style anywhere, nothing from another
 * origin, no framing; the page's own script and stylesheet are all it may load.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const escapeAttr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

const ASSETS: Readonly<Record<string, PageFile>> = {
  "console.js": { contentType: "text/javascript; charset=utf-8", body: CONSOLE_JS },
  "console.css": { contentType: "text/css; charset=utf-8", body: CONSOLE_CSS },
  "favicon.svg": { contentType: "image/svg+xml", body: FAVICON_SVG },
};

/**
 * The management console's page: one HTML document (everything dynamic is rendered by its
 * script, from `/console/api`), its script, stylesheet and icon. Pass it as `console.page`;
 * plantgate adds `no-store`, `nosniff`, `no-referrer` and `X-Frame-Options: DENY` to every
 * console answer.
 *
 * @example
 * import { createPlantgate } from "@plantgate/core";
 * import { consolePage } from "@plantgate/console";
 * const app = createPlantgate({ console: { enabled: true, page: consolePage() } });
 */
export function consolePage(): StaticPage {
  return {
    // The page says where its API lives: under the base path the app is mounted at.
    page: (mount) => ({
      contentType: "text/html; charset=utf-8",
      // A function replacer: a `$` in the base path is text, not a replacement pattern.
      body: CONSOLE_HTML.replaceAll("{{root}}", () => escapeAttr(mount.path)),
      headers: { "content-security-policy": CONSOLE_CSP },
    }),
    assets: ASSETS,
  };
}
