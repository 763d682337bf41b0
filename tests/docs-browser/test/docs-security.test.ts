/**
 * The API reference page against the ways a link, a header or the page's own features could turn
 * it against its user, in a real browser (Debian's chromium, driven by playwright-core), served by
 * the example node server under a base path (`/auth`) with the URLs taken from each request:
 *
 * - Swagger UI's query-string configuration (`?url=`, `?configUrl=`, `?config=`) must be ignored:
 *   a link must not make the page load a foreign document (GHSA-qrmm-w75w-3wpx).
 * - "Authorize" must not persist what it is given (bearer token, client secret) anywhere in the
 *   browser: not in localStorage, sessionStorage, cookies; gone after a reload.
 * - A document naming a token URL on another origin must not get a client secret sent there: the
 *   CSP's connect-src 'self' stops it.
 * - Another origin cannot frame the page (frame-ancestors 'none', X-Frame-Options: DENY).
 *
 * "Another origin" is a plain node:http server on `localhost` (the app is on 127.0.0.1) that
 * answers everything with CORS allowed and counts what reaches it.
 */
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createMemoryStorage, type PlantgateOptions } from "@plantgate/core";
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
// Under CI a missing browser is a failure, not a skip (.ci/run installs it).
const runIt = available || process.env.CI === "true" ? it : it.skip;
const suffix = available ? "" : ` (SKIPPED: ${CHROMIUM} is not installed; apt-get install chromium)`;

const FOREIGN_DOCUMENT = JSON.stringify({ openapi: "3.0.3", info: { title: "FOREIGN", version: "1" }, paths: {} });

