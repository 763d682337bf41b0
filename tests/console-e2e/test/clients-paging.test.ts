/**
 * The console's applications table pages by cursor, in Debian chromium against the real example
 * node server: 64 clients make two pages of 50, Next / Previous / First move between them, and an
 * action on page 2 (regenerate a secret, delete a client) reloads page 2 only and stays there,
 * asking the server for that page alone (never the whole list).
 */
import { createMemoryStorage } from "@plantgate/core";
import type { RunningServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { chromium, type Browser, type Page, type Route } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ARGS, CHROMIUM, requireChromium, suite, suiteName } from "./chromium.js";
import { startConsoleServer } from "./targets.js";

const ADMIN = { username: "admin", password: "console-e2e-password" };
const CLIENT = { id: "billing-service", secret: "billing-service-secret-0123456789" };
/** With billing-service: 64 clients, pages of 50 and 14. */
const IDS = Array.from({ length: 63 }, (_, i) => `svc-${String(i).padStart(2, "0")}`);
const ALL = [CLIENT.id, ...IDS].sort();
/** The API's cursor of the page after a short client id: `i` and the id's UTF-8 in base64url (opaque to the page). */
const cursorOf = (id: string) => "i" + Buffer.from(id, "utf8").toString("base64url");

const name = suiteName("console applications table paged in Debian chromium");

