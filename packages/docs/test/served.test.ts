/**
 * Issue 6 (moved here with the page in issue 15): the API reference page and its assets, served by
 * plantgate itself (no CDN) when `swaggerUi()` is the `docs` option.
 */
import { createPlantgate, type PlantgateOptions } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { ASSETS_VERSION, DOCS_CSP, SWAGGER_UI_ASSETS, SWAGGER_UI_VERSION, swaggerUi } from "../src/index.js";

const BASE = "https://as.example.test";
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const SECURITY = { "content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };
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
      { "content-type": "text/html; charset=utf-8", "cache-control": "no-cache", "content-length": String(Buffer.byteLength(html)), ...SECURITY },
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

  it("the start-up script points Swagger UI at openapi.json and switches off the outside validator", async () => {
    const res = await app().fetch(new Request(`${BASE}/docs/assets/docs-init.js`));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const js = await res.text();
    expect(js).toContain('url: new URL("openapi.json", document.baseURI).href');
    expect(js).toContain("validatorUrl: null");
  });

  for (const [name, asset] of Object.entries(SWAGGER_UI_ASSETS)) {
    it(`serves ${name} from swagger-ui-dist unchanged, cacheable for a day, under the same CSP`, async () => {
      const res = await app().fetch(new Request(`${BASE}/docs/assets/${name}`));
      const text = await res.text();
      expect([res.status, Object.fromEntries(res.headers)]).toEqual([
        200,
        { "content-type": asset.contentType, "cache-control": "public, max-age=86400", "content-length": String(Buffer.byteLength(text)), ...SECURITY },
      ]);
      expect(text).toBe(asset.text);
    });
  }

  it("an unknown asset is the usual 404", async () => {
    const res = await app().fetch(new Request(`${BASE}/docs/assets/evil.js`));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 1404, message: "Not found." });
  });

  it("POST /docs is a 405 with Allow: GET, HEAD", async () => {
    const res = await app().fetch(new Request(`${BASE}/docs`, { method: "POST" }));
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
    expect(await res.json()).toEqual({ error: 1405, message: "Use GET, HEAD for this endpoint." });
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
});