describe("the API reference page resists links, foreign documents and framing (chromium)", () => {
  const lines = serverLines();
  const servers: RunningServer[] = [];
  let browser: Browser | undefined;
  let foreign: Server | undefined;
  let foreignOrigin = "";
  const foreignHits: string[] = [];

  beforeAll(async () => {
    if (!available && process.env.CI !== "true") return;
    foreign = createServer((req, res) => {
      foreignHits.push(`${req.method} ${req.url}`);
      const cors = { "access-control-allow-origin": "*", "access-control-allow-headers": "*", "access-control-allow-methods": "*" };
      if (req.url!.startsWith("/frame")) {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end(`<!doctype html><title>framer</title><iframe id="f" src="${new URL(req.url!, "http://x").searchParams.get("src")}"></iframe>`);
      } else if (req.url!.startsWith("/config")) {
        res.writeHead(200, { "content-type": "application/json", ...cors });
        res.end(JSON.stringify({ url: `${foreignOrigin}/foreign.json` }));
      } else {
        res.writeHead(200, { "content-type": "application/json", ...cors });
        res.end(req.method === "POST" ? JSON.stringify({ access_token: "x", token_type: "Bearer", expires_in: 60 }) : FOREIGN_DOCUMENT);
      }
    });
    await new Promise<void>((resolve) => foreign!.listen(0, "127.0.0.1", resolve));
    foreignOrigin = `http://localhost:${(foreign.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
  });
  afterAll(async () => {
    await browser?.close();
    for (const server of servers) await server.close();
    await new Promise((resolve) => (foreign ? foreign.close(resolve) : resolve(undefined)));
    for (const server of servers) if (server.demo) lines.check([server.demo.clientSecret, server.demo.password]);
  });

  /** The example server under `/auth`; `baseUrl: undefined` makes the documents' URLs follow each request. */
  async function start(overrides: PlantgateOptions = {}): Promise<RunningServer> {
    const server = await startServer(
      { PORT: "0", PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" },
      { storage: createMemoryStorage(), logger: { error() {}, warn() {} }, basePath: "/auth", baseUrl: undefined, ...overrides },
      { destination: lines.destination },
    );
    servers.push(server);
    return server;
  }

  /** A fresh page that records every request and every CSP violation. */
  async function open(): Promise<{ page: Page; requests: string[]; violations: string[] }> {
    const page = await browser!.newPage();
    const requests: string[] = [];
    const violations: string[] = [];
    page.on("request", (r) => requests.push(`${r.method()} ${r.url()}`));
    page.on("console", (m) => {
      if (m.text().startsWith("CSP violation: ")) violations.push(m.text().slice("CSP violation: ".length));
    });
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
    });
    return { page, requests, violations };
  }

  const title = (page: Page) => page.locator(".info .title").first().innerText();

  runIt(`?url=, ?configUrl= and ?config= are ignored: the page loads only plantgate's own document${suffix}`, async () => {
    if (!browser) throw new Error(`${CHROMIUM} is missing (CI=true: .ci/run must install chromium)`);
    const server = await start();
    const origin = new URL(server.url).origin;
    for (const query of [`url=${foreignOrigin}/foreign.json`, `configUrl=${foreignOrigin}/config.json`, `config=${foreignOrigin}/config.json`, "url=/auth/.well-known/jwks.json"]) {
      const { page, requests, violations } = await open();
      const hitsBefore = foreignHits.length;
      await page.goto(`${server.url}/auth/docs?${query}`, { waitUntil: "networkidle" });
      await expect.poll(() => title(page), { message: query, timeout: 20_000 }).toMatch(/^Plant Store/);
      expect(await page.locator(".opblock").count(), query).toBeGreaterThan(5);
      // Only the page, its three files and plantgate's document, all under the base path.
      expect(
        requests.map((r) => r.replace(/\?v=\d+\.\d+\.\d+-[0-9a-f]{8}$/, "")),
        query,
      ).toEqual([
        `GET ${origin}/auth/docs?${query}`,
        `GET ${origin}/auth/docs/assets/swagger-ui.css`,
        `GET ${origin}/auth/docs/assets/swagger-ui-bundle.js`,
        `GET ${origin}/auth/docs/assets/docs-init.js`,
        `GET ${origin}/auth/openapi.json`,
      ]);
      expect([violations, foreignHits.slice(hitsBefore)], query).toEqual([[], []]);
      await page.close();
    }
  });

  runIt(`"Authorize" keeps the bearer token and the client secret in memory only: nothing stored, gone after a reload${suffix}`, async () => {
    if (!browser) throw new Error(`${CHROMIUM} is missing (CI=true: .ci/run must install chromium)`);
    const server = await start();
    const origin = new URL(server.url).origin;
    const { page, requests, violations } = await open();
    await page.goto(`${server.url}/auth/docs`, { waitUntil: "networkidle" });
    await page.locator("button.authorize").first().click();
    const schemes = page.locator(".modal-ux .auth-container");
    await schemes.filter({ hasText: "bearerAuth" }).locator("input").fill("bearer-token-value-1");
    await schemes.filter({ hasText: "bearerAuth" }).locator("button.authorize").click();
    const clientCredentials = schemes.filter({ hasText: "clientCredentials" });
    await clientCredentials.locator("#client_id_clientCredentials").fill(server.demo!.clientId);
    await clientCredentials.locator("#client_secret_clientCredentials").fill(server.demo!.clientSecret);
    const token = page.waitForResponse((r) => r.url() === `${origin}/auth/UserService/connect/token`);
    await clientCredentials.locator("button.authorize").click();
    // A real token request to this server's token endpoint (under the base path), answered 200.
    expect((await token).status()).toBe(200);
    await expect.poll(() => clientCredentials.locator("button.btn-done, button.logout").first().isVisible()).toBe(true);
    expect(await page.locator(".modal-ux").innerText()).toContain("Authorized");

    const stored = () =>
      page.evaluate(async () => ({
        local: Object.entries(localStorage),
        session: Object.entries(sessionStorage),
        cookie: document.cookie,
        databases: (await indexedDB.databases()).map((d) => d.name),
      }));
    expect(await stored()).toEqual({ local: [], session: [], cookie: "", databases: [] });
    expect(await page.context().cookies()).toEqual([]);

    await page.reload({ waitUntil: "networkidle" });
    await expect.poll(() => title(page)).toMatch(/^Plant Store/);
    expect(await stored()).toEqual({ local: [], session: [], cookie: "", databases: [] });
    await page.locator("button.authorize").first().click();
    expect(await page.locator(".modal-ux").innerText()).not.toContain("Authorized");
    expect(violations).toEqual([]);
    expect(requests.filter((r) => !r.includes(`${origin}/auth/`))).toEqual([]);
    await page.close();
  });

  runIt(`a document whose token URL is on another origin (its baseUrl) gets no client secret sent there: "Authorize" posts to the server that served the page${suffix}`, async () => {
    if (!browser) throw new Error(`${CHROMIUM} is missing (CI=true: .ci/run must install chromium)`);
    // baseUrl names the foreign origin: the document's tokenUrl and servers point there.
    const server = await start({ baseUrl: `${foreignOrigin}/auth` });
    const { page, violations } = await open();
    await page.goto(`${server.url}/auth/docs`, { waitUntil: "networkidle" });
    await expect.poll(() => title(page), { timeout: 20_000 }).toMatch(/^Plant Store/);
    await page.locator("button.authorize").first().click();
    const clientCredentials = page.locator(".modal-ux .auth-container").filter({ hasText: "clientCredentials" });
    expect(await clientCredentials.innerText()).toContain(`Token URL: ${foreignOrigin}/auth/UserService/connect/token`);
    const hitsBefore = foreignHits.length;
    await clientCredentials.locator("#client_id_clientCredentials").fill(server.demo!.clientId);
    await clientCredentials.locator("#client_secret_clientCredentials").fill(server.demo!.clientSecret);
    const posted = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/UserService/connect/token"));
    await clientCredentials.locator("button.authorize").click();
    // Since 2026-12-01 the page sends a request for the document's server URL to the server that
    // served it (the same app: the page opened at another name of it worked nowhere before); the
    // CSP's connect-src 'self' still refuses any other origin. Until then this request went to the
    // foreign origin and the CSP refused it.
    expect((await posted).url()).toBe(`${server.url}/auth/UserService/connect/token`);
    await expect.poll(async () => (await page.locator(".modal-ux").innerText()).match(/Authorized|Auth Error/)?.[0], { timeout: 10_000 }).toBe("Authorized");
    expect(violations).toEqual([]);
    expect(foreignHits.slice(hitsBefore)).toEqual([]);
    await page.close();
  });

  runIt(`another origin cannot frame the page${suffix}`, async () => {
    if (!browser) throw new Error(`${CHROMIUM} is missing (CI=true: .ci/run must install chromium)`);
    const server = await start();
    const page = await browser.newPage();
    const docs = `${server.url}/auth/docs`;
    const framed = page.waitForResponse((r) => r.url() === docs);
    await page.goto(`${foreignOrigin}/frame?src=${encodeURIComponent(docs)}`, { waitUntil: "load" });
    // The server answers; the browser refuses to show the answer in the frame.
    expect((await framed).status()).toBe(200);
    const frame = await (await page.locator("#f").elementHandle())!.contentFrame();
    await expect.poll(async () => frame!.url()).not.toBe("about:blank");
    expect(frame!.url()).not.toBe(docs);
    expect(await frame!.locator("#swagger-ui").count()).toBe(0);
    await page.close();
  });
});
