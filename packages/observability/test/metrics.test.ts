/**
 * The metrics over a real socket: a plantgate app with the observer answers token requests, and
 * the separate listener serves their counts as Prometheus text.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { AuditNotKeptError, createMemoryStorage, createPlantgate, StorageError, type SecurityEvent } from "@plantgate/core";
import { createMetrics, eventHooks, serveMetrics, type MetricsListener } from "../src/index.js";

const BASE = "https://as.example.test";
const basic = (id: string, secret: string) => "Basic " + btoa(`${id}:${secret}`);
let listener: MetricsListener | undefined;
afterEach(async () => {
  await listener?.close();
  listener = undefined;
});

function token(app: ReturnType<typeof createPlantgate>, form: Record<string, string>, authorization: string) {
  return app.fetch(
    new Request(`${BASE}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization },
      body: new URLSearchParams(form).toString(),
    }),
  );
}

/** The sample lines of one metric family (no HELP/TYPE), as text. */
function samples(text: string, name: string): string[] {
  return text.split("\n").filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `));
}

describe("metrics", () => {
  it("counts requests, token requests by grant_type and result, latency and storage calls; served on their own listener", async () => {
    const metrics = createMetrics();
    const app = createPlantgate({ observer: metrics.observer, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const { clientSecret } = await app.admin.createClient({ clientId: "reporting" });
    await app.admin.createAccount({ username: "alice", password: "wonderland-42" });
    expect((await token(app, { grant_type: "client_credentials" }, basic("reporting", clientSecret))).status).toBe(200);
    expect((await token(app, { grant_type: "client_credentials" }, basic("reporting", clientSecret))).status).toBe(200);
    expect((await token(app, { grant_type: "client_credentials" }, basic("reporting", "wrong"))).status).toBe(401);
    expect((await token(app, { grant_type: "password", username: "alice", password: "nope" }, basic("reporting", clientSecret))).status).toBe(400);
    expect((await app.fetch(new Request(`${BASE}/nope/alice`))).status).toBe(404);

    listener = await serveMetrics(metrics, { port: 0 });
    expect(listener.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const res = await fetch(listener.url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await res.text();
    expect(samples(text, "plantgate_token_requests_total").sort()).toEqual(
      [
        'plantgate_token_requests_total{grant_type="client_credentials",result="success"} 2',
        'plantgate_token_requests_total{grant_type="client_credentials",result="invalid_client"} 1',
        'plantgate_token_requests_total{grant_type="password",result="invalid_grant"} 1',
      ].sort(),
    );
    expect(samples(text, "plantgate_http_requests_total").sort()).toEqual(
      [
        'plantgate_http_requests_total{route="/UserService/connect/token",method="POST",status="200"} 2',
        'plantgate_http_requests_total{route="/UserService/connect/token",method="POST",status="401"} 1',
        'plantgate_http_requests_total{route="/UserService/connect/token",method="POST",status="400"} 1',
        'plantgate_http_requests_total{route="unmatched",method="GET",status="404"} 1',
      ].sort(),
    );
    expect(text).toContain('plantgate_token_request_duration_seconds_count{grant_type="client_credentials"} 3');
    expect(text).toContain('plantgate_token_request_duration_seconds_bucket{le="+Inf",grant_type="password"} 1');
    expect(text).toMatch(/^plantgate_storage_operation_duration_seconds_count\{store="clients",operation="get"\} [1-9]\d*$/m);
    expect(samples(text, "plantgate_lockouts_total").sort()).toEqual([
      'plantgate_lockouts_total{lock="address_budget"} 0',
      'plantgate_lockouts_total{lock="client_budget"} 0',
      'plantgate_lockouts_total{lock="username"} 0',
      'plantgate_lockouts_total{lock="username_address"} 0',
    ]);
    // Process metrics, and no identifier in any label.
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_total_bytes \d/m);
    for (const secret of ["reporting", "alice", clientSecret, "wonderland-42", "127.0.0.1"]) expect(text).not.toContain(secret);
  });

  it("counts client lock-outs begun (the first refusal of a client-authentication lock) by lock, apart from the accounts'; every series from the start", async () => {
    const metrics = createMetrics({ processMetrics: false });
    const app = createPlantgate({ storage: createMemoryStorage(), passwordHashIterations: 1000, logger: { error() {}, warn() {} }, observer: metrics.observer, onEvent: metrics.countEvent, bruteForce: { maxFailures: 2, windowSeconds: 600 } });
    await app.admin.createClient({ clientId: "reporting" });
    const clientLockouts = async () => samples(await metrics.text(), "plantgate_client_lockouts_total").sort();
    expect(await clientLockouts()).toEqual(['plantgate_client_lockouts_total{lock="address_budget"} 0', 'plantgate_client_lockouts_total{lock="client_address"} 0']);
    const from = (ip: string, secret: string) =>
      app.fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic("reporting", secret) },
          body: "grant_type=client_credentials",
        }),
        { clientIp: ip },
      );
    // Two failures lock the client at this address; the next five are refused (events for the 1st, 2nd and 4th).
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await from("198.51.100.7", "wrong")).status);
    expect(statuses).toEqual([401, 401, 429, 429, 429, 429, 429]);
    expect(await app.flushEvents(5000)).toBe(0);
    expect(await clientLockouts()).toEqual(['plantgate_client_lockouts_total{lock="address_budget"} 0', 'plantgate_client_lockouts_total{lock="client_address"} 1']);
    // The accounts' lock-outs are not touched; every refusal is still in the token requests' locked_out.
    expect(samples(await metrics.text(), "plantgate_lockouts_total").every((line) => line.endsWith(" 0"))).toBe(true);
    expect(samples(await metrics.text(), "plantgate_token_requests_total")).toContain('plantgate_token_requests_total{grant_type="client_credentials",result="locked_out"} 5');
    // After a reset the series are there again, at 0.
    metrics.registry.resetMetrics();
    expect(await clientLockouts()).toEqual(['plantgate_client_lockouts_total{lock="address_budget"} 0', 'plantgate_client_lockouts_total{lock="client_address"} 0']);
  });

  it("keeps every lock-out series after registry.resetMetrics(), at 0 (a rate() still has a series to read)", async () => {
    const metrics = createMetrics({ processMetrics: false });
    const lockedOut = (id: string, lock: "username" | "client_budget"): SecurityEvent => ({ type: "account.locked_out", id, time: 1_796_000_000_000, username: "alice", lock, source: "password_grant", client_id: "app-1", locked_until: 1_796_000_900_000, client_ip: "127.0.0.1" });
    metrics.countEvent(lockedOut("e1", "username"));
    expect(samples(await metrics.text(), "plantgate_lockouts_total")).toContain('plantgate_lockouts_total{lock="username"} 1');
    metrics.registry.resetMetrics();
    expect(samples(await metrics.text(), "plantgate_lockouts_total").sort()).toEqual([
      'plantgate_lockouts_total{lock="address_budget"} 0',
      'plantgate_lockouts_total{lock="client_budget"} 0',
      'plantgate_lockouts_total{lock="username"} 0',
      'plantgate_lockouts_total{lock="username_address"} 0',
    ]);
    metrics.countEvent(lockedOut("e2", "client_budget"));
    expect(samples(await metrics.text(), "plantgate_lockouts_total").sort()).toEqual([
      'plantgate_lockouts_total{lock="address_budget"} 0',
      'plantgate_lockouts_total{lock="client_budget"} 1',
      'plantgate_lockouts_total{lock="username"} 0',
      'plantgate_lockouts_total{lock="username_address"} 0',
    ]);
  });

  it("counts failed storage calls", async () => {
    const storage = createMemoryStorage();
    storage.clients.get = async () => {
      throw new StorageError("down");
    };
    const metrics = createMetrics({ processMetrics: false });
    const app = createPlantgate({ storage, observer: metrics.observer, logger: { error() {}, warn() {} } });
    expect((await token(app, { grant_type: "client_credentials" }, basic("x", "y"))).status).toBe(503);
    const text = await metrics.text();
    expect(samples(text, "plantgate_storage_errors_total")).toEqual(['plantgate_storage_errors_total{store="clients",operation="get"} 1']);
    expect(samples(text, "plantgate_token_requests_total")).toEqual([
      'plantgate_token_requests_total{grant_type="client_credentials",result="temporarily_unavailable"} 1',
    ]);
    expect(text).not.toContain("process_cpu_seconds_total");
  });

  it("counts the security events a receiver did not take, by receiver (hook, audit), both series from the start; an audit store's AuditNotKeptError among them (since 2026-12-03)", async () => {
    const metrics = createMetrics({ processMetrics: false });
    const memory = createMemoryStorage({ audit: true });
    let refusal: Error = new StorageError("disk full");
    const errors: string[] = [];
    const app = createPlantgate({
      storage: { ...memory, audit: { ...memory.audit!, append: async () => Promise.reject(refusal) } },
      observer: metrics.observer,
      onEvent: (event) => {
        metrics.countEvent(event);
        if (event.type === "client.authentication_failed") throw new Error("webhook down");
      },
      logger: { error: (m: string) => void errors.push(m), warn() {} },
    });
    expect(samples(await metrics.text(), "plantgate_events_lost_total").sort()).toEqual(['plantgate_events_lost_total{receiver="audit"} 0', 'plantgate_events_lost_total{receiver="hook"} 0']);
    const { clientSecret } = await app.admin.createClient({ clientId: "c" });
    await app.flushEvents();
    // client.created: the audit store refused it.
    expect(samples(await metrics.text(), "plantgate_events_lost_total").sort()).toEqual(['plantgate_events_lost_total{receiver="audit"} 1', 'plantgate_events_lost_total{receiver="hook"} 0']);
    expect((await token(app, { grant_type: "client_credentials" }, basic("c", "wrong"))).status).toBe(401);
    refusal = new AuditNotKeptError("audit queue full");
    expect((await token(app, { grant_type: "client_credentials" }, basic("c", clientSecret))).status).toBe(200);
    await app.flushEvents();
    // The failed authentication lost twice (hook and audit); the token lost once (audit, the store's own refusal, not logged).
    expect(samples(await metrics.text(), "plantgate_events_lost_total").sort()).toEqual(['plantgate_events_lost_total{receiver="audit"} 3', 'plantgate_events_lost_total{receiver="hook"} 1']);
    expect(errors).toEqual(["audit store append failed; event not kept", "onEvent hook failed", "audit store append failed; event not kept"]);
  });

  it("a webhook hook that hangs beside the log line's and the metrics' own (eventHooks): past maxPendingEventDeliveries the webhook is not handed events (counted lost, one warn line naming it), and the hooks beside it still get every one", async () => {
    const metrics = createMetrics({ processMetrics: false });
    const warnings: string[] = [];
    const logged: string[] = [];
    let webhookCalls = 0;
    const app = createPlantgate({
      onEvent: eventHooks(
        (event) => void logged.push(event.type),
        metrics.countEvent,
        () => {
          webhookCalls++;
          return new Promise<void>(() => {});
        },
      ),
      observer: metrics.observer,
      maxPendingEventDeliveries: 4,
      logger: { error() {}, warn: (m: string) => void warnings.push(m) },
    });
    // client.created: one of the webhook's four places.
    const { clientSecret } = await app.admin.createClient({ clientId: "c" });
    for (let i = 0; i < 6; i++) expect((await token(app, { grant_type: "client_credentials" }, basic("c", clientSecret))).status).toBe(200);
    await new Promise((r) => setTimeout(r, 0));
    const text = await metrics.text();
    // The first three tokens' events reached the webhook (4 hanging calls with client.created's); the last three did not.
    expect(webhookCalls).toBe(4);
    expect(logged).toEqual(["client.created", ...Array.from({ length: 6 }, () => "token.issued")]);
    expect(samples(text, "plantgate_events_lost_total").sort()).toEqual(['plantgate_events_lost_total{receiver="audit"} 0', 'plantgate_events_lost_total{receiver="hook"} 3']);
    expect(samples(text, "plantgate_token_requests_total")).toEqual(['plantgate_token_requests_total{grant_type="client_credentials",result="success"} 6']);
    // (The others: the app's start-up warnings, no issuer and no client address.)
    expect(warnings.filter((w) => w.startsWith("onEvent hook"))).toEqual(["onEvent hook 3 of 3: 4 deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)"]);
  });

  it("plantgate_event_deliveries_pending: the deliveries to each receiver still unfinished, read at each scrape and summed over the apps on these metrics; both series from the start (since 2026-12-03)", async () => {
    const metrics = createMetrics({ processMetrics: false });
    expect(samples(await metrics.text(), "plantgate_event_deliveries_pending").sort()).toEqual([
      'plantgate_event_deliveries_pending{receiver="audit"} 0',
      'plantgate_event_deliveries_pending{receiver="hook"} 0',
    ]);
    const gates: Array<() => void> = [];
    const webhook = () => new Promise<void>((resolve) => gates.push(resolve));
    const storage = createMemoryStorage({ audit: true });
    const appends: Array<() => void> = [];
    storage.audit!.append = () => new Promise<void>((resolve) => appends.push(resolve));
    const quiet = { error() {}, warn() {} };
    const app = createPlantgate({ storage, onEvent: eventHooks(metrics.countEvent, webhook), observer: metrics.observer, logger: quiet });
    const { clientSecret } = await app.admin.createClient({ clientId: "c" });
    for (let i = 0; i < 3; i++) expect((await token(app, { grant_type: "client_credentials" }, basic("c", clientSecret))).status).toBe(200);
    // A second app on the same metrics, its hook hanging too (no audit store).
    const other = createPlantgate({ onEvent: webhook, observer: metrics.observer, logger: quiet });
    await other.admin.createClient({ clientId: "d" });
    await new Promise((r) => setTimeout(r, 0));
    listener = await serveMetrics(metrics, { port: 0 });
    const scrape = async () => samples(await (await fetch(listener!.url)).text(), "plantgate_event_deliveries_pending").sort();
    // client.created and three token.issued to the first app's webhook and audit store, one client.created to the second's webhook.
    expect(await scrape()).toEqual(['plantgate_event_deliveries_pending{receiver="audit"} 4', 'plantgate_event_deliveries_pending{receiver="hook"} 5']);
    for (const release of gates.splice(0, 2)) release();
    for (const release of appends.splice(0)) release();
    await new Promise((r) => setTimeout(r, 0));
    expect(await scrape()).toEqual(['plantgate_event_deliveries_pending{receiver="audit"} 0', 'plantgate_event_deliveries_pending{receiver="hook"} 3']);
    for (const release of gates.splice(0)) release();
    await new Promise((r) => setTimeout(r, 0));
    expect(await scrape()).toEqual(['plantgate_event_deliveries_pending{receiver="audit"} 0', 'plantgate_event_deliveries_pending{receiver="hook"} 0']);
    // Nothing was lost on the way.
    expect(samples(await metrics.text(), "plantgate_events_lost_total").sort()).toEqual(['plantgate_events_lost_total{receiver="audit"} 0', 'plantgate_events_lost_total{receiver="hook"} 0']);
  });

  it("plantgate_event_deliveries_pending holds no app: one dropped, its hung deliveries unreachable, is collected and no longer read", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const metrics = createMetrics({ processMetrics: false });
    const quiet = { error() {}, warn() {} };
    const kept: Array<() => void> = [];
    const keptApp = createPlantgate({ onEvent: () => new Promise<void>((resolve) => kept.push(resolve)), observer: metrics.observer, logger: quiet });
    await keptApp.admin.createClient({ clientId: "kept" });
    // Each hook call hangs on a promise nobody can settle once the app is dropped. (Made in a
    // function of its own: an async function's frame may keep its last local past a loop.)
    const dropOne = async (i: number) => {
      const app = createPlantgate({ onEvent: () => new Promise<void>(() => {}), observer: metrics.observer, logger: quiet });
      await app.admin.createClient({ clientId: `c${i}` });
      return new WeakRef(app);
    };
    const dropped: WeakRef<object>[] = [];
    for (let i = 0; i < 5; i++) dropped.push(await dropOne(i));
    await new Promise((r) => setTimeout(r, 0));
    expect(samples(await metrics.text(), "plantgate_event_deliveries_pending").sort()).toEqual([
      'plantgate_event_deliveries_pending{receiver="audit"} 0',
      'plantgate_event_deliveries_pending{receiver="hook"} 6',
    ]);
    // WeakRefs read in this turn stay alive until it ends: collect in a later one.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    expect(dropped.filter((r) => r.deref() !== undefined).length).toBe(0);
    expect(samples(await metrics.text(), "plantgate_event_deliveries_pending").sort()).toEqual([
      'plantgate_event_deliveries_pending{receiver="audit"} 0',
      'plantgate_event_deliveries_pending{receiver="hook"} 1',
    ]);
    expect(kept.length).toBe(1);
  });

  it("counts lock-outs from the account.locked_out events", async () => {
    const metrics = createMetrics({ processMetrics: false });
    const app = createPlantgate({
      onEvent: metrics.countEvent,
      observer: metrics.observer,
      bruteForce: { maxFailures: 2, windowSeconds: 60 },
      passwordHashIterations: 1000,
      logger: { error() {}, warn() {} },
    });
    const { clientSecret } = await app.admin.createClient({ clientId: "c" });
    await app.admin.createAccount({ username: "alice", password: "wonderland-42" });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await token(app, { grant_type: "password", username: "alice", password: "nope" }, basic("c", clientSecret))).status);
    expect(statuses).toEqual([400, 400, 429]);
    await app.flushEvents();
    const text = await metrics.text();
    // Every lock's series from the start (a rate() alert on a budget lock has its series before the first one).
    expect(samples(text, "plantgate_lockouts_total").sort()).toEqual([
      'plantgate_lockouts_total{lock="address_budget"} 0',
      'plantgate_lockouts_total{lock="client_budget"} 0',
      'plantgate_lockouts_total{lock="username"} 0',
      'plantgate_lockouts_total{lock="username_address"} 1',
    ]);
    expect(samples(text, "plantgate_token_requests_total").sort()).toEqual([
      'plantgate_token_requests_total{grant_type="password",result="invalid_grant"} 2',
      'plantgate_token_requests_total{grant_type="password",result="locked_out"} 1',
    ]);
    expect(samples(text, "plantgate_refresh_token_reuse_total")).toEqual(["plantgate_refresh_token_reuse_total 0"]);
  });

  it("counts a client's lock-out at the revocation and introspection endpoints as at the token endpoint: result locked_out (grant_type none, which a locked-out token request never has), with the same event", async () => {
    const metrics = createMetrics({ processMetrics: false });
    const events: SecurityEvent[] = [];
    const app = createPlantgate({
      onEvent: (event) => (events.push(event), metrics.countEvent(event)),
      observer: metrics.observer,
      bruteForce: { maxFailures: 2, windowSeconds: 60 },
      passwordHashIterations: 1000,
      logger: { error() {}, warn() {} },
    });
    for (const id of ["t", "r", "i"]) await app.admin.createClient({ clientId: id });
    const post = (path: string, form: Record<string, string>, id: string) =>
      app.fetch(new Request(`${BASE}/UserService/connect/${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(id, "wrong") }, body: new URLSearchParams(form).toString() }));
    const statuses: Record<string, number[]> = { token: [], revocation: [], introspect: [] };
    for (const [path, id, form] of [["token", "t", { grant_type: "client_credentials" }], ["revocation", "r", { token: "x" }], ["introspect", "i", { token: "x" }]] as const) {
      for (let i = 0; i < 4; i++) statuses[path]!.push((await post(path, form, id)).status);
    }
    expect(statuses).toEqual({ token: [401, 401, 429, 429], revocation: [401, 401, 429, 429], introspect: [401, 401, 429, 429] });
    await app.flushEvents();
    const text = await metrics.text();
    expect(samples(text, "plantgate_token_requests_total").sort()).toEqual([
      'plantgate_token_requests_total{grant_type="client_credentials",result="invalid_client"} 2',
      'plantgate_token_requests_total{grant_type="client_credentials",result="locked_out"} 2',
      'plantgate_token_requests_total{grant_type="none",result="locked_out"} 4',
    ]);
    // The token endpoint's latency only: no series for the other endpoints' refusals.
    expect(text).not.toContain('plantgate_token_request_duration_seconds_count{grant_type="none"}');
    // Each endpoint's own count: its route's 429s.
    for (const path of ["token", "revocation", "introspect"]) expect(samples(text, "plantgate_http_requests_total")).toContain(`plantgate_http_requests_total{route="/UserService/connect/${path}",method="POST",status="429"} 2`);
    // The same event at all three: client.authentication_failed with reason throttled, naming the client.
    const throttled = events.filter((e) => e.type === "client.authentication_failed" && e.reason === "throttled").map((e) => (e as { client_id: string | null }).client_id);
    expect(throttled).toEqual(["t", "t", "r", "r", "i", "i"]);
  });

  it("a flood at a lock: every refusal is counted, while its events are O(log n) (the 1st, 2nd, 4th, ... refusal; since 2026-12-03)", async () => {
    const metrics = createMetrics({ processMetrics: false });
    const events: SecurityEvent[] = [];
    const app = createPlantgate({
      onEvent: (event) => (events.push(event), metrics.countEvent(event)),
      observer: metrics.observer,
      bruteForce: { maxFailures: 10, windowSeconds: 900 },
      passwordHashIterations: 1000,
      logger: { error() {}, warn() {} },
    });
    const { clientSecret } = await app.admin.createClient({ clientId: "c" });
    await app.admin.createClient({ clientId: "locked" });
    await app.admin.createAccount({ username: "alice", password: "wonderland-42" });
    for (let i = 0; i < 2000; i++) await token(app, { grant_type: "client_credentials" }, basic("locked", "wrong"));
    for (let i = 0; i < 2000; i++) await token(app, { grant_type: "password", username: "alice", password: "nope" }, basic("c", clientSecret));
    await app.flushEvents();
    const text = await metrics.text();
    expect(samples(text, "plantgate_token_requests_total").sort()).toEqual([
      'plantgate_token_requests_total{grant_type="client_credentials",result="invalid_client"} 10',
      'plantgate_token_requests_total{grant_type="client_credentials",result="locked_out"} 1990',
      'plantgate_token_requests_total{grant_type="password",result="invalid_grant"} 10',
      'plantgate_token_requests_total{grant_type="password",result="locked_out"} 1990',
    ]);
    expect(samples(text, "plantgate_http_requests_total")).toContain('plantgate_http_requests_total{route="/UserService/connect/token",method="POST",status="429"} 3980');
    expect(samples(text, "plantgate_lockouts_total")).toContain('plantgate_lockouts_total{lock="username_address"} 1');
    const throttled = (type: string) => events.filter((e) => e.type === type && "reason" in e && e.reason === "throttled").map((e) => (e as { refused_count?: number }).refused_count);
    const powers = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
    expect(throttled("client.authentication_failed")).toEqual(powers);
    expect(throttled("account.login_failed")).toEqual(powers);
    expect(events.filter((e) => !e.type.endsWith(".created")).length).toBe(10 + 11 + 10 + 1 + 11);
  }, 120_000);

  it("labels a refusal of too many password checks at once temporarily_unavailable, not locked_out", async () => {
    const metrics = createMetrics({ processMetrics: false });
    const app = createPlantgate({
      onEvent: metrics.countEvent,
      observer: metrics.observer,
      maxConcurrentPasswordChecks: 1,
      passwordHashIterations: 1000,
      logger: { error() {}, warn() {} },
    });
    const { clientSecret } = await app.admin.createClient({ clientId: "c" });
    await app.admin.createAccount({ username: "alice", password: "wonderland-42" });
    const form = { grant_type: "password", username: "alice", password: "wonderland-42" };
    const answers = await Promise.all([0, 1, 2].map(() => token(app, form, basic("c", clientSecret))));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 429, 429]);
    for (const a of answers.filter((a) => a.status === 429)) expect((await a.json()).error).toBe("temporarily_unavailable");
    await app.flushEvents();
    const text = await metrics.text();
    expect(samples(text, "plantgate_token_requests_total").sort()).toEqual([
      'plantgate_token_requests_total{grant_type="password",result="success"} 1',
      'plantgate_token_requests_total{grant_type="password",result="temporarily_unavailable"} 2',
    ]);
    expect(samples(text, "plantgate_lockouts_total").every((line) => line.endsWith(" 0")), "no lock-out was begun").toBe(true);
  });

  it("counts every kind of request and storage call exactly, remembered or not, and across a registry reset", async () => {
    const metrics = createMetrics({ processMetrics: false });
    const { request, storage } = metrics.observer as Required<typeof metrics.observer>;
    // 12 kinds of request: the first 3 (fit among the kinds remembered) differ only by grant type
    // or result; all 12 in turns do not fit.
    const kinds = [
      { route: "/t", method: "POST", status: 400, grantType: "client_credentials", result: "invalid_grant" },
      { route: "/t", method: "POST", status: 400, grantType: "client_credentials", result: "invalid_request" },
      { route: "/t", method: "POST", status: 400, grantType: "password", result: "invalid_grant" },
      ...Array.from({ length: 9 }, (_, i) => ({ route: `/r${i % 3}`, method: i < 6 ? "GET" : "PUT", status: 200 + (i % 4), grantType: undefined, result: undefined })),
    ];
    const operations = ["get", "touchSecret", "list"];
    // What the text must say: counts kept here by label text, the plain way.
    const want = { requests: new Map<string, number>(), tokens: new Map<string, number>(), storage: new Map<string, number>() };
    const bump = (m: Map<string, number>, key: string) => m.set(key, (m.get(key) ?? 0) + 1);
    const run = (count: number, times: number) => {
      for (let t = 0; t < times; t++) {
        for (const k of kinds.slice(0, count)) {
          // Labels as new strings each time: the memo compares them by value too.
          request({ ...k, route: [k.route].join(""), durationMs: 2 });
          bump(want.requests, `plantgate_http_requests_total{route="${k.route}",method="${k.method}",status="${k.status}"}`);
          if (k.grantType) bump(want.tokens, `plantgate_token_requests_total{grant_type="${k.grantType}",result="${k.result}"}`);
          const operation = operations[t % 3]!;
          storage({ store: ["clients"].join(""), operation, durationMs: 0.3, failed: false });
          bump(want.storage, `plantgate_storage_operation_duration_seconds_count{store="clients",operation="${operation}"}`);
        }
      }
    };
    const check = async () => {
      const text = await metrics.text();
      for (const [name, m] of [["plantgate_http_requests_total", want.requests], ["plantgate_token_requests_total", want.tokens], ["plantgate_storage_operation_duration_seconds_count", want.storage]] as const) {
        expect(samples(text, name).sort()).toEqual([...m].map(([key, n]) => `${key} ${n}`).sort());
      }
      const tokens = [...want.tokens.values()].reduce((a, b) => a + b, 0);
      const cc = [...want.tokens].filter(([key]) => key.includes("client_credentials")).reduce((a, [, n]) => a + n, 0);
      expect(samples(text, "plantgate_token_request_duration_seconds_count").sort()).toEqual(
        [`plantgate_token_request_duration_seconds_count{grant_type="client_credentials"} ${cc}`, `plantgate_token_request_duration_seconds_count{grant_type="password"} ${tokens - cc}`].sort(),
      );
    };
    run(3, 5);
    run(12, 2);
    run(3, 4);
    await check();
    expect(want.tokens.size).toBe(3);
    expect(want.requests.size).toBe(10);
    // After a reset, the kinds remembered before it count into the new series, not the dropped ones.
    metrics.registry.resetMetrics();
    for (const m of Object.values(want)) m.clear();
    run(3, 2);
    await check();
  });

  it("the listener answers only GET/HEAD /metrics", async () => {
    listener = await serveMetrics(createMetrics({ processMetrics: false }), { port: 0 });
    const origin = listener.url.replace(/\/metrics$/, "");
    const other = await fetch(`${origin}/UserService/connect/token`);
    expect([other.status, await other.text()]).toEqual([404, "Not found; the metrics are at /metrics.\n"]);
    const post = await fetch(listener.url, { method: "POST" });
    expect([post.status, post.headers.get("allow"), await post.text()]).toEqual([405, "GET, HEAD", "Use GET.\n"]);
    const head = await fetch(listener.url, { method: "HEAD" });
    expect([head.status, await head.text()]).toEqual([200, ""]);
  });
});

