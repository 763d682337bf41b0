/**
 * The cron prune on a D1 that answers every statement in time but slowly, in workerd (Miniflare):
 * `d1TimeoutMs` bounds each storage operation, and the prune deletes in batches, one operation per
 * batch, so a backlog of many batches must not read as "no answer from D1".
 *
 * The real `createWorker()` entry is bundled for the Workers runtime; between it and the real D1
 * binding sits a gate: `/__gate?slow=TEXT&ms=N` delays every statement whose SQL holds TEXT by N ms
 * before D1 runs it (D1 answers each one, N ms late). `/__sql?q=` runs SQL on the real D1 directly.
 */
import { describe, expect, it } from "vitest";
import { D1_GATE, type ScheduledWorker, workerPerTest } from "./support.js";

const ENTRY = (options: string) => `
import { createWorker } from "../src/index.ts";
const worker = createWorker(${options});
const real = new WeakMap();
let slow = null;
let delayMs = 0;
let delayed = 0;
const gated = (sql, run) => {
  if (slow === null || !sql.includes(slow)) return run();
  delayed++;
  return new Promise((resolve) => setTimeout(resolve, delayMs)).then(run);
};
${D1_GATE}
let env;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__gate") {
      if (url.searchParams.has("slow")) slow = url.searchParams.get("slow");
      if (url.searchParams.has("ms")) delayMs = Number(url.searchParams.get("ms"));
      return Response.json({ delayed });
    }
    if (url.pathname === "/__sql") return Response.json((await bindings.DB.prepare(url.searchParams.get("q")).all()).results);
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


describe("the cron prune on a slow D1, in workerd", () => {
  it("a backlog of ended refresh-token families, each delete answered within d1TimeoutMs: the run ends ok, every batch deleted, the later stores pruned too", async () => {
    const { mf, base } = await start(ENTRY("{ d1TimeoutMs: 2000 }"), { d1: true, bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" } });
    const sql = async (q: string): Promise<unknown[]> => (await fetch(`${base}/__sql?q=${encodeURIComponent(q)}`)).json() as Promise<unknown[]>;
    // The first request migrates D1.
    const first = await fetch(`${base}/.well-known/jwks.json`);
    await first.arrayBuffer();
    expect(first.status).toBe(200);
    const past = Date.now() - 86_400_000;
    // 3 500 families past their absolute expiry with no token left (abandoned, their last token
    // deleted at its sliding expiry): four statements of at most 1 000 (the prune's batch size).
    await sql(`with recursive n(i) as (select 1 union all select i + 1 from n where i < 3500) insert into "pg_refresh_families" ("family_id", "account_id", "family_expires_at") select 'family-' || i, 'account', ${past} from n`);
    await sql(`insert into "pg_sessions" ("id_hash", "account_id", "csrf_hash", "created_at", "expires_at") values ('session-over', 'account', 'csrf', ${past - 3_600_000}, ${past})`);
    expect(await sql('select (select count(*) from "pg_refresh_families") as families, (select count(*) from "pg_sessions") as sessions')).toEqual([{ families: 3500, sessions: 1 }]);
    // Each delete of those rows answered 700 ms late: well within the 2 000 ms bound, four of them not.
    await fetch(`${base}/__gate?slow=${encodeURIComponent('delete from "pg_refresh_families"')}&ms=700`).then((r) => r.arrayBuffer());
    const cron = (await mf.getWorker()) as unknown as ScheduledWorker;
    expect(await cron.scheduled({ cron: "17 * * * *" })).toEqual({ outcome: "ok", noRetry: false });
    const line = '{"message":"plantgate prune","refreshTokens":0,"sessions":1,"attempts":0,"revokedTokens":0,"assertionJtis":0,"signingKeys":0,"auditEvents":0,"complete":true}';
    await log.waitFor(line);
    expect(log.text).toContain(line);
    expect(log.text).not.toContain("plantgate scheduled prune failed");
    expect(await sql('select (select count(*) from "pg_refresh_families") as families, (select count(*) from "pg_sessions") as sessions')).toEqual([{ families: 0, sessions: 0 }]);
    expect(((await fetch(`${base}/__gate`).then((r) => r.json())) as { delayed: number }).delayed).toBe(4);
  }, 60_000);
});
