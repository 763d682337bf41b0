/**
 * A scheduled run that fails, in workerd (Miniflare): the real `createWorker()` entry, bundled for
 * the Workers runtime, with a gate (support.ts's `gate`) between it and the real D1 binding that
 * fails every delete once `/__d1?mode=fail` is set (D1 down for the prune only), and an `onPrune`
 * hook that throws once `/__hook?mode=throw` is set (the user's report callback failing).
 *
 * - A prune that fails: its line carries the D1 error under the StorageError (the fields the fetch
 *   path logs for one: `name`, `message`, `cause`), and the run fails.
 * - A prune one store of which fails (D1 refuses the sessions' deletes): the other stores are
 *   pruned, core's line names the failed store with the counts of the rest, and the run fails.
 * - A hook that throws after a prune that succeeded: logged as the hook's failure, with the counts;
 *   the run is ok.
 */
import { describe, expect, it } from "vitest";
import { D1_GATE, type ScheduledWorker, workerPerTest } from "./support.js";

const ENTRY = `
import { createWorker } from "../src/index.ts";
let d1Mode = "open";
let hookMode = "open";
const worker = createWorker({
  onPrune: (counts) => {
    if (hookMode === "throw") throw new Error("report sink down");
    if (hookMode === "reject") return Promise.reject(new Error("async report sink down"));
    console.log(JSON.stringify({ message: "pruned by the hook", ...counts }));
  },
});
const real = new WeakMap();
const failing = (sql) => sql.trimStart().toLowerCase().startsWith("delete") && (d1Mode === "fail" || (d1Mode === "fail-sessions" && sql.includes('"pg_sessions"')));
const gated = (sql, run) => (failing(sql) ? Promise.reject(new Error("D1_ERROR: simulated outage: SQLITE_BUSY")) : run());
${D1_GATE}
let env;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__sql") return Response.json((await bindings.DB.prepare(url.searchParams.get("q")).all()).results);
    if (url.pathname === "/__d1") return ((d1Mode = url.searchParams.get("mode")), new Response("ok"));
    if (url.pathname === "/__hook") return ((hookMode = url.searchParams.get("mode")), new Response("ok"));
    if (url.pathname === "/__mark") return (console.log("--mark--"), new Response("ok"));
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


/** The counts of a run with nothing to prune, as workerd prints them nested in a logged object. */
const ZERO_COUNTS = ["refreshTokens: 0", "sessions: 0", "attempts: 0", "revokedTokens: 0", "assertionJtis: 0", "signingKeys: 0", "auditEvents: 0", "complete: true"].map((field) => `    ${field}`).join(",\n");

async function started() {
  const { mf, base } = await start(ENTRY, { d1: true, bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" } });
  // The isolate's start (migrations, keys), before D1 fails.
  expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
  const set = async (what: "d1" | "hook", mode: string) => expect(await (await fetch(`${base}/__${what}?mode=${mode}`)).text()).toBe("ok");
  /** Everything logged so far: once the mark is in workerd's output, so is what came before it. */
  const logged = async () => {
    await (await fetch(`${base}/__mark`)).text();
    await log.waitFor("--mark--");
    expect(log.text).toContain("--mark--");
    return log.text;
  };
  const sql = async (q: string): Promise<unknown[]> => {
    const res = await fetch(`${base}/__sql?q=${encodeURIComponent(q)}`);
    expect(res.status, q).toBe(200);
    return res.json() as Promise<unknown[]>;
  };
  return { cron: (await mf.getWorker()) as unknown as ScheduledWorker, set, logged, sql };
}

describe("a scheduled run that fails, in workerd", () => {
  it("a prune D1 fails: the run fails, and its line names the D1 error under the StorageError", async () => {
    const { cron, set, logged } = await started();
    await set("d1", "fail");
    expect(await cron.scheduled({ cron: "17 * * * *" })).toEqual({ outcome: "exception", noRetry: false });
    const text = await logged();
    // workerd prints the fields on lines of their own.
    expect(text).toContain(
      "plantgate scheduled prune failed {\n  name: 'StorageError',\n  message: 'sqlite storage failed during refreshTokens.deleteExpired',\n  cause: 'Error: D1_ERROR: simulated outage: SQLITE_BUSY'\n}\n",
    );
    expect(text).not.toContain("pruned by the hook");
  }, 60_000);

  it("a prune one store of which fails: the other stores are pruned, the failed one is logged with the counts, and the run fails", async () => {
    const { cron, set, logged, sql } = await started();
    const past = Date.now() - 86_400_000;
    await sql(`insert into "pg_sessions" ("id_hash", "account_id", "csrf_hash", "created_at", "expires_at") values ('session-1', 'account', 'csrf', ${past - 3_600_000}, ${past})`);
    await sql(`insert into "pg_revoked_tokens" ("jti", "expires_at") values ('jti-1', ${past}), ('jti-2', ${past})`);
    await set("d1", "fail-sessions");
    expect(await cron.scheduled({ cron: "17 * * * *" })).toEqual({ outcome: "exception", noRetry: false });
    const text = await logged();
    // Until 2026-11-30 the sessions' failure ended the run: the revoked jtis after them stayed.
    expect(await sql('select (select count(*) from "pg_sessions") as sessions, (select count(*) from "pg_revoked_tokens") as revokedTokens')).toEqual([{ sessions: 1, revokedTokens: 0 }]);
    expect(text).toContain(
      "prune: some stores failed; the others were pruned {\n" +
        "  failed: [\n" +
        "    {\n" +
        "      store: 'sessions',\n" +
        "      name: 'StorageError',\n" +
        "      message: 'sqlite storage failed during sessions.deleteExpired',\n" +
        "      cause: 'Error: D1_ERROR: simulated outage: SQLITE_BUSY'\n" +
        "    }\n" +
        "  ],\n" +
        `  counts: {\n${ZERO_COUNTS.replace("revokedTokens: 0", "revokedTokens: 2").replace("complete: true", "complete: false")}\n  }\n}\n`,
    );
    expect(text).toContain(
      "plantgate scheduled prune failed {\n  name: 'StorageError',\n  message: 'sqlite storage failed during sessions.deleteExpired',\n  cause: 'Error: D1_ERROR: simulated outage: SQLITE_BUSY'\n}\n",
    );
    expect(text).not.toContain("pruned by the hook");
  }, 60_000);

  it("an onPrune hook that throws after a prune that succeeded: the hook's failure is logged, with the counts, and the run is ok", async () => {
    const { cron, set, logged } = await started();
    await set("hook", "throw");
    expect(await cron.scheduled({ cron: "17 * * * *" })).toEqual({ outcome: "ok", noRetry: false });
    const text = await logged();
    expect(text).toContain(`plantgate onPrune hook failed {\n  name: 'Error',\n  message: 'report sink down',\n  counts: {\n${ZERO_COUNTS}\n  }\n}\n`);
    expect(text).not.toContain("plantgate scheduled prune failed");
    // The hook works again: the next run reports through it.
    await set("hook", "open");
    expect(await cron.scheduled({ cron: "17 * * * *" })).toEqual({ outcome: "ok", noRetry: false });
    expect(await logged()).toContain('{"message":"pruned by the hook","refreshTokens":0,"sessions":0,"attempts":0,"revokedTokens":0,"assertionJtis":0,"signingKeys":0,"auditEvents":0,"complete":true}');
  }, 60_000);

  it("an async onPrune hook whose promise rejects: the same line as a throw (it was an unhandled rejection nobody saw), and the run is ok", async () => {
    const { cron, set, logged } = await started();
    await set("hook", "reject");
    expect(await cron.scheduled({ cron: "17 * * * *" })).toEqual({ outcome: "ok", noRetry: false });
    const text = await logged();
    expect(text).toContain(`plantgate onPrune hook failed {\n  name: 'Error',\n  message: 'async report sink down',\n  counts: {\n${ZERO_COUNTS}\n  }\n}\n`);
    expect(text).not.toContain("plantgate scheduled prune failed");
  }, 60_000);
});
