/**
 * The security events of a start that fails after it made some (the bootstrap created its client,
 * then D1 refused the account), in workerd (Miniflare, the real `createWorker()` entry bundled for
 * the Workers runtime, a real D1 database behind support.ts's gate). The client exists from then
 * on, so no later start makes its `client.created` again: that event must reach the onEvent hook
 * and the audit trail from the failed start's own request, under its `waitUntil`. Until 2026-11-30
 * nothing held them: the 503 was answered, the request's context ended, and a hook call or an audit
 * write still under way (a D1 slower than the failure, a hook that calls out) was cut off with it.
 *
 * The gate fails every insert into pg_accounts while `/__gate?mode=fail` is set, and delays every
 * audit insert by 300 ms (a slow D1); the hook waits 300 ms (a call out) before it records the event.
 *
 * And only once: a start the isolate keeps failed answers every later request 503 and makes no
 * event after it failed, so those requests hand `waitUntil` nothing for it.
 */
import { describe, expect, it } from "vitest";
import { D1_GATE, workerPerTest } from "./support.js";

const ENTRY = `
import { createWorker } from "../src/index.ts";
let mode = "open";
const delivered = [];
const worker = createWorker({
  onEvent: async (event) => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    delivered.push(event.type);
  },
});
const real = new WeakMap();
const gated = (sql, run) => {
  if (mode === "fail" && sql.includes('insert into "pg_accounts"')) return Promise.reject(new Error("D1_ERROR: simulated outage: SQLITE_BUSY"));
  if (sql.includes('insert into "pg_audit_events"')) return new Promise((resolve) => setTimeout(resolve, 300)).then(run);
  return run();
};
${D1_GATE}
let env;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__gate") return ((mode = url.searchParams.get("mode")), new Response("ok"));
    if (url.pathname === "/__delivered") return Response.json(delivered);
    if (url.pathname === "/__audit") return Response.json((await bindings.DB.prepare("select type from pg_audit_events order by type").all()).results.map((r) => r.type));
    env ??= { ...bindings, DB: gate(bindings.DB) };
    return worker.fetch(request, env, ctx);
  },
  async scheduled(controller, bindings, ctx) {
    env ??= { ...bindings, DB: gate(bindings.DB) };
    return worker.scheduled(controller, env, ctx);
  },
};
`;

const { log, start } = workerPerTest();
const BOOTSTRAP = {
  PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
  PLANTGATE_BOOTSTRAP_CLIENT_ID: "events-client",
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "events-secret-0123456789abcdef",
  PLANTGATE_BOOTSTRAP_USERNAME: "events-user",
  PLANTGATE_BOOTSTRAP_PASSWORD: "events-password",
};
const UNAVAILABLE = '{"error":1503,"message":"The service is temporarily unavailable; retry later."}';
const FAILED = "plantgate worker failed to start";

describe("the events of a start that fails after the bootstrap made some, in workerd", () => {
  it("fetch: the failed start's client.created reaches the hook and the audit trail; the next start adds account.created", async () => {
    const { base } = await start(ENTRY, { d1: true, bindings: BOOTSTRAP });
    expect(await (await fetch(`${base}/__gate?mode=fail`)).text()).toBe("ok");
    const refused = await fetch(`${base}/.well-known/jwks.json`);
    expect([refused.status, await refused.text()]).toEqual([503, UNAVAILABLE]);
    await log.waitFor(FAILED);
    expect(log.text).toContain("sqlite storage failed during accounts.create: D1_ERROR: simulated outage: SQLITE_BUSY");
    expect(await (await fetch(`${base}/__gate?mode=open`)).text()).toBe("ok");
    // Well past the 300 ms each delivery takes.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await (await fetch(`${base}/__delivered`)).json()).toEqual(["client.created"]);
    expect(await (await fetch(`${base}/__audit`)).json()).toEqual(["client.created"]);
    // D1 back: the next request starts afresh, finds the client, creates the account.
    expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await (await fetch(`${base}/__delivered`)).json()).toEqual(["client.created", "account.created"]);
    expect(await (await fetch(`${base}/__audit`)).json()).toEqual(["account.created", "client.created"]);
  }, 30_000);

  it("scheduled: a first run whose start fails so waits for its client.created before it ends (the run fails, as a failed start does)", async () => {
    const { mf, base } = await start(ENTRY, { d1: true, bindings: BOOTSTRAP });
    expect(await (await fetch(`${base}/__gate?mode=fail`)).text()).toBe("ok");
    const worker = (await mf.getWorker()) as unknown as { scheduled(options: { cron?: string }): Promise<{ outcome: string; noRetry: boolean }> };
    const run = await worker.scheduled({ cron: "17 * * * *" });
    expect(run.outcome).toBe("exception");
    await log.waitFor("plantgate scheduled prune failed");
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await (await fetch(`${base}/__delivered`)).json()).toEqual(["client.created"]);
    expect(await (await fetch(`${base}/__audit`)).json()).toEqual(["client.created"]);
  }, 30_000);
});

// The Worker with a count of the promises it hands to waitUntil (/__waits); everything else as deployed.
const COUNTING = `
import { createWorker } from "../src/index.ts";
const worker = createWorker({ logger: { error: () => {}, warn: () => {} }, onEvent: () => {} });
let waits = 0;
export default {
  async fetch(request, env, ctx) {
    if (new URL(request.url).pathname === "/__waits") return Response.json(waits);
    return worker.fetch(request, env, { waitUntil: (promise) => (waits++, ctx.waitUntil(promise)) });
  },
};
`;

describe("a failed start the isolate keeps", () => {
  it("hands its events' flush to waitUntil once, from the first request that gets it, not from every later one (each handed one, with nothing left to flush, until 2026-11-30)", async () => {
    // A signing key that does not import: a configuration error found after the app was made (it
    // has an event sink), kept by the isolate: every request is answered 503 until a deploy fixes it.
    const { base } = await start(COUNTING, { d1: true, bindings: { ...BOOTSTRAP, PLANTGATE_SIGNING_KEY: '{"kty":"oct","k":"c2VjcmV0LWtleQ","d":"c2VjcmV0LWQ"}' } });
    const answers: [number, string][] = [];
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${base}/.well-known/jwks.json`);
      answers.push([res.status, await res.text()]);
      waits.push((await (await fetch(`${base}/__waits`)).json()) as number);
    }
    expect(answers).toEqual(Array(5).fill([503, UNAVAILABLE]));
    // Each request's own work (1 each); the failed start's flush once, with the first.
    expect(waits).toEqual([2, 3, 4, 5, 6]);
  }, 30_000);
});
