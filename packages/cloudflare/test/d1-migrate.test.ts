/**
 * The D1 migrations at an isolate's start when a migration's batch fails, in workerd (Miniflare, the
 * real `createWorker()` entry bundled for the Workers runtime, a real D1 database behind support.ts's
 * gate, which counts every D1 call: a statement, or a batch).
 *
 * - No race (D1 refuses the batch): the start fails at once, 503, in 7 D1 calls. Until 2026-11-30
 *   the migrator took any failed batch for a lost race and polled the record of migrations every
 *   100 ms for 10 s (two reads a poll) before it gave up: the first request waited over 10 s for its
 *   503, after some 200 D1 calls, and so did every request after it while the batch kept failing.
 * - A race lost (another migrator applied the first migrations just before this one's batches, then
 *   stopped): the start goes on with what is left and serves. Until 2026-11-30 it waited the 10 s
 *   for the other to record all of them, then failed: 503.
 */
import { describe, expect, it } from "vitest";
import { WORKER_START_RETRY_MS } from "../src/index.js";
import { D1_GATE, workerPerTest } from "./support.js";

// `/__gate?mode=`: "fail" fails every migration's batch (the one with its pg_migrations row);
// "race" runs each of the first three migrations' batches twice, as another migrator just before
// this one's (which then fails on what the other made); "open" lets D1 be. `/__calls`: the D1 calls
// made through the Worker's binding so far.
const ENTRY = `
import { createWorker } from "../src/index.ts";
const worker = createWorker({ logger: { error: (m, c) => console.log("ERROR " + m + " " + JSON.stringify(c)), warn: () => {} } });
let mode = "open";
let calls = 0;
let raced = 0;
const real = new WeakMap();
const gated = (sql, run) => {
  calls++;
  if (!sql.includes('insert into "pg_migrations"')) return run();
  if (mode === "fail") return Promise.reject(new Error("D1_ERROR: simulated failure: SQLITE_IOERR"));
  if (mode === "race" && raced < 3) return (raced++, run().then(() => run()));
  return run();
};
${D1_GATE}
let env;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__gate") return ((mode = url.searchParams.get("mode")), new Response("ok"));
    if (url.pathname === "/__calls") return Response.json(calls);
    if (url.pathname === "/__migrations") return Response.json((await bindings.DB.prepare('select count(*) as n from "pg_migrations"').first()).n);
    env ??= { ...bindings, DB: gate(bindings.DB) };
    return worker.fetch(request, env, ctx);
  },
};
`;

const { log, start } = workerPerTest();
const UNAVAILABLE = '{"error":1503,"message":"The service is temporarily unavailable; retry later."}';

async function timed(url: string): Promise<{ status: number; body: string; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(url);
  const body = await res.text();
  return { status: res.status, body, ms: performance.now() - t0 };
}

describe("a migration batch that fails at the start, in workerd", () => {
  it("no race: 503 at once, in 7 D1 calls; kept for startRetryMs (no D1 call, no line), then 8 on each request that tries again; served once D1 takes the batch", async () => {
    const { base } = await start(ENTRY, { d1: true });
    await fetch(`${base}/__gate?mode=fail`);
    const first = await timed(`${base}/.well-known/jwks.json`);
    expect([first.status, first.body]).toEqual([503, UNAVAILABLE]);
    // The record read (1: no table yet), the bookkeeping batch, the record read (2), the first
    // migration's batch (refused), the record read again (2): nothing recorded by another, thrown.
    expect(await (await fetch(`${base}/__calls`)).json()).toBe(7);
    expect(first.ms).toBeLessThan(2000);
    await log.waitFor("plantgate worker failed to start");
    expect(log.text).toContain("SQLITE_IOERR");
    // The failed start is kept for startRetryMs (1 s by default): a request meanwhile gets the 503
    // at once without a D1 call, and the failure is not logged again.
    log.clear();
    const held = await timed(`${base}/.well-known/jwks.json`);
    expect([held.status, held.body]).toEqual([503, UNAVAILABLE]);
    expect(await (await fetch(`${base}/__calls`)).json()).toBe(7);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(log.text).not.toContain("plantgate worker failed to start");
    // Then the outage is retried by the next request (as the README says), as fast: 8 calls (the
    // record's table exists now, so its first read is two), and logged again.
    await new Promise((resolve) => setTimeout(resolve, WORKER_START_RETRY_MS));
    const second = await timed(`${base}/.well-known/jwks.json`);
    expect([second.status, second.body]).toEqual([503, UNAVAILABLE]);
    expect(await (await fetch(`${base}/__calls`)).json()).toBe(15);
    expect(second.ms).toBeLessThan(2000);
    await log.waitFor("plantgate worker failed to start");
    expect(log.text).toContain("SQLITE_IOERR");
    await new Promise((resolve) => setTimeout(resolve, WORKER_START_RETRY_MS + 100));
    await fetch(`${base}/__gate?mode=open`);
    expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
    expect(await (await fetch(`${base}/__migrations`)).json()).toBe(15);
  }, 60_000);

  it("a race lost to a migrator that then stopped: the start applies what is left and serves", async () => {
    const { base } = await start(ENTRY, { d1: true });
    await fetch(`${base}/__gate?mode=race`);
    const first = await timed(`${base}/.well-known/jwks.json`);
    expect(first.status).toBe(200);
    expect(first.ms).toBeLessThan(5000);
    expect(await (await fetch(`${base}/__migrations`)).json()).toBe(15);
    expect(log.text).not.toContain("ERROR");
  }, 60_000);
});
