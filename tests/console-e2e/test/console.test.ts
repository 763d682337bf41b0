/**
 * The management console end to end: Debian's chromium, driven by playwright-core, against the
 * real example node server (startServer on a free port, memory store) and against the example
 * Worker under `wrangler dev --local` (D1), the console turned on by `PLANTGATE_BOOTSTRAP_ADMIN=1`
 * (see targets.ts). It signs in, creates a
 * client, reads the secret from the page, gets a token with it over real HTTP, regenerates the
 * secret, shows the old one fails (401 invalid_client) and the new one works, pages through the
 * accounts, signs out, and saves a screenshot of each page to tests/console-e2e/screenshots/ (docs/screenshots/ with UPDATE_SCREENSHOTS=1;
 * the Worker run's always go to tests/console-e2e/screenshots/worker/).
 */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startNodeTarget, startWorkerTarget, type Seed, type Target } from "./targets.js";
import { ARGS, CHROMIUM, requireChromium, suite, suiteName } from "./chromium.js";

// Each run writes its screenshots to the project's gitignored folder, so a test run never dirties
// the checkout; `UPDATE_SCREENSHOTS=1` writes the README's copies in docs/screenshots/ instead
// (from the node run only: the Worker run's stay in the gitignored folder).
const OWN_SHOTS = resolve(dirname(fileURLToPath(import.meta.url)), "../screenshots");
const NODE_SHOTS = process.env.UPDATE_SCREENSHOTS === "1" ? resolve(dirname(fileURLToPath(import.meta.url)), "../../../docs/screenshots") : OWN_SHOTS;
const ADMIN = { username: "admin", password: "console-e2e-password" };
const SEED: Seed = {
  admin: ADMIN,
  client: { id: "billing-service", secret: "billing-service-secret-0123456789" },
  accounts: Array.from({ length: 24 }, (_, i) => ({
    username: `user-${String(i + 1).padStart(2, "0")}`,
    password: "user-password-1",
    displayName: `User ${i + 1}`,
    email: `user${i + 1}@example.com`,
  })),
  passwordHashIterations: 2000,
};

const basic = (id: string, secret: string) => "Basic " + Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64");

