/**
 * The console's sign-in form in Debian chromium, against the real example node server with a short
 * brute-force window (2 failures, 5 s): a sign-in refused with 429 keeps its button disabled until
 * the server's Retry-After has passed, counting the wait down, and then signs in; a sign-in from
 * another tab does not throw away what is typed in the form, but offers to continue.
 * Every test also fails on a script error, an unhandled promise rejection or a CSP violation.
 * Each test has a server of its own (its own store: accounts, sessions, brute-force counters) and a
 * browser context of its own (cookies, tabs), so none starts from what another left behind: until
 * 2026-12-03 they shared both, and a lock-out test that failed midway failed the next one too.
 */
import { createMemoryStorage } from "@plantgate/core";
import type { RunningServer } from "@plantgate/example-node-server";
import { serverLines, type ServerLines } from "@plantgate/http-suite-tests/server-lines";
import { chromium, type Browser, type BrowserContext, type Page, type Request } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from "vitest";
import { ARGS, CHROMIUM, PAGE_PROBES, requireChromium, suite, suiteName } from "./chromium.js";
import { startConsoleServer } from "./targets.js";

const ADMIN = { username: "admin", password: "console-e2e-password" };
const CLIENT = { id: "billing-service", secret: "billing-service-secret-0123456789" };
/** The brute-force window: short, so a lock-out ends within the test. */
const WINDOW_SECONDS = 5;
/**
 * How far the page's two clocks may disagree over a wait: the console counts on `Date.now()` (whole
 * ms, the wall clock, which NTP may slew by up to 0.5 ms a second), the times compared are
 * `performance.now()` (monotonic, coarsened to 0.1 ms).
 */
const CLOCKS_MS = 5;

const name = suiteName("console sign-in in Debian chromium");

