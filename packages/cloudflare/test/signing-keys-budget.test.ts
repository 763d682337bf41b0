/**
 * The signing keys' share of a Worker invocation's D1 queries, in workerd (Miniflare): Cloudflare
 * fails a query past the 50th of one invocation on the Free plan. A store may hold many keys past
 * their use (`PLANTGATE_SIGNING_KEY_MAX_AGE=3600` beside a client with a 2-day `accessTokenTtl`,
 * since deleted; many console rotations), or many keys in clear when a key encryption key is newly
 * configured. Each of those keys is a statement of its own to delete (or to seal), so none of the
 * paths that do it may take them all at once: the cron prune (each delete a batch of its
 * `pruneMaxBatches`), a rotation (the console's `POST /console/api/signing-keys`, or automatic at a
 * load of the keys: at most `ROTATION_KEY_DELETES`), and a load of the keys sealing them (at most
 * `KEYS_SEALED_PER_LOAD`). Until 2026-12-02 each took them all: 59 prunable keys made one cron run
 * 68 D1 queries.
 *
 * Between the real `createWorker()` entry and the real D1 binding sits the gate of
 * prune-budget.test.ts (support.ts's `D1_GATE`), counting every statement of the current
 * invocation, the work it hands to `waitUntil` included (`/__count` waits for that first).
 */
import { generateKeyRecord, KEYS_SEALED_PER_LOAD, REENCRYPT_MOVES, REVOKE_KEY_DELETES, ROTATION_KEY_DELETES } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { D1_GATE, type ScheduledWorker, workerPerTest } from "./support.js";

const ENTRY = `
import { createWorker } from "../src/index.ts";
import { createD1Storage } from "@plantgate/storage-sql/d1";
const worker = createWorker({});
const real = new WeakMap();
let counting = { statements: 0 };
const gated = (sql, run, statements) => { counting.statements += statements; return run(); };
${D1_GATE}
let env;
let last = null;
let pending = [];
const counted = (ctx) => ({ waitUntil: (p) => { pending.push(p); ctx.waitUntil(p); }, passThroughOnException: () => ctx.passThroughOnException() });
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__migrate") return (await createD1Storage(bindings.DB).migrate(), new Response("ok"));
    if (url.pathname === "/__batch") { const list = await request.json(); await bindings.DB.batch(list.map(({ sql, params }) => bindings.DB.prepare(sql).bind(...params))); return new Response("ok"); }
    if (url.pathname === "/__sql") return Response.json((await bindings.DB.prepare(url.searchParams.get("q")).all()).results);
    if (url.pathname === "/__count") { await Promise.allSettled(pending); return Response.json(last); }
    env ??= { ...bindings, DB: gate(bindings.DB) };
    counting = { statements: 0 };
    last = counting;
    pending = [];
    return worker.fetch(request, env, counted(ctx));
  },
  async scheduled(controller, bindings, ctx) {
    env ??= { ...bindings, DB: gate(bindings.DB) };
    counting = { statements: 0 };
    last = counting;
    pending = [];
    return worker.scheduled(controller, env, counted(ctx));
  },
};`;

/** D1 Free plan: queries per Worker invocation. */
const FREE_PLAN_QUERIES = 50;
const ADMIN = { username: "keys-admin", password: "keys-admin-password-1" };
const KEK = "K".repeat(43);

const { log, start } = workerPerTest();