suite(name, () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  const storage = createMemoryStorage();
  const problems: string[] = [];
  /** Every GET of the clients list the page made, as path + query. */
  const listed: string[] = [];
  const sent: string[] = [CLIENT.secret, ADMIN.password];
  const lines = serverLines();

  beforeAll(async () => {
    requireChromium();
    server = await startConsoleServer({ admin: ADMIN, client: CLIENT, storage, lines });
    for (const clientId of IDS) sent.push((await server.app.admin.createClient({ clientId, name: `Service ${clientId}` })).clientSecret);

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("response", (r) => {
      if (r.status() >= 400 && r.status() !== 401) problems.push(`${r.status()} ${r.url()}`);
    });
    page.on("request", (r) => {
      const url = new URL(r.url());
      if (r.method() === "GET" && url.pathname === "/console/api/clients") listed.push(url.pathname + url.search);
    });
    await page.goto(server.consoleUrl!);
    await page.locator("#sign-in-username").fill(ADMIN.username);
    await page.locator("#sign-in-password").fill(ADMIN.password);
    await page.locator("#sign-in-password").press("Enter");
    await page.locator("#view-security").waitFor({ state: "visible" });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (server) lines.check(sent);
  });

  const ids = () => page.locator("#clients-body code.client-id").allTextContents();
  const info = () => page.locator("#clients-page-info").textContent();

  it("shows the first 50 applications in client-id order, with Next enabled and First/Previous disabled", async () => {
    await expect.poll(ids).toEqual(ALL.slice(0, 50));
    expect(await info()).toBe("Page 1");
    expect(await page.locator("#clients-next").isDisabled()).toBe(false);
    expect(await page.locator("#clients-prev").isDisabled()).toBe(true);
    expect(await page.locator("#clients-first").isDisabled()).toBe(true);
    expect(listed).toEqual(["/console/api/clients?limit=50"]);
  });

  it("Next page shows the rest, asking for the clients after the last one shown", async () => {
    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(info).toBe("Page 2");
    expect(await ids()).toEqual(ALL.slice(50));
    expect(await page.locator("#clients-next").isDisabled()).toBe(true);
    expect(await page.locator("#clients-prev").isDisabled()).toBe(false);
    expect(listed.at(-1)).toBe(`/console/api/clients?limit=50&after=${cursorOf(ALL[49]!)}`);
    // The last page's button is disabled: focus moves to the other direction, not to the body.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("clients-prev");
  });

  it("an action on page 2 reloads page 2 only and stays there", async () => {
    const target = ALL[55]!;
    const before = listed.length;
    await page.getByRole("button", { name: `Regenerate the secret of Service ${target}` }).click();
    await page.getByRole("button", { name: "Regenerate secret", exact: true }).click();
    await page.locator("#secret-dialog").waitFor({ state: "visible" });
    expect(await page.locator("#secret-client-id").inputValue()).toBe(target);
    sent.push(await page.locator("#secret-value").inputValue());
    await page.getByRole("button", { name: "I have stored it" }).click();
    await expect.poll(() => listed.length).toBe(before + 1);
    expect(listed.at(-1)).toBe(`/console/api/clients?limit=50&after=${cursorOf(ALL[49]!)}`);
    await expect.poll(() => page.locator("#clients-table").getAttribute("aria-busy")).toBeNull();
    expect(await info()).toBe("Page 2");
    expect(await ids()).toEqual(ALL.slice(50));
    expect(await page.locator("#security-status").textContent()).toBe(`The secret of Service ${target} was regenerated.`);

    // Deleting one: page 2 again, without it.
    const gone = ALL[60]!;
    await page.getByRole("button", { name: `Delete Service ${gone}` }).click();
    await page.getByRole("button", { name: "Delete application", exact: true }).click();
    await expect.poll(() => page.locator("#security-status").textContent()).toBe(`Service ${gone} was deleted.`);
    await expect.poll(ids).toEqual(ALL.slice(50).filter((id) => id !== gone));
    expect(await info()).toBe("Page 2");
    expect(listed.slice(before)).toEqual([`/console/api/clients?limit=50&after=${cursorOf(ALL[49]!)}`, `/console/api/clients?limit=50&after=${cursorOf(ALL[49]!)}`]);
  });

  it("Previous page and First page go back to page 1", async () => {
    await page.getByRole("button", { name: "Previous page" }).click();
    await expect.poll(info).toBe("Page 1");
    expect(await ids()).toEqual(ALL.slice(0, 50));
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("clients-next");
    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(info).toBe("Page 2");
    await page.getByRole("button", { name: "First page" }).click();
    await expect.poll(info).toBe("Page 1");
    expect(await ids()).toEqual(ALL.slice(0, 50));
  });

  it("Next page clicked twice while its page loads moves one page, asking for it once", async () => {
    expect(await info()).toBe("Page 1");
    const before = listed.length;
    // The page's answer is held back until both clicks are in.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const hold = async (route: Route) => {
      await released;
      // An aborted request (before the fix, the second click aborted the first) has no one to answer.
      await route.continue().catch(() => {});
    };
    await page.route("**/console/api/clients?*", hold);
    let busy: string | null = null;
    try {
      await page.getByRole("button", { name: "Next page" }).dblclick();
      await expect.poll(() => listed.length).toBeGreaterThan(before);
      // Meanwhile the pager says it is busy (checked below, after what was asked for).
      busy = await page.locator("#clients-next").getAttribute("aria-disabled");
      release();
      await expect.poll(info).toBe("Page 2");
      await expect.poll(() => page.locator("#clients-table").getAttribute("aria-busy")).toBeNull();
    } finally {
      release();
      await page.unroute("**/console/api/clients?*", hold);
    }
    expect(listed.slice(before)).toEqual([`/console/api/clients?limit=50&after=${cursorOf(ALL[49]!)}`]);
    expect(busy).toBe("true");
    expect(await ids()).toEqual(ALL.slice(50).filter((id) => id !== ALL[60]));
    expect(await page.locator("#clients-next").getAttribute("aria-disabled")).toBeNull();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("clients-prev");
    // And one click on Previous page is one step back.
    await page.getByRole("button", { name: "Previous page" }).click();
    await expect.poll(info).toBe("Page 1");
  });

  it("a page emptied by a delete gives way to the page before it", async () => {
    // Page 2 down to one application (the others deleted elsewhere), then that one deleted here.
    const rest = ALL.slice(50).filter((id) => id !== ALL[60]);
    for (const id of rest.slice(1)) await server.app.admin.deleteClient(id);
    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(info).toBe("Page 2");
    expect(await ids()).toEqual([rest[0]]);
    await page.getByRole("button", { name: `Delete Service ${rest[0]}` }).click();
    await page.getByRole("button", { name: "Delete application", exact: true }).click();
    await expect.poll(info).toBe("Page 1");
    expect(await ids()).toEqual(ALL.slice(0, 50));
    expect(await page.locator("#clients-next").isDisabled()).toBe(true);
    expect(problems).toEqual([]);
  });

  it("a client id of 5000 characters written straight into the store ends page 1: Next page goes on past it, with a cursor of 728 characters", async () => {
    // Sorts between ALL[48] and ALL[49]: the last of page 1, ALL[49] moves to page 2. Until
    // 2026-11-30 the cursor was the id itself, refused past 1000 characters (400): no page 2.
    const long = ALL[48]! + "~".repeat(5000);
    const created = await storage.clients.create({
      clientId: long,
      authMethod: "client_secret",
      secrets: [],
      jwks: null,
      jwksUri: null,
      name: "Written by hand",
      grantTypes: ["client_credentials"],
      scopes: [],
      accessTokenTtl: null,
      refreshTokenTtl: null,
      refreshTokenAbsoluteTtl: null,
      createdAt: Date.now(),
      secretUpdatedAt: Date.now(),
    });
    expect(created).toBe(true);
    await page.reload();
    await page.locator("#view-security").waitFor({ state: "visible" });
    await expect.poll(ids).toEqual([...ALL.slice(0, 49), long]);
    const before = listed.length;
    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(info).toBe("Page 2");
    expect(await ids()).toEqual([ALL[49]]);
    const asked = new URL(listed.at(-1)!, "http://x").searchParams.get("after")!;
    expect([listed.length - before, asked.length, asked.startsWith("h")]).toEqual([1, 728, true]);
    expect(problems).toEqual([]);
  });
});
