/**
 * Issue 6 (moved here with the page in issue 15): the API reference page and its assets, served by
 * plantgate itself (no CDN) when `swaggerUi()` is the `docs` option.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createPlantgate, type PlantgateOptions } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { ASSETS_VERSION, DOCS_CSP, SWAGGER_UI_ASSETS, SWAGGER_UI_VERSION, swaggerUi } from "../src/index.js";

const BASE = "https://as.example.test";
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
// X-Frame-Options beside frame-ancestors: browsers without CSP level 2 still refuse to frame the page.
const SECURITY = { "content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "x-frame-options": "DENY" };
// The strong ETag: the SHA-256 of the bytes served, base64url, quoted (computed here independently of core).
const etagOf = (text: string) => `"${createHash("sha256").update(text, "utf8").digest("base64url")}"`;
// On the JSON 404s and 405s under /docs: the page's protective headers, with a CSP that allows
// nothing, and no-store as on every error answer.
const ERROR_SECURITY = {
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};
const app = (options: PlantgateOptions = {}) => createPlantgate({ logger: { error() {}, warn() {} }, docs: swaggerUi(), ...options });

describe("GET /docs", () => {
  it("the CSP is the strict one", () => {
    expect(DOCS_CSP).toBe(CSP);
  });

  it("serves the HTML page with a strict CSP, loading only its own relative assets and openapi.json", async () => {
    const res = await app({ basePath: "/auth" }).fetch(new Request(`${BASE}/auth/docs`));
    const html = await res.text();
    expect([res.status, Object.fromEntries(res.headers)]).toEqual([
      200,
      { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", "content-length": String(Buffer.byteLength(html)), etag: etagOf(html), ...SECURITY },
    ]);
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    const v = `?v=${ASSETS_VERSION}`;
    expect(ASSETS_VERSION).toMatch(new RegExp(`^${SWAGGER_UI_VERSION.replace(/\./g, "\\.")}-[0-9a-f]{8}$`));
    expect(urls).toEqual(["data:,", `docs/assets/swagger-ui.css${v}`, `docs/assets/swagger-ui-bundle.js${v}`, `docs/assets/docs-init.js${v}`, "openapi.json"]);
    expect(html).not.toMatch(/<script>|<style|https?:\/\//);
    // Relative to {base}/docs they land under the base path.
    expect(new URL(urls[1]!, `${BASE}/auth/docs`).href).toBe(`${BASE}/auth/docs/assets/swagger-ui.css${v}`);
    // The versioned URL is the file itself.
    const css = await app({ basePath: "/auth" }).fetch(new Request(new URL(urls[1]!, `${BASE}/auth/docs`)));
    expect([css.status, await css.text()]).toEqual([200, SWAGGER_UI_ASSETS["swagger-ui.css"]!.text]);
  });

  it("the start-up script points Swagger UI at openapi.json only: no query-string configuration, no outside validator, no stored credentials", async () => {
    const res = await app().fetch(new Request(`${BASE}/docs/assets/docs-init.js?url=https://evil.test/x.json`));
    const js = await res.text();
    expect([res.status, Object.fromEntries(res.headers)]).toEqual([
      200,
      { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400", "content-length": String(Buffer.byteLength(js)), etag: etagOf(js), ...SECURITY },
    ]);
    // queryConfigEnabled: false ignores ?url= / ?configUrl= / ?config= (a link could otherwise
    // load a foreign document, GHSA-qrmm-w75w-3wpx); persistAuthorization: false keeps tokens and
    // client secrets out of localStorage. Both are Swagger UI's defaults today; pinned here.
    expect(js).toBe(`"use strict";
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
`);
  });

  it("the page is the same bytes whatever Host or X-Forwarded-* header the request carries: nothing from the request reaches the HTML", async () => {
    const a = app({ basePath: "/auth", trustedProxies: ["127.0.0.1"] });
    const plainPage = await (await a.fetch(new Request(`${BASE}/auth/docs`))).text();
    const forged = await a.fetch(
      new Request(`https://evil.test/auth/docs?url=%22%3E%3Cscript%3E`, {
        headers: { "x-forwarded-host": 'evil.test"><script>alert(1)</script>', "x-forwarded-proto": "javascript", "x-forwarded-prefix": "/evil", "x-forwarded-for": "127.0.0.1" },
      }),
      { clientIp: "127.0.0.1" },
    );
    expect([forged.status, await forged.text()]).toEqual([200, plainPage]);
  });

  for (const [name, asset] of Object.entries(SWAGGER_UI_ASSETS)) {
    it(`serves ${name} from swagger-ui-dist unchanged, cacheable for a day, under the same CSP`, async () => {
      const res = await app().fetch(new Request(`${BASE}/docs/assets/${name}`));
      const text = await res.text();
      expect([res.status, Object.fromEntries(res.headers)]).toEqual([
        200,
        {
          "content-type": asset.contentType,
          "cache-control": "public, max-age=86400",
          "content-length": String(Buffer.byteLength(text)),
          etag: etagOf(asset.text),
          ...SECURITY,
        },
      ]);
      expect(text).toBe(asset.text);
    });
  }

  it("an unknown path under /docs is the usual 404, with nosniff, no framing and a CSP that allows nothing", async () => {
    for (const path of ["/docs/assets/evil.js", "/docs/nope", "/docs/", "/docs/assets/toString"]) {
      const res = await app().fetch(new Request(`${BASE}${path}`));
      const body = '{"error":1404,"message":"Not found."}';
      expect([path, res.status, Object.fromEntries(res.headers), await res.text()]).toEqual([
        path,
        404,
        { "content-type": "application/json", "content-length": String(body.length), ...ERROR_SECURITY },
        body,
      ]);
    }
  });

  it("POST (or PUT, DELETE) /docs and its files is a 405 with Allow: GET, HEAD and the same protective headers", async () => {
    for (const [method, path] of [
      ["POST", "/docs"],
      ["PUT", "/docs/assets/swagger-ui-bundle.js"],
      ["DELETE", "/docs/assets/docs-init.js"],
    ] as const) {
      const res = await app().fetch(new Request(`${BASE}${path}`, { method, headers: { "if-none-match": "*" } }));
      const body = '{"error":1405,"message":"Use GET, HEAD for this endpoint."}';
      expect([method, res.status, Object.fromEntries(res.headers), await res.text()]).toEqual([
        method,
        405,
        { "content-type": "application/json", "content-length": String(body.length), allow: "GET, HEAD", ...ERROR_SECURITY },
        body,
      ]);
    }
  });

  describe("conditional requests (If-None-Match, RFC 9110 §13.1.2)", () => {
    const bundle = SWAGGER_UI_ASSETS["swagger-ui-bundle.js"]!.text;
    const tag = etagOf(bundle);
    const path = `${BASE}/docs/assets/swagger-ui-bundle.js?v=${ASSETS_VERSION}`;
    const notModified = { "cache-control": "public, max-age=86400", etag: tag, ...SECURITY };

    const matching: [string, string][] = [
      ["the tag itself", tag],
      ["the tag marked weak (weak comparison)", `W/${tag}`],
      ["*", "*"],
      ["* with whitespace", " * "],
      ["a list holding the tag", `"other", ${tag} , W/"x"`],
      ["a list with empty elements", `, ,${tag},`],
      ["a list with a comma inside another tag", `"a,b",${tag}`],
      ["a list with obs-text in another tag", `"\u00e9t\u00e9",\t${tag}`],
    ];
    for (const [name, field] of matching) {
      it(`If-None-Match: ${name} is 304 without content, with the ETag, Cache-Control and security headers (GET and HEAD)`, async () => {
        for (const method of ["GET", "HEAD"]) {
          const res = await app().fetch(new Request(path, { method, headers: { "if-none-match": field } }));
          expect([method, res.status, Object.fromEntries(res.headers), await res.text()]).toEqual([method, 304, notModified, ""]);
        }
      });
    }

    const unmatched: [string, string][] = [
      ["another tag", '"abc"'],
      ["another asset's tag", etagOf(SWAGGER_UI_ASSETS["swagger-ui.css"]!.text)],
      ["empty", ""],
      ["an unquoted tag (malformed: ignored)", tag.slice(1, -1)],
      ["* inside a list (malformed: ignored)", `*, ${tag}`],
      ["the tag, then junk (malformed: ignored)", `${tag} junk`],
      ["the tag, unterminated (malformed: ignored)", tag.slice(0, -1)],
      ["a lower-case weak prefix (malformed: ignored)", `w/${tag}`],
      ["a space inside the quotes (malformed: ignored)", `"a b", ${tag}`],
      ["a lone quote", '"'],
      ["only commas", ",,,"],
      ["a very long list", Array.from({ length: 2000 }, (_, i) => `"t${i}"`).join(", ")],
      ["obs-text", `"\u00e9t\u00e9"`],
    ];
    for (const [name, field] of unmatched) {
      it(`If-None-Match: ${name} is the full 200`, async () => {
        const res = await app().fetch(new Request(path, { headers: { "if-none-match": field } }));
        expect([res.status, res.headers.get("etag"), res.headers.get("content-length"), (await res.text()) === bundle]).toEqual([
          200,
          tag,
          String(Buffer.byteLength(bundle)),
          true,
        ]);
      });
    }

    it("the page's own ETag: 304 for it (its URLs are relative, so it is one tag under every base path), 200 for a file's", async () => {
      const atAuth = await (await app({ basePath: "/auth" }).fetch(new Request(`${BASE}/auth/docs`))).text();
      const pageTag = etagOf(atAuth);
      for (const [options, url] of [
        [{ basePath: "/auth" }, `${BASE}/auth/docs`],
        [{}, `${BASE}/docs`],
      ] as const) {
        const res = await app(options).fetch(new Request(url, { headers: { "if-none-match": pageTag } }));
        expect([url, res.status, Object.fromEntries(res.headers), await res.text()]).toEqual([url, 304, { "cache-control": "no-cache", etag: pageTag, ...SECURITY }, ""]);
      }
      const other = await app().fetch(new Request(`${BASE}/docs`, { headers: { "if-none-match": tag } }));
      expect([other.status, other.headers.get("etag"), await other.text()]).toEqual([200, pageTag, atAuth]);
    });
  });

  it("openapi.json describes /docs and its four files", async () => {
    const doc = (await (await app().fetch(new Request(`${BASE}/openapi.json`))).json()) as {
      paths: Record<string, { get: { parameters?: unknown[]; responses: Record<string, { content?: object }> } }>;
    };
    expect(doc.paths["/docs"]!.get.responses["200"]!.content).toEqual({ "text/html": { schema: { type: "string" } } });
    expect(doc.paths["/docs/assets/{asset}"]!.get.parameters).toEqual([
      {
        name: "asset",
        in: "path",
        required: true,
        schema: { type: "string", enum: ["swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-bundle.js.LICENSE.txt", "docs-init.js"] },
      },
    ]);
    expect(Object.keys(doc.paths["/docs/assets/{asset}"]!.get.responses["200"]!.content!)).toEqual(["text/javascript", "text/css", "text/plain"]);
  });

  it("the README's table of the page's headers is what is served", async () => {
    const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
    const at = readme.indexOf("What the page and its files are sent with");
    const rows = readme
      .slice(at)
      .split("\n")
      .slice(2)
      .filter((line, i, all) => all.slice(0, i + 1).every((l) => l.trimStart().startsWith("|")))
      .slice(2)
      .map((line) => line.trim().slice(1, -1).split("|").map((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)));
    const page = await app().fetch(new Request(`${BASE}/docs`));
    const css = await app().fetch(new Request(`${BASE}/docs/assets/swagger-ui.css`));
    const documented = Object.fromEntries(rows.map(([name, values]) => [name![0]!.toLowerCase(), values]));
    expect(documented).toEqual({
      "content-security-policy": [page.headers.get("content-security-policy")],
      "x-frame-options": [page.headers.get("x-frame-options")],
      "x-content-type-options": [page.headers.get("x-content-type-options")],
      "referrer-policy": [page.headers.get("referrer-policy")],
      "content-type": [page.headers.get("content-type"), ...new Set(Object.values(SWAGGER_UI_ASSETS).map((a) => a.contentType))],
      "cache-control": [page.headers.get("cache-control"), css.headers.get("cache-control")],
    });
  });
});