/** A Worker with this entry and these variables, D1 migrated, `keys` signing keys stored (in clear) ten days ago, a second apart: the newest signs, the others are past their use. */
async function withKeys(bindings: Record<string, string>, keys = 60) {
  const { mf, base } = await start(ENTRY, { d1: true, bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...bindings } });
  expect(await (await fetch(`${base}/__migrate`)).text()).toBe("ok");
  const t0 = Date.now() - 10 * 86_400_000;
  const inserts = [];
  for (let i = 0; i < keys; i++) {
    const r = await generateKeyRecord("ES256", t0 + i * 1000, t0 + i * 1000);
    inserts.push({
      sql: `insert into "pg_signing_keys" ("kid", "alg", "private_jwk", "public_jwk", "created_at", "activates_at") values (?, ?, ?, ?, ?, ?)`,
      params: [r.kid, r.alg, r.privateJwk, r.publicJwk, r.createdAt, r.activatesAt],
    });
  }
  const seeded = await fetch(`${base}/__batch`, { method: "POST", body: JSON.stringify(inserts) });
  expect([seeded.status, await seeded.text()]).toEqual([200, "ok"]);
  const newest = inserts.at(-1)!.params[0] as string;
  const sql = async (q: string): Promise<unknown[]> => (await (await fetch(`${base}/__sql?q=${encodeURIComponent(q)}`)).json()) as unknown[];
  /** The D1 statements of the last counted invocation. */
  const count = async () => ((await (await fetch(`${base}/__count`)).json()) as { statements: number }).statements;
  const cron = async () => {
    log.clear();
    const outcome = await ((await mf.getWorker()) as unknown as ScheduledWorker).scheduled({ cron: "17 * * * *" });
    await log.waitFor('"complete":');
    const line = log.text.split("\n").find((l) => l.startsWith('{"message":"plantgate prune"'));
    expect(line, log.text).toBeDefined();
    const { message: _message, ...counts } = JSON.parse(line!) as Record<string, unknown>;
    return { outcome, counts, statements: await count() };
  };
  /** A console sign-in (PLANTGATE_BOOTSTRAP_ADMIN), and a console API call with its cookie and CSRF token. */
  const console_ = async () => {
    const browser = { "sec-fetch-site": "same-origin" };
    const signIn = await fetch(`${base}/console/api/session`, { method: "POST", headers: { ...browser, "content-type": "application/json" }, body: JSON.stringify(ADMIN) });
    expect([signIn.status, signIn.status === 200 ? null : await signIn.text()]).toEqual([200, null]);
    const cookie = /^(plantgate_console=[^;]*);/.exec(signIn.headers.get("set-cookie")!)![1]!;
    const { csrfToken } = (await signIn.json()) as { csrfToken: string };
    return async (method: string, path: string) => {
      const res = await fetch(`${base}/console/api${path}`, { method, headers: { ...browser, cookie, "x-csrf-token": csrfToken } });
      const text = await res.text();
      return { status: res.status, body: text === "" ? null : (JSON.parse(text) as unknown), statements: await count() };
    };
  };
  return { base, newest, sql, count, cron, console: console_ };
}

const zero = { refreshTokens: 0, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, auditEvents: 0 };

