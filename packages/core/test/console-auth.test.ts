/**
 * Management console: page, sign-in, cookie, CSRF, origin checks and authorization of every route.
 * Everything goes through `app.fetch` on the memory store.
 */
import { describe, expect, it, vi } from "vitest";
import { ConfigError, createMemoryStorage, createPlantgate, StorageError, type SecurityEvent } from "../src/index.js";
import { ADMIN, call, consoleHarness, type CallOptions, hashOf, read, signIn } from "./console-helpers.js";
import { basic, BASE, passwordTokens, tokenRequest } from "./helpers.js";
import { TEST_CSP, TEST_PAGE } from "./page-helpers.js";

const SID = "[A-Za-z0-9_-]{43}";
const SESSION_BODY = {
  username: "root",
  displayName: "Root",
  csrfToken: expect.stringMatching(new RegExp(`^${SID}$`)),
  // The end of the first idle window (console.idleTimeoutSeconds, default 30 minutes).
  expiresAt: "2026-01-01T00:30:00.000Z",
  grantTypes: ["client_credentials", "password", "refresh_token"],
  scopes: ["Platform_UserAPIs", "Platform_AllAppsServerCommands", "offline_access"],
  adminRole: "admin",
  accountPages: { defaultPageSize: 20, maxPageSize: 100 },
};
const NOT_SIGNED_IN = { error: 1301, message: "Sign in to the console first." };
const NOT_ADMIN = { error: 1302, message: "This account is not a console administrator." };
const CSRF = { error: 1303, message: "The CSRF token is missing or wrong; reload the console." };
const CROSS = { error: 1304, message: "Cross-site requests to the console are refused." };
const BAD_CREDENTIALS = { error: 1305, message: "The username or password is incorrect." };

/** Every admin API route, with a body that would succeed, so a refusal can only come from the check under test. */
function routes(targetClient: string, targetAccount: string) {
  return [
    { method: "GET", path: "/api/session" },
    { method: "POST", path: "/api/session/sign-out" },
    { method: "POST", path: "/api/session/sign-out-everywhere" },
    { method: "GET", path: "/api/clients" },
    { method: "POST", path: "/api/clients", body: { name: "Sneaky", clientId: "sneaky" } },
    { method: "DELETE", path: `/api/clients/${targetClient}` },
    { method: "POST", path: `/api/clients/${targetClient}/secret` },
    { method: "GET", path: "/api/accounts?page=1&pageSize=20" },
    { method: "POST", path: "/api/accounts", body: { username: "mallory", password: "mallory-pass-1", roles: ["admin"] } },
    { method: "POST", path: `/api/accounts/${targetAccount}/disable` },
    { method: "POST", path: `/api/accounts/${targetAccount}/enable` },
    { method: "GET", path: "/api/signing-keys" },
    { method: "POST", path: "/api/signing-keys" },
    { method: "POST", path: "/api/signing-keys/reencrypt" },
    // The revocation of a key named reencrypt, by path and by query (its gate: no key is needed).
    { method: "DELETE", path: "/api/signing-keys/reencrypt" },
    { method: "DELETE", path: "/api/signing-keys?kid=reencrypt" },
  ] as const;
}

