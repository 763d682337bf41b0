/**
 * The D1 deadline (`d1TimeoutMs`), in workerd (Miniflare): a storage operation whose D1 call does
 * not settle in time fails with StorageError, so its request is answered 503 with `Retry-After`,
 * and the call's late result changes nothing for the requests after it.
 *
 * The real `createWorker()` entry is bundled for the Workers runtime; between it and the real D1
 * binding sits a gate the test closes and opens: `/__gate?hold=TEXT` holds every statement (and
 * every batch) whose SQL holds TEXT until `/__gate?release=1`, which runs each held call against D1
 * after all, late, and hands its result to its caller. `/__gate` answers how many calls were held
 * and how many of those have run since. A held call keeps a timer pending, as a D1 call in flight
 * keeps its I/O: workerd then sees a request waiting, not a hung one.
 * `/__sql?q=` reads the real D1 directly.
 */
import { describe, expect, it } from "vitest";
import { D1_GATE, workerPerTest } from "./support.js";

const ENTRY = (options: string) => `
import { createWorker } from "../src/index.ts";
const worker = createWorker(${options});
const real = new WeakMap();
let hold = null;
let waiting = [];
let held = 0;
let late = 0;
const gated = (sql, run) => {
  if (hold === null || !sql.includes(hold)) return run();
  held++;
  return new Promise((resolve, reject) => {
    waiting.push({ run, resolve, reject });
    // Pending I/O for the request, as a D1 call in flight is: without it workerd finds the request
    // hung and ends it with a 500 of its own (which no D1 call that is slow would get).
    setTimeout(() => {}, 600_000);
  });
};
${D1_GATE}
let env;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__gate") {
      if (url.searchParams.has("hold")) hold = url.searchParams.get("hold");
      if (url.searchParams.has("release")) {
        // The held calls run now, in this request (the one that made them may be over), and
        // their results go to their callers, late.
        hold = null;
        const released = waiting;
        waiting = [];
        await Promise.all(released.map(({ run, resolve, reject }) => run().then(resolve, reject).finally(() => void late++)));
      }
      return Response.json({ held, late });
    }
    if (url.pathname === "/__sql") return Response.json((await bindings.DB.prepare(url.searchParams.get("q")).all()).results);
    env ??= { ...bindings, DB: gate(bindings.DB) };
    return worker.fetch(request, env, ctx);
  },
};
`;

const CLIENT_ID = "d1-deadline-client";
const CLIENT_SECRET = "d1-deadline-secret-0123456789abcdef";
const USERNAME = "d1-deadline-user";
const PASSWORD = "d1-deadline-password-0123";
const BASIC = `Basic ${btoa(`${CLIENT_ID}:${CLIENT_SECRET}`)}`;
const UNAVAILABLE = '{"error":"temporarily_unavailable","error_description":"The service is temporarily unavailable; retry later."}';

const { log, start } = workerPerTest();

async function worker(options: string): Promise<string> {
  const bindings = {
    PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
    PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID,
    PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
    PLANTGATE_BOOTSTRAP_USERNAME: USERNAME,
    PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD,
  };
  return (await start(ENTRY(options), { d1: true, bindings })).base;
}

interface Answer {
  status: number | "no answer";
  body: string;
  headers: Record<string, string>;
  ms: number;
}

