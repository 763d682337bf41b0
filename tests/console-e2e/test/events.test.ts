/**
 * The console's "Security events" page in Debian chromium, against the real example node server
 * with an audit store: events made over real HTTP (a wrong client secret, a token, a wrong
 * password) are listed newest first, filter by type, client and account, page with Older/Newer,
 * and the page never shows a secret, password or token that was sent.
 */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createMemoryStorage } from "@plantgate/core";
import type { RunningServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ARGS, CHROMIUM, requireChromium, suite, suiteName } from "./chromium.js";
import { startConsoleServer } from "./targets.js";

const SHOTS = process.env.UPDATE_SCREENSHOTS === "1"
  ? resolve(dirname(fileURLToPath(import.meta.url)), "../../../docs/screenshots")
  : resolve(dirname(fileURLToPath(import.meta.url)), "../screenshots");
const ADMIN = { username: "admin", password: "console-e2e-password" };
const CLIENT = { id: "billing-service", secret: "billing-service-secret-0123456789" };

const basic = (id: string, secret: string) => "Basic " + Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64");

async function tokenRequest(url: string, id: string, secret: string, form: Record<string, string>) {
  const res = await fetch(`${url}/UserService/connect/token`, {
    method: "POST",
    headers: { authorization: basic(id, secret), "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const name = suiteName("console Security events page in Debian chromium");

suite(name, () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const sent: string[] = [CLIENT.secret, ADMIN.password, "wrong-client-secret-000000", "wrong-user-password"];
  const lines = serverLines();

  beforeAll(async () => {
    requireChromium();
    mkdirSync(SHOTS, { recursive: true });
    server = await startConsoleServer({ admin: ADMIN, client: CLIENT, storage: createMemoryStorage({ audit: true }), lines });
    // Over real HTTP: 22 tokens, a wrong client secret, a wrong password (in that order).
    for (let i = 0; i < 22; i++) {
      const ok = await tokenRequest(server.url, CLIENT.id, CLIENT.secret, { grant_type: "client_credentials" });
      expect(ok.status).toBe(200);
      sent.push(ok.body.access_token as string);
    }
    expect((await tokenRequest(server.url, CLIENT.id, "wrong-client-secret-000000", { grant_type: "client_credentials" })).status).toBe(401);
    expect((await tokenRequest(server.url, CLIENT.id, CLIENT.secret, { grant_type: "password", username: ADMIN.username, password: "wrong-user-password" })).status).toBe(400);
    await server.app.flushEvents();

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("response", (r) => {
      if (r.status() >= 400 && r.status() !== 401) problems.push(`${r.status()} ${r.url()}`);
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
    // The server's JSON lines hold none of what was sent either.
    if (server) lines.check(sent);
  });

  const column = (label: string) => page.locator(`#events-body td[data-label="${label}"]`).allTextContents();

  it("lists the newest events first, as the audit trail holds them, 20 to a page", async () => {
    await page.getByRole("link", { name: "Security events" }).click();
    await page.locator("#view-events").waitFor({ state: "visible" });
    expect(new URL(page.url()).hash).toBe("#/events");
    await page.locator("#events-body tr").first().waitFor();
    const newest = (await server.app.admin.listEvents({ limit: 20 })).events;
    expect(newest.slice(0, 3).map((e) => e.type)).toEqual(["console.signed_in", "account.login_failed", "client.authentication_failed"]);
    expect(await column("Type")).toEqual(newest.map((e) => e.type));
    const rows = await page.locator("#events-body tr").count();
    expect(rows).toBe(20);
    const first = await page.locator("#events-body tr").nth(1).locator("td").allTextContents();
    expect(first.slice(1)).toEqual(["account.login_failed", CLIENT.id, ADMIN.username, "127.0.0.1", "reason: invalid_password; source: password_grant"]);
    expect(await page.locator("#events-page-info").textContent()).toBe("Page 1");
    expect(await page.locator("#events-newer").isDisabled()).toBe(true);
    await page.screenshot({ path: `${SHOTS}/console-security-events.png` });
  });

  it("pages to older events and back", async () => {
    const all = (await server.app.admin.listEvents({ limit: 1000 })).events;
    await page.getByRole("button", { name: "Older events" }).click();
    await expect.poll(() => page.locator("#events-page-info").textContent()).toBe("Page 2");
    expect(await column("Type")).toEqual(all.slice(20, 40).map((e) => e.type));
    await page.getByRole("button", { name: "Newer events" }).click();
    await expect.poll(() => page.locator("#events-page-info").textContent()).toBe("Page 1");
    expect(await column("Type")).toEqual(all.slice(0, 20).map((e) => e.type));
  });

  it("filters by type, by client and by account", async () => {
    await page.locator("#events-type").selectOption("client.authentication_failed");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => column("Type")).toEqual(["client.authentication_failed"]);
    expect(await page.locator("#events-body tr td").allTextContents().then((t) => t.slice(1))).toEqual(["client.authentication_failed", CLIENT.id, "", "127.0.0.1", "reason: invalid_secret"]);

    await page.locator("#events-type").selectOption("");
    await page.locator("#events-account").fill(ADMIN.username);
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => column("Type")).toEqual(["console.signed_in", "account.login_failed", "account.created"]);

    await page.locator("#events-account").fill("");
    await page.locator("#events-type").selectOption("token.issued");
    await page.locator("#events-client").fill(CLIENT.id);
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => page.locator("#events-body tr").count()).toBe(20);
    expect(new Set(await column("Client"))).toEqual(new Set([CLIENT.id]));
    await page.getByRole("button", { name: "Older events" }).click();
    await expect.poll(() => page.locator("#events-body tr").count()).toBe(2);
    expect(await page.locator("#events-older").isDisabled()).toBe(true);

    await page.locator("#events-client").fill("nobody");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => page.locator("#events-empty").isVisible()).toBe(true);
  });

  it("filters by time, From (inclusive) and Before (exclusive), read as UTC as the table shows times (2026-12-03)", async () => {
    await page.locator("#events-client").fill("");
    await page.locator("#events-type").selectOption("");
    const all = (await server.app.admin.listEvents({ limit: 1000 })).events;
    const failed = all.find((e) => e.type === "client.authentication_failed")!;
    // The second the failed authentication fell in, as the fields take it (to the second).
    const since = Math.floor(failed.time / 1000) * 1000;
    const field = (ms: number) => new Date(ms).toISOString().slice(0, 19);
    await page.locator("#events-since").fill(field(since));
    await page.locator("#events-until").fill(field(since + 1000));
    await page.getByRole("button", { name: "Apply filters" }).click();
    const within = all.filter((e) => e.time >= since && e.time < since + 1000);
    expect(within.map((e) => e.id)).toContain(failed.id);
    await expect.poll(() => column("Type")).toEqual(within.slice(0, 20).map((e) => e.type));
    expect(await page.locator("#events-body td[data-label=\"Time\"]").first().textContent()).toBe(`${field(since).slice(0, 16).replace("T", " ")} UTC`);
    // Before the second only: the events before it (the first page of them).
    await page.locator("#events-since").fill("");
    await page.locator("#events-until").fill(field(since));
    await page.getByRole("button", { name: "Apply filters" }).click();
    const older = all.filter((e) => e.time < since);
    await expect.poll(() => column("Type")).toEqual(older.slice(0, 20).map((e) => e.type));
    // A Before earlier than 1970: none (until 0; it was left out, and every event shown, until a review of 2026-12-03).
    await page.locator("#events-since").fill("");
    await page.locator("#events-until").fill("1969-12-31T23:59:59");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => page.locator("#events-empty").isVisible()).toBe(true);
    // A field typed in part: the page says so, and shows the table it had, not every event unfiltered.
    await page.locator("#events-until").fill("");
    await page.locator("#events-since").fill("");
    await page.locator("#events-since").click();
    await page.keyboard.type("12");
    expect(await page.locator("#events-since").evaluate((e) => (e as HTMLInputElement).validity.badInput)).toBe(true);
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => page.locator("#events-status").textContent()).toBe("From (UTC) is not a date and time this page can read: give all of it, with a year up to 9999.");
    expect(await page.locator("#events-empty").isVisible()).toBe(true);
    // A From after every event: none.
    await page.locator("#events-until").fill("");
    await page.locator("#events-since").fill(field(Date.now() + 3600_000));
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => page.locator("#events-empty").isVisible()).toBe(true);
  });

  it("never shows a secret, password or token that was sent; no script error or failed request", async () => {
    await page.locator("#events-since").fill("");
    await page.locator("#events-until").fill("");
    await page.locator("#events-client").fill("");
    await page.locator("#events-type").selectOption("");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await page.locator("#events-body tr").first().waitFor();
    const html = await page.content();
    for (const s of sent) expect(html.includes(s), `the page shows ${s.slice(0, 6)}…`).toBe(false);
    expect(problems).toEqual([]);
  });
});
