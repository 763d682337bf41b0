/**
 * A D1 that stops answering, in workerd (Miniflare): every request still gets its answer within a
 * bound. The real `createWorker()` entry is bundled for the Workers runtime; between it and the
 * real D1 binding sits a gate the test closes and opens (`/__gate`):
 *
 * - `never`: a call never settles and holds no I/O, as the calls of a request context that is gone
 *   (cancelled, or found hung by workerd) stay for any other request waiting on them;
 * - `slow`: a call waits ten minutes (a timer: pending I/O) before it runs, as a D1 that is late.
 *
 * `only` limits the gate to statements holding a text (the reads of the signing keys). The Worker's clock is
 * moved on with `/__gate?advance=ms` so the signing keys are due for their reload (every 60 s).
 */
import { describe, expect, it } from "vitest";
import { D1_GATE, workerPerTest } from "./support.js";

const ENTRY = (options: string) => `
import { createWorker } from "../src/index.ts";
let offset = 0;
let mode = "open";
let only = "";
const worker = createWorker({ clock: () => Date.now() + offset, ...${options} });
const real = new WeakMap();
const gated = (sql, run) => {
  if (mode === "open" || (only !== "" && !sql.includes(only))) return run();
  if (mode === "never") return new Promise(() => {});
  return new Promise((resolve) => setTimeout(resolve, 600_000)).then(run);
};
${D1_GATE}
let env;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__gate") {
      mode = url.searchParams.get("mode") ?? mode;
      only = url.searchParams.get("only") ?? only;
      offset += Number(url.searchParams.get("advance") ?? 0);
      return new Response("ok");
    }
    env ??= { ...bindings, DB: gate(bindings.DB) };
    return worker.fetch(request, env, ctx);
  },
};
`;

const { log, start } = workerPerTest();

/** A Miniflare running the entry with these `createWorker` options (a JS object literal). */
async function worker(options = "{}"): Promise<string> {
  return (await start(ENTRY(options), { d1: true, bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" } })).base;
}

/** GET `path`: status, body and how long it took; a request unanswered after 20 s is "no answer". */
async function get(base: string, path: string): Promise<{ status: number | "no answer"; body: string; ms: number }> {
  const started = Date.now();
  try {
    const res = await fetch(base + path, { signal: AbortSignal.timeout(20_000) });
    return { status: res.status, body: await res.text(), ms: Date.now() - started };
  } catch {
    return { status: "no answer", body: "", ms: Date.now() - started };
  }
}

/** The keyring's reads (\`select * from "pg_signing_keys" ...\`), not the migrations that create the table. */
const KEYS = encodeURIComponent('from "pg_signing_keys"');
const UNAVAILABLE = '{"error":1503,"message":"The service is temporarily unavailable; retry later."}';

describe("a D1 that stops answering, in workerd", () => {
  it("the signing keys' reload never settles (the context that ran it is gone): the keys loaded before serve within the bound, and the next reload starts afresh", async () => {
    const base = await worker("{ signingKeyLoadTimeoutMs: 1000 }");
    const before = await get(base, "/.well-known/jwks.json");
    expect(before.status).toBe(200);
    await get(base, `/__gate?mode=never&only=${KEYS}&advance=61000`);
    const during = await Promise.all([get(base, "/.well-known/jwks.json"), get(base, "/.well-known/jwks.json")]);
    expect(during.map((r) => [r.status, r.body])).toEqual([
      [200, before.body],
      [200, before.body],
    ]);
    for (const r of during) expect(r.ms).toBeLessThan(5000);
    // D1 is back: the reload given up on is not waited for, a new one runs.
    await get(base, "/__gate?mode=open");
    const after = await get(base, "/.well-known/jwks.json");
    expect([after.status, after.body]).toEqual([200, before.body]);
    expect(after.ms).toBeLessThan(5000);
  }, 60_000);

  it("the reload is slow (D1 late by minutes): answered with the loaded keys after the Worker's default bound (10 s), not minutes", async () => {
    const base = await worker();
    const before = await get(base, "/.well-known/jwks.json");
    expect(before.status).toBe(200);
    await get(base, `/__gate?mode=slow&only=${KEYS}&advance=61000`);
    const during = await get(base, "/.well-known/jwks.json");
    expect([during.status, during.body]).toEqual([200, before.body]);
    expect(during.ms).toBeGreaterThanOrEqual(9_000);
    expect(during.ms).toBeLessThan(15_000);
  }, 60_000);

  it("no keys loaded yet and their load never settles: 503 with the documented body within the bound, and D1 back, the next request is served", async () => {
    const base = await worker("{ signingKeyLoadTimeoutMs: 1000 }");
    await get(base, `/__gate?mode=never&only=${KEYS}`);
    const during = await get(base, "/.well-known/jwks.json");
    expect([during.status, during.body]).toEqual([503, UNAVAILABLE]);
    expect(during.ms).toBeLessThan(5000);
    expect(log.text).toContain("the signing keys were not loaded from storage within 1000 ms");
    await get(base, "/__gate?mode=open");
    const after = await get(base, "/.well-known/jwks.json");
    expect(after.status).toBe(200);
  }, 60_000);

  it("the start (migrations) never settles: 503 with the documented body within startTimeoutMs, on the OAuth paths in their shape; D1 back, the next request starts afresh", async () => {
    const base = await worker("{ startTimeoutMs: 1500 }");
    await get(base, "/__gate?mode=never");
    const during = await Promise.all([get(base, "/.well-known/jwks.json"), get(base, "/.well-known/jwks.json")]);
    expect(during.map((r) => [r.status, r.body])).toEqual([
      [503, UNAVAILABLE],
      [503, UNAVAILABLE],
    ]);
    for (const r of during) expect(r.ms).toBeLessThan(5000);
    const token = await (async () => {
      const started = Date.now();
      const res = await fetch(`${base}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=client_credentials",
        signal: AbortSignal.timeout(20_000),
      });
      return { status: res.status, body: await res.text(), ms: Date.now() - started };
    })();
    expect([token.status, token.body]).toEqual([503, '{"error":"temporarily_unavailable","error_description":"The service is temporarily unavailable; retry later."}']);
    expect(token.ms).toBeLessThan(5000);
    // Logged once per start given up on, not per request: the two JWKS requests waited on one
    // start, the token request on the next.
    expect(log.text.split("plantgate: the start did not finish within 1500 ms").length - 1).toBe(2);
    await get(base, "/__gate?mode=open");
    const after = await get(base, "/.well-known/jwks.json");
    expect(after.status).toBe(200);
    expect(after.ms).toBeLessThan(5000);
  }, 60_000);

  it("startTimeoutMs is checked when the Worker is made", async () => {
    const { createWorker } = await import("../src/index.js");
    for (const startTimeoutMs of [Number.NaN, -1, 1.5, 2 ** 31]) expect(() => createWorker({ startTimeoutMs })).toThrow(new TypeError("startTimeoutMs must be an integer from 0 (no bound) to 2147483647"));
    expect(() => createWorker({ startTimeoutMs: 0 })).not.toThrow();
  });
});
