/**
 * An `onEvent` hook that never settles, in workerd (Miniflare): the Worker's `scheduled()` still
 * ends, its prune done and reported, and each request's `waitUntil` ends after
 * `fetchEventsTimeoutMs`, its answer whole. The real `createWorker()` entry is bundled for the
 * Workers runtime with a hook the test switches (`/__hook?mode=never`): `never` answers each event
 * with a promise that never settles and holds no I/O, as a hook's call does once the request
 * context it ran in is gone (its fetch to a log sink never settles for anyone who waits on it).
 * `/__waits` tells how many promises the Worker handed to the real `ctx.waitUntil`, and how many
 * of them have ended.
 */
import { describe, expect, it } from "vitest";
import { type ScheduledWorker, workerPerTest } from "./support.js";

const ENTRY = (options: string) => `
import { createWorker } from "../src/index.ts";
let mode = "open";
// slow: each event delivered 3 s late (a timer: pending I/O, as a slow log sink's fetch is).
const worker = createWorker({ onEvent: () => (mode === "never" ? new Promise(() => {}) : mode === "slow" ? new Promise((resolve) => setTimeout(resolve, 3000)) : undefined), ...${options} });
let env;
const waits = { handed: 0, ended: 0 };
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__hook") {
      mode = url.searchParams.get("mode") ?? mode;
      return new Response("ok");
    }
    if (url.pathname === "/__waits") return Response.json(waits);
    env ??= { ...bindings };
    const counted = {
      waitUntil(promise) {
        waits.handed++;
        ctx.waitUntil(promise);
        promise.finally(() => waits.ended++);
      },
    };
    return worker.fetch(request, env, counted);
  },
  async scheduled(controller, bindings, ctx) {
    env ??= { ...bindings };
    return worker.scheduled(controller, env, ctx);
  },
};
`;

const { log, start } = workerPerTest();


/** A Miniflare running the entry with these `createWorker` options (a JS object literal) and vars. */
async function worker(options: string, bindings: Record<string, string> = {}): Promise<{ base: string; cron: ScheduledWorker }> {
  const { mf, base } = await start(ENTRY(options), { d1: true, bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...bindings } });
  return { base, cron: (await mf.getWorker()) as unknown as ScheduledWorker };
}

/** A cron run: its result, and how long it took. */
async function run(cron: ScheduledWorker): Promise<{ result: unknown; ms: number }> {
  const started = Date.now();
  const result = await cron.scheduled({ cron: "17 * * * *" });
  return { result, ms: Date.now() - started };
}

const PRUNED_NOTHING = '{"message":"plantgate prune","refreshTokens":0,"sessions":0,"attempts":0,"revokedTokens":0,"assertionJtis":0,"signingKeys":0,"auditEvents":0,"complete":true}';
const GAVE_UP = (ms: number) => `plantgate scheduled: the security events were not all delivered within ${ms} ms; the run ends without waiting for the rest`;

