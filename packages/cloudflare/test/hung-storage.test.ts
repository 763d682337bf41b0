/**
 * A D1 that stops answering, in workerd (Miniflare): every request still gets its answer within a
 * bound. The real `createWorker()` entry is bundled for the Workers runtime; between it and the
 * real D1 binding sits a gate the test closes and opens (`/__gate`):
 *
 * - `never`: a call never settles and holds no I/O, as the calls of a request context that is gone
 *   (cancelled, or found hung by workerd) stay for any other request waiting on them;
 * - `slow`: a call waits ten minutes (a timer: pending I/O) before it runs, as a D1 that is late;
 * - `once`: the next call waits `delay` ms (`/__gate?mode=once&delay=ms`), then the gate is open.
 *
 * A request with `x-abandon: <ms>` is answered 499 after that long, its work left pending and held
 * by no `waitUntil`, as a client's disconnect leaves it in production: its context, and the
 * timers of its own waits, go.
 *
 * `only` limits the gate to statements holding a text (the reads of the signing keys). The Worker's clock is
 * moved on with `/__gate?advance=ms` so the signing keys are due for their reload (every 60 s).
 */
import { describe, expect, it } from "vitest";
import { D1_GATE, workerPerTest } from "./support.js";
import { WORKER_START_RETRY_MS } from "../src/index.js";

