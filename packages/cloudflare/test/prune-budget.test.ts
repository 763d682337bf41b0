/**
 * The cron prune's budget in workerd (Miniflare): Cloudflare allows a Worker invocation 50 D1
 * queries on the Free plan (1000 on Paid, https://developers.cloudflare.com/d1/platform/limits/),
 * and a run past it fails. `createWorker()`'s scheduled prune makes at most `pruneMaxBatches`
 * delete batches (default 20), the stores taking turns, so a backlog larger than that is worked
 * off over several runs, each run's D1 calls under the limit, every store pruned in the first.
 *
 * The real `createWorker()` entry is bundled for the Workers runtime; between it and the real D1
 * binding sits a gate (support.ts's `gate`) that counts every D1 call of the current invocation:
 * each statement run, and each batch with the statements in it. `/__sql?q=` runs SQL on the real
 * D1 directly, `/__migrate` applies the migrations without starting plantgate (so the first cron
 * run is the isolate's start too, the costliest case), `/__count` reports the last run's calls.
 */
import { describe, expect, it } from "vitest";
import { createWorker } from "../src/index.js";
import { D1_GATE, type ScheduledWorker, workerPerTest } from "./support.js";

const ENTRY = (options: string) => `
import { createWorker } from "../src/index.ts";
import { createD1Storage } from "@plantgate/storage-sql/d1";
const worker = createWorker(${options});
const real = new WeakMap();
let counting = { calls: 0, statements: 0, batches: 0 };
const gated = (sql, run, statements) => {
  counting.calls++;
  counting.statements += statements;
  if (statements > 1 || sql.includes(";")) counting.batches++;
  return run();
};
${D1_GATE}
let env;
let last = null;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__sql") return Response.json((await bindings.DB.prepare(url.searchParams.get("q")).all()).results);
    if (url.pathname === "/__migrate") return (await createD1Storage(bindings.DB).migrate(), new Response("ok"));
    if (url.pathname === "/__count") return Response.json(last);
    env ??= { ...bindings, DB: gate(bindings.DB) };
    return worker.fetch(request, env, ctx);
  },
  async scheduled(controller, bindings, ctx) {
    env ??= { ...bindings, DB: gate(bindings.DB) };
    counting = { calls: 0, statements: 0, batches: 0 };
    try {
      return await worker.scheduled(controller, env, ctx);
    } finally {
      last = counting;
    }
  },
};
`;

const { log, start } = workerPerTest();

type Counts = { refreshTokens: number; sessions: number; attempts: number; revokedTokens: number; assertionJtis: number; signingKeys: number; auditEvents: number; complete: boolean };

/** D1 Free plan: queries per Worker invocation. */
const FREE_PLAN_QUERIES = 50;

