/**
 * What an operator meets on a bad day, in Debian chromium against the real example node server
 * (memory store with an audit store): hostile names rendered as text and laid out within the page,
 * a session that ends while the page is open, a server answering 503, clicks repeated while a
 * destructive action is under way, the secret dialog, and the Security events page at its edges.
 * Every test also fails on a script error, an unhandled promise rejection or a CSP violation.
 */
import { createMemoryStorage, createPlantgate, type Storage } from "@plantgate/core";
import type { RunningServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { chromium, type Browser, type BrowserContext, type Locator, type Page, type Route } from "playwright-core";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { ARGS, CHROMIUM, PAGE_PROBES, requireChromium, suite, suiteName } from "./chromium.js";
import { startConsoleServer } from "./targets.js";

const ADMIN = { username: "admin", password: "console-e2e-password" };
const CLIENT = { id: "billing-service", secret: "billing-service-secret-0123456789" };

// Hostile data, each accepted by the admin API, but for the names with U+202E (RIGHT-TO-LEFT
// OVERRIDE), which it refuses since 2026-11-29 and a store may still hold from before (written here
// under a stand-in name, see `legacyNames`): without its U+202C it reverses whatever follows it on
// the same line unless the page isolates the value.
const RLO = "\u202E";
const HTML_NAME = '<img src=x onerror="window.pwned=1">Payroll';
const HTML_ID = "<script>window.pwned=2</script>";
const JS_ID = "javascript:window.pwned=3";
const BIDI_CLIENT = `Ledger${RLO}evil`;
const LONG_NAME = "W".repeat(200);
const LONG_ID = "x".repeat(200);
const BIDI_USER = `mal${RLO}lory`;
const HTML_USER = "<b>bold</b>";
const LONG_USER = "L".repeat(200);
/** What the admin API takes in place of the bidi names; `legacyNames` stores the bidi ones instead. */
const STAND_IN_CLIENT = "Ledger-stand-in";
const STAND_IN_USER = "mal-stand-in-lory";
const USERS = [
  { username: HTML_USER, password: "user-password-1", displayName: '<svg onload="window.pwned=4">', email: "javascript:window.pwned=5" },
  { username: STAND_IN_USER, password: "user-password-1", displayName: `Mal${RLO}lory`, email: "m@example.com" },
  { username: LONG_USER, password: "user-password-1", displayName: "D".repeat(320), email: `${"e".repeat(300)}@example.com` },
  ...Array.from({ length: 42 }, (_, i) => ({ username: `user-${String(i + 1).padStart(2, "0")}`, password: "user-password-1", displayName: `User ${i + 1}`, email: `user${i + 1}@example.com` })),
];

const basic = (id: string, secret: string) => "Basic " + Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64");

async function clientCredentials(url: string, id: string, secret: string) {
  const res = await fetch(`${url}/UserService/connect/token`, {
    method: "POST",
    headers: { authorization: basic(id, secret), "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
  });
  await res.arrayBuffer();
  return res.status;
}

/**
 * The storage as a store written before 2026-11-29 holds it: the admin API's checks pass on the
 * stand-in names, and the records are stored under the bidi names (storage itself takes any text).
 */
function legacyNames(storage: Storage): Storage {
  const accounts = storage.accounts;
  const clients = storage.clients;
  const audit = storage.audit!;
  const account = <T extends { username: string }>(r: T): T => (r.username === STAND_IN_USER ? { ...r, username: BIDI_USER } : r);
  return {
    ...storage,
    accounts: { ...accounts, get: accounts.get.bind(accounts), findByUsername: accounts.findByUsername.bind(accounts), create: (r) => accounts.create(account(r)), createMany: (rs) => accounts.createMany(rs.map(account)) },
    clients: { ...clients, get: clients.get.bind(clients), create: (r) => clients.create(r.name === STAND_IN_CLIENT ? { ...r, name: BIDI_CLIENT } : r) },
    // And the events of their creation, as they were kept then.
    audit: {
      ...audit,
      append: (r) =>
        audit.append({
          ...r,
          username: r.username === STAND_IN_USER ? BIDI_USER : r.username,
          data: r.data.split(JSON.stringify(STAND_IN_USER)).join(JSON.stringify(BIDI_USER)).split(JSON.stringify(STAND_IN_CLIENT)).join(JSON.stringify(BIDI_CLIENT)),
        }),
    },
  };
}

const UNAVAILABLE = { status: 503, contentType: "application/json", body: '{"error":1503,"message":"The service is temporarily unavailable; retry later."}' };

const name = suiteName("console durability in Debian chromium");

suite(name, () => {
  let storage: Storage;
  let server: RunningServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  /** HTTP answers >= 400 a test provoked on purpose (its own routes, or an ended session). */
  let expected: RegExp | null = null;
  const lines = serverLines();

  beforeAll(async () => {
    requireChromium();
    storage = createMemoryStorage({ audit: true });
    server = await startConsoleServer({ admin: ADMIN, client: CLIENT, storage, lines });
    await server.app.admin.createClient({ clientId: HTML_ID, name: HTML_NAME });
    await server.app.admin.createClient({ clientId: JS_ID, name: JS_ID });
    const legacy = createPlantgate({ storage: legacyNames(storage), logger: { error() {}, warn() {} } });
    await legacy.admin.createClient({ clientId: "ledger", name: STAND_IN_CLIENT });
    await server.app.admin.createClient({ clientId: LONG_ID, name: LONG_NAME });
    await legacy.admin.importAccounts(USERS);
    await server.app.flushEvents();

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    await context.addInitScript(PAGE_PROBES);
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("response", (r) => {
      if (r.status() >= 400 && !(expected && expected.test(`${r.status()} ${r.request().method()} ${r.url()}`))) problems.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });
    expected = /^401 GET .*\/console\/api\/session$/;
    await page.goto(server.consoleUrl!);
    await signIn();
    expected = null;
  }, 120_000);

  afterEach(async () => {
    expected = null;
    for (const release of holding) release();
    holding.clear();
    await page.unrouteAll({ behavior: "wait" });
    const inPage = page.isClosed() ? [] : await page.evaluate(() => (window as unknown as { pageProblems: string[] }).pageProblems.splice(0));
    const found = [...problems.splice(0), ...inPage];
    expect(found).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (server) lines.check([ADMIN.password, CLIENT.secret, "user-password-1"]);
  });

  async function signIn(): Promise<void> {
    await page.locator("#view-sign-in").waitFor({ state: "visible" });
    await page.locator("#sign-in-username").fill(ADMIN.username);
    await page.locator("#sign-in-password").fill(ADMIN.password);
    await page.locator("#sign-in-password").press("Enter");
    await page.locator("#view-sign-in").waitFor({ state: "hidden" });
  }

  async function goTo(link: "Settings › Security settings" | "Accounts" | "Security events"): Promise<void> {
    await page.getByRole("link", { name: link }).click();
    const view = { "Settings › Security settings": "#view-security", Accounts: "#view-accounts", "Security events": "#view-events" }[link];
    await page.locator(view).waitFor({ state: "visible" });
  }

  /** How far the document and each visible table scroll sideways, and any dialog's content past its box. */
  const overflow = () =>
    page.evaluate(() => ({
      document: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      tables: Math.max(0, ...[...document.querySelectorAll<HTMLElement>(".table-wrap")].filter((t) => t.offsetParent !== null).map((t) => t.scrollWidth - t.clientWidth)),
      dialogs: [...document.querySelectorAll("dialog")].filter((d) => d.open).map((d) => d.scrollWidth - d.clientWidth),
    }));

  /**
   * Whether the character after `value` in `element` is laid out to its right: false when a
   * direction override inside the value leaks out and reverses what follows.
   */
  async function followsInOrder(element: Locator, value: string): Promise<boolean> {
    return element.evaluate((e, v) => {
      const text = e.firstChild;
      if (!(text instanceof Text)) throw new Error("not one text node");
      const at = text.data.indexOf(v);
      if (at < 0) throw new Error(`"${v}" is not in "${text.data}"`);
      const range = (from: number, to: number) => {
        const r = document.createRange();
        r.setStart(text, from);
        r.setEnd(text, to);
        return r.getBoundingClientRect();
      };
      const after = text.data.slice(at + v.length).search(/[^\u2069\s]/);
      if (after < 0) throw new Error("nothing follows");
      const start = at + v.length + after;
      return range(start, start + 1).left >= range(at, at + v.length).right - 0.5;
    }, value);
  }

  it("hostile names are text: no markup, no link, no script; laid out within the page at 1280 and 375 px", async () => {
    await page.locator("#clients-body tr").nth(4).waitFor();
    const names = await page.locator('#clients-body td[data-label="Name"]').allTextContents();
    expect(names).toEqual([HTML_NAME, CLIENT.id, JS_ID, BIDI_CLIENT, LONG_NAME]);
    expect(await page.locator("#clients-body code.client-id").allTextContents()).toEqual([HTML_ID, CLIENT.id, JS_ID, "ledger", LONG_ID]);
    await goTo("Accounts");
    await page.locator("#accounts-page-size").selectOption("50");
    await expect.poll(() => page.locator("#accounts-body tr").count()).toBe(46);
    const row = (username: string) => page.locator("#accounts-body tr").filter({ has: page.locator('td[data-label="Username"]', { hasText: username }) });
    expect(await row(HTML_USER).locator("td").allTextContents()).toEqual([HTML_USER, '<svg onload="window.pwned=4">', "javascript:window.pwned=5", "", "Enabled", expect.stringMatching(/ UTC$/), "Disable"]);
    await goTo("Security events");
    await page.locator("#events-type").selectOption("client.created");
    await page.getByRole("button", { name: "Apply filters" }).click();
    // (Created within a millisecond or two: the order among equal times is by event id.)
    await expect.poll(async () => (await page.locator('#events-body td[data-label="Client"]').allTextContents()).sort()).toEqual([HTML_ID, CLIENT.id, JS_ID, "ledger", LONG_ID]);
    const payroll = page.locator("#events-body tr").filter({ has: page.locator('td[data-label="Client"]', { hasText: HTML_ID }) });
    expect(await payroll.locator('td[data-label="Details"]').textContent()).toMatch(/^name: \u2068?<img src=x onerror="window.pwned=1">Payroll\u2069?; /);
    // Nothing of the data became an element: every cell holds text, a <code> or the page's own buttons and lists.
    const elements = await page.evaluate(() => [...new Set([...document.querySelectorAll("main tbody *")].map((e) => e.tagName.toLowerCase()))].sort());
    for (const tag of elements) expect(["button", "code", "li", "span", "td", "tr", "ul"]).toContain(tag);
    expect(await page.locator("main a, main img, main svg, main script, main b").count()).toBe(0);

    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 860 });
      for (const view of ["Settings › Security settings", "Accounts", "Security events"] as const) {
        await goTo(view);
        await page.locator(`${{ "Settings › Security settings": "#clients-body", Accounts: "#accounts-body", "Security events": "#events-body" }[view]} tr`).first().waitFor();
        expect(await overflow(), `${view} at ${width} px`).toEqual({ document: 0, tables: 0, dialogs: [] });
      }
      await goTo("Settings › Security settings");
      await page.getByRole("button", { name: `Delete ${LONG_NAME}` }).click();
      await page.locator("#confirm-dialog").waitFor({ state: "visible" });
      expect(await overflow(), `the confirmation at ${width} px`).toEqual({ document: 0, tables: 0, dialogs: [0] });
      expect(await page.locator("#confirm-ok").isVisible()).toBe(true);
      await page.getByRole("button", { name: "Cancel" }).click();
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it("a direction override in a name does not reorder the sentences around it: confirmations, status lines, event details", async () => {
    await goTo("Settings › Security settings");
    await page.getByRole("button", { name: `Delete ${BIDI_CLIENT}` }).click();
    await page.locator("#confirm-dialog").waitFor({ state: "visible" });
    expect(await followsInOrder(page.locator("#confirm-title"), BIDI_CLIENT)).toBe(true);
    await page.getByRole("button", { name: "Cancel" }).click();

    await page.getByRole("button", { name: `Add a secret to ${BIDI_CLIENT}` }).click();
    expect(await followsInOrder(page.locator("#confirm-title"), BIDI_CLIENT)).toBe(true);
    await page.getByRole("button", { name: "Add secret", exact: true }).click();
    await page.locator("#secret-dialog").waitFor({ state: "visible" });
    await page.getByRole("button", { name: "I have stored it" }).click();
    await expect.poll(() => page.locator("#security-status").textContent()).toContain(" was added to ");
    expect(await followsInOrder(page.locator("#security-status"), BIDI_CLIENT)).toBe(true);

    await goTo("Accounts");
    await page.locator("#accounts-page-size").selectOption("50");
    await page.getByRole("button", { name: `Disable ${BIDI_USER}` }).click();
    await page.locator("#confirm-dialog").waitFor({ state: "visible" });
    expect(await followsInOrder(page.locator("#confirm-title"), BIDI_USER)).toBe(true);
    await page.getByRole("button", { name: "Disable account" }).click();
    await expect.poll(() => page.locator("#accounts-status").textContent()).toContain(" was disabled.");
    expect(await followsInOrder(page.locator("#accounts-status"), BIDI_USER)).toBe(true);
    await page.getByRole("button", { name: `Enable ${BIDI_USER}` }).click();
    await expect.poll(() => page.locator("#accounts-status").textContent()).toContain(" was enabled.");

    await goTo("Security events");
    await page.locator("#events-type").selectOption("client.created");
    await page.locator("#events-client").fill("ledger");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => page.locator("#events-body tr").count()).toBe(1);
    expect(await followsInOrder(page.locator('#events-body td[data-label="Details"]'), BIDI_CLIENT)).toBe(true);
    await page.locator("#events-client").fill("");
    await page.locator("#events-type").selectOption("");
  });

  /** Ends every console session in the store, as their expiry (and `prune`) does. */
  const endSessions = () => storage.sessions.deleteExpired(Date.now() + 10 * 365 * 24 * 3600 * 1000);

  it("a session that ends while the page is open: the next action shows the sign-in prompt with the reason, changes nothing, and signing in again leaves no stale message", async () => {
    expected = /^401 /;
    await goTo("Accounts");
    await page.locator("#accounts-page-size").selectOption("20");
    await expect.poll(() => page.locator("#accounts-page-info").textContent()).toBe("Page 1 of 3 · 46 accounts");
    await endSessions();
    await page.getByRole("button", { name: "Next page" }).click();
    await page.locator("#view-sign-in").waitFor({ state: "visible" });
    expect(await page.locator("#sign-in-error").textContent()).toBe("Your session has ended; sign in again.");
    expect([await page.locator("#nav").isHidden(), await page.locator("#whoami").isHidden(), await page.locator("#view-accounts").isHidden()]).toEqual([true, true, true]);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("sign-in-username");
    // A sign-in refused for now (429) says why.
    await page.route("**/console/api/session", (route) =>
      route.request().method() === "POST" ? route.fulfill({ status: 429, headers: { "retry-after": "1" }, contentType: "application/json", body: '{"error":1429,"message":"Too many failed sign-ins; try again later."}' }) : route.fallback(),
    );
    expected = /^(401|429) /;
    await page.locator("#sign-in-username").fill(ADMIN.username);
    await page.locator("#sign-in-password").fill(ADMIN.password);
    await page.locator("#sign-in-password").press("Enter");
    // (With the wait its Retry-After gives: see robustness.test.ts; the button stays disabled for
    // it, counting down: sign-in.test.ts.)
    await expect.poll(() => page.locator("#sign-in-wait").textContent()).toBe("Too many failed sign-ins; try again in 1 s.");
    expect(await page.locator("#sign-in-error").isHidden()).toBe(true);
    await page.unrouteAll({ behavior: "wait" });
    await expect.poll(() => page.locator("#sign-in-submit").isDisabled(), { timeout: 5_000 }).toBe(false);
    expect(await page.locator("#sign-in-wait").textContent()).toBe("Too many failed sign-ins; you can try again now.");
    await signIn();
    await page.locator("#view-accounts").waitFor({ state: "visible" });
    await page.locator("#accounts-body tr").first().waitFor();
    expect(await page.locator("#accounts-status").textContent()).toBe("");

    // A destructive action confirmed after the session ended does nothing but ask for a sign-in.
    await goTo("Settings › Security settings");
    await page.locator("#keys-body tr").first().waitFor();
    // Every load of the view answered before the sessions end: one still in flight (the view loads
    // more than its key list) would get the 401 and show the sign-in before the button is clicked
    // (seen once in a loaded CI run, 2026-12-01, failing this file's later tests with it).
    await page.waitForLoadState("networkidle");
    const keys = (await server.app.admin.listSigningKeys()).length;
    await endSessions();
    await page.getByRole("button", { name: "Rotate signing key", exact: true }).click();
    await page.getByRole("button", { name: "Rotate key", exact: true }).click();
    await page.locator("#view-sign-in").waitFor({ state: "visible" });
    expect(await page.locator("#sign-in-error").textContent()).toBe("Your session has ended; sign in again.");
    expect((await server.app.admin.listSigningKeys()).length).toBe(keys);
    await signIn();
    await page.locator("#view-security").waitFor({ state: "visible" });
    expect(await page.locator("#security-status").textContent()).toBe("");

    // A create submitted after the session ended: signing in again shows neither form holding the
    // refusal (until 2026-12-01 the submit's catch wrote "Sign in to the console first." into the
    // form after the sign-in view had emptied it, and there it stayed).
    /** Fills `fields`, ends the session, presses `create`, signs in again: `form`'s error box and its first field. */
    const createAfterSessionEnd = async (fields: Record<string, string>, create: string, view: string, form: string) => {
      await page.waitForLoadState("networkidle");
      for (const [id, value] of Object.entries(fields)) await page.locator(`#${id}`).fill(value);
      await endSessions();
      await page.locator(`#${create}`).click();
      await page.locator("#view-sign-in").waitFor({ state: "visible" });
      await signIn();
      await page.locator(`#${view}`).waitFor({ state: "visible" });
      const error = page.locator(`#${form}-error`);
      return { hidden: await error.isHidden(), text: await error.textContent(), field: await page.locator(`#${Object.keys(fields)[0]}`).inputValue() };
    };
    expect(await createAfterSessionEnd({ "client-name": "Half a client" }, "client-create", "view-security", "client")).toEqual({ hidden: true, text: "", field: "" });
    await goTo("Accounts");
    await page.locator("#accounts-body tr").first().waitFor();
    expect(
      await createAfterSessionEnd({ "account-username": "half-typed", "account-password": "half-a-password-1" }, "account-create", "view-accounts", "account"),
    ).toEqual({ hidden: true, text: "", field: "" });
    await goTo("Settings › Security settings");
    await page.locator("#keys-body tr").first().waitFor();
    // A create refused 1303 (the same administrator signed in anew at this browser, from elsewhere):
    // no sign-in view, so the form says that nothing was done (the first mend of the stale refusal,
    // comparing session objects, dropped this message too).
    await page.waitForLoadState("networkidle");
    await page.locator("#client-name").fill("Renewed meanwhile");
    expected = /^(401|403) /;
    expect((await context.request.post(`${server.consoleUrl}/api/session`, { headers: { origin: new URL(server.url).origin }, data: ADMIN })).status()).toBe(200);
    await page.locator("#client-create").click();
    await expect.poll(() => page.locator("#client-error").textContent()).toBe("Nothing was done: your session was renewed in another tab. Try again.");
    expect(await page.locator("#client-error").isHidden()).toBe(false);
    expect((await server.app.admin.listClients()).map((c) => c.name)).not.toContain("Renewed meanwhile");
    expected = /^401 /;

    // An account that lost the administrator role gets 403 1302, and the server deletes its session
    // (core's console tests); the page ends the session too, with that reason.
    expected = /^403 GET .*\/console\/api\/accounts\?/;
    await page.route("**/console/api/accounts?*", (route) =>
      route.fulfill({ status: 403, contentType: "application/json", body: '{"error":1302,"message":"This account is not a console administrator."}' }),
    );
    await page.getByRole("link", { name: "Accounts" }).click();
    await page.locator("#view-sign-in").waitFor({ state: "visible" });
    expect(await page.locator("#sign-in-error").textContent()).toBe("Your account is no longer a console administrator; your session has ended.");
    await page.unrouteAll({ behavior: "wait" });
    await signIn();
    await page.locator("#accounts-body tr").first().waitFor();
    expect(await page.locator("#accounts-status").textContent()).toBe("");
  });

  it("a 503, a 429 or an unreachable server is shown, never swallowed: at load, and on an action", async () => {
    expected = /^(429|503) /;
    for (const [answer, message] of [
      [UNAVAILABLE, "The service is temporarily unavailable; retry later."],
      [{ status: 429, headers: { "retry-after": "1" }, contentType: "application/json", body: '{"error":1429,"message":"Too many requests; retry in a second."}' }, "Too many requests; try again in 1 s."],
      ["abort", "The server could not be reached."],
    ] as const) {
      await page.route("**/console/api/session", (route: Route) => (answer === "abort" ? route.abort() : route.fulfill(answer)), { times: 1 });
      await page.reload();
      await page.locator("#view-sign-in").waitFor({ state: "visible" });
      expect(await page.locator("#sign-in-error").textContent()).toBe(`The console could not check your session (${message}); reload the page to try again.`);
      await page.unrouteAll({ behavior: "wait" });
    }
    // The session was fine all along: a reload once the server answers shows the console.
    await page.reload();
    await page.locator("#nav").waitFor({ state: "visible" });
    await goTo("Settings › Security settings");
    await page.locator("#clients-body tr").first().waitFor();
    await page.route("**/console/api/clients/ledger", (route) => route.fulfill(UNAVAILABLE));
    await page.getByRole("button", { name: `Delete ${BIDI_CLIENT}` }).click();
    await page.getByRole("button", { name: "Delete application" }).click();
    await expect.poll(() => page.locator("#security-status").textContent()).toBe("The service is temporarily unavailable; retry later.");
    expect(await page.locator("#clients-body code.client-id").allTextContents()).toContain("ledger");
  });

  it("a page that fails to load leaves the pager where it was: the next click shows the following page, not one further, and with the filters of the pages shown", async () => {
    expected = /^503 GET /;
    const usernames = [ADMIN.username, ...USERS.map((u) => (u.username === STAND_IN_USER ? BIDI_USER : u.username))];
    const accountRows = () => page.locator('#accounts-body td[data-label="Username"]').allTextContents();
    await goTo("Accounts");
    await page.locator("#accounts-page-size").selectOption("20");
    await expect.poll(() => page.locator("#accounts-page-info").textContent()).toBe("Page 1 of 3 · 46 accounts");
    await page.route("**/console/api/accounts?*", (route) => route.fulfill(UNAVAILABLE), { times: 1 });
    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(() => page.locator("#accounts-status").textContent()).toBe("The service is temporarily unavailable; retry later.");
    expect(await page.locator("#accounts-page-info").textContent()).toBe("Page 1 of 3 · 46 accounts");
    expect(await accountRows()).toEqual(usernames.slice(0, 20));
    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(() => page.locator("#accounts-page-info").textContent()).toBe("Page 2 of 3 · 46 accounts");
    expect(await accountRows()).toEqual(usernames.slice(20, 40));
    expect(await page.locator("#accounts-status").textContent()).toBe("");
    // A page size that could not be shown is not selected either.
    await page.route("**/console/api/accounts?*", (route) => route.fulfill(UNAVAILABLE), { times: 1 });
    await page.locator("#accounts-page-size").selectOption("50");
    await expect.poll(() => page.locator("#accounts-status").textContent()).toBe("The service is temporarily unavailable; retry later.");
    expect(await page.locator("#accounts-page-size").inputValue()).toBe("20");
    await page.getByRole("button", { name: "Previous page" }).click();
    await expect.poll(() => page.locator("#accounts-page-info").textContent()).toBe("Page 1 of 3 · 46 accounts");
    expect(await accountRows()).toEqual(usernames.slice(0, 20));

    await server.app.flushEvents();
    const created = (await server.app.admin.listEvents({ type: "account.created", limit: 1000 })).events;
    expect(created).toHaveLength(46);
    const eventAccounts = () => page.locator('#events-body td[data-label="Account"]').allTextContents();
    await goTo("Security events");
    await page.locator("#events-type").selectOption("account.created");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(eventAccounts).toEqual(created.slice(0, 20).map((e) => (e as { username: string }).username));
    await page.route("**/console/api/events?*", (route) => route.fulfill(UNAVAILABLE), { times: 1 });
    await page.getByRole("button", { name: "Older events" }).click();
    await expect.poll(() => page.locator("#events-status").textContent()).toBe("The service is temporarily unavailable; retry later.");
    expect(await page.locator("#events-page-info").textContent()).toBe("Page 1");
    await page.getByRole("button", { name: "Older events" }).click();
    await expect.poll(() => page.locator("#events-page-info").textContent()).toBe("Page 2");
    expect(await eventAccounts()).toEqual(created.slice(20, 40).map((e) => (e as { username: string }).username));
    // Filters that could not be applied do not page either: "Older events" goes on with the ones shown.
    await page.locator("#events-type").selectOption("token.issued");
    await page.route("**/console/api/events?*", (route) => route.fulfill(UNAVAILABLE), { times: 1 });
    await page.getByRole("button", { name: "Apply filters" }).click();
    await expect.poll(() => page.locator("#events-status").textContent()).toBe("The service is temporarily unavailable; retry later.");
    await page.getByRole("button", { name: "Older events" }).click();
    await expect.poll(() => page.locator("#events-page-info").textContent()).toBe("Page 3");
    expect(await eventAccounts()).toEqual(created.slice(40).map((e) => (e as { username: string }).username));
    expect(await page.locator("#events-older").isDisabled()).toBe(true);
    await page.getByRole("button", { name: "Newer events" }).click();
    await expect.poll(() => page.locator("#events-page-info").textContent()).toBe("Page 2");
    expect(await eventAccounts()).toEqual(created.slice(20, 40).map((e) => (e as { username: string }).username));
    await page.locator("#events-type").selectOption("");
  });

  /** Where the secret could linger once its dialog is closed: inputs, the document, storage, history, URLs fetched. */
  const traces = (secret: string) =>
    page.evaluate((secret) => {
      const found: string[] = [];
      for (const input of document.querySelectorAll("input")) if (input.value.includes(secret)) found.push(`input #${input.id}`);
      if (document.documentElement.outerHTML.includes(secret)) found.push("the document's HTML");
      if (document.body.innerText.includes(secret)) found.push("the page's text");
      for (const [name, store] of [["localStorage", localStorage], ["sessionStorage", sessionStorage]] as const) if (store.length > 0) found.push(name);
      if (history.state !== null) found.push("history.state");
      if (location.href.includes(secret)) found.push("the URL");
      for (const entry of performance.getEntriesByType("resource")) if (entry.name.includes(secret)) found.push(`a fetched URL`);
      return found;
    }, secret);

  /** Releases answers a test held back and has not released (a failed test), so the routes can be removed. */
  const holding = new Set<() => void>();

  /**
   * Holds back the answer of the first request matching `url` (after the server has acted on it)
   * until the test calls `release()`; counts them all. `acted`: the server has answered it;
   * `done`: the page was given that answer.
   */
  async function holdFirst(url: string) {
    let acted!: () => void;
    let done!: () => void;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    holding.add(release);
    const held = {
      count: 0,
      acted: new Promise<void>((resolve) => (acted = resolve)),
      done: new Promise<void>((resolve) => (done = resolve)),
      release: () => {
        holding.delete(release);
        release();
      },
    };
    await page.route(url, async (route) => {
      held.count++;
      if (held.count > 1) return route.fallback();
      const response = await route.fetch();
      acted();
      await released;
      await route.fulfill({ response });
      done();
    });
    return held;
  }

  /**
   * Clicks `button` again while its action is under way, and tells whether the page asked for a
   * confirmation: it must not (the click is ignored). The confirmation opens within the click's
   * own handler, so once a listener on the document (which runs after the button's own) has seen
   * the click, the dialog's state is final.
   */
  async function clickAgain(button: Locator): Promise<{ confirmationAsked: boolean }> {
    expect(await button.getAttribute("aria-disabled")).toBe("true");
    await page.evaluate(() => {
      const w = window as unknown as { clicksSeen: number };
      w.clicksSeen = 0;
      document.addEventListener("click", () => w.clicksSeen++, { once: true });
    });
    // Forced: Playwright waits for an aria-disabled button to be enabled.
    await button.click({ force: true });
    await expect.poll(() => page.evaluate(() => (window as unknown as { clicksSeen: number }).clicksSeen)).toBe(1);
    const confirmationAsked = await page.locator("#confirm-dialog").evaluate((d) => (d as HTMLDialogElement).open);
    // Declined, so a failing page is left usable for the tests after this one.
    if (confirmationAsked) await page.locator("#confirm-cancel").click();
    return { confirmationAsked };
  }

  it("a destructive action clicked again while under way is sent once: one regeneration, and the secret shown is the one that works", async () => {
    await goTo("Settings › Security settings");
    await page.locator("#clients-body tr").first().waitFor();
    const seen = await holdFirst(`**/console/api/clients/${CLIENT.id}/secret`);
    const regenerate = page.getByRole("button", { name: `Regenerate the secret of ${CLIENT.id}` });
    await regenerate.click();
    await page.getByRole("button", { name: "Regenerate secret", exact: true }).click();
    await seen.acted;
    // Soft: on failure the test still goes through to the end, leaving the page as the next tests expect.
    expect.soft(await clickAgain(regenerate)).toEqual({ confirmationAsked: false });
    seen.release();
    await seen.done;
    await page.locator("#secret-dialog").waitFor({ state: "visible" });
    expect(seen.count).toBe(1);
    expect(await page.locator("#secret-client-id").inputValue()).toBe(CLIENT.id);
    const shown = await page.locator("#secret-value").inputValue();
    expect(await clientCredentials(server.url, CLIENT.id, shown)).toBe(200);
    await page.getByRole("button", { name: "I have stored it" }).click();
    await page.locator("#secret-dialog").waitFor({ state: "hidden" });
    expect(await traces(shown)).toEqual([]);
    await expect.poll(() => regenerate.getAttribute("aria-disabled")).toBeNull();
    expect(seen.count).toBe(1);

    // Disabling an account, clicked again while under way: one request.
    await goTo("Accounts");
    await page.locator("#accounts-page-size").selectOption("20");
    const disables = await holdFirst("**/console/api/accounts/*/disable");
    const disable = page.getByRole("button", { name: "Disable user-01" });
    await disable.click();
    await page.getByRole("button", { name: "Disable account" }).click();
    await disables.acted;
    // Meanwhile its buttons say the action is under way (and stay focusable).
    expect.soft(await clickAgain(disable)).toEqual({ confirmationAsked: false });
    disables.release();
    await disables.done;
    await expect.poll(() => page.locator("#accounts-status").textContent()).toBe("user-01 was disabled.");
    expect(disables.count).toBe(1);
    await server.app.flushEvents();
    expect((await server.app.admin.listEvents({ type: "account.disabled" })).events.filter((e) => (e as { username?: string }).username === "user-01")).toHaveLength(1);
    await page.getByRole("button", { name: "Enable user-01" }).click();
    await expect.poll(() => page.locator("#accounts-status").textContent()).toBe("user-01 was enabled.");
  });

  it("secrets of two applications answered at once are both shown, one after the other; none replaces the other", async () => {
    await goTo("Settings › Security settings");
    await page.locator("#clients-body tr").first().waitFor();
    const slow = await holdFirst(`**/console/api/clients/${CLIENT.id}/secret`);
    await page.getByRole("button", { name: `Regenerate the secret of ${CLIENT.id}` }).click();
    await page.getByRole("button", { name: "Regenerate secret", exact: true }).click();
    await slow.acted;
    await page.getByRole("button", { name: `Add a secret to ${JS_ID}` }).click();
    await page.getByRole("button", { name: "Add secret", exact: true }).click();
    await page.locator("#secret-dialog").waitFor({ state: "visible" });
    expect(await page.locator("#secret-client-id").inputValue()).toBe(JS_ID);
    expect(await page.locator("#security-status").textContent()).toBe(`A secret was added to ${JS_ID}.`);
    slow.release();
    await slow.done;
    // The page has taken the regenerated secret in (it says so just before it queues it)...
    await expect.poll(() => page.locator("#security-status").textContent()).toBe(`The secret of ${CLIENT.id} was regenerated.`);
    // ...and the first secret stays until it is stored...
    expect(await page.locator("#secret-client-id").inputValue()).toBe(JS_ID);
    const first = await page.locator("#secret-value").inputValue();
    expect(await clientCredentials(server.url, JS_ID, first)).toBe(200);
    await page.getByRole("button", { name: "Copy" }).click();
    await expect.poll(() => page.locator("#secret-copied").textContent()).toBe("Copied to the clipboard.");
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(first);
    // ...then the second one takes its place, in the same dialog.
    await page.getByRole("button", { name: "I have stored it" }).click();
    await expect.poll(() => page.locator("#secret-client-id").inputValue()).toBe(CLIENT.id);
    expect(await page.locator("#secret-dialog").isVisible()).toBe(true);
    expect(await page.locator("#secret-copied").textContent()).toBe("");
    const second = await page.locator("#secret-value").inputValue();
    expect(second).not.toBe(first);
    expect(await clientCredentials(server.url, CLIENT.id, second)).toBe(200);
    await page.getByRole("button", { name: "I have stored it" }).click();
    await page.locator("#secret-dialog").waitFor({ state: "hidden" });
    expect(await traces(first)).toEqual([]);
    expect(await traces(second)).toEqual([]);
  });

  it("Security events at its edges: a last page of exactly 20, filters with odd values, no match, and a store without an audit trail", async () => {
    const { clientSecret } = await server.app.admin.createClient({ clientId: "edge", name: "Edge" });
    for (let i = 0; i < 20; i++) expect(await clientCredentials(server.url, "edge", clientSecret)).toBe(200);
    await server.app.flushEvents();
    await goTo("Security events");
    const apply = async (filter: { type?: string; client?: string; account?: string }) => {
      await page.locator("#events-type").selectOption(filter.type ?? "");
      await page.locator("#events-client").fill(filter.client ?? "");
      await page.locator("#events-account").fill(filter.account ?? "");
      // Waits for this filter's page to be shown before anything reads the table or the pager: the
      // page before may look the same (20 rows, or empty), so polling the rows alone could read it.
      const loaded = page.waitForResponse((r) => {
        const url = new URL(r.url());
        return url.pathname.endsWith("/console/api/events") && url.searchParams.get("client") === (filter.client?.trim() || null) && url.searchParams.get("account") === (filter.account?.trim() || null) && url.searchParams.get("type") === (filter.type || null);
      });
      await page.getByRole("button", { name: "Apply filters" }).click();
      await loaded;
      await expect.poll(() => page.locator("#events-table").getAttribute("aria-busy")).toBeNull();
    };
    const pager = async () => ({
      info: await page.locator("#events-page-info").textContent(),
      newer: await page.locator("#events-newer").isDisabled(),
      older: await page.locator("#events-older").isDisabled(),
      empty: await page.locator("#events-empty").isVisible(),
      status: await page.locator("#events-status").textContent(),
    });
    // Exactly one page of them: no "Older events" to an empty page.
    await apply({ type: "token.issued", client: "edge" });
    await expect.poll(() => page.locator("#events-body tr").count()).toBe(20);
    expect(await pager()).toEqual({ info: "Page 1", newer: true, older: true, empty: false, status: "" });
    expect(new Set(await page.locator('#events-body td[data-label="Client"]').allTextContents())).toEqual(new Set(["edge"]));
    // The filter's value is one value, whatever it holds; the spaces around it are not part of it.
    // (The client's events: client.created and the 20 tokens, so a second page.)
    await apply({ client: "  edge  " });
    await expect.poll(() => page.locator("#events-body tr").count()).toBe(20);
    expect(await pager()).toMatchObject({ older: false, empty: false });
    for (const client of ["edge&type=console.signed_in", "edge%", "%65dge", "edge\u202E", "e".repeat(200)]) {
      await apply({ client });
      await expect.poll(() => page.locator("#events-empty").isVisible(), { message: client }).toBe(true);
      expect(await page.locator("#events-body tr").count()).toBe(0);
      expect(await pager()).toEqual({ info: "Page 1", newer: true, older: true, empty: true, status: "" });
    }
    await apply({ account: `${HTML_USER}` });
    await expect.poll(() => page.locator('#events-body td[data-label="Account"]').allTextContents()).toEqual([HTML_USER]);
    await apply({});
    await page.locator("#events-body tr").first().waitFor();

    // A store that keeps no events: said so, an empty table, nothing to page to.
    const bare = await startConsoleServer({ admin: ADMIN, storage: createMemoryStorage(), lines });
    // Its own browser context: cookies are per host, not per port, and this sign-in must not
    // replace the other server's session cookie.
    const own = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    try {
      await own.addInitScript(PAGE_PROBES);
      const other = await own.newPage();
      other.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
      const main = page;
      page = other;
      try {
        expected = /^401 GET .*\/console\/api\/session$/;
        await page.goto(`${bare.consoleUrl}#/events`);
        await signIn();
        expected = null;
        await page.locator("#view-events").waitFor({ state: "visible" });
        await expect.poll(() => page.locator("#events-status").textContent()).toBe("Events are not kept: the storage has no audit store.");
        expect(await pager()).toEqual({ info: "Page 1", newer: true, older: true, empty: true, status: "Events are not kept: the storage has no audit store." });
        expect(await page.locator("#events-body tr").count()).toBe(0);
        expect(await page.evaluate(() => (window as unknown as { pageProblems: string[] }).pageProblems)).toEqual([]);
      } finally {
        page = main;
      }
    } finally {
      await own.close();
      await bare.close();
    }
  });
});
