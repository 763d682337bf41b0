/**
 * The console's Accounts view in Debian chromium against the real example node server made with
 * the page-size options (`maxPageSize`, `defaultPageSize`): the size menu offers what the server
 * takes and the list starts at the server's default. Until 2026-12-03 the page asked for 20 and
 * offered 10, 20, 50 and 100 whatever the server took: with `maxPageSize: 5` every load was a 400
 * (1102) and no account could be listed in the console. Every case also fails on a script error,
 * an unhandled promise rejection, a CSP violation or an answer >= 400 (but the first session check).
 */
import { createMemoryStorage, type PlantgateOptions } from "@plantgate/core";
import type { RunningServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ARGS, CHROMIUM, PAGE_PROBES, requireChromium, suite, suiteName } from "./chromium.js";
import { startConsoleServer } from "./targets.js";

const ADMIN = { username: "admin", password: "console-e2e-password" };
const CLIENT = { id: "billing-service", secret: "billing-service-secret-0123456789" };
const PASSWORD = "user-password-1";
/** Eleven accounts besides the admin: twelve in all. */
const USERS = Array.from({ length: 11 }, (_, i) => ({ username: `user-${String(i + 1).padStart(2, "0")}`, password: PASSWORD }));
const ALL = [ADMIN.username, ...USERS.map((u) => u.username)];

const name = suiteName("console account page sizes from the server's options, in Debian chromium");

suite(name, () => {
  let browser: Browser;
  const servers: RunningServer[] = [];
  const lines = serverLines();

  beforeAll(async () => {
    requireChromium();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    for (const server of servers) await server.close();
    lines.check([ADMIN.password, CLIENT.secret, PASSWORD]);
  });

  /** A server with `options`, a page signed in as the admin on its Accounts view, and the problems seen. */
  async function accountsView(options: PlantgateOptions): Promise<{ page: Page; problems: string[] }> {
    const server = await startConsoleServer({ admin: ADMIN, client: CLIENT, storage: createMemoryStorage(), lines, options });
    servers.push(server);
    await server.app.admin.importAccounts(USERS);
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await context.addInitScript(PAGE_PROBES);
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("response", (r) => {
      // Not signed in yet: the page's first session check is a 401.
      if (r.status() >= 400 && !(r.status() === 401 && r.url().endsWith("/console/api/session"))) problems.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });
    await page.goto(server.consoleUrl!);
    await page.locator("#sign-in-username").fill(ADMIN.username);
    await page.locator("#sign-in-password").fill(ADMIN.password);
    await page.locator("#sign-in-password").press("Enter");
    await page.locator("#view-sign-in").waitFor({ state: "hidden" });
    await page.getByRole("link", { name: "Accounts" }).click();
    await page.locator("#view-accounts").waitFor({ state: "visible" });
    return { page, problems };
  }

  const rows = (page: Page) => page.locator('#accounts-body td[data-label="Username"]').allTextContents();
  const sizes = (page: Page) => page.locator("#accounts-page-size option").allTextContents();
  const info = (page: Page) => page.locator("#accounts-page-info").textContent();
  const problemsOf = async (page: Page, problems: string[]) => [...problems, ...(await page.evaluate(() => (window as unknown as { pageProblems: string[] }).pageProblems))];

  it("maxPageSize 5: the menu offers 5 only, the list shows 5 a page and pages on (every load was a 400 before)", async () => {
    const { page, problems } = await accountsView({ maxPageSize: 5, defaultPageSize: 5 });
    await expect.poll(() => info(page)).toBe("Page 1 of 3 · 12 accounts");
    expect(await rows(page)).toEqual(ALL.slice(0, 5));
    expect(await sizes(page)).toEqual(["5"]);
    expect(await page.locator("#accounts-page-size").inputValue()).toBe("5");
    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(() => info(page)).toBe("Page 2 of 3 · 12 accounts");
    expect(await rows(page)).toEqual(ALL.slice(5, 10));
    expect(await page.locator("#accounts-status").textContent()).toBe("");
    expect(await problemsOf(page, problems)).toEqual([]);
    await page.context().close();
  });

  it("maxPageSize 15, defaultPageSize 15: the menu offers 10 and 15, the list starts at 15, and 10 works", async () => {
    const { page, problems } = await accountsView({ maxPageSize: 15, defaultPageSize: 15 });
    await expect.poll(() => info(page)).toBe("Page 1 of 1 · 12 accounts");
    expect(await rows(page)).toEqual(ALL);
    expect(await sizes(page)).toEqual(["10", "15"]);
    expect(await page.locator("#accounts-page-size").inputValue()).toBe("15");
    await page.locator("#accounts-page-size").selectOption("10");
    await expect.poll(() => info(page)).toBe("Page 1 of 2 · 12 accounts");
    expect(await rows(page)).toEqual(ALL.slice(0, 10));
    expect(await problemsOf(page, problems)).toEqual([]);
    await page.context().close();
  });

  it("defaultPageSize 3 under the default maximum (100): the menu adds 3 to 10, 20, 50 and 100, and the list starts at 3", async () => {
    const { page, problems } = await accountsView({ defaultPageSize: 3 });
    await expect.poll(() => info(page)).toBe("Page 1 of 4 · 12 accounts");
    expect(await rows(page)).toEqual(ALL.slice(0, 3));
    expect(await sizes(page)).toEqual(["3", "10", "20", "50", "100"]);
    expect(await page.locator("#accounts-page-size").inputValue()).toBe("3");
    await page.locator("#accounts-page-size").selectOption("100");
    await expect.poll(() => info(page)).toBe("Page 1 of 1 · 12 accounts");
    expect(await rows(page)).toEqual(ALL);
    expect(await problemsOf(page, problems)).toEqual([]);
    await page.context().close();
  });
});
