/**
 * Issue 6: a real browser (Debian's chromium, driven by playwright-core) loads `/docs` from the
 * example node server and shows the plant store's operations. The page must work offline: every
 * request it makes goes to the server itself, and the strict CSP must not block anything.
 * The screenshot lands in tests/docs-browser/screenshots/docs.png (gitignored).
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createMemoryStorage } from "@plantgate/core";
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CHROMIUM = "/usr/bin/chromium";
const SCREENSHOT = join(dirname(fileURLToPath(import.meta.url)), "..", "screenshots", "docs.png");
const available = existsSync(CHROMIUM);
// Under CI a missing browser is a failure, not a skip (.ci/run installs it).
const runIt = available || process.env.CI === "true" ? it : it.skip;
const suffix = available ? "" : ` (SKIPPED: ${CHROMIUM} is not installed; apt-get install chromium)`;

describe("the API reference page in chromium", () => {
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  const lines = serverLines();

  beforeAll(async () => {
    if (!available && process.env.CI !== "true") return;
    server = await startServer({ PORT: "0", PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" }, { storage: createMemoryStorage(), logger: { error() {}, warn() {} } }, { destination: lines.destination });
    // playwright gives every launch a fresh, empty profile; the flags keep chromium off the network.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (server?.demo) lines.check([server.demo.clientSecret, server.demo.password]);
  });

  runIt(`shows the plant store operations from /openapi.json, loads only from the server, and is screenshotted${suffix}`, async () => {
    if (!browser || !server) throw new Error(`${CHROMIUM} is missing (CI=true: .ci/run must install chromium)`);
    const origin = new URL(server.url).origin;
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    const problems: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    page.on("response", (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} for ${r.url()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console error: ${m.text()}`);
    });
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
    });

    const response = await page.goto(`${server.url}/docs`, { waitUntil: "networkidle" });
    expect(response?.status()).toBe(200);
    await expect.poll(() => page.locator(".opblock").count(), { timeout: 20_000 }).toBeGreaterThan(5);

    await expect.poll(() => page.locator(".info .title").first().innerText()).toMatch(/^Plant Store/);
    for (const [method, path] of [
      ["POST", "/plants"],
      ["POST", "/UserService/connect/token"],
      ["GET", "/rbac/ServerCommand/GetAccountList"],
      ["GET", "/.well-known/jwks.json"],
    ] as const) {
      const block = page.locator(`.opblock-${method.toLowerCase()}`, { has: page.locator(`.opblock-summary-path[data-path="${path}"]`) });
      await expect.poll(() => block.first().isVisible(), { message: `${method} ${path}` }).toBe(true);
      expect(await block.first().locator(".opblock-summary-method").innerText()).toBe(method);
    }
    expect(await page.locator(".opblock-summary-operation-id", { hasText: "GetAccountList" }).first().isVisible()).toBe(true);
    expect(await page.locator("button.authorize").isVisible()).toBe(true);

    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(problems).toEqual([]);
    expect(requests.filter((u) => new URL(u).origin !== origin && !u.startsWith("data:"))).toEqual([]);
    // The files carry the release in their query (`?v=<swagger-ui version>-<hash>`).
    expect(requests.map((u) => u.replace(/\?v=\d+\.\d+\.\d+-[0-9a-f]{8}$/, ""))).toEqual(
      expect.arrayContaining([`${server.url}/docs`, `${server.url}/docs/assets/swagger-ui-bundle.js`, `${server.url}/docs/assets/swagger-ui.css`, `${server.url}/openapi.json`]),
    );

    const png = readFileSync(SCREENSHOT);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // IHDR: width and height (big-endian) right after the chunk header.
    expect(png.readUInt32BE(16)).toBe(1280);
    expect(png.readUInt32BE(20)).toBeGreaterThan(900);
    // A blank page compresses to a few KB; the rendered reference is far larger.
    expect(png.length).toBeGreaterThan(50_000);
  });

  runIt(`reloading revalidates the no-cache page with If-None-Match and gets a 304; the day-cached files come from the cache${suffix}`, async () => {
    if (!browser || !server) throw new Error(`${CHROMIUM} is missing (CI=true: .ci/run must install chromium)`);
    const context = await browser.newContext();
    const page = await context.newPage();
    // What went over the wire (Playwright shows a revalidated answer as the cached 200): CDP's
    // ExtraInfo events carry the request headers sent and the status received.
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    const urls = new Map<string, string>();
    const sent = new Map<string, string | undefined>();
    const wire: string[] = [];
    cdp.on("Network.requestWillBeSent", (e) => urls.set(e.requestId, new URL(e.request.url).pathname));
    cdp.on("Network.requestWillBeSentExtraInfo", (e) => sent.set(e.requestId, e.headers["if-none-match"] ?? e.headers["If-None-Match"]));
    cdp.on("Network.responseReceivedExtraInfo", (e) => {
      const etag = e.headers["etag"] ?? e.headers["ETag"];
      wire.push(`${e.requestId} ${e.statusCode} ${sent.get(e.requestId) === undefined ? "-" : sent.get(e.requestId) === etag ? "if-none-match: its etag" : "if-none-match: another"}`);
    });
    // Each visit ends once the page has rendered the document (so openapi.json was read, from the
    // network or the cache) and the network has been idle; CDP's events can trail the page's.
    const visit = async (go: () => Promise<unknown>, answers: number) => {
      wire.length = 0;
      await go();
      await expect.poll(() => page.locator(".opblock").count(), { timeout: 20_000 }).toBeGreaterThan(5);
      await page.waitForLoadState("networkidle");
      await expect.poll(() => wire.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(answers);
      return wire.map((line) => line.replace(/^\S+/, (id) => urls.get(id) ?? id)).sort();
    };
    const first = await visit(() => page.goto(`${server!.url}/docs`), 5);
    const second = await visit(() => page.reload(), 1);
    await context.close();
    expect({ first, second }).toEqual({
      first: ["/docs 200 -", "/docs/assets/docs-init.js 200 -", "/docs/assets/swagger-ui-bundle.js 200 -", "/docs/assets/swagger-ui.css 200 -", "/openapi.json 200 -"],
      // The page (no-cache) is asked for again with its tag and is not sent again; the files
      // (a day) and openapi.json (five minutes) are still fresh, so they are not asked for at all.
      second: ["/docs 304 if-none-match: its etag"],
    });
  });

  // The page opened at another name of the server (localhost for the 127.0.0.1 of the example's
  // baseUrl, a container's address under HOST=0.0.0.0): a request for the document's server URL goes
  // to the server that served the page. Until 2026-12-01 the page's own CSP refused every "Authorize"
  // and "Try it out" there.
  runIt(`"Authorize" (client credentials) and "Try it out" reach the server that served the page, without a CSP violation${suffix}`, async () => {
    if (!browser || !server) throw new Error(`${CHROMIUM} is missing (CI=true: .ci/run must install chromium)`);
    const local = server.url.replace("//127.0.0.1:", "//localhost:");
    expect(local).not.toBe(server.url);
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on("console", (m) => {
      if (m.text().startsWith("CSP violation: ")) violations.push(m.text().slice("CSP violation: ".length));
    });
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
    });
    const response = await page.goto(`${local}/docs`, { waitUntil: "networkidle" });
    expect(response?.status()).toBe(200);
    await expect.poll(() => page.locator(".opblock").count(), { timeout: 20_000 }).toBeGreaterThan(5);
    await page.locator("button.authorize").first().click();
    const clientCredentials = page.locator(".modal-ux .auth-container").filter({ hasText: "clientCredentials" });
    await clientCredentials.locator("#client_id_clientCredentials").fill(server.demo!.clientId);
    await clientCredentials.locator("#client_secret_clientCredentials").fill(server.demo!.clientSecret);
    await clientCredentials.locator("button.authorize").click();
    await expect.poll(async () => (await page.locator(".modal-ux").innerText()).match(/Authorized|Auth Error/)?.[0], { timeout: 10_000 }).toBeDefined();
    expect(violations).toEqual([]);
    expect(await page.locator(".modal-ux").innerText()).toContain("Authorized");
    await page.locator(".modal-ux button.close-modal").click();
    // "Try it out" on an operation too: the JWKS, answered by the server that served the page.
    const jwks = page.locator(".opblock").filter({ hasText: "getJwks" });
    await jwks.locator(".opblock-summary").click();
    await jwks.locator("button.try-out__btn").click();
    await jwks.locator("button.execute").click();
    await expect.poll(() => jwks.locator(".live-responses-table tr.response .response-col_status").first().innerText(), { timeout: 10_000 }).toBe("200");
    expect(await jwks.locator(".request-url").innerText()).toContain(`${local}/.well-known/jwks.json`);
    expect(violations).toEqual([]);
    await page.close();
  });
});