describe("the signing keys' share of a Worker invocation's D1 queries, in workerd", () => {
  it("a cron run over 59 prunable signing keys stays under the Free plan's 50 D1 queries: the keys take the budget less a batch per store, the rest the next run", async () => {
    const { base, sql, cron } = await withKeys({});
    // The isolate started by a request (so the cron run is not also the start).
    expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
    // The budget (20) less a batch for each of D1's 7 stores: 13 keys, then one round of the
    // stores (each short, nothing to prune; the refresh tokens' batch, short, also drops the
    // replays rotated 6 minutes ago or more: two statements, since 2026-12-03); the list and the
    // clients' longest token lifetime.
    const first = await cron();
    expect(first.outcome).toEqual({ outcome: "ok", noRetry: false });
    expect(first.counts).toStrictEqual({ ...zero, signingKeys: 13, complete: false });
    expect(first.statements, "D1 queries of one cron invocation").toBe(2 + 13 + 7 + 1);
    expect(first.statements).toBeLessThanOrEqual(FREE_PLAN_QUERIES);
    expect(await sql('select count(*) as n from "pg_signing_keys"')).toEqual([{ n: 47 }]);
    // Three more runs of 13, then the last 7: complete.
    for (const deleted of [13, 13, 13]) expect((await cron()).counts).toStrictEqual({ ...zero, signingKeys: deleted, complete: false });
    const last = await cron();
    expect(last.counts).toStrictEqual({ ...zero, signingKeys: 7, complete: true });
    expect(last.statements).toBe(2 + 7 + 7 + 1);
    expect(await sql('select count(*) as n from "pg_signing_keys"')).toEqual([{ n: 1 }]);
  }, 120_000);

  it("the costliest cron run: a fresh isolate's first (start, bootstrap, a due rotation, sealing under a new KEK) over 59 prunable keys in clear and a backlog of 20 batches and more: 46 D1 queries", async () => {
    const { sql, cron } = await withKeys({
      PLANTGATE_SIGNING_KEY_MAX_AGE: "3600",
      PLANTGATE_KEY_ENCRYPTION_KEY: KEK,
      PLANTGATE_BOOTSTRAP_CLIENT_ID: "cf-client",
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "cf-secret-0123456789abcdef",
      PLANTGATE_BOOTSTRAP_USERNAME: "cf-alice",
      PLANTGATE_BOOTSTRAP_PASSWORD: "cf-password-42",
    });
    // 20 000 unused refresh tokens past their sliding expiry in live families (prune-budget.test.ts's
    // costliest backlog: every batch full, one statement each).
    const past = Date.now() - 86_400_000;
    const live = Date.now() + 86_400_000;
    const n = "with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)";
    await sql(`${n} insert into "pg_refresh_families" ("family_id", "account_id", "family_expires_at") select 'family-' || i, 'account', ${live} from n`);
    await sql(
      `${n} insert into "pg_refresh_tokens" ("token_hash", "family_id", "client_id", "account_id", "scope", "created_at", "expires_at", "family_expires_at", "consumed_at", "revoked_at", "replay", "grace_uses") ` +
        `select 'hash-' || i, 'family-' || i, 'client', 'account', '["offline_access"]', ${past - 86_400_000}, ${past}, ${live}, null, null, null, 0 from n`,
    );
    // The start: migrations check 2; the keys 14: list, the due rotation (store the next key, the
    // clients' longest lifetime, list, ROTATION_KEY_DELETES = 2 deletes, list, its event's audit
    // write), KEYS_SEALED_PER_LOAD = 4 seals and a list, the longest lifetime again (several keys);
    // bootstrap of a client and an account 7 with their audit writes. The prune: the keys' list and
    // the longest lifetime, then its 20 batches: 13 keys (the budget less a batch per store), one
    // round of the 7 stores (one full batch of tokens, with a batch of replays beside it: one
    // statement more once a run, since 2026-12-03). 23 + 23 = 46: the costliest run there is,
    // as the prune makes at most its 20 batches whatever it deletes, and the start at most 2 deletes
    // and 4 seals of keys (until 2026-12-02 each took every key: 59 here, 60 to seal).
    const first = await cron();
    expect(first.outcome).toEqual({ outcome: "ok", noRetry: false });
    expect(first.counts).toStrictEqual({ ...zero, refreshTokens: 1_000, signingKeys: 13, complete: false });
    console.log(`D1 statements of the costliest cron run: ${first.statements}`);
    expect(first.statements, "D1 queries of one cron invocation").toBe(2 + 14 + 7 + 2 + 20 + 1);
    expect(first.statements).toBeLessThanOrEqual(FREE_PLAN_QUERIES);
  }, 120_000);

  it("the console's rotation over 59 prunable signing keys deletes the oldest ROTATION_KEY_DELETES of them, its request under the Free plan's 50 D1 queries", async () => {
    const { base, sql, count, newest } = await withKeys({ PLANTGATE_BOOTSTRAP_ADMIN: "1", PLANTGATE_BOOTSTRAP_USERNAME: ADMIN.username, PLANTGATE_BOOTSTRAP_PASSWORD: ADMIN.password });
    const browser = { "sec-fetch-site": "same-origin" };
    const signIn = await fetch(`${base}/console/api/session`, { method: "POST", headers: { ...browser, "content-type": "application/json" }, body: JSON.stringify(ADMIN) });
    expect([signIn.status, signIn.status === 200 ? null : await signIn.text()]).toEqual([200, null]);
    const cookie = /^(plantgate_console=[^;]*);/.exec(signIn.headers.get("set-cookie")!)![1]!;
    const { csrfToken } = (await signIn.json()) as { csrfToken: string };
    const oldest = (await sql('select "kid" from "pg_signing_keys" order by "activates_at" limit 3')) as { kid: string }[];

    const rotated = await fetch(`${base}/console/api/signing-keys`, { method: "POST", headers: { ...browser, cookie, "x-csrf-token": csrfToken, "content-type": "application/json" }, body: "{}" });
    const body = (await rotated.json()) as { kid: string; activatesAt: number; status: string; deleted: string[]; cancelled: string[] };
    const statements = await count();
    // The session and its account, the keys' list, the new key, the clients' longest token
    // lifetime, the list again, 2 deletes, the event's audit write: 9 (until 2026-12-02, 66).
    expect(statements, "D1 queries of the rotation's request").toBe(7 + ROTATION_KEY_DELETES);
    expect(statements).toBeLessThanOrEqual(FREE_PLAN_QUERIES);
    const [stored] = (await sql(`select "activates_at" as at from "pg_signing_keys" where "kid" = '${body.kid}'`)) as { at: number }[];
    expect([rotated.status, body]).toEqual([200, { kid: body.kid, activatesAt: new Date(stored!.at).toISOString(), status: "next", deleted: oldest.slice(0, ROTATION_KEY_DELETES).map((r) => r.kid), cancelled: [] }]);
    expect(body.kid).not.toBe(newest);
    // 60 keys, the rotation's own, less the two deleted; the one that signed signs on.
    expect(await sql('select count(*) as n from "pg_signing_keys"')).toEqual([{ n: 61 - ROTATION_KEY_DELETES }]);
    expect(await sql(`select count(*) as n from "pg_signing_keys" where "kid" = '${newest}'`)).toEqual([{ n: 1 }]);
  }, 120_000);

  it("automatic rotation at a request's load of the keys, over 59 prunable signing keys: at most ROTATION_KEY_DELETES deleted, the request under 50 D1 queries", async () => {
    const { base, sql, count } = await withKeys({ PLANTGATE_SIGNING_KEY_MAX_AGE: "3600" });
    const jwks = await fetch(`${base}/.well-known/jwks.json`);
    expect(jwks.status).toBe(200);
    const statements = await count();
    // The migrations check 2, the keys' list, the next key, the clients' longest token lifetime,
    // the list again, 2 deletes, the list again, the event's audit write, the longest lifetime
    // again: 11 (until 2026-12-02, 68).
    expect(statements, "D1 queries of the request").toBe(9 + ROTATION_KEY_DELETES);
    expect(statements).toBeLessThanOrEqual(FREE_PLAN_QUERIES);
    // The rotation stored a key (next) and deleted the two oldest: 60 + 1 - 2.
    expect(await sql('select count(*) as n from "pg_signing_keys"')).toEqual([{ n: 61 - ROTATION_KEY_DELETES }]);
    // The newest key signs and the rotated one is published: both in the JWKS.
    expect(((await jwks.json()) as { keys: unknown[] }).keys).toHaveLength(2);
  }, 120_000);

  it("the console's revocation of a key with 58 prunable keys before it deletes the oldest REVOKE_KEY_DELETES of them a request (409 until the rest are gone), each request under the Free plan's 50 D1 queries", async () => {
    const { sql, console: signIn } = await withKeys({ PLANTGATE_BOOTSTRAP_ADMIN: "1", PLANTGATE_BOOTSTRAP_USERNAME: ADMIN.username, PLANTGATE_BOOTSTRAP_PASSWORD: ADMIN.password });
    const call = await signIn();
    const oldestFirst = ((await sql('select "kid" from "pg_signing_keys" order by "activates_at"')) as { kid: string }[]).map((r) => r.kid);
    // The newest prunable key (the 59th): the 58 before it are prunable, and go first.
    const kid = oldestFirst.at(-2)!;
    expect(REVOKE_KEY_DELETES).toBe(8);
    const path = `/signing-keys?kid=${encodeURIComponent(kid)}`;
    for (let left = 58; left > REVOKE_KEY_DELETES; left -= REVOKE_KEY_DELETES) {
      const refused = await call("DELETE", path);
      // The session and its account, the key rows, the keyring's list and the clients' longest
      // token lifetime (twice), 8 deletes: 14; from the second on, 16 with the keyring's re-read of
      // the keys the last one deleted (list and lifetime). Until 2026-12-02 one request deleted all
      // 58 and the key, 66 D1 queries, past the Free plan's 50.
      expect(refused).toEqual({
        status: 409,
        body: {
          error: 1307,
          message: `signing key "${kid}" is not revoked yet: the ${left} prunable keys activated before it go first (deleting it alone would make the last of them trusted again), at most ${REVOKE_KEY_DELETES} a request; deleted the oldest ${REVOKE_KEY_DELETES}, ${left - REVOKE_KEY_DELETES} left: revoke it again (or let the prune delete them)`,
        },
        statements: (left === 58 ? 6 : 8) + REVOKE_KEY_DELETES,
      });
      expect(await sql('select count(*) as n from "pg_signing_keys"')).toEqual([{ n: 60 - (58 - left) - REVOKE_KEY_DELETES }]);
    }
    // The last 2 prunable keys and the key itself; its event's audit write.
    expect(await call("DELETE", path)).toEqual({ status: 204, body: null, statements: 8 + 2 + 1 + 1 });
    expect(await sql('select "kid" from "pg_signing_keys"')).toEqual([{ kid: oldestFirst.at(-1) }]);
  }, 120_000);

  it("the console's Re-encrypt keys over 56 keys to move makes at most REENCRYPT_MOVES moves a request (complete: false, the kids left), each request under the Free plan's 50 D1 queries", async () => {
    // 60 keys in clear and a key encryption key: the sign-in's load seals the newest 4, the other 56 are the reencrypt's.
    const { sql, console: signIn } = await withKeys({ PLANTGATE_KEY_ENCRYPTION_KEY: KEK, PLANTGATE_BOOTSTRAP_ADMIN: "1", PLANTGATE_BOOTSTRAP_USERNAME: ADMIN.username, PLANTGATE_BOOTSTRAP_PASSWORD: ADMIN.password });
    const call = await signIn();
    const clear = async () => ((await sql(`select "kid" from "pg_signing_keys" where "private_jwk" not like 'enc:%' order by "activates_at"`)) as { kid: string }[]).map((r) => r.kid);
    expect(REENCRYPT_MOVES).toBe(16);
    const moved: string[] = [];
    const all = ((await sql('select "kid" from "pg_signing_keys" order by "activates_at"')) as { kid: string }[]).map((r) => r.kid);
    const sealedAtLoad = all.slice(-KEYS_SEALED_PER_LOAD);
    expect(await clear()).toEqual(all.slice(0, -KEYS_SEALED_PER_LOAD));
    for (const n of [16, 16, 16]) {
      const before = await clear();
      const r = await call("POST", "/signing-keys/reencrypt");
      // The session and its account, the key rows, 16 moves, the event's audit write: 20 (until
      // 2026-12-02 one request moved all 56, with a second pass's read 61 D1 queries).
      // In the store's order (by creation), the oldest first.
      expect(r).toEqual({ status: 200, body: { reencrypted: before.slice(0, n), unchanged: [...moved, ...sealedAtLoad], left: before.slice(n), complete: false }, statements: 4 + REENCRYPT_MOVES });
      moved.push(...before.slice(0, n));
    }
    // The last 8, a second pass's read finding none left: complete.
    const last = await call("POST", "/signing-keys/reencrypt");
    expect(last.statements).toBe(3 + 8 + 2);
    const rest = all.slice(3 * REENCRYPT_MOVES, -KEYS_SEALED_PER_LOAD);
    expect(last.body).toEqual({ reencrypted: rest, unchanged: [...moved, ...sealedAtLoad], left: [], complete: true });
    expect(await clear()).toEqual([]);
  }, 120_000);

  it("a key encryption key newly configured over 60 keys stored in clear: a request's load seals KEYS_SEALED_PER_LOAD of them, the newest first, under 50 D1 queries", async () => {
    const { base, sql, count, newest } = await withKeys({ PLANTGATE_KEY_ENCRYPTION_KEY: KEK });
    expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
    const statements = await count();
    // The migrations check 2, the keys' list, 4 seals, the list again, the clients' longest token
    // lifetime: 9 (until 2026-12-02, 65).
    expect(statements, "D1 queries of the request").toBe(5 + KEYS_SEALED_PER_LOAD);
    expect(statements).toBeLessThanOrEqual(FREE_PLAN_QUERIES);
    const sealed = (await sql(`select "kid" from "pg_signing_keys" where "private_jwk" like 'enc:%' order by "activates_at" desc`)) as { kid: string }[];
    const newestFour = (await sql(`select "kid" from "pg_signing_keys" order by "activates_at" desc limit ${KEYS_SEALED_PER_LOAD}`)) as { kid: string }[];
    expect(sealed).toEqual(newestFour);
    expect(sealed[0]!.kid).toBe(newest);
  }, 120_000);
});