const ENTRY = (options: string) => `
import { createWorker } from "../src/index.ts";
let offset = 0;
let mode = "open";
let only = "";
const worker = createWorker({ clock: () => Date.now() + offset, ...${options} });
const real = new WeakMap();
let delay = 0;
const gated = (sql, run) => {
  if (mode === "open" || (only !== "" && !sql.includes(only))) return run();
  if (mode === "never") return new Promise(() => {});
  if (mode === "once") {
    mode = "open";
    return new Promise((resolve) => setTimeout(resolve, delay)).then(run);
  }
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
      delay = Number(url.searchParams.get("delay") ?? delay);
      return new Response("ok");
    }
    env ??= { ...bindings, DB: gate(bindings.DB) };
    // x-abandon: ms: answered 499 after that long while its work is left pending, held by no
    // waitUntil (as a client's disconnect does in production): the request's context goes, and
    // its calls and timers with it.
    const abandon = request.headers.get("x-abandon");
    if (abandon !== null) {
      worker.fetch(request, env, { waitUntil() {} }).catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, Number(abandon)));
      return new Response("abandoned", { status: 499 });
    }
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
const BOOTSTRAP = {
  PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
  PLANTGATE_BOOTSTRAP_CLIENT_ID: "hung-client",
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "hung-secret-0123456789abcdef",
  PLANTGATE_BOOTSTRAP_USERNAME: "hung-user",
  PLANTGATE_BOOTSTRAP_PASSWORD: "hung-password",
};
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

  it("a token with a kid this isolate does not know: the request whose look at the key rows never settles is over and its context gone, and every request after it, during that look and later, is answered within the bound", async () => {
    const base = (await start(ENTRY("{ signingKeyLoadTimeoutMs: 1000 }"), { d1: true, bindings: BOOTSTRAP })).base;
    const issued = await fetch(`${base}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa("hung-client:hung-secret-0123456789abcdef")}` },
      body: "grant_type=password&username=hung-user&password=hung-password",
    });
    expect(issued.status).toBe(200);
    const token = ((await issued.json()) as { access_token: string }).access_token;
    const [head, payload, signature] = token.split(".");
    const unknownKid = `${Buffer.from(JSON.stringify({ ...(JSON.parse(Buffer.from(head!, "base64url").toString()) as object), kid: "not-loaded-here" })).toString("base64url")}.${payload}.${signature}`;
    const accounts = async (bearer: string, headers: Record<string, string> = {}) => {
      const started = Date.now();
      try {
        const res = await fetch(`${base}/rbac/ServerCommand/GetAccountList`, { headers: { ...headers, authorization: `Bearer ${bearer}` }, signal: AbortSignal.timeout(20_000) });
        await res.arrayBuffer();
        return { status: res.status as number | "no answer", ms: Date.now() - started };
      } catch {
        return { status: "no answer" as const, ms: Date.now() - started };
      }
    };
    expect((await accounts(token)).status).toBe(200);
    // A second on (a look at the key rows is due), and those reads never settle from here on.
    await get(base, `/__gate?mode=never&only=${KEYS}&advance=2000`);
    // The first request's look: the request is over after 300 ms (its work left pending), its
    // context goes with its timers, and the look's promise never settles.
    expect((await accounts(unknownKid, { "x-abandon": "300" })).status).toBe(499);
    // Requests that come during that look wait for it on their own timers, at most 2 x 1000 ms from its start.
    const during = await Promise.all([accounts(unknownKid), accounts(unknownKid), accounts(token)]);
    expect(during.map((r) => r.status)).toEqual([401, 401, 200]);
    for (const r of during) expect(r.ms).toBeLessThan(5000);
    // The two of the unknown kid did wait for the look (till 2 x 1000 ms from its start, 300 ms before them).
    for (const r of during.slice(0, 2)) expect(r.ms).toBeGreaterThanOrEqual(1000);
    // Past that bound the stale look is dropped: the next one looks afresh (its read late too: 401 within 1000 ms).
    await new Promise((r) => setTimeout(r, 2000));
    await get(base, "/__gate?advance=2000");
    const later = await accounts(unknownKid);
    expect(later.status).toBe(401);
    // Its own look, given up on after 1000 ms (not the stale one's, past its bound at once).
    expect(later.ms).toBeGreaterThanOrEqual(1000);
    expect(later.ms).toBeLessThan(5000);
    // D1 back: served at once.
    await get(base, "/__gate?mode=open&advance=2000");
    const after = await Promise.all([accounts(unknownKid), accounts(token)]);
    expect(after.map((r) => r.status)).toEqual([401, 200]);
    for (const r of after) expect(r.ms).toBeLessThan(5000);
  }, 60_000);

  it("signingKeyLoadTimeoutMs 0 sets no bound: two requests during a reload whose key read takes 3 s both wait for it, and are served", async () => {
    // The second request joins the reload begun in the first one's context, with no timer of its
    // own. Taken for 0 ms, or for a bound under 3 s, both would be answered before the read ended.
    const base = await worker("{ signingKeyLoadTimeoutMs: 0 }");
    const before = await get(base, "/.well-known/jwks.json");
    expect(before.status).toBe(200);
    await get(base, `/__gate?mode=once&delay=3000&only=${KEYS}&advance=61000`);
    const during = await Promise.all([get(base, "/.well-known/jwks.json"), get(base, "/.well-known/jwks.json")]);
    expect(during.map((r) => [r.status, r.body])).toEqual([
      [200, before.body],
      [200, before.body],
    ]);
    for (const r of during) expect(r.ms).toBeGreaterThanOrEqual(2900);
    expect(log.text).not.toContain("were not loaded from storage within");
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

  it("no keys loaded yet and their load never settles: 503 with the documented body within the bound, and D1 back, the next request after startRetryMs is served", async () => {
    const base = await worker("{ signingKeyLoadTimeoutMs: 1000 }");
    await get(base, `/__gate?mode=never&only=${KEYS}`);
    const during = await get(base, "/.well-known/jwks.json");
    expect([during.status, during.body]).toEqual([503, UNAVAILABLE]);
    expect(during.ms).toBeLessThan(5000);
    expect(log.text).toContain("the signing keys were not loaded from storage within 1000 ms");
    await get(base, "/__gate?mode=open");
    // The failed start is kept for startRetryMs; the first request after it starts afresh.
    await new Promise((resolve) => setTimeout(resolve, WORKER_START_RETRY_MS));
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

  it("startTimeoutMs 0 sets no bound: two requests at once wait for a start whose first D1 call takes 3 s, and both are served", async () => {
    // The second request waits on the start begun in the first one's context, with no timer of its
    // own. Taken for 0 ms, or for a bound under 3 s, both would be 503.
    const base = await worker("{ startTimeoutMs: 0 }");
    await get(base, "/__gate?mode=once&delay=3000");
    const both = await Promise.all([get(base, "/.well-known/jwks.json"), get(base, "/.well-known/jwks.json")]);
    expect(both.map((r) => [r.status, (JSON.parse(r.body) as { keys: unknown[] }).keys.length])).toEqual([
      [200, 1],
      [200, 1],
    ]);
    for (const r of both) expect(r.ms).toBeGreaterThanOrEqual(2900);
    expect(log.text).not.toContain("the start did not finish");
  }, 60_000);

  it("startTimeoutMs is checked when the Worker is made", async () => {
    const { createWorker } = await import("../src/index.js");
    for (const startTimeoutMs of [Number.NaN, -1, 1.5, 2 ** 31]) expect(() => createWorker({ startTimeoutMs })).toThrow(new TypeError("startTimeoutMs must be an integer from 0 (no bound) to 2147483647"));
    expect(() => createWorker({ startTimeoutMs: 0 })).not.toThrow();
  });
});
