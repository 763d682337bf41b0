/**
 * `pnpm start` (the example node server) serves the API reference page on every name of its
 * address, but sets `baseUrl` (and the issuer) to the listening URL, `http://127.0.0.1:PORT`. The
 * page's own CSP allows `connect-src 'self'` only, so opened as `http://localhost:PORT/docs` (or,
 * with `HOST=0.0.0.0` in a container, as `http://<host>:PORT/docs`) every "Authorize" and every
 * "Try it out" went to `http://127.0.0.1:PORT`, another origin, and was blocked by the page itself
 * until 2026-12-01: the page now sends a request for the document's server URL to the server that
 * served it.
 */
import { existsSync } from "node:fs";
import { createMemoryStorage } from "@plantgate/core";
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
const runIt = available || process.env.CI === "true" ? it : it.skip;
const suffix = available ? "" : ` (SKIPPED: ${CHROMIUM} is not installed; apt-get install chromium)`;

describe("the example server's API reference page opened as http://localhost:PORT/docs (chromium)", () => {
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  const lines = serverLines();

  beforeAll(async () => {
    if (!available && process.env.CI !== "true") return;
    server = await startServer({ PORT: "0", PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" }, { storage: createMemoryStorage(), logger: { error() {}, warn() {} } }, { destination: lines.destination });
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