/** A Worker with this entry, D1 migrated and a backlog seeded: ended refresh-token families (one token each), ended sessions, counters and revoked jtis. */
async function seeded(options: string, backlog: { refreshTokens: number; others: number; rule?: "family" | "sliding" }) {
  const { mf, base } = await start(ENTRY(options), {
    d1: true,
    bindings: {
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
      // A first run also bootstraps: its client.created and account.created go to the audit store.
      PLANTGATE_BOOTSTRAP_CLIENT_ID: "cf-client",
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "cf-secret-0123456789abcdef",
      PLANTGATE_BOOTSTRAP_USERNAME: "cf-alice",
      PLANTGATE_BOOTSTRAP_PASSWORD: "cf-password-42",
    },
  });
  const sql = async (q: string): Promise<unknown[]> => {
    const res = await fetch(`${base}/__sql?q=${encodeURIComponent(q)}`);
    expect(res.status, q).toBe(200);
    return res.json() as Promise<unknown[]>;
  };
  expect(await (await fetch(`${base}/__migrate`)).text()).toBe("ok");
  const past = Date.now() - 86_400_000;
  const n = (count: number) => `with recursive n(i) as (select 1 union all select i + 1 from n where i < ${count})`;
  // "family": consumed tokens of families past their absolute expiry (the family rule), each with
  // its family row (as a create writes it). "sliding": unused tokens past their sliding expiry in
  // live families (the second rule: until 2026-11-30 each batch of them was two statements, the
  // family rule's, finding none, first; one now, whose second arm is the sliding rule's).
  const family = backlog.rule === "sliding" ? { expires: past, familyExpires: Date.now() + 86_400_000, consumed: "null" } : { expires: past + 3 * 86_400_000, familyExpires: past, consumed: String(past - 3_600_000) };
  await sql(`${n(backlog.refreshTokens)} insert into "pg_refresh_families" ("family_id", "account_id", "family_expires_at") select 'family-' || i, 'account', ${family.familyExpires} from n`);
  await sql(
    `${n(backlog.refreshTokens)} insert into "pg_refresh_tokens" ("token_hash", "family_id", "client_id", "account_id", "scope", "created_at", "expires_at", "family_expires_at", "consumed_at", "revoked_at", "replay", "grace_uses") ` +
      `select 'hash-' || i, 'family-' || i, 'client', 'account', '["offline_access"]', ${past - 86_400_000}, ${family.expires}, ${family.familyExpires}, ${family.consumed}, null, null, 0 from n`,
  );
  if (backlog.others > 0) {
    await sql(`${n(backlog.others)} insert into "pg_sessions" ("id_hash", "account_id", "csrf_hash", "created_at", "expires_at") select 'session-' || i, 'account', 'csrf', ${past - 3_600_000}, ${past} from n`);
    await sql(`${n(backlog.others)} insert into "pg_attempts" ("attempt_key", "count", "window_start") select 'attempt-' || i, 1, ${past} from n`);
    await sql(`${n(backlog.others)} insert into "pg_revoked_tokens" ("jti", "expires_at") select 'jti-' || i, ${past} from n`);
  }
  const rows = () =>
    sql(
      'select (select count(*) from "pg_refresh_tokens") as refreshTokens, (select count(*) from "pg_refresh_families") as families, (select count(*) from "pg_sessions") as sessions, ' +
        '(select count(*) from "pg_attempts") as attempts, (select count(*) from "pg_revoked_tokens") as revokedTokens',
    );
  const cron = (await mf.getWorker()) as unknown as ScheduledWorker;
  /** One cron run: its outcome, the counts it logged, and the D1 calls it made. */
  const run = async (): Promise<{ outcome: unknown; counts: Counts; d1: { calls: number; statements: number; batches: number } }> => {
    log.clear();
    const outcome = await cron.scheduled({ cron: "17 * * * *" });
    await log.waitFor('"complete":');
    const line = log.text.split("\n").find((l) => l.startsWith('{"message":"plantgate prune"'));
    expect(line, log.text).toBeDefined();
    const { message: _message, ...counts } = JSON.parse(line!) as Counts & { message: string };
    return { outcome, counts, d1: (await (await fetch(`${base}/__count`)).json()) as { calls: number; statements: number; batches: number } };
  };
  return { rows, run };
}

