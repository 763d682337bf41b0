/**
 * Core's page seam: the `docs` option and `console.page` take any StaticPage; core serves its
 * document and files (GET and HEAD) with the page's headers, and owns no page itself.
 * The real pages are tested in @plantgate/docs and @plantgate/console.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createPlantgate } from "../src/index.js";
import { servePage } from "../src/pages/static-page.js";
import { BASE } from "./helpers.js";
import { TEST_CSP, TEST_PAGE } from "./page-helpers.js";

const quiet = { logger: { error() {}, warn() {} } };

/** The strong ETag core gives a file: SHA-256 of its bytes, base64url, quoted (computed here independently). */
const etagOf = (bytes: string | Uint8Array) => `"${createHash("sha256").update(bytes).digest("base64url")}"`;
const ERROR_HEADERS = {
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  // As every error answer: no cache keeps it.
  "cache-control": "no-store",
};

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
        etag: etagOf(body),
      },
      body,
    });
    expect((await app.fetch(new Request(`${BASE}/docs`))).status).toBe(404);
  });

  it("serves each asset at /docs/assets/{name}, text as UTF-8 and bytes as they are", async () => {
    const app = createPlantgate({ ...quiet, docs: TEST_PAGE });
    expect(await whole(await app.fetch(new Request(`${BASE}/docs/assets/app.js`)))).toEqual({
      status: 200,
      headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=60", "content-length": "19", etag: etagOf('console.log("hi");\n') },
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
      expect([post.status, post.headers, JSON.parse(post.body)]).toEqual([
        405,
        { "content-type": "application/json", "content-length": String(post.body.length), allow: "GET, HEAD", ...ERROR_HEADERS },
        { error: 1405, message: "Use GET, HEAD for this endpoint." },
      ]);
    }
    for (const path of ["/docs/", "/docs/assets/", "/docs/assets/evil.js", "/docs/assets/app.js/x", "/docs/app.js", "/docs/assets/toString", "/docs/assets/__proto__"]) {
      const r = await whole(await app.fetch(new Request(`${BASE}${path}`)));
      expect([path, r.status, r.headers, JSON.parse(r.body)]).toEqual([
        path,
        404,
        { "content-type": "application/json", "content-length": String(r.body.length), ...ERROR_HEADERS },
        { error: 1404, message: "Not found." },
      ]);
    }
  });

  it("answers If-None-Match with its file's strong ETag: 304 without content-type or content, with the file's other headers", async () => {
    const app = createPlantgate({ ...quiet, basePath: "/auth", docs: TEST_PAGE });
    const page = '<!doctype html><title>t</title><meta name="mount" content="/auth|/auth/docs"><script src="/auth/docs/assets/app.js"></script>';
    const files: [string, string, Record<string, string>][] = [
      ["/auth/docs", etagOf(page), { "content-security-policy": TEST_CSP, "cache-control": "no-cache" }],
      ["/auth/docs/assets/app.js", etagOf('console.log("hi");\n'), { "cache-control": "public, max-age=60" }],
      ["/auth/docs/assets/app.css", etagOf("body { margin: 0 }\n"), {}],
      ["/auth/docs/assets/logo.bin", etagOf(new Uint8Array([0, 1, 2, 255])), {}],
    ];
    for (const [path, etag, headers] of files) {
      for (const method of ["GET", "HEAD"]) {
        const r = await whole(await app.fetch(new Request(`${BASE}${path}`, { method, headers: { "if-none-match": `"x", W/${etag}` } })));
        expect([path, method, r]).toEqual([path, method, { status: 304, headers: { ...headers, etag }, body: "" }]);
      }
      expect((await app.fetch(new Request(`${BASE}${path}`))).headers.get("etag")).toBe(etag);
    }
    // The document names its mount: under another base path it is other bytes, so another tag.
    const root = await createPlantgate({ ...quiet, docs: TEST_PAGE }).fetch(new Request(`${BASE}/docs`, { headers: { "if-none-match": etagOf(page) } }));
    expect([root.status, root.headers.get("etag")]).toEqual([200, etagOf(await root.clone().text())]);
  });

  it("a file's tag is made once per app (one promise, kept), the document built once", async () => {
    let built = 0;
    const served = servePage({ ...TEST_PAGE, page: (mount) => (built++, TEST_PAGE.page(mount)) }, { basePath: "", path: "/docs" });
    const [a, b] = [served.tagged(null), served.tagged(null)];
    expect(a).toBe(b);
    expect(served.tagged("app.js")).toBe(served.tagged("app.js"));
    expect([served.tagged("nope"), served.tagged("toString")]).toEqual([null, null]);
    expect((await a)!.etag).toBe(etagOf(served.document().body!));
    expect(built).toBe(1);
  });

  it("refuses something that is not a page, at construction", () => {
    expect(() => createPlantgate({ docs: {} as never })).toThrow(new TypeError("docs must be a page object (e.g. from @plantgate/docs or @plantgate/console)"));
    expect(() => createPlantgate({ console: { enabled: true, page: "x" as never } })).toThrow(
      new TypeError("console.page must be a page object (e.g. from @plantgate/docs or @plantgate/console)"),
    );
  });
});
