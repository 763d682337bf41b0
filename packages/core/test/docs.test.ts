/** Issue 6: the API reference page and its assets, served by the library itself (no CDN). */
import { SWAGGER_UI_ASSETS } from "@plantgate/docs-ui";
import { describe, expect, it } from "vitest";
import { createPlantgate } from "../src/index.js";
import { BASE } from "./helpers.js";

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

describe("GET /docs", () => {
  it("serves the HTML page with a strict CSP, loading only its own relative assets and openapi.json", async () => {
    const app = createPlantgate({ basePath: "/auth" });
    const res = await app.fetch(new Request(`${BASE}/auth/docs`));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toBe(CSP);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await res.text();
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(urls).toEqual(["data:,", "docs/assets/swagger-ui.css", "docs/assets/swagger-ui-bundle.js", "docs/assets/docs-init.js", "openapi.json"]);
    expect(html).not.toMatch(/<script>|<style|https?:\/\//);
    // Relative to {base}/docs they land under the base path.
    expect(new URL(urls[1]!, `${BASE}/auth/docs`).href).toBe(`${BASE}/auth/docs/assets/swagger-ui.css`);
  });

  it("the start-up script points Swagger UI at openapi.json and switches off the outside validator", async () => {
    const app = createPlantgate({});
    const res = await app.fetch(new Request(`${BASE}/docs/assets/docs-init.js`));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const js = await res.text();
    expect(js).toContain('url: new URL("openapi.json", document.baseURI).href');
    expect(js).toContain("validatorUrl: null");
  });

  for (const [name, asset] of Object.entries(SWAGGER_UI_ASSETS)) {
    it(`serves ${name} from @plantgate/docs-ui unchanged`, async () => {
      const app = createPlantgate({});
      const res = await app.fetch(new Request(`${BASE}/docs/assets/${name}`));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(asset.contentType);
      expect(res.headers.get("cache-control")).toBe("public, max-age=86400");
      expect(await res.text()).toBe(asset.text);
    });
  }

  it("an unknown asset is the usual 404", async () => {
    const app = createPlantgate({});
    const res = await app.fetch(new Request(`${BASE}/docs/assets/evil.js`));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 1404, message: "Not found." });
  });

  it("POST /docs is a 405 with Allow: GET, HEAD", async () => {
    const app = createPlantgate({});
    const res = await app.fetch(new Request(`${BASE}/docs`, { method: "POST" }));
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD");
    expect(await res.json()).toEqual({ error: 1405, message: "Use GET, HEAD for this endpoint." });
  });
});