describe("the cron prune's budget, in workerd", () => {
  it("a backlog of 20 000 refresh tokens: worked off in three runs of at most 20 batches, each under the Free plan's 50 D1 queries, every store pruned in the first", async () => {
    const { rows, run } = await seeded("{}", { refreshTokens: 20_000, others: 1_500 });
    expect(await rows()).toEqual([{ refreshTokens: 20_000, families: 20_000, sessions: 1_500, attempts: 1_500, revokedTokens: 1_500 }]);
    const zero = { refreshTokens: 0, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 0 };

    // The first run starts the isolate too (migrations check, bootstrap with its audit writes, keys).
    // Round 1: refresh tokens, their families' rows (each token batch frees 1000: full), sessions,
    // counters, revoked jtis, assertion jtis, audit events (7 batches); round 2: the first five
    // again (sessions, counters and revoked jtis short now: 12); then refresh tokens and family
    // rows, 4 more rounds (20): 6 batches of tokens. The last batch was the family rows'.
    const first = await run();
    expect(first.outcome).toEqual({ outcome: "ok", noRetry: false });
    expect(first.d1.statements, JSON.stringify(first.d1)).toBeLessThan(FREE_PLAN_QUERIES);
    expect(first.counts).toStrictEqual({ ...zero, refreshTokens: 6_000, sessions: 1_500, attempts: 1_500, revokedTokens: 1_500, complete: false });
    expect(await rows()).toEqual([{ refreshTokens: 14_000, families: 14_000, sessions: 0, attempts: 0, revokedTokens: 0 }]);

    // The isolate's next run starts after the family rows: sessions, counters, revoked jtis,
    // assertion jtis, audit events (short), refresh tokens, family rows (7 batches), then refresh
    // tokens and family rows in turn: 8 batches of tokens, the last batch a token batch.
    const second = await run();
    expect(second.d1.statements, JSON.stringify(second.d1)).toBeLessThan(FREE_PLAN_QUERIES);
    expect(second.counts).toStrictEqual({ ...zero, refreshTokens: 8_000, complete: false });

    // From the family rows (the 1000 the last token batch freed): the last 6 000 tokens, a 7th
    // batch short, then the family rows' short batch: done within the budget.
    const third = await run();
    expect(third.d1.statements, JSON.stringify(third.d1)).toBeLessThan(FREE_PLAN_QUERIES);
    expect(third.counts).toStrictEqual({ ...zero, refreshTokens: 6_000, complete: true });
    expect(await rows()).toEqual([{ refreshTokens: 0, families: 0, sessions: 0, attempts: 0, revokedTokens: 0 }]);

    // A run with nothing to prune: one batch per store, all short, each one statement (the refresh
    // tokens' too: until 2026-11-30 two, the family rule's and the sliding rule's), but the refresh
    // tokens', short, then drops the replays rotated 6 minutes ago or more in the same batch (one
    // statement more, since 2026-12-03), and the 2 fixed queries (the clients' longest token
    // lifetime, the signing keys): 10.
    const fourth = await run();
    expect(fourth.outcome).toEqual({ outcome: "ok", noRetry: false });
    expect(fourth.d1.statements, JSON.stringify(fourth.d1)).toBe(10);
    expect(fourth.counts).toStrictEqual({ ...zero, complete: true });
    // What each run cost, for the README: a fresh isolate's first run, two full runs, an idle one.
    console.log(`D1 calls per run: ${JSON.stringify([first.d1, second.d1, third.d1, fourth.d1])}`);
  }, 120_000);

  it("the costliest run: a fresh isolate's first (start, bootstrap, its audit writes) over a backlog of 20 batches and more: one D1 statement a batch, and one of replays: 35 in all", async () => {
    const { rows, run } = await seeded("{}", { refreshTokens: 20_000, others: 0, rule: "sliding" });
    const first = await run();
    expect(first.outcome).toEqual({ outcome: "ok", noRetry: false });
    // Round 1 (7 batches, the other stores' short, the family rows' empty: the families live, and
    // the token batches free none), then the tokens alone: 14 batches of tokens. (Until the family
    // rows sat out while empty, they took every other batch: 8 of tokens.) Every batch is one
    // statement, whichever rule its tokens meet: 20, with the 2 fixed queries (the clients' longest
    // token lifetime, the signing keys) and the isolate's start (12: migrations check 2, bootstrap
    // of a client and an account 7 with their two audit writes, signing key 3): 34 (a signing key
    // the prune deletes is one of its 20 batches since 2026-12-02; with all a start may also write
    // to the keys, a due rotation and keys sealed under a new key encryption key, each bounded,
    // signing-keys-budget.test.ts measures 45). Until
    // 2026-11-30 a token batch over these tokens was two statements (the family rule's, finding
    // none, then the sliding rule's): 48, a margin of 1 or 2.
    // And since 2026-12-03 one statement more: the replays' batch beside the tokens' first (35).
    expect(first.d1.statements, JSON.stringify(first.d1)).toBe(35);
    expect(first.counts).toStrictEqual({ refreshTokens: 14_000, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: false });
    expect(await rows()).toEqual([{ refreshTokens: 6_000, families: 20_000, sessions: 0, attempts: 0, revokedTokens: 0 }]);
    console.log(`D1 calls of the costliest run: ${JSON.stringify(first.d1)}`);
  }, 120_000);

  it("pruneMaxBatches: a budget of its own, here one round of 7 batches", async () => {
    const bounded = await seeded("{ pruneMaxBatches: 7 }", { refreshTokens: 3_000, others: 1_500 });
    const one = await bounded.run();
    expect(one.counts).toStrictEqual({ refreshTokens: 1_000, sessions: 1_000, attempts: 1_000, revokedTokens: 1_000, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: false });
  }, 120_000);

  it("pruneMaxBatches: 0, no budget: every store drained in one run", async () => {
    const unbounded = await seeded("{ pruneMaxBatches: 0 }", { refreshTokens: 3_000, others: 1_500 });
    const all = await unbounded.run();
    expect(all.counts).toStrictEqual({ refreshTokens: 3_000, sessions: 1_500, attempts: 1_500, revokedTokens: 1_500, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: true });
    expect(await unbounded.rows()).toEqual([{ refreshTokens: 0, families: 0, sessions: 0, attempts: 0, revokedTokens: 0 }]);
  }, 120_000);

  it("refuses a pruneMaxBatches that is not 0 or an integer of at least 7: a smaller budget would serve the same first stores in every run of a new isolate", () => {
    for (const pruneMaxBatches of [Number.NaN, -1, 1, 6, 1.5, 7.5, Number.POSITIVE_INFINITY]) {
      expect(() => createWorker({ pruneMaxBatches }), String(pruneMaxBatches)).toThrow(new TypeError("pruneMaxBatches must be 0 (no bound) or an integer of at least 7 (a batch for every store in each run)"));
    }
    for (const pruneMaxBatches of [0, 7, 20, 900]) expect(createWorker({ pruneMaxBatches }).scheduled, String(pruneMaxBatches)).toBeTypeOf("function");
  });
});