/** A token request; unanswered after 20 s it is "no answer". */
async function token(base: string, body: string): Promise<Answer> {
  const started = Date.now();
  try {
    const res = await fetch(`${base}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: BASIC },
      body,
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, body: await res.text(), headers: Object.fromEntries(res.headers), ms: Date.now() - started };
  } catch {
    return { status: "no answer", body: "", headers: {}, ms: Date.now() - started };
  }
}

const gate = async (base: string, query: string): Promise<{ held: number; late: number }> => (await fetch(`${base}/__gate?${query}`)).json() as Promise<{ held: number; late: number }>;
const sql = async (base: string, q: string): Promise<unknown[]> => (await fetch(`${base}/__sql?q=${encodeURIComponent(q)}`)).json() as Promise<unknown[]>;

/** The "storage unavailable" entries of the workerd log (workerd prints the logged object over several lines). */
const storageErrors = (): string[] => [...log.text.matchAll(/storage unavailable \{[^}]*\}/g)].map((m) => m[0]);

describe("d1TimeoutMs, in workerd", () => {
  it("a client lookup D1 holds: the token request is answered 503 with Retry-After within the bound, logged naming the operation; released late, the next request is served", async () => {
    const base = await worker("{ d1TimeoutMs: 1000 }");
    // Started (migrations, bootstrap, keys) with D1 answering.
    expect((await token(base, "grant_type=client_credentials")).status).toBe(200);
    await gate(base, `hold=${encodeURIComponent('from "pg_clients"')}`);
    const during = await token(base, "grant_type=client_credentials");
    expect([during.status, during.body, during.headers["retry-after"], during.headers["cache-control"], during.headers["pragma"]]).toEqual([503, UNAVAILABLE, "5", "no-store", "no-cache"]);
    expect(during.ms).toBeGreaterThanOrEqual(900);
    expect(during.ms).toBeLessThan(5000);
    expect((await gate(base, "")).held).toBe(1);
    const error = "sqlite storage failed during clients.get (no answer from D1 within 1000 ms)";
    await log.waitFor(error);
    expect(storageErrors()).toEqual([`storage unavailable {\n  name: 'StorageError',\n  message: '${error}'\n}`]);
    // The operation, never its parameters.
    for (const value of [CLIENT_ID, CLIENT_SECRET]) expect(log.text.includes(value), `the log holds ${value.slice(0, 6)}…`).toBe(false);
    // D1 answers the held lookup now, long after its caller was told it failed: nothing of it reaches a later request.
    expect(await gate(base, "release=1")).toEqual({ held: 1, late: 1 });
    const after = await token(base, "grant_type=client_credentials");
    expect([after.status, JSON.parse(after.body)]).toEqual([200, { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" }]);
    expect(after.ms).toBeLessThan(5000);
  }, 60_000);

  it("a refresh token's batch D1 holds: 503 within the bound; the late batch is written whole or not at all, and the next grant and its refresh are served", async () => {
    const base = await worker("{ d1TimeoutMs: 1000 }");
    const password = `grant_type=password&username=${USERNAME}&password=${PASSWORD}&scope=${encodeURIComponent("Platform_UserAPIs offline_access")}`;
    expect((await token(base, "grant_type=client_credentials")).status).toBe(200);
    // The token's row and its family's go in one D1 batch (refreshTokens.create).
    await gate(base, `hold=${encodeURIComponent('"pg_refresh_families"')}`);
    const during = await token(base, password);
    expect([during.status, during.body, during.headers["retry-after"]]).toEqual([503, UNAVAILABLE, "5"]);
    expect(during.ms).toBeGreaterThanOrEqual(900);
    expect(during.ms).toBeLessThan(5000);
    const error = "sqlite storage failed during refreshTokens.create (no answer from D1 within 1000 ms)";
    await log.waitFor(error);
    expect(storageErrors()).toEqual([`storage unavailable {\n  name: 'StorageError',\n  message: '${error}'\n}`]);
    for (const value of [PASSWORD, CLIENT_SECRET]) expect(log.text.includes(value)).toBe(false);
    expect(await gate(base, "release=1")).toEqual({ held: 1, late: 1 });
    // Its outcome was unknown to the client: D1 wrote it late, but whole (one batch): no token without its family.
    const orphans = 'select count(*) as n from "pg_refresh_tokens" t where not exists (select 1 from "pg_refresh_families" f where f."family_id" = t."family_id")';
    expect(await sql(base, orphans)).toEqual([{ n: 0 }]);
    expect(await sql(base, 'select (select count(*) from "pg_refresh_tokens") as tokens, (select count(*) from "pg_refresh_families") as families')).toEqual([{ tokens: 1, families: 1 }]);
    const after = await token(base, password);
    const granted = JSON.parse(after.body) as { refresh_token: string };
    expect([after.status, granted]).toEqual([200, { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs offline_access", refresh_token: expect.any(String) }]);
    const refreshed = await token(base, `grant_type=refresh_token&refresh_token=${encodeURIComponent(granted.refresh_token)}`);
    expect([refreshed.status, JSON.parse(refreshed.body)]).toEqual([200, { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs offline_access", refresh_token: expect.any(String) }]);
    expect(await sql(base, orphans)).toEqual([{ n: 0 }]);
  }, 60_000);

  it("d1TimeoutMs 0 sets no bound: a client lookup D1 holds for 3 s keeps its request waiting (no 503), and once released the request is served", async () => {
    // Taken for 0 ms, every D1 call would fail at once; a bound of its own would answer 503 when it
    // passed (the 15 s default is not waited out here: 3 s is three times the bound the tests above set).
    const base = await worker("{ d1TimeoutMs: 0 }");
    expect((await token(base, "grant_type=client_credentials")).status).toBe(200);
    await gate(base, `hold=${encodeURIComponent('from "pg_clients"')}`);
    let answered = false;
    const during = token(base, "grant_type=client_credentials").finally(() => (answered = true));
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect([answered, (await gate(base, "")).held]).toEqual([false, 1]);
    expect(await gate(base, "release=1")).toEqual({ held: 1, late: 1 });
    const served = await during;
    expect([served.status, JSON.parse(served.body)]).toEqual([200, { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" }]);
    expect(served.ms).toBeGreaterThanOrEqual(2900);
    expect(storageErrors()).toEqual([]);
  }, 60_000);

  it("d1TimeoutMs is checked when the Worker is made", async () => {
    const { createWorker } = await import("../src/index.js");
    for (const d1TimeoutMs of [Number.NaN, -1, 1.5, 2 ** 31]) expect(() => createWorker({ d1TimeoutMs })).toThrow(new TypeError("d1TimeoutMs must be an integer from 0 (no bound) to 2147483647"));
    expect(() => createWorker({ d1TimeoutMs: 0 })).not.toThrow();
  });
});
