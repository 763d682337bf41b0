/**
 * Several isolates starting at once on one D1 database, in workerd (Miniflare: one Worker per
 * isolate, the real `createWorker()` entry, the same D1 database): every first request is served.
 * A database from an earlier deploy (migrated, with its signing key) gets a bootstrap client and
 * account from all of them together; on a fresh database the migrations race as well.
 */
import { Miniflare } from "miniflare";
import { afterAll, describe, expect, it } from "vitest";
import { bundle, COMPATIBILITY_DATE } from "./support.js";

// createWorker() with a logger the test reads (/__log), and a hold the test sets (/__hold?until=ms):
// until that instant the reads by which the bootstrap looks for its client and its account wait
// (a timer), so that every isolate makes them together, as isolates starting at once in
// production do by chance. The D1 binding and everything else are the Worker as deployed.
const ENTRY = `
import { createWorker } from "../src/index.ts";
const lines = [];
let holdUntil = 0;
const worker = createWorker({ logger: { error: (m, c) => lines.push(m + " " + JSON.stringify(c)), warn: () => {} } });
const HELD = [/^select \\* from "pg_clients" where "client_id" = \\?/, /^select \\* from "pg_accounts" where "username" = \\?/];
const hold = (sql) => (HELD.some((re) => re.test(sql)) && Date.now() < holdUntil ? new Promise((resolve) => setTimeout(resolve, holdUntil - Date.now())) : Promise.resolve());
function held(db) {
  const wrap = (sql, statement) => {
    const w = { bind: (...values) => wrap(sql, statement.bind(...values)), all: () => hold(sql).then(() => statement.all()), run: () => statement.run(), first: (c) => statement.first(c), raw: (o) => statement.raw(o) };
    real.set(w, statement);
    return w;
  };
  return { prepare: (sql) => wrap(sql, db.prepare(sql)), batch: (statements) => db.batch(statements.map((s) => real.get(s))) };
}
const real = new WeakMap();
let env;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__log") return Response.json(lines);
    if (url.pathname === "/__hold") {
      holdUntil = Number(url.searchParams.get("until"));
      return new Response("ok");
    }
    env ??= { ...bindings, DB: held(bindings.DB) };
    return worker.fetch(request, env, ctx);
  },
};
`;

const ISOLATES = 4;
const ROUNDS = 4;
const BOOTSTRAP = {
  PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
  PLANTGATE_BOOTSTRAP_CLIENT_ID: "isolate-client",
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "isolate-secret-0123456789abcdef",
  PLANTGATE_BOOTSTRAP_USERNAME: "isolate-user",
  PLANTGATE_BOOTSTRAP_PASSWORD: "isolate-password",
};

let mf: Miniflare | undefined;
/** What of a Worker's Fetcher (`mf.getWorker`) the test calls. */
const fetcher = async (name: string) => (await mf!.getWorker(name)) as unknown as { fetch(url: string, init?: RequestInit): Promise<Response> };
afterAll(async () => {
  await mf?.dispose();
});

describe("isolates starting at once on one D1 database", () => {
  it("each one's first request is answered 200 and nothing is logged, whether the database was migrated before or not", async () => {
    const script = await bundle(ENTRY, { minify: true });
    const worker = (name: string, database: string, bindings: Record<string, string>) => ({ name, modules: true, script, compatibilityDate: COMPATIBILITY_DATE, d1Databases: { DB: database }, bindings });
    const workers = [];
    for (let round = 0; round < ROUNDS; round++) {
      // The earlier deploy: no bootstrap values (an odd round leaves the database fresh).
      workers.push(worker(`r${round}-earlier`, `isolates-${round}`, { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" }));
      for (let i = 0; i < ISOLATES; i++) workers.push(worker(`r${round}-i${i}`, `isolates-${round}`, BOOTSTRAP));
    }
    mf = new Miniflare({ workers });
    const seen: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        const earlier = await (await fetcher(`r${round}-earlier`)).fetch("http://worker.test/.well-known/jwks.json");
        await earlier.arrayBuffer();
        expect(earlier.status).toBe(200);
      }
      const isolates = await Promise.all(Array.from({ length: ISOLATES }, (_, i) => fetcher(`r${round}-i${i}`)));
      // Where the database was migrated before, the bootstrap's reads line up; on a fresh one the
      // migrations race first.
      const until = Date.now() + 1500;
      if (round % 2 === 0) await Promise.all(isolates.map(async (w) => (await w.fetch(`http://worker.test/__hold?until=${until}`)).arrayBuffer()));
      const statuses = await Promise.all(
        isolates.map(async (w) => {
          const res = await w.fetch("http://worker.test/UserService/connect/token", {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa("isolate-client:isolate-secret-0123456789abcdef")}` },
            body: "grant_type=password&username=isolate-user&password=isolate-password",
          });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      const logs = await Promise.all(isolates.map(async (w) => (await (await w.fetch("http://worker.test/__log")).json()) as string[]));
      seen.push(`round ${round}: ${statuses.join(" ")} ${JSON.stringify(logs.flat())}`);
    }
    expect(seen).toEqual(Array.from({ length: ROUNDS }, (_, round) => `round ${round}: ${Array(ISOLATES).fill(200).join(" ")} []`));
  }, 180_000);
});
