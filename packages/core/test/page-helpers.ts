/**
 * A small page for the tests of core's page serving: a real {@link StaticPage} (core serves any),
 * so core's tests need neither `@plantgate/docs` nor `@plantgate/console` (which depend on core).
 */
import type { StaticPage } from "../src/index.js";

export const TEST_CSP = "default-src 'none'; script-src 'self'";

/** The document names its own path, so a test sees which mount core gave it. */
export const TEST_PAGE: StaticPage = {
  page: (mount) => ({
    contentType: "text/html; charset=utf-8",
    body: `<!doctype html><title>t</title><meta name="mount" content="${mount.basePath}|${mount.path}"><script src="${mount.path}/assets/app.js"></script>`,
    headers: { "content-security-policy": TEST_CSP, "cache-control": "no-cache" },
  }),
  assets: {
    "app.js": { contentType: "text/javascript; charset=utf-8", body: 'console.log("hi");\n', headers: { "cache-control": "public, max-age=60" } },
    "app.css": { contentType: "text/css; charset=utf-8", body: "body { margin: 0 }\n" },
    "logo.bin": { contentType: "application/octet-stream", body: new Uint8Array([0, 1, 2, 255]) },
  },
};