describe("console: off by default", () => {
  it("without the option every /console path is the normal 404", async () => {
    const app = createPlantgate({ logger: { error() {}, warn() {} } });
    for (const path of ["/console", "/console/", "/console/api/session", "/console/assets/console.js"]) {
      const r = await read(await app.fetch(new Request(`${BASE}${path}`)));
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: 1404, message: "Not found." });
    }
    const post = await read(await app.fetch(new Request(`${BASE}/console/api/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ADMIN) })));
    expect(post.status).toBe(404);
  });

  it("enabled: false is off too", async () => {
    const app = createPlantgate({ console: { enabled: false } });
    expect((await app.fetch(new Request(`${BASE}/console`))).status).toBe(404);
  });
});

describe("console: the page (console.page) and the admin API without one", () => {
  // The real page is tested in @plantgate/console; core serves any StaticPage, here a small one.
  it("with a page: GET /console and /console/ are its document, files under /console/assets/, all with the console's headers", async () => {
    const { app } = await consoleHarness({ console: { enabled: true, page: TEST_PAGE } });
    const html = '<!doctype html><title>t</title><meta name="mount" content="|/console"><script src="/console/assets/app.js"></script>';
    for (const path of ["", "/"]) {
      const res = await call(app, "GET", path);
      expect([res.status, Object.fromEntries(res.headers), await res.text()]).toEqual([
        200,
        {
          "content-type": "text/html; charset=utf-8",
          "content-length": String(html.length),
          "content-security-policy": TEST_CSP,
          // The console's own headers win over the page's (no-cache -> no-store).
          "cache-control": "no-store",
          pragma: "no-cache",
          "x-frame-options": "DENY",
          "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer",
        },
        html,
      ]);
    }
    const js = await call(app, "GET", "/assets/app.js");
    expect([js.status, js.headers.get("content-type"), js.headers.get("cache-control"), await js.text()]).toEqual([
      200,
      "text/javascript; charset=utf-8",
      "no-store",
      'console.log("hi");\n',
    ]);
    const head = await call(app, "HEAD", "");
    expect([head.status, await head.text()]).toEqual([200, ""]);
    const post = await read(await call(app, "POST", "", { body: {} }));
    expect(post).toMatchObject({ status: 405, body: { error: 1405, message: "Use GET, HEAD for this endpoint." }, cacheControl: "no-store" });
    for (const path of ["/assets/nope.js", "/assets", "/assets/app.js/x", "/app.js"]) {
      expect(await read(await call(app, "GET", path))).toMatchObject({ status: 404, body: { error: 1404, message: "Not found." }, cacheControl: "no-store" });
    }
  });

  it("without a page the admin API works and every page path is the usual 404 (no-store)", async () => {
    const { app } = await consoleHarness();
    for (const path of ["", "/", "/assets/console.js", "/assets/console.css", "/assets/favicon.svg"]) {
      expect(await read(await call(app, "GET", path))).toMatchObject({ status: 404, body: { error: 1404, message: "Not found." }, cacheControl: "no-store" });
    }
    const signedIn = await read(await call(app, "POST", "/api/session", { body: ADMIN }));
    expect(signedIn).toMatchObject({ status: 200, body: SESSION_BODY });
  });

  it("under a basePath the page, its files and the cookie live under {basePath}/console", async () => {
    const { app } = await consoleHarness({ basePath: "/auth", console: { enabled: true, page: TEST_PAGE } });
    const page = await app.fetch(new Request(`${BASE}/auth/console`));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<meta name="mount" content="/auth|/auth/console"><script src="/auth/console/assets/app.js"></script>');
    expect((await app.fetch(new Request(`${BASE}/auth/console/assets/app.css`))).status).toBe(200);
    expect((await app.fetch(new Request(`${BASE}/console`))).status).toBe(404);
    const res = await app.fetch(
      new Request(`${BASE}/auth/console/api/session`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: BASE },
        body: JSON.stringify(ADMIN),
      }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("set-cookie")).toMatch(new RegExp(`^plantgate_console=${SID}; Path=/auth/console; Max-Age=28800; HttpOnly; SameSite=Strict; Secure$`));
  });

  it("unknown console paths are 404 and wrong methods 405, both no-store", async () => {
    const { app } = await consoleHarness();
    const nf = await read(await call(app, "GET", "/api/nope"));
    expect(nf).toMatchObject({ status: 404, body: { error: 1404, message: "Not found." }, cacheControl: "no-store" });
    const bad = await call(app, "PUT", "/api/clients", { body: {} });
    expect(bad.status).toBe(405);
    expect(bad.headers.get("allow")).toBe("GET, POST, HEAD");
    expect(await bad.json()).toEqual({ error: 1405, message: "Use GET, POST, HEAD for this endpoint." });
    expect(bad.headers.get("cache-control")).toBe("no-store");
  });
});

describe("console: sign-in", () => {
  it("signs an admin in: whole body, exact cookie over https, session and CSRF token stored only as hashes", async () => {
    const { app, storage, adminId } = await consoleHarness();
    const res = await call(app, "POST", "/api/session", { body: ADMIN });
    const r = await read(res);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(SESSION_BODY);
    expect(r.cacheControl).toBe("no-store");
    expect(r.setCookie).toMatch(new RegExp(`^plantgate_console=${SID}; Path=/console; Max-Age=28800; HttpOnly; SameSite=Strict; Secure$`));
    const sessionId = /^plantgate_console=([^;]+);/.exec(r.setCookie!)![1]!;
    const csrf = (r.body as { csrfToken: string }).csrfToken;
    expect(csrf).not.toBe(sessionId);
    expect(await storage.sessions.get(sessionId)).toBeNull();
    expect(await storage.sessions.get(await hashOf(sessionId))).toEqual({
      idHash: await hashOf(sessionId),
      accountId: adminId,
      csrfHash: await hashOf(csrf),
      createdAt: Date.UTC(2026, 0, 1),
      expiresAt: Date.UTC(2026, 0, 1, 0, 30),
    });
  });

  it("a sign-in that replaces the browser's session ends that session in the store (a new id, and the old one works no more)", async () => {
    const h = await consoleHarness();
    await h.app.admin.createAccount({ username: "eve", password: "eve-password-1", roles: ["admin"] });
    const first = await signIn(h.app);
    // The same administrator again, then another one, each from the browser holding the last cookie.
    const again = await signIn(h.app, ADMIN.username, ADMIN.password, { cookie: first.cookie });
    expect(again.sessionId).not.toBe(first.sessionId);
    expect(await h.storage.sessions.get(await hashOf(first.sessionId))).toBeNull();
    const stale = await read(await call(h.app, "GET", "/api/session", { cookie: first.cookie }));
    expect([stale.status, stale.body]).toEqual([401, NOT_SIGNED_IN]);
    const eve = await signIn(h.app, "eve", "eve-password-1", { cookie: `theme=dark; ${again.cookie}` });
    expect(await h.storage.sessions.get(await hashOf(again.sessionId))).toBeNull();
    expect((await read(await call(h.app, "GET", "/api/session", { cookie: eve.cookie }))).body).toEqual({ ...SESSION_BODY, username: "eve", displayName: null, csrfToken: eve.csrf });
    // A refused sign-in leaves the session it was sent with as it was: the cookie is not replaced.
    const refused = await read(await call(h.app, "POST", "/api/session", { body: { username: "root", password: "wrong-password" }, cookie: eve.cookie }));
    expect([refused.status, refused.body, refused.setCookie]).toEqual([401, BAD_CREDENTIALS, null]);
    expect((await call(h.app, "GET", "/api/session", { cookie: eve.cookie })).status).toBe(200);
  });

  it("a store failing to delete the replaced session does not refuse the sign-in: 200, the new session works, the failure logged", async () => {
    const memory = createMemoryStorage();
    const warned: unknown[][] = [];
    const storage = { ...memory, sessions: { ...memory.sessions, delete: async () => Promise.reject(new StorageError("session store: connection reset")) } };
    const h = await consoleHarness({ storage, logger: { error() {}, warn: (...args: unknown[]) => void warned.push(args) } });
    const first = await signIn(h.app);
    const second = await signIn(h.app, ADMIN.username, ADMIN.password, { cookie: first.cookie });
    expect(second.body).toEqual({ ...SESSION_BODY, csrfToken: second.csrf });
    expect((await call(h.app, "GET", "/api/clients", { cookie: second.cookie })).status).toBe(200);
    expect(warned).toEqual([
      // The harness passes no client address.
      [expect.stringMatching(/^plantgate: a request came with no client address \(the adapter passed no clientIp; /)],
      ["the session a sign-in replaced could not be deleted (the sign-in goes on; it ends at its expiry)", { name: "StorageError", message: "session store: connection reset" }],
    ]);
  });

  it("a failing sweep of expired sessions at sign-in does not refuse it: 200, the session works, the sweep's error logged", async () => {
    const memory = createMemoryStorage();
    const warned: unknown[][] = [];
    const storage = { ...memory, sessions: { ...memory.sessions, deleteExpired: async () => Promise.reject(new StorageError("session store: lock wait timeout exceeded")) } };
    const { app, adminId } = await consoleHarness({ storage, logger: { error() {}, warn: (...args: unknown[]) => void warned.push(args) } });
    const res = await call(app, "POST", "/api/session", { body: ADMIN });
    const r = await read(res);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(SESSION_BODY);
    const sessionId = /^plantgate_console=([^;]+);/.exec(r.setCookie!)![1]!;
    expect((await memory.sessions.get(await hashOf(sessionId)))?.accountId).toBe(adminId);
    expect((await call(app, "GET", "/api/clients", { cookie: `plantgate_console=${sessionId}` })).status).toBe(200);
    expect(warned.filter((w) => String(w[0]).startsWith("console-session"))).toEqual([
      ["console-session sweep failed at a sign-in (the sign-in goes on; the next sweep or prune clears the backlog)", { name: "StorageError", message: "session store: lock wait timeout exceeded" }],
    ]);
  });

  it("over plain http the cookie has no Secure; with an https baseUrl it has", async () => {
    const { app } = await consoleHarness();
    const http = await call(app, "POST", "/api/session", { body: ADMIN, base: "http://as.example.test" });
    expect(http.status).toBe(200);
    expect(http.headers.get("set-cookie")).toMatch(new RegExp(`^plantgate_console=${SID}; Path=/console; Max-Age=28800; HttpOnly; SameSite=Strict$`));
    const proxied = await consoleHarness({ baseUrl: "https://auth.example.com", console: { enabled: true, sessionTtlSeconds: 600 } });
    // TLS ends at the proxy, which passes the public Host on.
    const res = await call(proxied.app, "POST", "/api/session", { body: ADMIN, base: "http://auth.example.com", origin: "https://auth.example.com" });
    expect(res.status).toBe(200);
    expect(res.headers.get("set-cookie")).toMatch(new RegExp(`^plantgate_console=${SID}; Path=/console; Max-Age=600; HttpOnly; SameSite=Strict; Secure$`));
  });

  it("with only an https issuer configured, the cookie is Secure even over http behind the proxy (finding 4)", async () => {
    const h = await consoleHarness({ issuer: "https://auth.example.com", basePath: "" });
    const res = await call(h.app, "POST", "/api/session", { body: ADMIN, base: "http://auth.example.com", origin: "https://auth.example.com" });
    expect(res.status).toBe(200);
    expect(res.headers.get("set-cookie")).toMatch(new RegExp(`^plantgate_console=${SID}; Path=/console; Max-Age=28800; HttpOnly; SameSite=Strict; Secure$`));
  });

  it("wrong password, unknown user and a disabled admin get one message, no cookie", async () => {
    const h = await consoleHarness();
    await h.app.admin.createAccount({ username: "old-admin", password: "old-admin-pass", roles: ["admin"], enabled: false });
    for (const creds of [
      { username: "root", password: "wrong-password" },
      // PBKDF2-HMAC would hash the password followed by U+0000 as the password: refused all the same.
      { username: "root", password: `${ADMIN.password}\u0000` },
      { username: "nobody", password: "whatever-pass" },
      { username: "old-admin", password: "old-admin-pass" },
    ]) {
      const r = await read(await call(h.app, "POST", "/api/session", { body: creds }));
      expect(r).toEqual({ status: 401, body: BAD_CREDENTIALS, cacheControl: "no-store", setCookie: null, contentType: "application/json" });
    }
  });

  it("a right password of an account without the admin role: the same 401 as a wrong one (no oracle without a client secret), no session, and it counts as a failure", async () => {
    const h = await consoleHarness({ bruteForce: { maxFailures: 3, windowSeconds: 60 } });
    const r = await read(await call(h.app, "POST", "/api/session", { body: { username: h.username, password: h.password } }));
    expect(r).toEqual({ status: 401, body: BAD_CREDENTIALS, cacheControl: "no-store", setCookie: null, contentType: "application/json" });
    // Not a success: the username's counters are not reset, so its right password locks out as wrong ones do.
    for (let i = 1; i < 3; i++) expect((await call(h.app, "POST", "/api/session", { body: { username: h.username, password: h.password } })).status).toBe(401);
    expect((await call(h.app, "POST", "/api/session", { body: { username: h.username, password: h.password } })).status).toBe(429);
  });

  it("bad sign-in bodies are 400 with the documented numbers", async () => {
    const { app } = await consoleHarness();
    const cases: [CallOptions, number, string][] = [
      [{ raw: "{", contentType: "application/json" }, 1001, "The body is not valid JSON: unexpected end of JSON input."],
      [{ raw: "[]" }, 1002, "The body must be a JSON object."],
      [{ body: { username: "root" } }, 1003, "password is required."],
      [{ body: { username: 7, password: "x" } }, 1004, "username must be a string."],
      [{ body: { username: "", password: "x" } }, 1009, "username must be 1 to 1024 characters."],
      [{ raw: "username=root&password=x", contentType: "application/x-www-form-urlencoded" }, 1008, "The body must be UTF-8 application/json."],
    ];
    for (const [o, error, message] of cases) {
      const r = await read(await call(app, "POST", "/api/session", { contentType: o.raw !== undefined && o.contentType === undefined ? "application/json" : undefined, ...o }));
      expect([r.status, r.body]).toEqual([400, { error, message }]);
    }
  });

  it("refuses cross-site sign-in (login CSRF) by Origin and by Sec-Fetch-Site", async () => {
    const { app } = await consoleHarness();
    for (const o of [
      { origin: "https://evil.example" },
      { origin: "null" },
      { origin: "http://as.example.test" },
      { fetchSite: "cross-site" },
      { fetchSite: "same-site" },
      { origin: null, fetchSite: "none" },
    ]) {
      const r = await read(await call(app, "POST", "/api/session", { body: ADMIN, ...o }));
      expect([r.status, r.body, r.setCookie]).toEqual([403, CROSS, null]);
    }
    // A non-browser client sending neither header is allowed: it cannot be a forged browser request.
    expect((await call(app, "POST", "/api/session", { body: ADMIN, origin: null, fetchSite: null })).status).toBe(200);
  });
});

describe("console: a configured origin is the only one (finding 7, DNS rebinding)", () => {
  for (const [name, options] of [
    ["baseUrl", { baseUrl: "https://auth.example.com" }],
    ["issuer", { issuer: "https://auth.example.com" }],
  ] as const) {
    it(`with ${name} set, a sign-in for another Host with a matching Origin -> 403, no cookie; the configured origin signs in`, async () => {
      const { app } = await consoleHarness(options);
      const rebound = await read(await call(app, "POST", "/api/session", { body: ADMIN, base: "http://rebind.evil" }));
      expect([rebound.status, rebound.body, rebound.setCookie]).toEqual([403, CROSS, null]);
      // Without Origin (not a browser) the Host still has to be the configured one.
      const noOrigin = await read(await call(app, "POST", "/api/session", { body: ADMIN, base: "http://rebind.evil", origin: null, fetchSite: null }));
      expect([noOrigin.status, noOrigin.body, noOrigin.setCookie]).toEqual([403, CROSS, null]);
      // The right Host with another Origin.
      const other = await read(await call(app, "POST", "/api/session", { body: ADMIN, base: "https://auth.example.com", origin: "https://evil.example" }));
      expect([other.status, other.body, other.setCookie]).toEqual([403, CROSS, null]);
      const ok = await call(app, "POST", "/api/session", { body: ADMIN, base: "https://auth.example.com" });
      expect(ok.status).toBe(200);
    });
  }
});

describe("console: authorization of every API route", () => {
  it("no session (absent, malformed or unknown cookie) -> 401 on every route, and nothing changes", async () => {
    const h = await consoleHarness();
    const before = { clients: await h.app.admin.listClients(), accounts: await h.app.admin.listAccounts(), keys: await h.storage.signingKeys.list() };
    for (const cookie of [null, "plantgate_console=abc", `plantgate_console=${"A".repeat(43)}`, "other=1"]) {
      for (const r of routes("app-1", h.adminId)) {
        const res = await read(await call(h.app, r.method, r.path, { ...("body" in r ? { body: r.body } : {}), cookie, csrf: "x" }));
        expect([r.path, res.status, res.body, res.cacheControl]).toEqual([r.path, 401, NOT_SIGNED_IN, "no-store"]);
      }
    }
    expect({ clients: await h.app.admin.listClients(), accounts: await h.app.admin.listAccounts(), keys: await h.storage.signingKeys.list() }).toEqual(before);
  });

  it("an account that lost the admin role -> 403 on every route, even with a valid CSRF token", async () => {
    const h = await consoleHarness();
    await h.app.admin.createAccount({ username: "eve", password: "eve-password-1", roles: ["admin"] });
    const eve = await signIn(h.app, "eve", "eve-password-1");
    const eveId = (await h.storage.accounts.findByUsername("eve"))!.id;
    h.demoted.add(eveId);
    const before = { clients: await h.app.admin.listClients(), accounts: await h.app.admin.listAccounts() };
    let session = eve;
    for (const r of routes("app-1", h.adminId)) {
      const res = await read(await call(h.app, r.method, r.path, { ...("body" in r ? { body: r.body } : {}), cookie: session.cookie, csrf: session.csrf }));
      expect([r.path, res.status, res.body]).toEqual([r.path, 403, NOT_ADMIN]);
      // That call ended the session: the next one is not signed in.
      expect(await h.storage.sessions.get(await hashOf(session.sessionId))).toBeNull();
      expect((await read(await call(h.app, "GET", "/api/session", { cookie: session.cookie }))).body).toEqual(NOT_SIGNED_IN);
      h.demoted.delete(eveId);
      session = await signIn(h.app, "eve", "eve-password-1");
      h.demoted.add(eveId);
    }
    expect({ clients: await h.app.admin.listClients(), accounts: await h.app.admin.listAccounts() }).toEqual(before);
    // Role restored: a session ended while it was missing stays ended.
    h.demoted.delete(eveId);
    expect((await call(h.app, "GET", "/api/clients", { cookie: eve.cookie })).status).toBe(401);
  });

  it("state-changing routes without, with a wrong, or with another session's CSRF token -> 403", async () => {
    const h = await consoleHarness();
    const root = await signIn(h.app);
    const other = await signIn(h.app);
    const before = { clients: await h.app.admin.listClients(), accounts: await h.app.admin.listAccounts(), keys: await h.storage.signingKeys.list() };
    const changing = routes("app-1", h.adminId).filter((r) => r.method !== "GET");
    expect(changing).toHaveLength(12);
    for (const csrf of [null, "", "wrong", other.csrf, root.sessionId, root.csrf.slice(0, -1)]) {
      for (const r of changing) {
        const res = await read(await call(h.app, r.method, r.path, { ...("body" in r ? { body: r.body } : {}), cookie: root.cookie, csrf }));
        expect([r.path, csrf, res.status, res.body]).toEqual([r.path, csrf, 403, CSRF]);
      }
    }
    expect({ clients: await h.app.admin.listClients(), accounts: await h.app.admin.listAccounts(), keys: await h.storage.signingKeys.list() }).toEqual(before);
    // Reads need no token: they change nothing and a cross-site page cannot read the answer.
    expect((await call(h.app, "GET", "/api/clients", { cookie: root.cookie })).status).toBe(200);
  });

  it("state-changing routes from another origin -> 403 even with session and CSRF token", async () => {
    const h = await consoleHarness();
    const root = await signIn(h.app);
    const changing = routes("app-1", h.adminId).filter((r) => r.method !== "GET");
    for (const o of [{ origin: "https://evil.example" }, { fetchSite: "cross-site" }, { fetchSite: "same-site", origin: null }]) {
      for (const r of changing) {
        const res = await read(await call(h.app, r.method, r.path, { ...("body" in r ? { body: r.body } : {}), cookie: root.cookie, csrf: root.csrf, ...o }));
        expect([r.path, res.status, res.body]).toEqual([r.path, 403, CROSS]);
      }
    }
    expect((await h.app.admin.listClients()).map((c) => c.clientId)).toEqual(["app-1"]);
  });

  it("sign out everywhere ends every session of the administrator (204, the cookie cleared, one event with the count) and no one else's", async () => {
    const events: SecurityEvent[] = [];
    const h = await consoleHarness({ onEvent: (e) => void events.push(e) });
    await h.app.admin.createAccount({ username: "eve", password: "eve-password-1", roles: ["admin"] });
    const laptop = await signIn(h.app);
    const desk = await signIn(h.app);
    const eve = await signIn(h.app, "eve", "eve-password-1");
    await h.app.flushEvents();
    events.splice(0);

    // The gates of sign-out: no session, no or a wrong CSRF token, another origin; each ends nothing.
    const none = await read(await call(h.app, "POST", "/api/session/sign-out-everywhere", { csrf: desk.csrf }));
    expect([none.status, none.body, none.setCookie]).toEqual([401, NOT_SIGNED_IN, null]);
    for (const csrf of [null, eve.csrf]) {
      const refused = await read(await call(h.app, "POST", "/api/session/sign-out-everywhere", { cookie: desk.cookie, csrf }));
      expect([refused.status, refused.body, refused.setCookie]).toEqual([403, CSRF, null]);
    }
    const cross = await read(await call(h.app, "POST", "/api/session/sign-out-everywhere", { cookie: desk.cookie, csrf: desk.csrf, origin: "https://evil.example" }));
    expect([cross.status, cross.body]).toEqual([403, CROSS]);
    const wrongMethod = await call(h.app, "GET", "/api/session/sign-out-everywhere", { cookie: desk.cookie });
    expect([wrongMethod.status, wrongMethod.headers.get("allow")]).toEqual([405, "POST"]);
    for (const s of [laptop, desk, eve]) expect((await call(h.app, "GET", "/api/session", { cookie: s.cookie })).status).toBe(200);

    const out = await read(await call(h.app, "POST", "/api/session/sign-out-everywhere", { cookie: desk.cookie, csrf: desk.csrf, clientIp: "203.0.113.9" }));
    expect(out).toEqual({ status: 204, body: null, cacheControl: "no-store", setCookie: "plantgate_console=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure", contentType: null });
    // Both of root's sessions have ended, the one left on the laptop too.
    for (const s of [desk, laptop]) {
      expect(await h.storage.sessions.get(await hashOf(s.sessionId))).toBeNull();
      const after = await read(await call(h.app, "GET", "/api/clients", { cookie: s.cookie }));
      expect([after.status, after.body, after.setCookie]).toEqual([401, NOT_SIGNED_IN, "plantgate_console=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure"]);
      const post = await read(await call(h.app, "POST", "/api/session/sign-out-everywhere", { cookie: s.cookie, csrf: s.csrf }));
      expect([post.status, post.body]).toEqual([401, NOT_SIGNED_IN]);
    }
    // Another administrator's session is not touched.
    expect(await read(await call(h.app, "GET", "/api/session", { cookie: eve.cookie }))).toMatchObject({ status: 200, body: { ...SESSION_BODY, username: "eve", displayName: null, csrfToken: eve.csrf } });
    expect((await call(h.app, "POST", "/api/clients", { body: { name: "Eve's" }, cookie: eve.cookie, csrf: eve.csrf })).status).toBe(201);

    await h.app.flushEvents();
    expect(events.filter((e) => e.type.startsWith("console."))).toStrictEqual([
      { type: "console.signed_out", id: expect.stringMatching(/^[0-9a-f-]{36}$/), time: Date.UTC(2026, 0, 1), account_id: h.adminId, username: "root", everywhere: true, sessions_ended: 2, client_ip: "203.0.113.9" },
    ]);
    // Signing in again works as ever; the new session is the account's only one.
    const back = await signIn(h.app);
    expect((await call(h.app, "GET", "/api/session", { cookie: back.cookie })).status).toBe(200);
  });

  it("a session ends at its expiry (no idle timeout here), at sign-out, and at once when its account is disabled", async () => {
    const h = await consoleHarness({ console: { enabled: true, idleTimeoutSeconds: 0 } });
    const root = await signIn(h.app);
    h.clock.advance(8 * 3600 * 1000 - 1);
    expect((await call(h.app, "GET", "/api/session", { cookie: root.cookie })).status).toBe(200);
    h.clock.advance(1);
    const expired = await read(await call(h.app, "GET", "/api/session", { cookie: root.cookie }));
    expect([expired.status, expired.body, expired.setCookie]).toEqual([401, NOT_SIGNED_IN, "plantgate_console=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure"]);
    expect(await h.storage.sessions.get(await hashOf(root.sessionId))).toBeNull();

    const again = await signIn(h.app);
    const out = await read(await call(h.app, "POST", "/api/session/sign-out", { cookie: again.cookie, csrf: again.csrf }));
    expect(out).toEqual({ status: 204, body: null, cacheControl: "no-store", setCookie: "plantgate_console=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure", contentType: null });
    expect(await h.storage.sessions.get(await hashOf(again.sessionId))).toBeNull();
    expect((await read(await call(h.app, "GET", "/api/session", { cookie: again.cookie }))).body).toEqual(NOT_SIGNED_IN);

    await h.app.admin.createAccount({ username: "eve", password: "eve-password-1", roles: ["admin"] });
    const eve = await signIn(h.app, "eve", "eve-password-1");
    const eve2 = await signIn(h.app, "eve", "eve-password-1");
    // Disabled outside the console (CLI, app.admin): every session of the account is deleted at
    // once, so enabling it again brings none back.
    await h.app.admin.setAccountEnabled("eve", false);
    expect(await h.storage.sessions.get(await hashOf(eve.sessionId))).toBeNull();
    expect(await h.storage.sessions.get(await hashOf(eve2.sessionId))).toBeNull();
    await h.app.admin.setAccountEnabled("eve", true);
    for (const s of [eve, eve2]) expect((await read(await call(h.app, "GET", "/api/session", { cookie: s.cookie }))).body).toEqual(NOT_SIGNED_IN);
    // Disabled through the console: the same.
    const root2 = await signIn(h.app);
    const eveId = (await h.storage.accounts.findByUsername("eve"))!.id;
    const eve3 = await signIn(h.app, "eve", "eve-password-1");
    expect((await call(h.app, "POST", `/api/accounts/${eveId}/disable`, { cookie: root2.cookie, csrf: root2.csrf })).status).toBe(200);
    expect(await h.storage.sessions.get(await hashOf(eve3.sessionId))).toBeNull();
    expect((await call(h.app, "GET", "/api/clients", { cookie: eve3.cookie })).status).toBe(401);
  });

  it("a session's cookie only works with its own id: the stored hash or the CSRF token is no cookie", async () => {
    const h = await consoleHarness();
    const root = await signIn(h.app);
    for (const value of [await hashOf(root.sessionId), root.csrf]) {
      expect((await call(h.app, "GET", "/api/session", { cookie: `plantgate_console=${value}` })).status).toBe(401);
    }
    const ok = await read(await call(h.app, "GET", "/api/session", { cookie: `theme=dark; ${root.cookie}; x=1` }));
    expect([ok.status, ok.body]).toEqual([200, { ...SESSION_BODY, csrfToken: root.csrf }]);
  });
});

describe("console: brute-force defence on sign-in", () => {
  it("10 failures lock the username (429 even with the right password), shared with the password grant", async () => {
    const h = await consoleHarness();
    for (let i = 0; i < 10; i++) {
      expect((await call(h.app, "POST", "/api/session", { body: { username: "root", password: `guess-${i}` } })).status).toBe(401);
    }
    const locked = await call(h.app, "POST", "/api/session", { body: ADMIN });
    expect(locked.status).toBe(429);
    expect(locked.headers.get("retry-after")).toBe("900");
    expect(locked.headers.get("set-cookie")).toBeNull();
    expect(await locked.json()).toEqual({ error: 1429, message: "Too many failed attempts; retry after the time in Retry-After." });
    // The same counter guards the password grant for this username.
    const grant = await tokenRequest(h.app, { grant_type: "password", username: "root", password: ADMIN.password }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(grant.status).toBe(429);
    // Other users are not affected, and the lock ends with its window.
    await h.app.admin.createAccount({ username: "eve", password: "eve-password-1", roles: ["admin"] });
    expect((await call(h.app, "POST", "/api/session", { body: { username: "eve", password: "eve-password-1" } })).status).toBe(200);
    h.clock.advance(15 * 60 * 1000);
    expect((await call(h.app, "POST", "/api/session", { body: ADMIN })).status).toBe(200);
  });

  it("failures at the token endpoint count for console sign-in too", async () => {
    const h = await consoleHarness();
    for (let i = 0; i < 10; i++) {
      const r = await tokenRequest(h.app, { grant_type: "password", username: "root", password: `guess-${i}` }, { authorization: basic(h.clientId, h.clientSecret) });
      expect(r.status).toBe(400);
    }
    expect((await call(h.app, "POST", "/api/session", { body: ADMIN })).status).toBe(429);
  });

  it("guesses at many usernames from one address spend that address's budget (3 × maxFailures), not other addresses' (finding 2)", async () => {
    const h = await consoleHarness();
    // Someone guesses at 30 usernames from one address: each new username used to cost a full
    // password hash without ever meeting a limit.
    for (let i = 0; i < 30; i++) {
      expect((await call(h.app, "POST", "/api/session", { body: { username: `user-${i}`, password: "guess-123" }, clientIp: "198.51.100.7" })).status).toBe(401);
    }
    // That address is now refused for the window, whoever signs in from it (the documented trade-off
    // behind a shared NAT)...
    const refused = await call(h.app, "POST", "/api/session", { body: { username: "user-31", password: "guess-123" }, clientIp: "198.51.100.7" });
    expect([refused.status, refused.headers.get("retry-after")]).toEqual([429, "900"]);
    // ...while root signs in from anywhere else.
    expect((await call(h.app, "POST", "/api/session", { body: ADMIN, clientIp: "198.51.100.8" })).status).toBe(200);
  });

  it("one address guessing root's password locks only itself; a distributed guess meets the 5 × maxFailures ceiling", async () => {
    const h = await consoleHarness({ bruteForce: { maxFailures: 3, windowSeconds: 60 } });
    const guess = (ip: string, password = "guess-123") => call(h.app, "POST", "/api/session", { body: { username: "root", password }, clientIp: ip });
    for (let i = 0; i < 3; i++) expect((await guess("203.0.113.66")).status).toBe(401);
    for (let i = 0; i < 20; i++) expect((await guess("203.0.113.66")).status).toBe(429);
    expect((await guess("203.0.113.66", ADMIN.password)).status).toBe(429);
    expect((await call(h.app, "POST", "/api/session", { body: ADMIN, clientIp: "198.51.100.7" })).status).toBe(200);
    // The success reset the username's counter; now 15 addresses with one guess each.
    for (let i = 0; i < 15; i++) expect((await guess(`192.0.2.${i + 1}`)).status).toBe(401);
    const locked = await call(h.app, "POST", "/api/session", { body: ADMIN, clientIp: "198.51.100.7" });
    expect(locked.status).toBe(429);
    expect(locked.headers.get("retry-after")).toBe("60");
  });

  it("50 concurrent wrong passwords with maxFailures 3: exactly 3 answered 401, 47 answered 429", async () => {
    // The per-instance cap on concurrent password checks (brute-force.test.ts) is lifted: this is
    // about the counters, and every 429 here is the lock-out's.
    const h = await consoleHarness({ bruteForce: { maxFailures: 3, windowSeconds: 60 }, maxConcurrentPasswordChecks: 100 });
    const all = await Promise.all(
      Array.from({ length: 50 }, (_, i) => call(h.app, "POST", "/api/session", { body: { username: "root", password: `guess-${i}` }, clientIp: "203.0.113.66" })),
    );
    const statuses = all.map((r) => r.status);
    expect([statuses.filter((s) => s === 401).length, statuses.filter((s) => s === 429).length]).toEqual([3, 47]);
    for (const r of all.filter((r) => r.status === 429)) expect(r.headers.get("retry-after")).toBe("60");
  });

  it("a successful sign-in resets the username's counter", async () => {
    const h = await consoleHarness();
    for (let i = 0; i < 9; i++) await call(h.app, "POST", "/api/session", { body: { username: "root", password: `guess-${i}` } });
    await signIn(h.app);
    for (let i = 0; i < 9; i++) await call(h.app, "POST", "/api/session", { body: { username: "root", password: `guess-${i}` } });
    expect((await call(h.app, "POST", "/api/session", { body: ADMIN })).status).toBe(200);
    // The password grant still works for a user whose console sign-in failed a few times.
    await passwordTokens(h);
  });
});

describe("console: a shortened session lifetime", () => {
  it("reaches sessions already signed in: an app over the same store with a shorter sessionTtlSeconds ends them at createdAt + the new lifetime; a longer one does not lengthen them", async () => {
    // The absolute lifetime alone (the idle timeout has its own tests below).
    const h = await consoleHarness({ console: { enabled: true, idleTimeoutSeconds: 0 } });
    const session = await signIn(h.app);
    expect(session.body.expiresAt).toBe("2026-01-01T08:00:00.000Z");
    const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };
    const shorter = createPlantgate({ ...quiet, storage: h.storage, clock: h.clock.now, console: { enabled: true, sessionTtlSeconds: 600, idleTimeoutSeconds: 0 } });
    const longer = createPlantgate({ ...quiet, storage: h.storage, clock: h.clock.now, console: { enabled: true, sessionTtlSeconds: 24 * 3600, idleTimeoutSeconds: 0 } });
    // GET /session tells the end the serving app will hold it to.
    const now = await read(await call(shorter, "GET", "/api/session", { cookie: session.cookie }));
    expect([now.status, (now.body as { expiresAt: string }).expiresAt]).toEqual([200, "2026-01-01T00:10:00.000Z"]);
    h.clock.advance(600 * 1000 - 1);
    expect((await call(shorter, "GET", "/api/session", { cookie: session.cookie })).status).toBe(200);
    h.clock.advance(1);
    const ended = await read(await call(shorter, "GET", "/api/session", { cookie: session.cookie }));
    expect([ended.status, ended.body]).toEqual([401, NOT_SIGNED_IN]);
    // Ended, not paused: the original app does not bring it back.
    expect((await call(h.app, "GET", "/api/session", { cookie: session.cookie })).status).toBe(401);

    const second = await signIn(h.app);
    const held = await read(await call(longer, "GET", "/api/session", { cookie: second.cookie }));
    expect([held.status, (held.body as { expiresAt: string }).expiresAt]).toEqual([200, "2026-01-01T08:10:00.000Z"]);
    h.clock.advance(8 * 3600 * 1000);
    expect((await call(longer, "GET", "/api/session", { cookie: second.cookie })).status).toBe(401);
  });
});

describe("console: the idle timeout (console.idleTimeoutSeconds, default 30 minutes)", () => {
  const CLEARED = "plantgate_console=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure";
  const MIN = 60 * 1000;
  const endOf = async (res: Response) => {
    const r = await read(res);
    return [r.status, (r.body as { expiresAt?: string }).expiresAt ?? r.body, r.setCookie] as const;
  };

  it("a session idle for its whole window gets the expired session's answer: 401 1301, cookie cleared, the session deleted; one request before the end was still served", async () => {
    const h = await consoleHarness();
    const idle = await signIn(h.app);
    // The cookie still lives the whole lifetime (the server holds the idle end).
    expect(idle.setCookie).toMatch(/; Max-Age=28800; HttpOnly; SameSite=Strict; Secure$/);
    expect(idle.body.expiresAt).toBe("2026-01-01T00:30:00.000Z");
    const other = await signIn(h.app);
    h.clock.advance(30 * MIN - 1);
    expect(await endOf(await call(h.app, "GET", "/api/session", { cookie: other.cookie }))).toEqual([200, "2026-01-01T00:59:59.999Z", null]);
    h.clock.advance(1);
    const ended = await read(await call(h.app, "GET", "/api/session", { cookie: idle.cookie }));
    expect([ended.status, ended.body, ended.setCookie]).toEqual([401, NOT_SIGNED_IN, CLEARED]);
    expect(await h.storage.sessions.get(await hashOf(idle.sessionId))).toBeNull();
    // A state-changing call with the idle session's CSRF token is refused the same way.
    const post = await read(await call(h.app, "POST", "/api/session/sign-out", { cookie: idle.cookie, csrf: idle.csrf }));
    expect([post.status, post.body, post.setCookie]).toEqual([401, NOT_SIGNED_IN, CLEARED]);
  });

  it("an active session lives on: a request every 20 minutes moves its end to 30 minutes on, until the absolute lifetime (8 h from sign-in) ends it anyway", async () => {
    const h = await consoleHarness();
    const root = await signIn(h.app);
    const hash = await hashOf(root.sessionId);
    for (let minutes = 20; minutes < 8 * 60; minutes += 20) {
      h.clock.advance(20 * MIN);
      const end = new Date(Math.min(Date.UTC(2026, 0, 1, 0, minutes + 30), Date.UTC(2026, 0, 1, 8)));
      expect(await endOf(await call(h.app, "GET", "/api/clients", { cookie: root.cookie })), `at +${minutes} min`).toEqual([200, expect.anything(), null]);
      expect((await h.storage.sessions.get(hash))?.expiresAt, `stored end at +${minutes} min`).toBe(end.getTime());
    }
    // 7:40 now; the last request moved the end only to 8:00, the absolute lifetime.
    h.clock.advance(20 * MIN - 1);
    expect(await endOf(await call(h.app, "GET", "/api/session", { cookie: root.cookie }))).toEqual([200, "2026-01-01T08:00:00.000Z", null]);
    h.clock.advance(1);
    const ended = await read(await call(h.app, "GET", "/api/session", { cookie: root.cookie }));
    expect([ended.status, ended.body, ended.setCookie]).toEqual([401, NOT_SIGNED_IN, CLEARED]);
  });

  it("a busy console does not write on every request: the stored end moves only when it would move by more than a step (60 s; a tenth of a shorter window)", async () => {
    const h = await consoleHarness();
    const root = await signIn(h.app);
    const hash = await hashOf(root.sessionId);
    const storedEnd = async () => new Date((await h.storage.sessions.get(hash))!.expiresAt).toISOString();
    for (let i = 0; i < 6; i++) {
      h.clock.advance(10 * 1000);
      // GET /session tells the end held in storage, the one the next request is judged by.
      expect(await endOf(await call(h.app, "GET", "/api/session", { cookie: root.cookie }))).toEqual([200, "2026-01-01T00:30:00.000Z", null]);
    }
    expect(await storedEnd()).toBe("2026-01-01T00:30:00.000Z");
    h.clock.advance(1);
    expect(await endOf(await call(h.app, "GET", "/api/session", { cookie: root.cookie }))).toEqual([200, "2026-01-01T00:31:00.001Z", null]);
    expect(await storedEnd()).toBe("2026-01-01T00:31:00.001Z");

    // A 5-minute window: the step is 30 s.
    const short = await consoleHarness({ console: { enabled: true, idleTimeoutSeconds: 300 } });
    const s = await signIn(short.app);
    expect(s.body.expiresAt).toBe("2026-01-01T00:05:00.000Z");
    short.clock.advance(30 * 1000);
    expect(await endOf(await call(short.app, "GET", "/api/session", { cookie: s.cookie }))).toEqual([200, "2026-01-01T00:05:00.000Z", null]);
    short.clock.advance(1);
    expect(await endOf(await call(short.app, "GET", "/api/session", { cookie: s.cookie }))).toEqual([200, "2026-01-01T00:05:30.001Z", null]);
  });

  it("an active session lives its whole lifetime: a last move to the lifetime's end shorter than a step is written (once), not left a step short", async () => {
    const h = await consoleHarness();
    const root = await signIn(h.app);
    const hash = await hashOf(root.sessionId);
    // A request at 7:29:50 moves the end to 7:59:50; one at 7:30:20 moves it 10 s, to the
    // lifetime's end at 8:00: less than the 60 s step, written all the same.
    for (let minutes = 20; minutes <= 7 * 60 + 20; minutes += 20) {
      h.clock.advance(20 * MIN);
      expect((await call(h.app, "GET", "/api/clients", { cookie: root.cookie })).status, `at +${minutes} min`).toBe(200);
    }
    h.clock.advance(9 * MIN + 50 * 1000);
    expect(await endOf(await call(h.app, "GET", "/api/clients", { cookie: root.cookie }))).toEqual([200, expect.anything(), null]);
    expect((await h.storage.sessions.get(hash))?.expiresAt).toBe(Date.UTC(2026, 0, 1, 7, 59, 50));
    const touch = vi.spyOn(h.storage.sessions, "touch");
    h.clock.advance(30 * 1000);
    expect(await endOf(await call(h.app, "GET", "/api/session", { cookie: root.cookie }))).toEqual([200, "2026-01-01T08:00:00.000Z", null]);
    expect((await h.storage.sessions.get(hash))?.expiresAt).toBe(Date.UTC(2026, 0, 1, 8));
    expect(touch).toHaveBeenCalledTimes(1);
    // At the lifetime's end nothing more is written.
    touch.mockClear();
    h.clock.advance(10 * MIN);
    expect(await endOf(await call(h.app, "GET", "/api/session", { cookie: root.cookie }))).toEqual([200, "2026-01-01T08:00:00.000Z", null]);
    expect(touch).not.toHaveBeenCalled();
    h.clock.advance(20 * MIN - 20 * 1000 - 1);
    expect((await call(h.app, "GET", "/api/session", { cookie: root.cookie })).status).toBe(200);
    h.clock.advance(1);
    const ended = await read(await call(h.app, "GET", "/api/session", { cookie: root.cookie }));
    expect([ended.status, ended.body, ended.setCookie]).toEqual([401, NOT_SIGNED_IN, CLEARED]);
  });

  it("a refused request does not keep a session alive: a wrong CSRF token (403 1303) moves no end", async () => {
    const h = await consoleHarness();
    const root = await signIn(h.app);
    h.clock.advance(20 * MIN);
    const refused = await read(await call(h.app, "POST", "/api/clients", { cookie: root.cookie, csrf: "wrong", body: { clientId: "x" } }));
    expect([refused.status, refused.body]).toEqual([403, CSRF]);
    expect((await h.storage.sessions.get(await hashOf(root.sessionId)))?.expiresAt).toBe(Date.UTC(2026, 0, 1, 0, 30));
    h.clock.advance(10 * MIN);
    expect((await call(h.app, "GET", "/api/session", { cookie: root.cookie })).status).toBe(401);
  });

  it("over a store without sessions.touch: set, the app refuses to start (ConfigError naming the option); unset, a warn at start and the absolute lifetime alone; 0 is off everywhere", async () => {
    const { touch: _, ...sessions } = createMemoryStorage().sessions;
    const storage = { ...createMemoryStorage(), sessions };
    const warnings: string[] = [];
    const logger = { error() {}, warn: (m: string) => void warnings.push(m) };
    const base = { logger, passwordHashIterations: 1000, storage, clock: () => Date.UTC(2026, 0, 1) };
    expect(() => createPlantgate({ ...base, console: { enabled: true, idleTimeoutSeconds: 600 } })).toThrow(
      new ConfigError(
        "console.idleTimeoutSeconds (PLANTGATE_CONSOLE_IDLE_TIMEOUT) is set but the storage has no sessions.touch, which the idle timeout needs; add it (README, Writing a storage backend) or set it to 0",
      ),
    );
    expect(warnings).toEqual([]);
    const app = createPlantgate({ ...base, console: { enabled: true } });
    expect(warnings).toEqual([
      "plantgate: the storage has no sessions.touch, so console sessions have no idle timeout (only console.sessionTtlSeconds ends them); add it (README, Writing a storage backend), or set console.idleTimeoutSeconds to 0 to say so",
    ]);
    await app.admin.createAccount({ ...ADMIN, roles: ["admin"] });
    expect((await signIn(app)).body.expiresAt).toBe("2026-01-01T08:00:00.000Z");
    warnings.length = 0;
    createPlantgate({ ...base, console: { enabled: true, idleTimeoutSeconds: 0 } });
    createPlantgate({ ...base });
    expect(warnings, "0, or no console: nothing to say").toEqual([]);
    expect(() => createPlantgate({ ...base, console: { enabled: true, idleTimeoutSeconds: -1 } })).toThrow(
      new TypeError("console.idleTimeoutSeconds must be a non-negative integer (0 turns it off)"),
    );
    expect(() => createPlantgate({ ...base, console: { enabled: true, idleTimeoutSeconds: 1.5 } })).toThrow(TypeError);
    expect(() => createPlantgate({ ...base, console: { enabled: true, idleTimeoutSeconds: 315_360_001 } })).toThrow(
      new TypeError("console.idleTimeoutSeconds must be at most 315360000"),
    );
  });
});
