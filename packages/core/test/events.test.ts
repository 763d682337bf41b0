/**
 * Security events (`onEvent`): every type, emitted where it happens, with its whole shape; a hook
 * that throws, rejects or never settles leaves every answer as it was; no event ever holds a
 * secret, password, token or hash that was sent or stored.
 */
import { describe, expect, it } from "vitest";
import { AuditNotKeptError, createMemoryStorage, createPlantgate, refreshTokenKey, sha256, SECURITY_EVENT_TYPES, StorageError, type PlantgateOptions, type SecurityEvent, type SecurityEventType } from "../src/index.js";
import { basic, BASE, harness, tokenRequest, type Harness } from "./helpers.js";
import { ADMIN, call, consoleHarness, signIn } from "./console-helpers.js";

const IP = "198.51.100.7";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function post(h: Harness, path: string, form: Record<string, string>, authorization: string | null = basic(h.clientId, h.clientSecret)) {
  return h.app.fetch(
    new Request(`${BASE}${path}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...(authorization !== null ? { authorization } : {}) },
      body: new URLSearchParams(form).toString(),
    }),
    { clientIp: IP },
  );
}
const token = (h: Harness, form: Record<string, string>, authorization?: string | null) => post(h, "/UserService/connect/token", form, authorization);

/** A harness whose events are collected; `take()` flushes and returns (and forgets) them. */
async function recorded(options: PlantgateOptions = {}) {
  const events: SecurityEvent[] = [];
  const h = await harness({ onEvent: (e) => void events.push(e), ...options });
  const take = async () => {
    await h.app.flushEvents();
    return events.splice(0);
  };
  await take();
  return { h, take, all: events };
}

/** The event's own fields, after checking `id` and `time`. */
function fields(e: SecurityEvent, time: number): Record<string, unknown> {
  const { id, time: t, ...rest } = e;
  expect(id).toMatch(UUID);
  expect(t).toBe(time);
  return rest;
}

describe("security events", () => {
  it("token.issued for client_credentials: grant, client, subject, scope, jti, expiry, client IP", async () => {
    const { h, take } = await recorded();
    const res = await token(h, { grant_type: "client_credentials", scope: "Platform_AllAppsServerCommands" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string };
    const claims = JSON.parse(atob(body.access_token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as { jti: string; exp: number };
    const [e, ...more] = await take();
    expect(more).toEqual([]);
    expect(fields(e!, h.clock.now())).toStrictEqual({
      type: "token.issued",
      grant_type: "client_credentials",
      client_id: "app-1",
      subject: "client:app-1",
      scope: "Platform_AllAppsServerCommands",
      jti: claims.jti,
      expires_at: claims.exp * 1000,
      family_id: null,
      client_ip: IP,
    });
    // The site's own object, stamped: `type` leads a JSON line of it, `id` and `time` close it.
    expect(Object.keys(e!)[0], "type leads a JSON line").toBe("type");
    expect(Object.keys(e!).slice(-2)).toEqual(["id", "time"]);
    expect(Object.isFrozen(e)).toBe(true);
  });

  it("password grant, refresh, grace replay and reuse: token.issued, token.refreshed, refresh_token.reuse_detected", async () => {
    const { h, take } = await recorded();
    const account = (await h.app.storage.accounts.findByUsername("alice"))!;
    const first = (await (await token(h, { grant_type: "password", username: "alice", password: h.password, scope: "Platform_UserAPIs offline_access" })).json()) as { refresh_token: string };
    const [issued] = await take();
    const familyId = (await h.app.storage.refreshTokens.findByHash(await refreshTokenKey(sha256, first.refresh_token)))!.familyId;
    expect(fields(issued!, h.clock.now())).toMatchObject({ type: "token.issued", grant_type: "password", subject: account.id, family_id: familyId, scope: "Platform_UserAPIs offline_access" });

    h.clock.advance(1000);
    expect((await token(h, { grant_type: "refresh_token", refresh_token: first.refresh_token })).status).toBe(200);
    const rotation = await take();
    expect(rotation.map((e) => fields(e, h.clock.now()))).toStrictEqual([
      { type: "token.refreshed", client_id: "app-1", account_id: account.id, family_id: familyId, scope: "Platform_UserAPIs offline_access", replay: false, client_ip: IP },
      expect.objectContaining({ type: "token.issued", grant_type: "refresh_token", subject: account.id, family_id: familyId }),
    ]);

    // Within the grace window: the rotation's answer again, a replay.
    h.clock.advance(1000);
    expect((await token(h, { grant_type: "refresh_token", refresh_token: first.refresh_token })).status).toBe(200);
    expect((await take()).map((e) => fields(e, h.clock.now()))).toStrictEqual([
      { type: "token.refreshed", client_id: "app-1", account_id: account.id, family_id: familyId, scope: "Platform_UserAPIs offline_access", replay: true, client_ip: IP },
    ]);

    // A replay for a narrower scope gets a fresh access token, of the same family.
    h.clock.advance(1000);
    expect((await token(h, { grant_type: "refresh_token", refresh_token: first.refresh_token, scope: "Platform_UserAPIs" })).status).toBe(200);
    expect((await take()).map((e) => fields(e, h.clock.now()))).toStrictEqual([
      expect.objectContaining({ type: "token.issued", grant_type: "refresh_token", subject: account.id, scope: "Platform_UserAPIs", family_id: familyId }),
      { type: "token.refreshed", client_id: "app-1", account_id: account.id, family_id: familyId, scope: "Platform_UserAPIs", replay: true, client_ip: IP },
    ]);

    // After the window: reuse, the family is revoked.
    h.clock.advance(60_000);
    expect((await token(h, { grant_type: "refresh_token", refresh_token: first.refresh_token })).status).toBe(400);
    expect((await take()).map((e) => fields(e, h.clock.now()))).toStrictEqual([
      { type: "refresh_token.reuse_detected", family_id: familyId, client_id: "app-1", account_id: account.id, client_ip: IP },
    ]);
  });

  it("client.authentication_failed: invalid secret, unknown client, malformed, throttled", async () => {
    const { h, take } = await recorded({ bruteForce: { maxFailures: 2, windowSeconds: 60 } });
    const cc = { grant_type: "client_credentials" };
    expect((await token(h, cc, basic("app-1", "wrong-secret-wrong-secret"))).status).toBe(401);
    expect((await token(h, cc, basic("nobody", "wrong-secret-wrong-secret"))).status).toBe(401);
    expect((await token(h, cc, "Basic !!!")).status).toBe(401);
    expect((await token(h, cc, null)).status).toBe(401);
    expect((await token(h, cc, basic("app-1", "wrong-secret-wrong-secret"))).status).toBe(401);
    expect((await token(h, cc, basic("app-1", h.clientSecret))).status).toBe(429);
    const failed = (client_id: string | null, reason: string) => ({ type: "client.authentication_failed", client_id, reason, client_ip: IP });
    expect((await take()).map((e) => fields(e, h.clock.now()))).toStrictEqual([
      failed("app-1", "invalid_secret"),
      failed(null, "unknown_client"),
      failed(null, "malformed"),
      failed(null, "malformed"),
      failed("app-1", "invalid_secret"),
      // Since 2026-12-03 a throttled refusal names the counter that refused it, and its count within the lock.
      { ...failed("app-1", "throttled"), lock: "client_address", refused_count: 1 },
    ]);
  });

  it("account.login_failed (unknown username, invalid password, disabled, throttled) and one account.locked_out", async () => {
    const { h, take } = await recorded({ bruteForce: { maxFailures: 2, windowSeconds: 60 } });
    await h.app.admin.createAccount({ username: "bob", password: "bob-password-1", enabled: false });
    await take();
    const pw = (username: string, password: string) => token(h, { grant_type: "password", username, password });
    expect((await pw("nobody", "whatever-password")).status).toBe(400);
    expect((await pw("bob", "bob-password-1")).status).toBe(400);
    expect((await pw("alice", "not-her-password")).status).toBe(400);
    expect((await pw("alice", "not-her-password")).status).toBe(400);
    expect((await pw("alice", h.password)).status).toBe(429);
    expect((await pw("alice", h.password)).status).toBe(429);
    expect((await pw("alice", h.password)).status).toBe(429);
    expect((await pw("alice", h.password)).status).toBe(429);
    const failed = (username: string | null, reason: string) => ({ type: "account.login_failed", username, reason, source: "password_grant", client_id: "app-1", client_ip: IP });
    // Since 2026-12-03 the refusals within a lock make events at their 1st, 2nd, 4th, ... only
    // (each with its count; the 3rd makes none), where each made one before.
    expect((await take()).map((e) => fields(e, h.clock.now()))).toStrictEqual([
      failed(null, "unknown_username"),
      failed("bob", "account_disabled"),
      failed("alice", "invalid_password"),
      failed("alice", "invalid_password"),
      { type: "account.locked_out", username: "alice", lock: "username_address", source: "password_grant", client_id: "app-1", locked_until: h.clock.now() + 60_000, client_ip: IP },
      { ...failed("alice", "throttled"), refused_count: 1 },
      { ...failed("alice", "throttled"), refused_count: 2 },
      { ...failed("alice", "throttled"), refused_count: 4 },
    ]);
  });

  it("a throttled sign-in is answered 429 even when the account lookup that names its username fails; the events then name no one", async () => {
    const storage = createMemoryStorage();
    const { h, take } = await recorded({ storage, bruteForce: { maxFailures: 1, windowSeconds: 60 } });
    const pw = (password: string) => token(h, { grant_type: "password", username: "alice", password });
    expect((await pw("not-her-password")).status).toBe(400);
    const lookups: string[] = [];
    let fail!: () => void;
    const gate = new Promise<void>((resolve) => (fail = resolve));
    storage.accounts.findByUsername = async (username) => {
      lookups.push(username);
      await gate;
      throw new StorageError("database unreachable");
    };
    // The 429 arrives while the lookup is still pending: it is not on the request's path.
    const locked = await pw(h.password);
    expect(locked.status).toBe(429);
    expect((await locked.json()).error).toBe("temporarily_unavailable");
    expect(lookups).toEqual(["alice"]);
    fail();
    const failed = (username: string | null, reason: string) => ({ type: "account.login_failed", username, reason, source: "password_grant", client_id: "app-1", client_ip: IP });
    expect((await take()).map((e) => fields(e, h.clock.now()))).toStrictEqual([
      failed("alice", "invalid_password"),
      { type: "account.locked_out", username: null, lock: "username_address", source: "password_grant", client_id: "app-1", locked_until: h.clock.now() + 60_000, client_ip: IP },
      { ...failed(null, "throttled"), refused_count: 1 },
    ]);
    expect(lookups, "the lookup for the events only, after the answer").toEqual(["alice"]);
  });

  it("a flood at a locked account: the lookups for its events hold password-check slots, so no more than maxConcurrentPasswordChecks run at once", async () => {
    const storage = createMemoryStorage();
    const { h, take } = await recorded({ storage, maxConcurrentPasswordChecks: 2, bruteForce: { maxFailures: 1, windowSeconds: 60 } });
    const pw = () => token(h, { grant_type: "password", username: "alice", password: "not-her-password" });
    expect((await pw()).status).toBe(400);
    let running = 0;
    let peak = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const find = storage.accounts.findByUsername.bind(storage.accounts);
    storage.accounts.findByUsername = async (username) => {
      peak = Math.max(peak, ++running);
      await gate;
      running--;
      return find(username);
    };
    const answers = await Promise.all(Array.from({ length: 20 }, () => pw()));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(429));
    expect(peak, "lookups at once").toBe(2);
    release();
    await take();
    // The slots are free again once the lookups are done.
    expect((await pw()).status).toBe(429);
    await take();
    expect(running).toBe(0);
  });

  it("busy refusals (maxConcurrentPasswordChecks checks running): only the 1st, 2nd, 4th, ... of each minute of the clock makes an event, with its refused_count", async () => {
    // Until 2026-12-03 each busy refusal made an event: a flood at the console sign-in (no client
    // needed) while the checks were held busy wrote an audit row per request, for its retention.
    const storage = createMemoryStorage();
    const { h, take } = await recorded({ storage, maxConcurrentPasswordChecks: 1 });
    const find = storage.accounts.findByUsername.bind(storage.accounts);
    /** The one password check's lookup waits (holding the only slot) until `release()`; `inside` resolves once it does. */
    const hold = () => {
      let release!: () => void;
      let entered!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const inside = new Promise<void>((resolve) => (entered = resolve));
      storage.accounts.findByUsername = async (username) => {
        entered();
        await gate;
        return find(username);
      };
      return { release, inside };
    };
    const pw = () => token(h, { grant_type: "password", username: "alice", password: h.password });
    const busy = (n: number) => ({ type: "account.login_failed", username: null, reason: "busy", source: "password_grant", client_id: "app-1", client_ip: IP, refused_count: n });
    const busyEvents = async () => (await take()).filter((e) => e.type === "account.login_failed").map((e) => fields(e, h.clock.now()));
    // 101 at once: whichever takes the slot first (the client secret checks finish in any order)
    // holds it; the other 100 are refused. Released only once they all have their answer.
    const first = hold();
    const statuses: number[] = [];
    const all = Array.from({ length: 101 }, () => pw().then((r) => void statuses.push(r.status)));
    await first.inside;
    while (statuses.length < 100) await new Promise((resolve) => setTimeout(resolve, 5));
    first.release();
    await Promise.all(all);
    expect([statuses.filter((s) => s === 429).length, statuses.filter((s) => s === 200).length]).toEqual([100, 1]);
    expect(await busyEvents()).toStrictEqual([1, 2, 4, 8, 16, 32, 64].map(busy));
    // The next minute of the clock counts from 1 again.
    h.clock.advance(60_000);
    const second = hold();
    const held = pw();
    await second.inside;
    for (let i = 0; i < 3; i++) expect((await pw()).status).toBe(429);
    second.release();
    expect((await held).status).toBe(200);
    expect(await busyEvents()).toStrictEqual([1, 2].map(busy));
  });

  it("token.revoked for an access token (jti) and a refresh token (family)", async () => {
    const { h, take } = await recorded();
    const t = (await (await token(h, { grant_type: "password", username: "alice", password: h.password, scope: "Platform_UserAPIs offline_access" })).json()) as { access_token: string; refresh_token: string };
    const [issued] = (await take()) as [Extract<SecurityEvent, { type: "token.issued" }>];
    expect((await post(h, "/UserService/connect/revocation", { token: t.access_token })).status).toBe(200);
    expect((await post(h, "/UserService/connect/revocation", { token: t.refresh_token })).status).toBe(200);
    expect((await take()).map((e) => fields(e, h.clock.now()))).toStrictEqual([
      { type: "token.revoked", client_id: "app-1", account_id: issued.subject, token_type: "access_token", jti: issued.jti, family_id: null, client_ip: IP },
      { type: "token.revoked", client_id: "app-1", account_id: issued.subject, token_type: "refresh_token", jti: null, family_id: issued.family_id, client_ip: IP },
    ]);
  });

  it("administrative events from app.admin: clients, accounts, signing keys (actor null)", async () => {
    const { h, take } = await recorded();
    await h.app.admin.createClient({ clientId: "reports", name: "Reports", grantTypes: ["client_credentials"], scopes: ["Platform_AllAppsServerCommands"] });
    await h.app.admin.rotateClientSecret("reports");
    await h.app.admin.deleteClient("reports");
    const carol = await h.app.admin.createAccount({ username: "carol", password: "carol-password", roles: ["ops"] });
    const [dave] = await h.app.admin.importAccounts([{ username: "dave", password: "dave-password", enabled: false }]);
    await h.app.admin.setAccountEnabled("carol", false);
    await h.app.admin.setAccountEnabled("carol", false);
    await h.app.admin.setAccountEnabled("carol", true);
    await h.app.jwks(); // the first key, as a server's start makes it (listing makes none)
    const [previous] = await h.app.admin.listSigningKeys();
    const rotated = await h.app.admin.rotateSigningKey({ now: true });
    const now = h.clock.now();
    // Revocable once every instance has re-read the keys since the rotation.
    h.clock.advance(60_000);
    await h.app.admin.revokeSigningKey(previous!.kid);
    expect((await take()).map((e) => fields(e, e.type === "signing_key.revoked" ? now + 60_000 : now))).toStrictEqual([
      { type: "client.created", client_id: "reports", name: "Reports", grant_types: ["client_credentials"], scopes: ["Platform_AllAppsServerCommands"], actor: null },
      { type: "client.secret_rotated", client_id: "reports", actor: null },
      { type: "client.deleted", client_id: "reports", actor: null },
      { type: "account.created", account_id: carol.id, username: "carol", roles: ["ops"], enabled: true, actor: null },
      { type: "account.created", account_id: dave!.id, username: "dave", roles: [], enabled: false, actor: null },
      { type: "account.disabled", account_id: carol.id, username: "carol", actor: null },
      { type: "account.enabled", account_id: carol.id, username: "carol", actor: null },
      { type: "signing_key.rotated", kid: rotated.kid, alg: "ES256", activates_at: now, immediate: true, automatic: false, deleted: [], cancelled: [], actor: null },
      { type: "signing_key.revoked", kid: previous!.kid, status: "retired", deleted: [], actor: null },
    ]);
  });

  it("signing_key.rotated from automatic rotation (actor null, automatic true)", async () => {
    const { h, take } = await recorded({ signingKeyMaxAgeSeconds: 3600 });
    await h.app.jwks();
    await take();
    h.clock.advance(3600_000);
    await h.app.jwks();
    const events = await take();
    expect(events.map((e) => e.type)).toEqual(["signing_key.rotated"]);
    const keys = await h.app.storage.signingKeys.list();
    const next = keys.find((k) => k.activatesAt > h.clock.now())!;
    expect(fields(events[0]!, h.clock.now())).toStrictEqual({
      type: "signing_key.rotated",
      kid: next.kid,
      alg: "ES256",
      activates_at: next.activatesAt,
      immediate: false,
      automatic: true,
      deleted: [],
      cancelled: [],
      actor: null,
    });
  });

  it("signing_key.reencrypted from app.admin (actor null): the kids moved and the KEK they are now under, only when a key moved", async () => {
    const b64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const OLD = b64url(crypto.getRandomValues(new Uint8Array(32)));
    const NEW = b64url(crypto.getRandomValues(new Uint8Array(32)));
    const { h, take } = await recorded({ keyEncryptionKeys: [OLD] });
    await h.app.jwks(); // the first key, sealed under OLD
    const [first] = await h.app.storage.signingKeys.list();
    await take();
    const seen: SecurityEvent[] = [];
    const both = createPlantgate({ storage: h.app.storage, keyEncryptionKeys: [NEW, OLD], clock: h.clock.now, onEvent: (e) => void seen.push(e), logger: { error() {}, warn() {} } });
    await both.admin.reencryptSigningKeys();
    await both.admin.reencryptSigningKeys(); // nothing left to move: no event
    await both.flushEvents();
    const [row] = await h.app.storage.signingKeys.list();
    expect(seen.map((e) => fields(e, h.clock.now()))).toStrictEqual([{ type: "signing_key.reencrypted", reencrypted: [first!.kid], kek: row!.privateJwk.split(":")[2], actor: null }]);
  });

  it("console: signed_in, login_failed (not_admin, invalid password), signed_out, and the administrator as actor", async () => {
    const events: SecurityEvent[] = [];
    const h = await consoleHarness({ onEvent: (e) => void events.push(e) });
    await h.app.flushEvents();
    events.splice(0);
    const admin = (await h.app.storage.accounts.findByUsername(ADMIN.username))!;
    expect((await call(h.app, "POST", "/api/session", { body: { username: "alice", password: h.password }, clientIp: IP })).status).toBe(401);
    expect((await call(h.app, "POST", "/api/session", { body: { username: ADMIN.username, password: "wrong-password" }, clientIp: IP })).status).toBe(401);
    const s = await signIn(h.app, ADMIN.username, ADMIN.password, { clientIp: IP });
    const created = await call(h.app, "POST", "/api/clients", { body: { clientId: "c2", name: "C2" }, cookie: s.cookie, csrf: s.csrf, clientIp: IP });
    expect(created.status).toBe(201);
    // A further secret and its revocation name the administrator too (they named nobody before).
    const added = await call(h.app, "POST", "/api/clients/c2/secrets", { body: {}, cookie: s.cookie, csrf: s.csrf, clientIp: IP });
    expect(added.status).toBe(201);
    const secretId = ((await added.json()) as { secret: { id: string } }).secret.id;
    expect((await call(h.app, "DELETE", `/api/clients/c2/secrets/${secretId}`, { cookie: s.cookie, csrf: s.csrf, clientIp: IP })).status).toBe(204);
    expect((await call(h.app, "POST", "/api/session/sign-out", { cookie: s.cookie, csrf: s.csrf, clientIp: IP })).status).toBe(204);
    await h.app.flushEvents();
    const now = h.clock.now();
    expect(events.map((e) => fields(e, now))).toStrictEqual([
      { type: "account.login_failed", username: "alice", reason: "not_admin", source: "console", client_id: null, client_ip: IP },
      { type: "account.login_failed", username: ADMIN.username, reason: "invalid_password", source: "console", client_id: null, client_ip: IP },
      { type: "console.signed_in", account_id: admin.id, username: ADMIN.username, client_ip: IP },
      { type: "client.created", client_id: "c2", name: "C2", grant_types: ["client_credentials", "password", "refresh_token"], scopes: expect.any(Array), actor: ADMIN.username },
      { type: "client.secret_added", client_id: "c2", secret_id: secretId, actor: ADMIN.username },
      { type: "client.secret_revoked", client_id: "c2", secret_id: secretId, actor: ADMIN.username },
      { type: "console.signed_out", account_id: admin.id, username: ADMIN.username, everywhere: false, sessions_ended: 1, client_ip: IP },
    ]);
  });

  it("every event type of the union is emitted by this suite's flows (the list is complete)", () => {
    const covered: SecurityEventType[] = [
      "token.issued", "token.refreshed", "refresh_token.reuse_detected", "client.authentication_failed", "account.login_failed",
      "account.locked_out", "token.revoked", "client.created", "client.deleted", "client.secret_rotated", "client.secret_added",
      "client.secret_revoked", "signing_key.rotated", "signing_key.revoked", "signing_key.reencrypted", "account.created", "account.disabled",
      "account.enabled", "console.signed_in", "console.signed_out",
    ];
    expect(SECURITY_EVENT_TYPES.filter((t) => !covered.includes(t))).toEqual([]);
  });
});

describe("a failing or slow onEvent hook never changes an answer", () => {
  /** The same requests against an app with the given hook: statuses and bodies, tokens masked. */
  async function run(onEvent: PlantgateOptions["onEvent"], logged: unknown[][] = []) {
    const h = await harness({ ...(onEvent ? { onEvent } : {}), randomBytes: seeded(), logger: { error: (...a: unknown[]) => void logged.push(a), warn() {} } });
    const out: unknown[] = [];
    const answer = async (res: Response) => out.push([res.status, Object.fromEntries(res.headers), (await res.text()).replace(/"(access_token|refresh_token)":"[^"]+"/g, '"$1":"…"')]);
    await answer(await token(h, { grant_type: "client_credentials" }));
    await answer(await token(h, { grant_type: "client_credentials" }, basic("app-1", "wrong-secret-wrong-secret")));
    await answer(await token(h, { grant_type: "password", username: "alice", password: "nope-nope-nope" }));
    await answer(await token(h, { grant_type: "password", username: "alice", password: h.password, scope: "Platform_UserAPIs offline_access" }));
    await h.app.flushEvents();
    return out;
  }
  /** Deterministic random bytes, so two apps issue the same ids. */
  function seeded() {
    let n = 1;
    return (size: number) => Uint8Array.from({ length: size }, () => (n = (n * 48271) % 2147483647) & 0xff);
  }

  it("a throwing, a rejecting and a never-settling hook: the same answers as no hook; failures logged by type and id only", async () => {
    const baseline = await run(undefined);
    const loggedSync: unknown[][] = [];
    expect(await run(() => {
      throw new Error("hook broke");
    }, loggedSync)).toEqual(baseline);
    expect(loggedSync.length).toBeGreaterThanOrEqual(5);
    for (const [message, context] of loggedSync) {
      expect(message).toBe("onEvent hook failed");
      expect(context).toStrictEqual({ type: expect.any(String), id: expect.stringMatching(UUID), error: "hook broke" });
    }
    const loggedAsync: unknown[][] = [];
    expect(await run(async () => Promise.reject(new Error("async hook broke")), loggedAsync)).toEqual(baseline);
    expect(loggedAsync.map((l) => (l[1] as { error: string }).error)).toEqual(loggedSync.map(() => "async hook broke"));

    // A hook that never settles: answers do not wait for it; flushEvents() would without end, and
    // flushEvents(timeoutMs) gives up after the bound, naming how many batches are unfinished.
    const h = await harness({ onEvent: () => new Promise<void>(() => {}) });
    const started = Date.now();
    const res = await token(h, { grant_type: "client_credentials" });
    expect(res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2000);
    const unfinished = await h.app.flushEvents(50);
    expect(unfinished).toBeGreaterThanOrEqual(1);
    expect(await h.app.flushEvents(50)).toBe(unfinished);
  });

  it("an audit store that fails: the answer stands and the failure is logged", async () => {
    const logged: unknown[][] = [];
    const memory = createMemoryStorage({ audit: true });
    const h = await harness({ storage: { ...memory, audit: { ...memory.audit!, append: async () => Promise.reject(new Error("disk full")) } }, logger: { error: (...a: unknown[]) => void logged.push(a), warn() {} } });
    await h.app.flushEvents();
    logged.splice(0);
    expect((await token(h, { grant_type: "client_credentials" })).status).toBe(200);
    await h.app.flushEvents();
    expect(logged).toStrictEqual([["audit store append failed; event not kept", { type: "token.issued", id: expect.stringMatching(UUID), error: "disk full" }]]);
  });

  it("every event a receiver did not take is counted through observer.eventLost (receiver hook or audit, its type); an AuditNotKeptError is counted but not logged (the store said so); an observer that throws changes nothing", async () => {
    // Until 2026-12-03 such losses were log lines only, and an append the SQL store's full queue
    // dropped resolved: no metric saw it.
    const logged: unknown[][] = [];
    const lost: unknown[] = [];
    const memory = createMemoryStorage({ audit: true });
    let failure: Error = new Error("disk full");
    const h = await harness({
      storage: { ...memory, audit: { ...memory.audit!, append: async () => Promise.reject(failure) } },
      onEvent: (e) => {
        if (e.type === "token.issued") throw new Error("webhook down");
      },
      observer: { eventLost: (o) => void lost.push(o) },
      logger: { error: (...a: unknown[]) => void logged.push(a), warn() {} },
    });
    await h.app.flushEvents();
    logged.splice(0);
    lost.splice(0);
    expect((await token(h, { grant_type: "client_credentials" })).status).toBe(200);
    await h.app.flushEvents();
    expect(lost).toStrictEqual([
      { receiver: "hook", type: "token.issued" },
      { receiver: "audit", type: "token.issued" },
    ]);
    expect(logged.map((l) => l[0])).toEqual(["onEvent hook failed", "audit store append failed; event not kept"]);

    // The store's own refusal: counted, no line (the store told its own, once a run of drops).
    failure = new AuditNotKeptError("audit queue full");
    logged.splice(0);
    lost.splice(0);
    expect((await token(h, { grant_type: "client_credentials" }, basic("app-1", "wrong-secret-wrong-secret"))).status).toBe(401);
    await h.app.flushEvents();
    expect(lost).toStrictEqual([{ receiver: "audit", type: "client.authentication_failed" }]);
    expect(logged).toStrictEqual([]);
    expect(new AuditNotKeptError("x")).toBeInstanceOf(StorageError);

    // One of another copy of core (a storage package's nested copy): told by its mark, not instanceof.
    class ForeignNotKept extends Error {}
    Object.defineProperty(ForeignNotKept.prototype, Symbol.for("plantgate.auditNotKept"), { value: true });
    failure = new ForeignNotKept("audit queue full");
    expect(failure instanceof AuditNotKeptError).toBe(false);
    // A hostile error whose every property read throws: counted, and logged (its line is not skipped).
    const hostile = new Proxy(new Error("x"), { get: () => { throw new Error("no reads"); }, getPrototypeOf: () => { throw new Error("no prototype"); } });
    for (const [error, lines] of [[failure, []], [hostile, ["audit store append failed; event not kept"]]] as const) {
      failure = error as Error;
      logged.splice(0);
      lost.splice(0);
      expect((await token(h, { grant_type: "client_credentials" }, basic("app-1", "wrong-secret-wrong-secret"))).status).toBe(401);
      await h.app.flushEvents();
      expect(lost).toStrictEqual([{ receiver: "audit", type: "client.authentication_failed" }]);
      expect(logged.map((l) => l[0])).toEqual(lines);
    }

    // An observer that throws or rejects: the answer and the log line stand, no unhandled rejection.
    for (const eventLost of [() => { throw new Error("observer broke"); }, async () => Promise.reject(new Error("observer rejected"))]) {
      const quiet: unknown[][] = [];
      const fresh = createMemoryStorage({ audit: true });
      const other = await harness({ storage: { ...fresh, audit: { ...fresh.audit!, append: async () => Promise.reject(new Error("disk full")) } }, observer: { eventLost }, logger: { error: (...a: unknown[]) => void quiet.push(a), warn() {} } });
      await other.app.flushEvents();
      quiet.splice(0);
      expect((await token(other, { grant_type: "client_credentials" })).status).toBe(200);
      await other.app.flushEvents();
      await new Promise((r) => setTimeout(r, 10));
      expect(quiet.map((l) => l[0])).toEqual(["audit store append failed; event not kept"]);
    }
    expect(() => createPlantgate({ observer: { eventLost: 42 as never } })).toThrow(new TypeError("observer.eventLost must be a function"));
  });
});

describe("no event holds a secret, password, token or hash", () => {
  it("over every flow above, no event's JSON contains what was sent or stored", async () => {
    const { h, all } = await recorded({ bruteForce: { maxFailures: 3, windowSeconds: 60 } });
    const sent: string[] = [h.clientSecret, h.password, "wrong-secret-wrong-secret", "not-her-password"];
    const t = (await (await token(h, { grant_type: "password", username: "alice", password: h.password, scope: "Platform_UserAPIs offline_access" })).json()) as { access_token: string; refresh_token: string };
    const cc = (await (await token(h, { grant_type: "client_credentials" })).json()) as { access_token: string };
    const r = (await (await token(h, { grant_type: "refresh_token", refresh_token: t.refresh_token })).json()) as { access_token: string; refresh_token: string };
    expect((await post(h, "/UserService/connect/revocation", { token: r.refresh_token })).status).toBe(200);
    expect((await post(h, "/UserService/connect/revocation", { token: cc.access_token })).status).toBe(200);
    for (let i = 0; i < 5; i++) await token(h, { grant_type: "password", username: "alice", password: "not-her-password" });
    for (let i = 0; i < 5; i++) await token(h, { grant_type: "client_credentials" }, basic("app-1", "wrong-secret-wrong-secret"));
    const { clientSecret: rotatedSecret } = await h.app.admin.rotateClientSecret("app-1");
    await h.app.admin.createAccount({ username: "erin", password: "erin-password-1" });
    await h.app.flushEvents();
    const tokens = [t.access_token, t.refresh_token, cc.access_token, r.access_token, r.refresh_token, rotatedSecret, "erin-password-1"];
    const secrets = [...sent, ...tokens];
    const hashes = await Promise.all(secrets.map(sha256));
    const stored = [...(await h.app.storage.clients.get("app-1"))!.secrets.map((s) => s.hash), (await h.app.storage.accounts.findByUsername("alice"))!.passwordHash];
    const text = all.map((e) => JSON.stringify(e)).join("\n");
    expect([...new Set(all.map((e) => e.type))].sort()).toEqual(["account.created", "account.locked_out", "account.login_failed", "client.authentication_failed", "client.secret_rotated", "token.issued", "token.refreshed", "token.revoked"]);
    for (const s of [...secrets, ...hashes, ...stored]) expect(text.includes(s), `an event holds ${s.slice(0, 6)}…`).toBe(false);
    // JWT pieces too: no event carries a signature or a header.payload.
    for (const jwt of tokens.filter((x) => x.split(".").length === 3)) for (const part of jwt.split(".").slice(1)) expect(text.includes(part)).toBe(false);
  });
});

describe("event ids and the sink's bookkeeping", () => {
  it("ids are RFC 9562 version 4 UUIDs drawn from the configured random source", async () => {
    const { uuidV4 } = await import("../src/crypto/index.js");
    const counting = (n: number) => Uint8Array.from({ length: n }, (_, i) => i * 17);
    expect(uuidV4(counting)).toBe("00112233-4455-4677-8899-aabbccddeeff");
    expect(uuidV4(() => new Uint8Array(16).fill(0xff))).toBe("ffffffff-ffff-4fff-bfff-ffffffffffff");
  });

  it("a site's object is stamped and frozen as the event; a frozen one is stamped on a copy, not refused", async () => {
    const { createEventSink } = await import("../src/events/emitter.js");
    const seen: unknown[] = [];
    const sink = createEventSink({ hook: (e) => void seen.push(e), audit: undefined, logger: { error: () => {}, warn: () => {} }, clock: () => 7, random: (n) => new Uint8Array(n) });
    const fresh = { type: "client.created", client_id: "a" };
    const frozen = Object.freeze({ type: "client.deleted", client_id: "b" });
    sink.emit(fresh as never);
    sink.emit(frozen as never);
    await sink.settled();
    const id = "00000000-0000-4000-8000-000000000000";
    expect(seen).toEqual([
      { type: "client.created", client_id: "a", id, time: 7 },
      { type: "client.deleted", client_id: "b", id, time: 7 },
    ]);
    expect(seen[0]).toBe(fresh);
    expect(seen.every((e) => Object.isFrozen(e))).toBe(true);
    expect(frozen).toEqual({ type: "client.deleted", client_id: "b" });
  });

  it("settled() waits for sync, async and failing receivers alike, and resolves at once when idle", async () => {
    const { createEventSink } = await import("../src/events/emitter.js");
    const errors: string[] = [];
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const sink = createEventSink({
      hook: async (event) => {
        if (event.type === "client.created") throw new Error("hook down");
        if (event.type === "client.deleted") await gate;
        seen.push(event.type);
      },
      audit: undefined,
      logger: { error: (message: string) => errors.push(message), warn: () => {} },
      clock: () => 1,
      random: (n) => new Uint8Array(n),
    });
    await sink.settled();
    sink.emit({ type: "client.created", client_id: "a" } as never);
    sink.emit({ type: "client.deleted", client_id: "a" } as never);
    sink.emit({ type: "console.signed_out", username: "u" } as never);
    let done = false;
    const waiting = sink.settled().then(() => (done = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(done).toBe(false);
    expect(seen).toEqual(["console.signed_out"]);
    release();
    await waiting;
    expect(seen).toEqual(["console.signed_out", "client.deleted"]);
    expect(errors).toEqual(["onEvent hook failed"]);
  });

  it("settled() waits for the events before its call only: steady traffic after it does not hold it back", async () => {
    const { createEventSink } = await import("../src/events/emitter.js");
    const gates = new Map<string, () => void>();
    const sink = createEventSink({
      hook: (event) => new Promise<void>((resolve) => gates.set((event as { client_id: string }).client_id, resolve)),
      audit: undefined,
      logger: { error: () => {}, warn: () => {} },
      clock: () => 1,
      random: (n) => new Uint8Array(n),
    });
    sink.emit({ type: "client.created", client_id: "a" } as never);
    let done = false;
    const first = sink.settled().then(() => (done = true));
    // Later events, one per step, each still in its hook when the first one finishes.
    for (const id of ["b", "c", "d"]) {
      await new Promise((r) => setTimeout(r, 1));
      sink.emit({ type: "client.created", client_id: id } as never);
    }
    await new Promise((r) => setTimeout(r, 1));
    expect(done).toBe(false);
    gates.get("a")!();
    await first;
    let all = false;
    const later = sink.settled().then(() => (all = true));
    gates.get("b")!();
    gates.get("c")!();
    await new Promise((r) => setTimeout(r, 1));
    expect(all, "a settled() called later waits for b, c and d").toBe(false);
    gates.get("d")!();
    await later;
  });

  it("a hook call that never settles: settled(timeoutMs) gives up after the bound, naming the batches unfinished, and keeps nothing; 10 000 calls amid steady traffic hold one record each, only while they wait", async () => {
    const { createEventSink } = await import("../src/events/emitter.js");
    const errors: string[] = [];
    const sink = createEventSink({
      // One event's call never settles (its request context gone); every other event is handled at once.
      hook: (event) => ((event as { client_id: string }).client_id === "stuck" ? new Promise<void>(() => {}) : undefined),
      audit: undefined,
      logger: { error: (message: string) => errors.push(message), warn: () => {} },
      clock: () => 1,
      random: (n) => new Uint8Array(n),
    });
    sink.emit({ type: "client.created", client_id: "stuck" } as never);
    await new Promise((r) => setTimeout(r, 1));
    let most = 0;
    for (let round = 0; round < 100; round++) {
      const calls: Promise<number>[] = [];
      for (let i = 0; i < 100; i++) {
        // A request's events, then its flush (as the Worker's fetch does): the flush waits for them and for the stuck one.
        sink.emit({ type: "client.created", client_id: `c${round}-${i}` } as never);
        calls.push(sink.settled(20));
      }
      most = Math.max(most, sink.waiting);
      // Each gives up after its bound: only the stuck batch is unfinished, the requests' own are done.
      expect(await Promise.all(calls)).toEqual(calls.map(() => 1));
      expect(sink.waiting, "a call given up on is forgotten").toBe(0);
    }
    expect(most, "one record per call waiting, whatever is pending").toBe(100);
    expect(errors).toEqual([]);
    // A call without a bound waits (one record) until the batches before it are done.
    let unbound: number | undefined;
    void sink.settled().then((n) => (unbound = n));
    await new Promise((r) => setTimeout(r, 20));
    expect([unbound, sink.waiting]).toEqual([undefined, 1]);
  });

  it("every hook call never settles: each settled(timeoutMs) names exactly the batches before its call, and still holds one record", async () => {
    const { createEventSink } = await import("../src/events/emitter.js");
    const sink = createEventSink({ hook: () => new Promise<void>(() => {}), audit: undefined, logger: { error: () => {}, warn: () => {} }, clock: () => 1, random: (n) => new Uint8Array(n) });
    const calls: Promise<number>[] = [];
    for (let i = 0; i < 300; i++) {
      sink.emit({ type: "client.created", client_id: `c${i}` } as never);
      calls.push(sink.settled(30));
      await Promise.resolve();
    }
    expect(sink.waiting).toBe(300);
    // Each call's events were queued in a step of their own: call i waits for i + 1 batches, not for the later ones.
    expect(await Promise.all(calls)).toEqual(calls.map((_, i) => i + 1));
    expect(sink.waiting).toBe(0);
    expect(await sink.settled(1)).toBe(300);
  });

  it("settled(timeoutMs): batches that finish in time resolve it to 0 at once; a bound that is not an integer from 0 to 2^31-1 is a TypeError", async () => {
    const { createEventSink } = await import("../src/events/emitter.js");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const sink = createEventSink({ hook: () => gate, audit: undefined, logger: { error: () => {}, warn: () => {} }, clock: () => 1, random: (n) => new Uint8Array(n) });
    expect(await sink.settled(5)).toBe(0);
    sink.emit({ type: "client.created", client_id: "a" } as never);
    const started = Date.now();
    const bounded = sink.settled(60_000);
    const unbound = sink.settled(0);
    expect(sink.waiting).toBe(2);
    setTimeout(release, 10);
    expect(await Promise.all([bounded, unbound])).toEqual([0, 0]);
    // At once: woken by the batch that finished (released after 10 ms), not by a timer. (The bound
    // was 30 s until 2026-11-30, past this project's 5 s test timeout: it could not fail.)
    expect(Date.now() - started).toBeLessThan(1000);
    expect(sink.waiting).toBe(0);
    for (const timeoutMs of [Number.NaN, -1, 1.5, 2 ** 31, Infinity]) {
      expect(() => sink.settled(timeoutMs)).toThrow(new TypeError("settled(timeoutMs): timeoutMs must be an integer from 0 (no bound) to 2147483647"));
    }
  });

  it("defer(): the task's events are handed over when it resolves, settled() waits for them, and a rejecting task is reported, not thrown", async () => {
    const { createEventSink } = await import("../src/events/emitter.js");
    const seen: string[] = [];
    const errors: string[] = [];
    const sink = createEventSink({
      hook: (event) => void seen.push((event as { client_id: string }).client_id),
      audit: undefined,
      logger: { error: (message: string) => errors.push(message), warn: () => {} },
      clock: () => 1,
      random: (n) => new Uint8Array(n),
    });
    let give!: (events: never[]) => void;
    sink.defer(new Promise((resolve) => (give = resolve)));
    sink.defer(Promise.reject(new Error("lookup down")));
    sink.emit({ type: "client.created", client_id: "now" } as never);
    let done = false;
    const waiting = sink.settled().then(() => (done = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(seen).toEqual(["now"]);
    expect(done).toBe(false);
    give([{ type: "client.created", client_id: "x" }, { type: "client.deleted", client_id: "y" }] as never[]);
    await waiting;
    expect(seen).toEqual(["now", "x", "y"]);
    expect(errors).toEqual(["deferred security events failed; none recorded"]);
    // Without receivers, defer does nothing at all.
    const off = createEventSink({ hook: undefined, audit: undefined, logger: { error: () => {}, warn: () => {} }, clock: () => 1, random: (n) => new Uint8Array(n) });
    off.defer(Promise.reject(new Error("never looked at")));
    await off.settled();
  });

  it("defer(): a clock that throws while its events are stamped is reported, and settled() still resolves", async () => {
    const { createEventSink } = await import("../src/events/emitter.js");
    const errors: string[] = [];
    let broken = true;
    const sink = createEventSink({
      hook: () => {},
      audit: undefined,
      logger: { error: (message: string) => errors.push(message), warn: () => {} },
      clock: () => {
        if (broken) throw new Error("clock failed");
        return 1;
      },
      random: (n) => new Uint8Array(n),
    });
    sink.defer(Promise.resolve([{ type: "client.created", client_id: "x" }] as never[]));
    await sink.settled();
    expect(errors).toEqual(["deferred security events failed; none recorded"]);
    broken = false;
    sink.emit({ type: "client.created", client_id: "y" } as never);
    await sink.settled();
  });

  it("a hook returning a hostile thenable (throwing then, or settling twice) fails alone: the events after it are delivered and settled() resolves", async () => {
    const { createEventSink } = await import("../src/events/emitter.js");
    const errors: string[] = [];
    const seen: string[] = [];
    const sink = createEventSink({
      // Typed as a plain hook: what a JavaScript caller could hand over anyway.
      hook: ((event: { type: string }) => {
        seen.push(event.type);
        if (event.type === "client.created") return { get then() { throw new Error("then getter"); } };
        if (event.type === "client.deleted") return { then: (ok: () => void) => { ok(); ok(); throw new Error("then method"); } };
        return undefined;
      }) as unknown as () => void,
      audit: undefined,
      logger: { error: (message: string) => errors.push(message), warn: () => {} },
      clock: () => 1,
      random: (n) => new Uint8Array(n),
    });
    sink.emit({ type: "client.created", client_id: "a" } as never);
    sink.emit({ type: "client.deleted", client_id: "a" } as never);
    sink.emit({ type: "console.signed_out", username: "u" } as never);
    await sink.settled();
    expect(seen).toEqual(["client.created", "client.deleted", "console.signed_out"]);
    expect(errors).toEqual(["onEvent hook failed", "onEvent hook failed"]);
    // Each receiver counted once: a later event is waited for, not taken as already done.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = createEventSink({ hook: () => gate, audit: undefined, logger: { error: () => {}, warn: () => {} }, clock: () => 1, random: (n) => new Uint8Array(n) });
    slow.emit({ type: "client.created", client_id: "b" } as never);
    let done = false;
    const waiting = slow.settled().then(() => (done = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(done).toBe(false);
    release();
    await waiting;
  });

  it("a hook failing with a value that has no text (a null-prototype object, a toString that throws) is still reported", async () => {
    for (const value of [() => Object.create(null) as object, () => ({ toString: () => { throw new Error("no"); } })]) {
      const lines: [string, Record<string, unknown>][] = [];
      const h = await harness({ logger: { error: (m: string, context?: Record<string, unknown>) => void lines.push([m, context ?? {}]), warn() {} }, onEvent: () => Promise.reject(value()) });
      const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
      expect(res.status).toBe(200);
      await h.app.flushEvents(1000);
      // One line per failed delivery (the harness's client and account, then the token), each saying what it could.
      expect(lines.map(([m, c]) => [m, c.error])).toEqual(Array.from({ length: 3 }, () => ["onEvent hook failed", "a non-Error value (object) that has no text"]));
    }
  });
});
