/**
 * A D1 whose schema is newer than the Worker's code (the Worker rolled back, or an older version
 * running beside a newer one that migrated, in a gradual deployment), in workerd (Miniflare). The
 * start refuses it (`SchemaTooNewError`, nothing changed). No request can fix that, so the isolate
 * keeps the failed start for `WORKER_SCHEMA_TOO_NEW_RETRY_MS` (10 s), answering the documented 503
 * without touching D1, then starts again once; until 2026-11-30 every request started again (two
 * D1 reads and an error line per request).
 *
 * The real `createWorker()` entry is bundled for the Workers runtime; a gate (support.ts's `gate`)
 * between it and the real D1 binding counts every D1 call (`/__count`). `/__sql?q=` runs SQL on the
 * real D1 directly (not counted), `/__migrate` applies this code's migrations.
 */
import { LATEST_SCHEMA_VERSION } from "@plantgate/storage-sql";
import { describe, expect, it } from "vitest";
import { WORKER_SCHEMA_TOO_NEW_RETRY_MS } from "../src/index.js";
import { D1_GATE, workerPerTest } from "./support.js";

const ENTRY = `
import { createWorker } from "../src/index.ts";
import { createD1Storage } from "@plantgate/storage-sql/d1";
const worker = createWorker();
const real = new WeakMap();
let calls = 0;
const gated = (sql, run) => (calls++, run());
${D1_GATE}
let env;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__sql") return Response.json((await bindings.DB.prepare(url.searchParams.get("q")).all()).results);
    if (url.pathname === "/__migrate") return (await createD1Storage(bindings.DB).migrate(), new Response("ok"));
    if (url.pathname === "/__count") return Response.json(calls);
    if (url.pathname === "/__mark") return (console.log("--mark--"), new Response("ok"));
    env ??= { ...bindings, DB: gate(bindings.DB) };
    return worker.fetch(request, env, ctx);
  },
};
`;

const { log, start } = workerPerTest();

const UNAVAILABLE_API = '{"error":1503,"message":"The service is temporarily unavailable; retry later."}';
const UNAVAILABLE_OAUTH = '{"error":"temporarily_unavailable","error_description":"The service is temporarily unavailable; retry later."}';
const FAILED = "plantgate worker failed to start";

describe("a D1 schema newer than the Worker's code, in workerd", () => {
  it("the failed start is kept for 10 s (the 503 without a D1 read, one line), then tried once more; a schema restored to a known one is then served", async () => {
    const { base } = await start(ENTRY, { d1: true, bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" } });
    const sql = async (q: string) => {
      const res = await fetch(`${base}/__sql?q=${encodeURIComponent(q)}`);
      expect(res.status, q).toBe(200);
      return res.json();
    };
    const count = async () => (await (await fetch(`${base}/__count`)).json()) as number;
    const logged = async () => {
      await (await fetch(`${base}/__mark`)).text();
      await log.waitFor("--mark--");
      expect(log.text).toContain("--mark--");
      const text = log.text;
      log.clear();
      return text;
    };
    // This code's migrations, then one it does not know: a newer version's.
    expect(await (await fetch(`${base}/__migrate`)).text()).toBe("ok");
    await sql(`insert into "pg_migrations" ("name", "timestamp") values ('9999_from_a_newer_version', '2026-11-30T00:00:00.000Z')`);

    const began = Date.now();
    const answers: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const api = await fetch(`${base}/.well-known/jwks.json`);
      answers.push([api.status, api.headers.get("retry-after"), await api.text()]);
      const oauth = await fetch(`${base}/UserService/connect/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "grant_type=client_credentials" });
      answers.push([oauth.status, oauth.headers.get("retry-after"), await oauth.text()]);
    }
    const within = Date.now() - began;
    // Asserted only if the twenty requests took less than the retry interval (they take well under a second).
    expect(within).toBeLessThan(WORKER_SCHEMA_TOO_NEW_RETRY_MS);
    expect(answers).toEqual(Array.from({ length: 10 }, () => [[503, "5", UNAVAILABLE_API], [503, "5", UNAVAILABLE_OAUTH]]).flat());
    // One start: the migrations check's two reads, which found the newer migration; none after.
    expect(await count()).toBe(2);
    const first = await logged();
    expect(first.split(FAILED).length - 1, first).toBe(1);
    expect(first).toContain(
      `${FAILED} {\n  error: 'The database schema is at version 9999, newer than version ${LATEST_SCHEMA_VERSION}, the latest this @plantgate/storage-sql knows ` +
        "(unknown migrations: 9999_from_a_newer_version). Upgrade @plantgate/storage-sql; nothing was changed.'\n}\n",
    );

    // The D1 restored to before the newer migration (Time Travel): the isolate serves again after
    // its retry, which comes once the interval is over, not before.
    await sql(`delete from "pg_migrations" where "name" = '9999_from_a_newer_version'`);
    let served: number | undefined;
    while (Date.now() - began < WORKER_SCHEMA_TOO_NEW_RETRY_MS + 10_000) {
      const res = await fetch(`${base}/.well-known/jwks.json`);
      const body = await res.text();
      if (res.status === 200) {
        served = Date.now() - began;
        break;
      }
      expect([res.status, body]).toEqual([503, UNAVAILABLE_API]);
      expect(await count()).toBe(2);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(served).toBeGreaterThanOrEqual(WORKER_SCHEMA_TOO_NEW_RETRY_MS);
    // No other start in between, no other line.
    expect(await logged()).not.toContain(FAILED);
  }, 60_000);
});