describe("scheduled() with an onEvent hook that never settles, in workerd", () => {
  it("a first run (its bootstrap's client.created never delivered): ends ok after scheduledEventsTimeoutMs, the prune's counts reported, one line logged", async () => {
    const { base, cron } = await worker("{ scheduledEventsTimeoutMs: 1500 }", {
      PLANTGATE_BOOTSTRAP_CLIENT_ID: "demo-client",
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "demo-secret-change-me-0123456789",
    });
    await fetch(`${base}/__hook?mode=never`).then((r) => r.text());
    const first = await run(cron);
    expect(first.result).toEqual({ outcome: "ok", noRetry: false });
    expect(first.ms).toBeGreaterThanOrEqual(1400);
    expect(first.ms).toBeLessThan(6000);
    await log.waitFor(GAVE_UP(1500));
    expect(log.text).toContain(PRUNED_NOTHING);
    expect(log.text.split(GAVE_UP(1500)).length - 1).toBe(1);
  }, 60_000);

  it("an earlier request's event never delivered (its hook's context gone): the run ends ok after the bound; with nothing pending, at once", async () => {
    // A bound of 5 s: a run with nothing pending must end well before it (within 4 s, room for a
    // loaded machine), and a run that waited for it could not.
    const { base, cron } = await worker("{ scheduledEventsTimeoutMs: 5000 }");
    // The start, with the hook answering: nothing is left pending, and the run does not wait.
    expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
    const before = await run(cron);
    expect(before.result).toEqual({ outcome: "ok", noRetry: false });
    expect(before.ms).toBeLessThan(4000);
    await log.waitFor(PRUNED_NOTHING);
    expect(log.text).toContain(PRUNED_NOTHING);
    await fetch(`${base}/__hook?mode=never`).then((r) => r.text());
    // client.authentication_failed, handed to a hook that never settles.
    const refused = await fetch(`${base}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa("nobody:wrong-secret")}` },
      body: "grant_type=client_credentials",
    });
    expect([refused.status, await refused.json()]).toEqual([401, { error: "invalid_client", error_description: "Client authentication failed." }]);
    const during = await run(cron);
    expect(during.result).toEqual({ outcome: "ok", noRetry: false });
    expect(during.ms).toBeGreaterThanOrEqual(4900);
    expect(during.ms).toBeLessThan(9500);
    await log.waitFor(GAVE_UP(5000));
    expect(log.text.split(PRUNED_NOTHING).length - 1).toBe(2);
    expect(log.text.split(GAVE_UP(5000)).length - 1).toBe(1);
  }, 60_000);

  it("scheduledEventsTimeoutMs is checked when the Worker is made", async () => {
    const { createWorker } = await import("../src/index.js");
    for (const scheduledEventsTimeoutMs of [Number.NaN, -1, 1.5, 2 ** 31]) {
      expect(() => createWorker({ scheduledEventsTimeoutMs })).toThrow(new TypeError("scheduledEventsTimeoutMs must be an integer from 0 (no bound) to 2147483647"));
    }
    expect(() => createWorker({ scheduledEventsTimeoutMs: 0 })).not.toThrow();
  });
});

const CLIENT_ID = "demo-client";
const CLIENT_SECRET = "demo-secret-change-me-0123456789";
const USERNAME = "demo";
const PASSWORD = "demo-password-0123";
const FETCH_GAVE_UP = /plantgate fetch: (\d+) batches of security events not delivered within 1500 ms; requests stop waiting for them after that \(not logged again until they are\)/;