describe("hot metrics", () => {
  it("expose exactly what prom-client's own Counter and Histogram expose for the same observations", async () => {
    const { Counter, Histogram, Registry } = await import("prom-client");
    const { HotCounter, HotHistogram } = await import("../src/hot-metrics.js");
    const ours = new Registry();
    const theirs = new Registry();
    const buckets = [0.001, 0.01, 0.1, 1];
    const h1 = new HotHistogram({ name: "x_seconds", help: "h", labelNames: ["route", "method"], buckets, registers: [ours] });
    const h2 = new Histogram({ name: "x_seconds", help: "h", labelNames: ["route", "method"], buckets, registers: [theirs] });
    const c1 = new HotCounter({ name: "y_total", help: "c", labelNames: ["result"], registers: [ours] });
    const c2 = new Counter({ name: "y_total", help: "c", labelNames: ["result"], registers: [theirs] });
    const z1 = new HotCounter({ name: "z_total", help: "no labels", registers: [ours] });
    const z2 = new Counter({ name: "z_total", help: "no labels", registers: [theirs] });
    for (const [route, method, v] of [["/a", "GET", 0.0005], ["/a", "GET", 0.001], ["/a", "POST", 0.05], ["/b", "GET", 3], ["/a", "GET", 0.2]] as const) {
      h1.observe([route, method], v);
      h2.observe({ route, method }, v);
    }
    c1.inc(["ok"]);
    c1.inc(["ok"], 2);
    c1.inc(["bad"], 0);
    c2.inc({ result: "ok" });
    c2.inc({ result: "ok" }, 2);
    c2.inc({ result: "bad" }, 0);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    z1.inc([]);
    z2.inc();
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    // The labels observed last before the reset (remembered for speed) count again after it.
    h1.observe(["/a", "GET"], 0.2);
    h2.observe({ route: "/a", method: "GET" }, 0.2);
    c1.inc(["bad"]);
    c2.inc({ result: "bad" });
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
