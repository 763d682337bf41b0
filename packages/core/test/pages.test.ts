/**
 * Core's page seam: the `docs` option and `console.page` take any StaticPage; core serves its
 * document and files (GET and HEAD) with the page's headers, and owns no page itself.
 * The real pages are tested in @plantgate/docs and @plantgate/console.
 */
import { describe, expect, it } from "vitest";
import { createPlantgate } from "../src/index.js";
import { BASE } from "./helpers.js";
import { TEST_CSP, TEST_PAGE } from "./page-helpers.js";

const quiet = { logger: { error() {}, warn() {} } };

async function whole(res: Response) {
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
}

describe("docs option", () => {
  it("without it, /docs and everything under it is the usual 404 (openapi.json is still served)", async () => {
    const app = createPlantgate(quiet);
    for (const path of ["/docs", "/docs/", "/docs/assets/swagger-ui.css", "/docs/assets/docs-init.js"]) {
      const r = await whole(await app.fetch(new Request(`${BASE}${path}`)));
      expect([r.status, JSON.parse(r.body)]).toEqual([404, { error: 1404, message: "Not found." }]);
    }
    expect((await app.fetch(new Request(`${BASE}/openapi.json`))).status).toBe(200);
  });

  it("serves the page's document at {basePath}/docs with its headers, and tells it where it is mounted", async () => {
    const app = createPlantgate({ ...quiet, basePath: "/auth", docs: TEST_PAGE });
    const body = '<!doctype html><title>t</title><meta name="mount" content="/auth|/auth/docs"><script src="/auth/docs/assets/app.js"></script>';
    expect(await whole(await app.fetch(new Request(`${BASE}/auth/docs`)))).toEqual({
      status: 200,
      headers: {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": TEST_CSP,
        "cache-control": "no-cache",
        "content-length": String(body.length),
      },
      body,
    });
    expect((await app.fetch(new Request(`${BASE}/docs`))).status).toBe(404);
  });

  it("serves each asset at /docs/assets/{name}, text as UTF-8 and bytes as they are", async () => {
    const app = createPlantgate({ ...quiet, docs: TEST_PAGE });
    expect(await whole(await app.fetch(new Request(`${BASE}/docs/assets/app.js`)))).toEqual({
      status: 200,
      headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=60", "content-length": "19" },
      body: 'console.log("hi");\n',
    });
    const bin = await app.fetch(new Request(`${BASE}/docs/assets/logo.bin`));
    expect([bin.status, bin.headers.get("content-type"), [...new Uint8Array(await bin.arrayBuffer())]]).toEqual([200, "application/octet-stream", [0, 1, 2, 255]]);
    // Twice: the encoded bytes are reused, the answer is the same.
    for (let i = 0; i < 2; i++) expect(await (await app.fetch(new Request(`${BASE}/docs/assets/app.css`))).text()).toBe("body { margin: 0 }\n");
  });

  it("HEAD is the same answer without content; other methods 405; unknown files 404", async () => {
    const app = createPlantgate({ ...quiet, docs: TEST_PAGE });
    const head = await whole(await app.fetch(new Request(`${BASE}/docs`, { method: "HEAD" })));
    expect([head.status, head.headers["content-type"], head.body]).toEqual([200, "text/html; charset=utf-8", ""]);
    for (const path of ["/docs", "/docs/assets/app.js"]) {
      const post = await whole(await app.fetch(new Request(`${BASE}${path}`, { method: "POST" })));
      expect([post.status, post.headers.allow, JSON.parse(post.body)]).toEqual([405, "GET, HEAD", { error: 1405, message: "Use GET, HEAD for this endpoint." }]);
    }
    for (const path of ["/docs/", "/docs/assets/", "/docs/assets/evil.js", "/docs/assets/app.js/x", "/docs/app.js", "/docs/assets/toString", "/docs/assets/__proto__"]) {
      const r = await whole(await app.fetch(new Request(`${BASE}${path}`)));
      expect([path, r.status, JSON.parse(r.body)]).toEqual([path, 404, { error: 1404, message: "Not found." }]);
    }
  });

  it("refuses something that is not a page, at construction", () => {
    expect(() => createPlantgate({ docs: {} as never })).toThrow(new TypeError("docs must be a page object (e.g. from @plantgate/docs or @plantgate/console)"));
    expect(() => createPlantgate({ console: { enabled: true, page: "x" as never } })).toThrow(
      new TypeError("console.page must be a page object (e.g. from @plantgate/docs or @plantgate/console)"),
    );
  });
});
