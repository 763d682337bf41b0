/**
 * The console page as plantgate serves it (`console: { enabled: true, page: consolePage() }`):
 * moved here from core's console tests with the page itself.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createPlantgate } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { CONSOLE_CSP, consolePage } from "../src/index.js";
import { PAGE_DIR } from "../scripts/files.js";

const BASE = "https://as.example.test";
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const quiet = { logger: { error() {}, warn() {} } };
const page = (file: string) => readFileSync(join(PAGE_DIR, file), "utf8");

const get = (app: ReturnType<typeof createPlantgate>, path: string, method = "GET") => app.fetch(new Request(`${BASE}${path}`, { method }));

describe("@plantgate/console: the page and its files", () => {
  it("the CSP is the strict one", () => {
    expect(CONSOLE_CSP).toBe(CSP);
  });

  it("GET /console and /console/ are the page with a strict CSP, no inline script, files at their own paths", async () => {
    const app = createPlantgate({ ...quiet, console: { enabled: true, page: consolePage() } });
    for (const path of ["/console", "/console/"]) {
      const res = await get(app, path);
      const html = await res.text();
      expect([res.status, Object.fromEntries(res.headers)]).toEqual([
        200,
        {
          "content-type": "text/html; charset=utf-8",
          "content-length": String(Buffer.byteLength(html)),
          "content-security-policy": CSP,
          "cache-control": "no-store",
          pragma: "no-cache",
          "x-frame-options": "DENY",
          "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer",
        },
      ]);
      expect(html).toBe(page("index.html").replaceAll("{{root}}", "/console"));
      expect(html).toContain('<script src="/console/assets/console.js" defer></script>');
      expect(html).toContain('<link rel="stylesheet" href="/console/assets/console.css">');
      // The only <script> has a src (no inline code), and no element carries an inline style or handler.
      expect(html.match(/<script/g)).toHaveLength(1);
      expect(html).not.toMatch(/\sstyle=|\son[a-z]+=/);
      expect(html).not.toMatch(/https?:\/\//);
    }
    const files: [string, string, string][] = [
      ["console.js", "text/javascript; charset=utf-8", page("console.js")],
      ["console.css", "text/css; charset=utf-8", page("console.css")],
      ["favicon.svg", "image/svg+xml", page("favicon.svg")],
    ];
    for (const [name, type, text] of files) {
      const res = await get(app, `/console/assets/${name}`);
      expect([res.status, res.headers.get("content-type"), res.headers.get("cache-control"), res.headers.get("x-content-type-options")]).toEqual([
        200,
        type,
        "no-store",
        "nosniff",
      ]);
      expect(await res.text()).toBe(text);
    }
    expect(page("console.js")).toMatch(/^\/\/ @ts-check\n/);
    const head = await get(app, "/console", "HEAD");
    expect([head.status, head.headers.get("content-type"), await head.text()]).toEqual([200, "text/html; charset=utf-8", ""]);
    const post = await get(app, "/console", "POST");
    expect([post.status, post.headers.get("allow"), await post.json()]).toEqual([405, "GET, HEAD", { error: 1405, message: "Use GET, HEAD for this endpoint." }]);
    const unknown = await get(app, "/console/assets/evil.js");
    expect([unknown.status, await unknown.json()]).toEqual([404, { error: 1404, message: "Not found." }]);
  });

  it("under a basePath the page names its files and API under {basePath}/console (escaped as an attribute)", async () => {
    const app = createPlantgate({ ...quiet, basePath: "/auth", console: { enabled: true, page: consolePage() } });
    const html = await (await get(app, "/auth/console")).text();
    expect(html).toContain('<meta name="plantgate-console-root" content="/auth/console">');
    expect(html).toContain('<script src="/auth/console/assets/console.js" defer></script>');
    expect((await get(app, "/auth/console/assets/console.css")).status).toBe(200);
    expect((await get(app, "/console")).status).toBe(404);
    // `$&` is text (not a replacement pattern) and `&` is escaped in the attribute.
    const odd = createPlantgate({ ...quiet, basePath: "/a$&b", console: { enabled: true, page: consolePage() } });
    const oddHtml = await (await odd.fetch(new Request(`${BASE}/a$&b/console`))).text();
    expect(oddHtml).toContain('<meta name="plantgate-console-root" content="/a$&amp;b/console">');
  });
});