async function clientCredentials(url: string, id: string, secret: string) {
  const res = await fetch(`${url}/UserService/connect/token`, {
    method: "POST",
    headers: { authorization: basic(id, secret), "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const name = suiteName("management console in Debian chromium");

const TARGETS: { label: string; start: (seed: Seed) => Promise<Target>; shots: string }[] = [
  { label: "example node server", start: startNodeTarget, shots: NODE_SHOTS },
  { label: "example Worker under wrangler dev --local, D1", start: startWorkerTarget, shots: resolve(OWN_SHOTS, "worker") },
];

for (const target of TARGETS) suite(`${name}: ${target.label}`, () => {
  let server: Target;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const SHOTS = target.shots;

  beforeAll(async () => {
    requireChromium();
    mkdirSync(SHOTS, { recursive: true });
    server = await target.start(SEED);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("console", (m) => {
      if (m.type() === "error" && !/status of (401|404)/.test(m.text())) problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("response", (r) => {
      // 401s are expected (the wrong password, the check after sign-out); anything else >= 400 is a bug.
      if (r.status() >= 400 && r.status() !== 401) problems.push(`${r.status()} ${r.url()}`);
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  }, 30_000);

  it("prints the console URL and serves the page with its CSP", async () => {
    expect(server.consoleUrl).toBe(`${server.url}/console`);
    const res = await page.goto(server.consoleUrl!);
    expect(res!.status()).toBe(200);
    expect(res!.headers()["content-security-policy"]).toContain("script-src 'self'");
  });

  it("signs in with the keyboard: labelled fields, Tab order, Enter submits", async () => {
    await expect.poll(() => page.locator("#sign-in-username").evaluate((e) => e === document.activeElement)).toBe(true);
    await page.screenshot({ path: `${SHOTS}/console-sign-in.png` });
    // A wrong password first: one generic message, the password field is cleared and focused.
    await page.locator("#sign-in-form").getByLabel("Username").fill(ADMIN.username);
    await page.keyboard.press("Tab");
    await page.keyboard.type("not-the-password");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator("#sign-in-error").textContent()).toBe("The username or password is incorrect.");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("sign-in-password");
    await page.keyboard.type(ADMIN.password);
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("sign-in-submit");
    await page.keyboard.press("Enter");
    await page.locator("#view-security").waitFor({ state: "visible" });
    expect(new URL(page.url()).hash).toBe("#/settings/security");
    expect(await page.locator("#whoami-name").textContent()).toBe("Signed in as admin");
    const cookies = await context.cookies();
    expect(cookies.map((c) => ({ name: c.name, path: c.path, httpOnly: c.httpOnly, sameSite: c.sameSite, secure: c.secure }))).toEqual([
      { name: "plantgate_console", path: "/console", httpOnly: true, sameSite: "Strict", secure: false },
    ]);
    // HttpOnly: the page's script cannot read the session id.
    expect(await page.evaluate(() => document.cookie)).toBe("");
  });

  let secret = "";
  it("Settings > Security settings: creates a client and shows its secret once, with a working copy button", async () => {
    await page.locator("#clients-body tr").first().waitFor();
    expect(await page.locator("#clients-body code.client-id").allTextContents()).toEqual(["billing-service"]);
    const form = page.locator("#client-form");
    await form.getByLabel("Name", { exact: true }).fill("Inventory sync");
    await form.getByLabel(/^Client ID/).fill("inventory-sync");
    await form.getByLabel("password", { exact: true }).uncheck();
    await form.getByLabel("refresh_token", { exact: true }).uncheck();
    await form.getByLabel("Platform_UserAPIs", { exact: true }).uncheck();
    await form.getByLabel("offline_access", { exact: true }).uncheck();
    await page.getByRole("button", { name: "Create application" }).click();
    const dialog = page.locator("#secret-dialog");
    await dialog.waitFor({ state: "visible" });
    expect(await page.locator("#secret-client-id").inputValue()).toBe("inventory-sync");
    secret = await page.locator("#secret-value").inputValue();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await page.getByRole("button", { name: "Copy" }).click();
    await expect.poll(() => page.locator("#secret-copied").textContent()).toBe("Copied to the clipboard.");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await page.screenshot({ path: `${SHOTS}/console-secret-dialog.png` });

    // The secret works at the real token endpoint, with exactly the grants and scopes chosen.
    const token = await clientCredentials(server.url, "inventory-sync", secret);
    expect(token.status).toBe(200);
    expect(token.body).toMatchObject({ token_type: "Bearer", scope: "Platform_AllAppsServerCommands" });

    await page.getByRole("button", { name: "I have stored it" }).click();
    await dialog.waitFor({ state: "hidden" });
    expect(await page.locator("#secret-value").inputValue()).toBe("");
    expect(await page.content()).not.toContain(secret);
    expect(await page.locator("#clients-body code.client-id").allTextContents()).toEqual(["billing-service", "inventory-sync"]);
    await page.locator("#keys-body tr").first().waitFor();
    await page.screenshot({ path: `${SHOTS}/console-security-settings.png`, fullPage: true });
  });

  it("rotates the signing key: the new key is listed as next until its activation; rotate now needs its own confirmation and signs at once", async () => {
    const statuses = async () => page.locator('#keys-body td[data-label="Status"]').allTextContents();
    expect(await statuses()).toEqual(["Active (signing)"]);
    await page.getByRole("button", { name: "Rotate signing key", exact: true }).click();
    await page.locator("#confirm-dialog").waitFor({ state: "visible" });
    expect(await page.locator("#confirm-title").textContent()).toBe("Rotate the signing key?");
    await page.getByRole("button", { name: "Rotate key", exact: true }).click();
    await page.locator("#keys-body tr:nth-child(2)").waitFor();
    expect((await statuses()).sort()).toEqual(["Active (signing)", "Next (published, not signing yet)"]);
    const scheduled = /^New signing key (\S+) is published and signs from .+\.$/.exec((await page.locator("#security-status").textContent())!);
    expect(scheduled).not.toBeNull();

    await page.getByRole("button", { name: "Rotate now (suspected leak)" }).click();
    await page.locator("#confirm-dialog").waitFor({ state: "visible" });
    expect(await page.locator("#confirm-text").textContent()).toContain("Do it only when the current key may have leaked.");
    await page.getByRole("button", { name: "Rotate now", exact: true }).click();
    // The next key stored before it is deleted (it would have taken over from the new key), and named.
    await expect
      .poll(() => page.locator("#security-status").textContent())
      .toMatch(new RegExp(`^New signing key \\S+ signs from now on\\. The next key ${scheduled![1]}, stored before it, was deleted, never having signed\\.$`));
    await expect.poll(statuses).toEqual(["Active (signing)", "Retired (verifying only)"]);
  });

  it("revokes a signing key that does not sign: none offered for the active key, a next key leaves the JWKS after a confirmation, a just-replaced key is refused with the reason", async () => {
    const rows = page.locator("#keys-body tr");
    // The list reloads after the status line is set; on the Worker under CI load that can take past expect.poll's default second.
    const slow = { timeout: 10_000 };
    const rowOf = async (status: string) => {
      for (const row of await rows.all()) if ((await row.locator('td[data-label="Status"]').textContent()) === status) return row;
      throw new Error(`no key row with status ${status}`);
    };
    const kidOf = async (row: Locator) => (await row.locator('td[data-label="Key ID"] code').textContent())!;
    expect(await (await rowOf("Active (signing)")).getByRole("button").count()).toBe(0);
    const before = await rows.count();

    await page.getByRole("button", { name: "Rotate signing key", exact: true }).click();
    await page.getByRole("button", { name: "Rotate key", exact: true }).click();
    await expect.poll(() => page.locator("#security-status").textContent(), slow).toMatch(/^New signing key \S+ is published and signs from .+\.$/);
    await expect.poll(() => rows.count(), slow).toBe(before + 1);
    const next = await kidOf(await rowOf("Next (published, not signing yet)"));
    const published = async () => ((await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    expect(await published()).toContain(next);
    const count = await rows.count();

    await page.getByRole("button", { name: `Revoke signing key ${next}` }).click();
    await page.locator("#confirm-dialog").waitFor({ state: "visible" });
    expect(await page.locator("#confirm-title").textContent()).toBe(`Revoke signing key ${next}?`);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("confirm-cancel");
    await page.getByRole("button", { name: "Revoke key", exact: true }).click();
    await expect.poll(() => page.locator("#security-status").textContent(), slow).toBe(`Signing key ${next} was revoked.`);
    await expect.poll(() => rows.count(), slow).toBe(count - 1);
    expect(await page.locator("#keys-body code").allTextContents()).not.toContain(next);
    expect(await published()).not.toContain(next);

    // A key replaced by a rotate-now may still sign on other instances for a minute: refused, saying so.
    // (Rotated here, so the minute has not passed however slowly the earlier tests ran.)
    const replaced = await kidOf(await rowOf("Active (signing)"));
    await page.getByRole("button", { name: "Rotate now (suspected leak)" }).click();
    await page.getByRole("button", { name: "Rotate now", exact: true }).click();
    await expect.poll(() => page.locator("#security-status").textContent(), slow).toMatch(/^New signing key \S+ signs from now on\.$/);
    await expect.poll(() => rows.count(), slow).toBe(count);
    const retired = replaced;
    expect(await kidOf(await rowOf("Active (signing)"))).not.toBe(retired);
    await page.getByRole("button", { name: `Revoke signing key ${retired}` }).click();
    await page.getByRole("button", { name: "Revoke key", exact: true }).click();
    await expect.poll(() => page.locator("#security-status").textContent(), slow).toMatch(
      new RegExp(`^signing key "${retired}" may still sign on instances that have not re-read the keys since "[^"]+" took over \\(they do within a minute\\): revoke it from \\S+$`),
    );
    expect(await rows.count()).toBe(count);
    expect(await published()).toContain(retired);
    // That refusal (409) is the page's expected answer, not a problem of the page.
    for (let i = problems.length - 1; i >= 0; i--) if (/409/.test(problems[i]!)) problems.splice(i, 1);
  });

  it("regenerates the secret after a confirmation: the old secret fails at once, the new one works", async () => {
    await page.getByRole("button", { name: "Regenerate the secret of Inventory sync" }).click();
    const confirm = page.locator("#confirm-dialog");
    await confirm.waitFor({ state: "visible" });
    expect(await page.locator("#confirm-title").textContent()).toBe("Regenerate the secret of Inventory sync?");
    // Cancel is focused first, so a stray Enter changes nothing.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("confirm-cancel");
    await page.getByRole("button", { name: "Regenerate secret", exact: true }).click();
    await page.locator("#secret-dialog").waitFor({ state: "visible" });
    const fresh = await page.locator("#secret-value").inputValue();
    expect(fresh).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(fresh).not.toBe(secret);
    // Escape keeps the dialog and its secret (the only copy); the button closes it.
    await page.keyboard.press("Escape");
    await page.waitForTimeout(200);
    expect({ open: await page.locator("#secret-dialog").isVisible(), secret: await page.locator("#secret-value").inputValue() }).toEqual({ open: true, secret: fresh });
    await page.getByRole("button", { name: "I have stored it" }).click();
    await page.locator("#secret-dialog").waitFor({ state: "hidden" });

    const old = await clientCredentials(server.url, "inventory-sync", secret);
    expect([old.status, old.body.error]).toEqual([401, "invalid_client"]);
    const now = await clientCredentials(server.url, "inventory-sync", fresh);
    expect(now.status).toBe(200);
  });

  it("deletes a client only after confirming", async () => {
    await page.getByRole("button", { name: "Delete billing-service" }).click();
    await page.getByRole("button", { name: "Cancel" }).click();
    expect(await page.locator("#clients-body code.client-id").allTextContents()).toEqual(["billing-service", "inventory-sync"]);
    await page.getByRole("button", { name: "Delete billing-service" }).click();
    await page.getByRole("button", { name: "Delete application" }).click();
    await expect.poll(() => page.locator("#clients-body code.client-id").allTextContents()).toEqual(["inventory-sync"]);
    const gone = await clientCredentials(server.url, "billing-service", "billing-service-secret-0123456789");
    expect([gone.status, gone.body.error]).toEqual([401, "invalid_client"]);
  });

  it("Accounts pages through accounts the way GetAccountList does", async () => {
    await page.getByRole("link", { name: "Accounts" }).click();
    await page.locator("#view-accounts").waitFor({ state: "visible" });
    await expect.poll(() => page.locator("#accounts-page-info").textContent()).toBe("Page 1 of 2 · 25 accounts");
    expect(await page.locator("#accounts-prev").isDisabled()).toBe(true);
    await page.screenshot({ path: `${SHOTS}/console-accounts.png`, fullPage: true });

    // The same pages, over real HTTP, from GetAccountList with a bearer token.
    const tokenRes = await clientCredentials(server.url, "inventory-sync", await regenerateViaApi());
    const bearer = tokenRes.body.access_token as string;
    const apiPage = async (n: number) => {
      const res = await fetch(`${server.url}/rbac/ServerCommand/GetAccountList?page=${n}&pageSize=20`, { headers: { authorization: `Bearer ${bearer}` } });
      return ((await res.json()) as { accounts: { username: string }[] }).accounts.map((a) => a.username);
    };
    const rows = () => page.locator("#accounts-body tr td:first-child").allTextContents();
    expect(await rows()).toEqual(await apiPage(1));
    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(() => page.locator("#accounts-page-info").textContent()).toBe("Page 2 of 2 · 25 accounts");
    expect(await rows()).toEqual(await apiPage(2));
    expect(await rows()).toHaveLength(5);
    expect(await page.locator("#accounts-next").isDisabled()).toBe(true);
  });

  /** A fresh secret for inventory-sync through the console's own API (the page's session and CSRF token). */
  async function regenerateViaApi(): Promise<string> {
    return page.evaluate(async () => {
      const session = (await (await fetch("/console/api/session")).json()) as { csrfToken: string };
      const res = await fetch("/console/api/clients/inventory-sync/secret", { method: "POST", headers: { "x-csrf-token": session.csrfToken } });
      return ((await res.json()) as { clientSecret: string }).clientSecret;
    });
  }

  it("is readable at 375px: no horizontal scrolling, tables become cards", async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    await page.getByRole("link", { name: "Settings › Security settings" }).click();
    await page.locator("#clients-body tr").first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    expect(await page.locator("#clients-table thead").evaluate((e) => e.getBoundingClientRect().width)).toBeLessThanOrEqual(1);
    // Nothing pokes out of its card (a fieldset's default min-width once did, with a long scope name).
    const overflow = await page.evaluate(() => {
      const form = document.getElementById("client-form")!.getBoundingClientRect();
      return [...document.querySelectorAll("#client-form fieldset, #client-form input, #client-form label")]
        .filter((e) => e.getBoundingClientRect().right > form.right + 0.5)
        .map((e) => e.id || e.textContent);
    });
    expect(overflow).toEqual([]);
    await page.screenshot({ path: `${SHOTS}/console-mobile.png`, fullPage: true });
    await page.getByRole("link", { name: "Accounts" }).click();
    await page.locator("#accounts-body tr").first().waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it("a sign-out that fails (the server unreachable, a 503) says so and stays signed in: the session still works", async () => {
    for (const failure of ["unreachable", "503"] as const) {
      await page.route("**/console/api/session/sign-out", (route) =>
        failure === "unreachable" ? route.abort() : route.fulfill({ status: 503, contentType: "application/json", body: '{"error":1503,"message":"The service is temporarily unavailable; retry later."}' }),
      );
      await page.getByRole("button", { name: "Sign out", exact: true }).click();
      const alert = page.locator("#sign-out-error");
      await alert.waitFor({ state: "visible" });
      expect(await alert.textContent()).toBe(
        `Signing out failed (${failure === "unreachable" ? "The server could not be reached." : "The service is temporarily unavailable; retry later."}); you are still signed in. Try again.`,
      );
      expect(await page.locator("#view-sign-in").isHidden()).toBe(true);
      expect(await page.locator("#whoami").isVisible()).toBe(true);
      expect(await page.evaluate(async () => (await fetch("/console/api/session")).status)).toBe(200);
      await page.unroute("**/console/api/session/sign-out");
    }
    // The failures this test made are not problems of the page.
    for (let i = problems.length - 1; i >= 0; i--) if (/sign-out|ERR_FAILED|status of 503/.test(problems[i]!)) problems.splice(i, 1);
  });

  it("signs out: the session is gone on the server and the cookie in the browser", async () => {
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.locator("#view-sign-in").waitFor({ state: "visible" });
    expect(await page.locator("#sign-out-error").isHidden()).toBe(true);
    expect(await context.cookies()).toEqual([]);
    const status = await page.evaluate(async () => (await fetch("/console/api/session")).status);
    expect(status).toBe(401);
    // Nothing the CSP blocked, no script error along the way.
    expect(problems).toEqual([]);
  });

  it("signs out everywhere after a confirmation: this browser's session and another browser's end, and the page shows the sign-in view", async () => {
    await page.locator("#sign-in-form").getByLabel("Username").fill(ADMIN.username);
    await page.locator("#sign-in-form").getByLabel("Password").fill(ADMIN.password);
    await page.locator("#sign-in-submit").click();
    await page.locator("#view-security").waitFor({ state: "visible" });
    // The same administrator signed in from another browser (the laptop left signed in).
    const laptop = await browser.newContext();
    try {
      const api = `${server.consoleUrl}/api`;
      const origin = new URL(server.url).origin;
      expect((await laptop.request.post(`${api}/session`, { headers: { origin }, data: ADMIN })).status()).toBe(200);
      expect((await laptop.request.get(`${api}/session`)).status()).toBe(200);

      // Cancelled: nothing ends.
      await page.getByRole("button", { name: "Sign out everywhere" }).click();
      const dialog = page.locator("#confirm-dialog");
      await dialog.waitFor({ state: "visible" });
      expect([await dialog.locator("#confirm-title").textContent(), await dialog.locator("#confirm-text").textContent()]).toEqual([
        "Sign out everywhere?",
        "Every console session of admin ends: in this browser and in any other where it is signed in. Other administrators stay signed in.",
      ]);
      await dialog.getByRole("button", { name: "Cancel" }).click();
      await dialog.waitFor({ state: "hidden" });
      expect(await page.evaluate(async () => (await fetch("/console/api/session")).status)).toBe(200);
      expect((await laptop.request.get(`${api}/session`)).status()).toBe(200);

      await page.getByRole("button", { name: "Sign out everywhere" }).click();
      await dialog.getByRole("button", { name: "Sign out everywhere" }).click();
      await page.locator("#view-sign-in").waitFor({ state: "visible" });
      expect(await page.locator("#whoami").isHidden()).toBe(true);
      expect(await page.locator("#sign-out-error").isHidden()).toBe(true);
      expect(await context.cookies()).toEqual([]);
      expect(await page.evaluate(async () => (await fetch("/console/api/session")).status)).toBe(401);
      const other = await laptop.request.get(`${api}/session`);
      expect([other.status(), await other.json()]).toEqual([401, { error: 1301, message: "Sign in to the console first." }]);
    } finally {
      await laptop.close();
    }
    expect(problems).toEqual([]);
  });

  /** Signs the page in as the administrator from the sign-in view. */
  async function signIn(): Promise<void> {
    await page.locator("#sign-in-form").getByLabel("Username").fill(ADMIN.username);
    await page.locator("#sign-in-form").getByLabel("Password").fill(ADMIN.password);
    await page.locator("#sign-in-submit").click();
    await page.locator("#view-security").waitFor({ state: "visible" });
  }

  /** Another browser (the laptop left signed in), signed in as the same administrator. */
  async function laptopSignedIn(): Promise<BrowserContext> {
    const laptop = await browser.newContext();
    const res = await laptop.request.post(`${server.consoleUrl}/api/session`, { headers: { origin: new URL(server.url).origin }, data: ADMIN });
    expect(res.status()).toBe(200);
    return laptop;
  }

  /** Presses "Sign out everywhere" and confirms it. */
  async function signOutEverywhere(): Promise<void> {
    await page.getByRole("button", { name: "Sign out everywhere" }).click();
    const dialog = page.locator("#confirm-dialog");
    await dialog.waitFor({ state: "visible" });
    await dialog.getByRole("button", { name: "Sign out everywhere" }).click();
  }

  it("a sign-out everywhere that fails (the server unreachable, a 503) says so and stays signed in: this session and another browser's still work", async () => {
    await signIn();
    const laptop = await laptopSignedIn();
    const route = "**/console/api/session/sign-out-everywhere";
    try {
      for (const failure of ["unreachable", "503"] as const) {
        await page.route(route, (r) =>
          failure === "unreachable" ? r.abort() : r.fulfill({ status: 503, contentType: "application/json", body: '{"error":1503,"message":"The service is temporarily unavailable; retry later."}' }),
        );
        await signOutEverywhere();
        const alert = page.locator("#sign-out-error");
        await alert.waitFor({ state: "visible" });
        expect(await alert.textContent()).toBe(
          `Signing out everywhere failed (${failure === "unreachable" ? "The server could not be reached." : "The service is temporarily unavailable; retry later."}); you are still signed in. Try again.`,
        );
        expect(await page.locator("#view-sign-in").isHidden()).toBe(true);
        expect(await page.locator("#whoami").isVisible()).toBe(true);
        expect(await page.evaluate(async () => (await fetch("/console/api/session")).status)).toBe(200);
        expect((await laptop.request.get(`${server.consoleUrl}/api/session`)).status()).toBe(200);
        await page.unroute(route);
      }
    } finally {
      await laptop.close();
    }
    // The failures this test made are not problems of the page.
    for (let i = problems.length - 1; i >= 0; i--) if (/sign-out-everywhere|ERR_FAILED|status of 503/.test(problems[i]!)) problems.splice(i, 1);
    expect(problems).toEqual([]);
  });

  it("sign out everywhere once this tab's session has ended: no session can be found to end, so the sign-in view says none was and another browser's still works; signed in again, it ends that one", async () => {
    // Signed in still, from the test before.
    expect(await page.locator("#whoami-name").textContent()).toBe("Signed in as admin");
    const laptop = await laptopSignedIn();
    const api = `${server.consoleUrl}/api`;
    const origin = new URL(server.url).origin;
    try {
      // This tab's session ends on the server without a word to the page (as at its idle timeout):
      // signed out through its cookie from elsewhere, the browser's copy of the cookie left as it is.
      const elsewhere = await browser.newContext();
      try {
        await elsewhere.addCookies(await context.cookies());
        const { csrfToken } = (await (await elsewhere.request.get(`${api}/session`)).json()) as { csrfToken: string };
        expect((await elsewhere.request.post(`${api}/session/sign-out`, { headers: { origin, "x-csrf-token": csrfToken } })).status()).toBe(204);
      } finally {
        await elsewhere.close();
      }
      expect(await page.locator("#whoami").isVisible()).toBe(true);

      const answer = page.waitForResponse((r) => r.url().endsWith("/console/api/session/sign-out-everywhere"));
      await signOutEverywhere();
      const res = await answer;
      expect([res.status(), await res.json()]).toEqual([401, { error: 1301, message: "Sign in to the console first." }]);
      await page.locator("#view-sign-in").waitFor({ state: "visible" });
      // Not a bare sign-in view, as if every session had ended: the laptop's has not.
      const said = page.locator("#sign-in-error");
      await expect.poll(() => said.textContent()).toBe("Your session here had already ended, so no other session was signed out: sign in and use Sign out everywhere again.");
      expect(await said.isVisible()).toBe(true);
      expect(await page.locator("#whoami").isHidden()).toBe(true);
      expect(await page.locator("#sign-out-error").isHidden()).toBe(true);
      const still = await laptop.request.get(`${api}/session`);
      expect([still.status(), ((await still.json()) as { username: string }).username]).toEqual([200, "admin"]);

      // As it says: signed in again, sign out everywhere ends the laptop's session too.
      await signIn();
      expect(await said.isHidden()).toBe(true);
      await signOutEverywhere();
      await page.locator("#view-sign-in").waitFor({ state: "visible" });
      expect(await said.isHidden()).toBe(true);
      expect(await context.cookies()).toEqual([]);
      const other = await laptop.request.get(`${api}/session`);
      expect([other.status(), await other.json()]).toEqual([401, { error: 1301, message: "Sign in to the console first." }]);
    } finally {
      await laptop.close();
    }
    expect(problems).toEqual([]);
  });
});