suite(name, () => {
  let browser: Browser;
  /** The test's own server and its store (a test ends sessions in it). */
  let server: RunningServer;
  let storage: ReturnType<typeof createMemoryStorage>;
  /** The test's own browser context (cookies, tabs), and its first tab. */
  let context: BrowserContext;
  let page: Page;
  /** What the test's setup has opened so far, for afterEach to close. */
  let opened: { server?: RunningServer; lines?: ServerLines; context?: BrowserContext } = {};
  const problems: string[] = [];
  /** HTTP answers >= 400 a test provoked on purpose. */
  let expected: RegExp | null = null;

  const watch = (p: Page) => {
    p.setDefaultTimeout(15_000);
    p.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    p.on("response", (r) => {
      if (r.status() >= 400 && !(expected && expected.test(`${r.status()} ${r.request().method()} ${r.url()}`))) problems.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });
  };

  beforeAll(async () => {
    requireChromium();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  }, 120_000);

  beforeEach(async () => {
    problems.length = 0;
    opened = {};
    storage = createMemoryStorage();
    const lines = serverLines();
    server = await startConsoleServer({
      admin: ADMIN,
      client: CLIENT,
      storage,
      lines,
      env: { PLANTGATE_BRUTE_FORCE_MAX_FAILURES: "2", PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: String(WINDOW_SECONDS) },
    });
    opened = { server, lines };
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    opened.context = context;
    await context.addInitScript(PAGE_PROBES);
    page = await context.newPage();
    watch(page);
    expected = /^401 GET .*\/console\/api\/session$/;
    await page.goto(server.consoleUrl!);
    await page.locator("#view-sign-in").waitFor({ state: "visible" });
    expected = null;
  }, 60_000);

  afterEach(async () => {
    expected = null;
    try {
      for (const p of opened.context?.pages() ?? []) {
        const inPage = await p.evaluate(() => (window as unknown as { pageProblems: string[] }).pageProblems.splice(0));
        problems.push(...inPage);
      }
      expect(problems.splice(0)).toEqual([]);
    } finally {
      await opened.context?.close();
      if (opened.server) {
        await opened.server.close();
        opened.lines!.check([ADMIN.password, CLIENT.secret]);
      }
    }
  });

  afterAll(async () => {
    await browser?.close();
  });

  const isSignIn = (r: { url(): string }) => r.url().endsWith("/console/api/session");

  /** Submits the sign-in form with Enter in the password field; resolves to the answer's status and Retry-After. */
  async function submit(p: Page, username: string, password: string) {
    await p.locator("#sign-in-username").fill(username);
    await p.locator("#sign-in-password").fill(password);
    const answered = p.waitForResponse((r) => r.request().method() === "POST" && isSignIn(r));
    await p.locator("#sign-in-password").press("Enter");
    const res = await answered;
    return { status: res.status(), retryAfter: res.headers()["retry-after"] };
  }

  /**
   * Signs in as the admin in `p`, and waits until the security view has loaded both its lists (a
   * session ended while one still loads would have it refused).
   */
  async function signIn(p: Page) {
    expect(await submit(p, ADMIN.username, ADMIN.password)).toEqual({ status: 200, retryAfter: undefined });
    await p.locator("#view-security").waitFor({ state: "visible" });
    for (const table of ["#clients-table", "#keys-table"]) await expect.poll(() => p.locator(table).getAttribute("aria-busy")).toBeNull();
  }

  it("a sign-in refused with 429 keeps the button disabled until Retry-After has passed, counting the wait down each second; then it signs in", async () => {
    expected = /^(401|429) POST .*\/console\/api\/session$/;
    expect(await submit(page, ADMIN.username, "wrong-password-1")).toEqual({ status: 401, retryAfter: undefined });
    await expect.poll(() => page.locator("#sign-in-submit").isDisabled()).toBe(false);
    expect(await submit(page, ADMIN.username, "wrong-password-2")).toEqual({ status: 401, retryAfter: undefined });
    await expect.poll(() => page.locator("#sign-in-submit").isDisabled()).toBe(false);
    expect(await page.locator("#sign-in-error").textContent()).toBe("The username or password is incorrect.");

    // From here on, every state the message and the button go through, with the page's time.
    // (`text`: the refusal's box sign-in-error, or the wait's own box sign-in-wait, whichever is shown.)
    await page.evaluate(() => {
      const w = window as unknown as { seen: { text: string; disabled: boolean; live: string | null; at: number }[] };
      const error = document.getElementById("sign-in-error")!;
      const box = document.getElementById("sign-in-wait")!;
      const button = document.getElementById("sign-in-submit") as HTMLButtonElement;
      w.seen = [];
      const record = () => {
        const text = [error, box].filter((b) => !b.hidden).map((b) => b.textContent ?? "").join(" | ");
        const now = { text, disabled: button.disabled, live: box.getAttribute("aria-live"), at: performance.now() };
        const last = w.seen.at(-1);
        if (!last || last.text !== now.text || last.disabled !== now.disabled) w.seen.push(now);
      };
      for (const b of [error, box]) new MutationObserver(record).observe(b, { childList: true, characterData: true, subtree: true, attributes: true, attributeFilter: ["aria-live", "hidden"] });
      new MutationObserver(record).observe(button, { attributes: true, attributeFilter: ["disabled"] });
    });
    const signIns: string[] = [];
    const count = (r: Request) => {
      if (r.method() === "POST" && isSignIn(r)) signIns.push(r.url());
    };
    page.on("request", count);
    try {
      // The right password, but the username is locked for the rest of the window.
      const locked = await submit(page, ADMIN.username, ADMIN.password);
      expect(locked.status).toBe(429);
      const wait = Number(locked.retryAfter);
      expect(wait).toBeGreaterThanOrEqual(2);
      expect(wait).toBeLessThanOrEqual(WINDOW_SECONDS);
      await expect.poll(() => page.locator("#sign-in-wait").textContent()).toBe(`Too many failed attempts; try again in ${wait} s.`);
      expect(await page.locator("#sign-in-error").isHidden()).toBe(true);
      expect(await page.locator("#sign-in-submit").isDisabled()).toBe(true);

      // Enter in the form meanwhile sends nothing.
      await page.locator("#sign-in-password").fill(ADMIN.password);
      await page.locator("#sign-in-password").press("Enter");
      expect(await page.locator("#sign-in-submit").isDisabled()).toBe(true);

      await expect.poll(() => page.locator("#sign-in-submit").isDisabled(), { timeout: (wait + 5) * 1000 }).toBe(false);
      expect(await page.locator("#sign-in-wait").textContent()).toBe("Too many failed attempts; you can try again now.");
      expect(signIns).toHaveLength(1);

      const seen = await page.evaluate(() => (window as unknown as { seen: { text: string; disabled: boolean; live: string | null; at: number }[] }).seen);
      // The refusal is an alert (read out once); the count's changes are not live ("off"), so a
      // screen reader does not say every second; the end is an alert again.
      const counted = Array.from({ length: wait }, (_, i) => ({ text: `Too many failed attempts; try again in ${wait - i} s.`, disabled: true, live: i === 0 ? null : "off" }));
      expect(seen.map(({ text, disabled, live }) => ({ text, disabled, live }))).toEqual([
        // The submission: the button disabled while the answer comes.
        { text: "The username or password is incorrect.", disabled: true, live: null },
        ...counted,
        { text: "Too many failed attempts; you can try again now.", disabled: false, live: null },
      ]);
      // Each count shown no sooner than its second after the 429 came, and the button enabled no
      // sooner than Retry-After after it. Measured from when the answer came, on the page's own
      // clock: its Resource Timing entry (`responseStart`, before the page could read the answer
      // and start counting). Until 2026-12-03 they were measured from when the observer above saw
      // the first count; its callback runs after the page's synchronous work, and later still
      // when the renderer is preempted under load, so the count's clock had started tens of ms
      // before (the final CI of 2026-12-02 read 973 ms for the first second). The observer sees a
      // change late, never early, so these bounds hold however loaded the machine is.
      const refusals = await page.evaluate(() =>
        (performance.getEntriesByType("resource") as PerformanceResourceTiming[]).filter((e) => e.name.endsWith("/console/api/session") && e.responseStatus === 429).map((e) => e.responseStart),
      );
      expect(refusals).toHaveLength(1);
      const answered = refusals[0]!;
      for (let i = 0; i < wait; i++) expect(seen[1 + i]!.at - answered).toBeGreaterThanOrEqual(i * 1000 - CLOCKS_MS);
      expect(seen.at(-1)!.at - answered).toBeGreaterThanOrEqual(wait * 1000 - CLOCKS_MS);
    } finally {
      page.off("request", count);
    }

    // The server agrees: the lock is over, and the same password signs in.
    expected = null;
    expect((await submit(page, ADMIN.username, ADMIN.password)).status).toBe(200);
    await page.locator("#view-security").waitFor({ state: "visible" });
    expect(await page.locator("#whoami-name").textContent()).toBe(`Signed in as ${ADMIN.username}`);
  });

  it("signed in from another tab while this one's sign-in form holds typed input: the tab keeps the input and offers to continue; with an empty form it switches at once", async () => {
    expected = /^401 GET .*\/console\/api\/session$/;
    // This tab signed in, then out; what is typed in its form.
    await signIn(page);
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.locator("#view-sign-in").waitFor({ state: "visible" });
    const typed = { username: "someone-else", password: "half-a-pass" };
    await page.locator("#sign-in-username").fill(typed.username);
    await page.locator("#sign-in-password").fill(typed.password);
    const form = async () => ({ username: await page.locator("#sign-in-username").inputValue(), password: await page.locator("#sign-in-password").inputValue() });
    const notice = page.locator("#sign-in-elsewhere");

    const second = await context.newPage();
    watch(second);
    try {
      await second.goto(server.consoleUrl!);
      await second.locator("#view-sign-in").waitFor({ state: "visible" });
      await submit(second, ADMIN.username, ADMIN.password);
      await second.locator("#whoami").waitFor({ state: "visible" });

      // This tab has heard of it once it shows either the session or a notice. It keeps the form as
      // it was (until 2026-11-29 it switched to the session, the typed input thrown away) and says so.
      await page.locator("#whoami:visible, #sign-in-elsewhere:visible").first().waitFor();
      expect(await page.locator("#view-sign-in").isVisible()).toBe(true);
      expect(await page.locator("#whoami").isHidden()).toBe(true);
      expect(await form()).toEqual(typed);
      expect(await notice.isVisible()).toBe(true);
      expect(await page.locator("#sign-in-elsewhere-text").textContent()).toBe(`This browser was signed in as ${ADMIN.username} in another tab.`);
      expect(await notice.getByRole("button").textContent()).toBe(`Continue as ${ADMIN.username}`);

      // The other tab signs out: the notice goes (nothing to continue with), the input stays.
      await second.getByRole("button", { name: "Sign out", exact: true }).click();
      await second.locator("#view-sign-in").waitFor({ state: "visible" });
      await notice.waitFor({ state: "hidden" });
      expect(await form()).toEqual(typed);
      expect(await page.locator("#view-sign-in").isVisible()).toBe(true);

      // Signed in there again; here, "Continue as admin" takes that session and empties the form.
      await submit(second, ADMIN.username, ADMIN.password);
      await notice.waitFor({ state: "visible" });
      await page.getByRole("button", { name: `Continue as ${ADMIN.username}` }).click();
      await page.locator("#view-security").waitFor({ state: "visible" });
      expect(await page.locator("#whoami-name").textContent()).toBe(`Signed in as ${ADMIN.username}`);
      expect(await form()).toEqual({ username: "", password: "" });
      expect(await notice.isHidden()).toBe(true);

      // An empty form switches at once, as before: signed out here (the other tab follows), then in there.
      await page.getByRole("button", { name: "Sign out", exact: true }).click();
      await second.locator("#view-sign-in").waitFor({ state: "visible" });
      await page.locator("#view-sign-in").waitFor({ state: "visible" });
      expect(await form()).toEqual({ username: "", password: "" });
      await submit(second, ADMIN.username, ADMIN.password);
      await page.locator("#view-security").waitFor({ state: "visible" });
      expect(await page.locator("#whoami-name").textContent()).toBe(`Signed in as ${ADMIN.username}`);
      expect(await notice.isHidden()).toBe(true);
    } finally {
      await second.close();
    }
  });
  it("signed in from another tab while this one counts a 429 wait down: the notice, and what Continue then says, stay shown beside the count (each in its own element)", async () => {
    expected = /^(401|429) (GET|POST) .*\/console\/api\/session$/;
    // Not signed in here.
    expect(await page.locator("#view-sign-in").isVisible()).toBe(true);
    const notice = page.locator("#sign-in-elsewhere");
    const second = await context.newPage();
    watch(second);
    try {
      await second.goto(server.consoleUrl!);
      await second.locator("#view-sign-in").waitFor({ state: "visible" });

      // Every visible state of the sign-in view's three messages from here on.
      await page.evaluate(() => {
        const w = window as unknown as { boxes: { error: string; wait: string; notice: string }[] };
        const ids = { error: "sign-in-error", wait: "sign-in-wait", notice: "sign-in-elsewhere" } as const;
        const shown = (id: string) => {
          const el = document.getElementById(id);
          return el && !el.hidden ? (el.textContent ?? "").replace(/\s+/g, " ").trim() : "";
        };
        w.boxes = [];
        const record = () => {
          const now = { error: shown(ids.error), wait: shown(ids.wait), notice: shown(ids.notice) };
          const last = w.boxes.at(-1);
          if (!last || JSON.stringify(last) !== JSON.stringify(now)) w.boxes.push(now);
        };
        const form = document.getElementById("sign-in-form")!;
        new MutationObserver(record).observe(form, { childList: true, characterData: true, subtree: true, attributes: true, attributeFilter: ["hidden"] });
      });

      // This tab locks out another username (its own keys: the admin can still sign in there).
      const other = "someone-else";
      for (const password of ["wrong-password-1", "wrong-password-2"]) {
        expect(await submit(page, other, password)).toEqual({ status: 401, retryAfter: undefined });
        await expect.poll(() => page.locator("#sign-in-submit").isDisabled()).toBe(false);
      }
      const locked = await submit(page, other, "wrong-password-3");
      expect(locked.status).toBe(429);
      const wait = Number(locked.retryAfter);
      expect(wait).toBeGreaterThanOrEqual(2);

      // The other tab signs in while this one counts down (the username still typed here): the
      // notice comes beside the count.
      // (Its security view's two lists loaded first: the session ended below would refuse them.)
      const loaded = Promise.all(
        [/\/console\/api\/clients\?/, /\/console\/api\/signing-keys$/].map((path) => second.waitForResponse((r) => r.request().method() === "GET" && path.test(r.url())).then((r) => r.status())),
      );
      expect((await submit(second, ADMIN.username, ADMIN.password)).status).toBe(200);
      expect(await loaded).toEqual([200, 200]);
      await notice.waitFor({ state: "visible" });
      // Its session ends before this tab continues with it (ended on the server: expired, or
      // signed out where no message reaches this tab).
      await storage.sessions.deleteExpired(Date.now() + 365 * 24 * 3600 * 1000);
      // Still counting (the test means nothing otherwise).
      expect(await page.locator("#sign-in-submit").isDisabled()).toBe(true);
      // (The states recorded before the click.)
      const clickedAt = await page.evaluate(() => (window as unknown as { boxes: unknown[] }).boxes.length);
      await page.getByRole("button", { name: `Continue as ${ADMIN.username}` }).click();
      await expect.poll(() => page.locator("#sign-in-error").textContent()).toBe("The session of the other tab has ended; sign in here.");
      await expect.poll(() => page.locator("#sign-in-submit").isDisabled(), { timeout: (wait + 5) * 1000 }).toBe(false);
      expect(await page.locator("#sign-in-error").isVisible()).toBe(true);
      expect(await page.locator("#sign-in-error").textContent()).toBe("The session of the other tab has ended; sign in here.");

      const boxes = await page.evaluate(() => (window as unknown as { boxes: { error: string; wait: string; notice: string }[] }).boxes);
      const count = (s: number) => `Too many failed attempts; try again in ${s} s.`;
      const now = "Too many failed attempts; you can try again now.";
      const elsewhere = `This browser was signed in as ${ADMIN.username} in another tab. Continue as ${ADMIN.username}`;
      const ended = "The session of the other tab has ended; sign in here.";
      // From the 429 on: the count goes on in its box whatever else is shown, and the notice, then
      // what Continue said, stay until the end of the wait.
      const from = boxes.findIndex((b) => b.wait === count(wait));
      expect(from).toBeGreaterThan(0);
      const after = boxes.slice(from);
      const clicked = clickedAt - from;
      const steps = [...Array.from({ length: wait }, (_, i) => count(wait - i)), now];
      // Each step of the count, in order, none skipped nor replaced.
      expect([...new Set(after.map((b) => b.wait))]).toEqual(steps);
      expect(after.every((b) => b.error === "" || b.error === ended)).toBe(true);
      const noticeAt = after.findIndex((b) => b.notice === elsewhere);
      const endedAt = after.findIndex((b) => b.error === ended);
      expect(noticeAt).toBeGreaterThan(0);
      expect(endedAt).toBeGreaterThan(noticeAt);
      // The notice until the click takes it away (no sooner: the count went on meanwhile), then
      // nothing in its place until the session is checked.
      const goneAt = after.findIndex((b, i) => i > noticeAt && b.notice === "");
      expect(goneAt).toBeGreaterThanOrEqual(clicked);
      expect(after.slice(noticeAt, goneAt).every((b) => b.notice === elsewhere)).toBe(true);
      expect(after.slice(goneAt, endedAt).every((b) => b.notice === "" && b.error === "")).toBe(true);
      expect(after.slice(endedAt).every((b) => b.error === ended && b.notice === "")).toBe(true);
      expect(after.at(-1)).toEqual({ error: ended, wait: now, notice: "" });

      // The form works: signed in here.
      expect((await submit(page, ADMIN.username, ADMIN.password)).status).toBe(200);
      await page.locator("#view-security").waitFor({ state: "visible" });
      expect(await page.locator("#sign-in-wait").isHidden()).toBe(true);
    } finally {
      await second.close();
    }
  });

  it("signing out, or a session ended on the server, empties the half-filled client and account forms (the account's password above all); the next sign-in finds them empty", async () => {
    expected = /^401 (GET|POST) .*\/console\/api\/(session|accounts)$/;
    await signIn(page);
    await page.locator("#whoami").waitFor({ state: "visible" });
    const ids = ["client-name", "client-id", "client-ttl", "account-username", "account-password", "account-display-name", "account-email"] as const;
    const values = () => page.evaluate((list) => list.map((id) => (document.getElementById(id) as HTMLInputElement).value), [...ids]);
    const half = ["Half a client", "half-client", "600", "half-typed", "half-a-password", "Half Typed", "half@example.test"];
    const fill = async () => {
      await page.evaluate(() => (location.hash = "#/"));
      await page.locator("#view-security").waitFor({ state: "visible" });
      await page.locator("#client-name").fill(half[0]!);
      await page.locator("#client-id").fill(half[1]!);
      await page.locator("#client-ttl").fill(half[2]!);
      await page.evaluate(() => (location.hash = "#/accounts"));
      await page.locator("#view-accounts").waitFor({ state: "visible" });
      await page.locator("#account-username").fill(half[3]!);
      await page.locator("#account-password").fill(half[4]!);
      await page.locator("#account-display-name").fill(half[5]!);
      await page.locator("#account-email").fill(half[6]!);
      expect(await values()).toEqual(half);
    };
    const empty = ids.map(() => "");

    await fill();
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.locator("#view-sign-in").waitFor({ state: "visible" });
    expect(await values()).toEqual(empty);
    expect((await submit(page, ADMIN.username, ADMIN.password)).status).toBe(200);
    await page.locator("#whoami").waitFor({ state: "visible" });
    expect(await values()).toEqual(empty);

    // The session ends on the server while the forms are half filled; the next action finds it so.
    await fill();
    // (No list still loading: the session ended below would refuse it.)
    for (const table of ["#clients-table", "#keys-table", "#accounts-table"]) await expect.poll(() => page.locator(table).getAttribute("aria-busy")).toBeNull();
    await storage.sessions.deleteExpired(Date.now() + 10 * 365 * 24 * 3600 * 1000);
    await page.locator("#account-create").click();
    await page.locator("#view-sign-in").waitFor({ state: "visible" });
    expect(await page.locator("#sign-in-error").textContent()).toBe("Your session has ended; sign in again.");
    expect(await values()).toEqual(empty);
    expect((await submit(page, ADMIN.username, ADMIN.password)).status).toBe(200);
    await page.locator("#whoami").waitFor({ state: "visible" });
    expect(await values()).toEqual(empty);
  });
});