describe("fetch with an onEvent hook that never settles, in workerd", () => {
  it("every request gets its whole answer; each request's waitUntil ends after fetchEventsTimeoutMs; one line logged, naming a count and no secret", async () => {
    const { base } = await worker("{ fetchEventsTimeoutMs: 1500 }", {
      PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
      PLANTGATE_BOOTSTRAP_USERNAME: USERNAME,
      PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD,
    });
    const waits = async () => (await (await fetch(`${base}/__waits`)).json()) as { handed: number; ended: number };
    // From the first request on (the bootstrap's events too), every hook call never settles.
    await fetch(`${base}/__hook?mode=never`).then((r) => r.text());
    const secrets: string[] = [CLIENT_SECRET, PASSWORD];
    const started = Date.now();
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${base}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CLIENT_ID}:${CLIENT_SECRET}`)}` },
        body: i % 2 === 0 ? "grant_type=client_credentials" : `grant_type=password&username=${USERNAME}&password=${PASSWORD}&scope=Platform_UserAPIs`,
      });
      const body = (await res.json()) as { access_token: string };
      expect([res.status, res.headers.get("cache-control"), body]).toEqual([
        200,
        "no-store",
        i % 2 === 0
          ? { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" }
          : { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs" },
      ]);
      secrets.push(body.access_token);
      // The token is good: the API answers with it.
      const list = await fetch(`${base}/rbac/ServerCommand/GetAccountList?page=1&pageSize=20`, { headers: { authorization: `Bearer ${body.access_token}` } });
      expect([list.status, await list.json()]).toEqual([200, { accounts: [expect.objectContaining({ username: USERNAME })], page: 1, pageSize: 20, total: 1, totalPages: 1 }]);
    }
    const answered = Date.now() - started;
    // Every request's waitUntil work ends: the answer's at once, the events' flush at its bound.
    const handed = (await waits()).handed;
    expect(handed).toBeGreaterThanOrEqual(80);
    const deadline = Date.now() + 20_000;
    while ((await waits()).ended < handed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await waits()).toEqual({ handed, ended: handed });
    const ended = Date.now() - started;
    // The flushes waited for their bound (a stuck call before each), no longer than it and the answers.
    expect(ended).toBeGreaterThanOrEqual(1500);
    expect(ended).toBeLessThan(answered + 1500 + 10_000);
    // One line for the whole stall (not one per request), naming only a count.
    for (let i = 0; i < 40 && !FETCH_GAVE_UP.test(log.text); i++) await new Promise((r) => setTimeout(r, 50));
    const lines = [...log.text.matchAll(new RegExp(FETCH_GAVE_UP, "g"))];
    expect(lines.length).toBe(1);
    expect(Number(lines[0]![1])).toBeGreaterThanOrEqual(1);
    for (const secret of secrets) expect(log.text.includes(secret), `the log holds ${secret.slice(0, 6)}…`).toBe(false);
  }, 90_000);

  it("fetchEventsTimeoutMs and scheduledEventsTimeoutMs 0 set no bound: a hook that takes 3 s is waited for by the request's waitUntil and by the cron run, and nothing is logged as given up", async () => {
    // Taken for 0 ms, both would stop waiting at once; a bound of their own would log its line.
    const { base, cron } = await worker("{ fetchEventsTimeoutMs: 0, scheduledEventsTimeoutMs: 0 }");
    const waits = async () => (await (await fetch(`${base}/__waits`)).json()) as { handed: number; ended: number };
    const refuse = async () => {
      const res = await fetch(`${base}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa("nobody:wrong-secret")}` },
        body: "grant_type=client_credentials",
      });
      expect([res.status, await res.json()]).toEqual([401, { error: "invalid_client", error_description: "Client authentication failed." }]);
    };
    // Started with the hook answering at once: nothing pending.
    expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
    await fetch(`${base}/__hook?mode=slow`).then((r) => r.text());
    const before = await waits();
    const started = Date.now();
    // Two requests: the second's waitUntil waits for the first's event too, delivered in the first's context.
    await refuse();
    expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
    const deadline = Date.now() + 20_000;
    let now = await waits();
    while ((now.handed === before.handed || now.ended < now.handed) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      now = await waits();
    }
    expect(now.ended).toBe(now.handed);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    // An event pending (delivered 3 s after this request): the run waits for it, and ends ok.
    const pendingFrom = Date.now();
    await refuse();
    const during = await run(cron);
    expect(during.result).toEqual({ outcome: "ok", noRetry: false });
    expect(Date.now() - pendingFrom).toBeGreaterThanOrEqual(2900);
    await log.waitFor(PRUNED_NOTHING);
    expect(log.text).not.toContain("not all delivered");
    expect(log.text).not.toContain("not delivered within");
  }, 60_000);

  it("fetchEventsTimeoutMs is checked when the Worker is made", async () => {
    const { createWorker } = await import("../src/index.js");
    for (const fetchEventsTimeoutMs of [Number.NaN, -1, 1.5, 2 ** 31]) {
      expect(() => createWorker({ fetchEventsTimeoutMs })).toThrow(new TypeError("fetchEventsTimeoutMs must be an integer from 0 (no bound) to 2147483647"));
    }
    expect(() => createWorker({ fetchEventsTimeoutMs: 0 })).not.toThrow();
  });
});
