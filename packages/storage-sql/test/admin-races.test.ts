/**
 * Administrative operations raced against live token traffic, through core's `app.fetch` and
 * `app.admin` on two app instances over one database (two storages, two pools, as two server
 * processes, the audit store on), on the machine's MariaDB and PostgreSQL. Each round runs, all at
 * once:
 *
 * - password grants, console sign-ins and a refresh chain (rotating one family) of an account while
 *   it is disabled and enabled again: once the disable has resolved, every refresh token and console
 *   session the account was given is refused; once the grants and sign-ins that were in flight are
 *   done, the store holds no live refresh token and no session of the account (a disable that left
 *   one, or a grant that stored a family after the disable's revocation and kept it, fails here);
 *   after the enable, whatever the account got before it is still refused;
 * - client credentials and refresh grants of a client while a secret is added and revoked, its
 *   secret regenerated and the client deleted (while the other instance regenerates it again: that
 *   succeeds or is AdminNotFoundError): after the regeneration the first secret is refused,
 *   after the delete every token request of the client is `invalid_client` (at once on the instance
 *   that made the change, within the PostgreSQL client cache's notification delay on the other);
 * - an RFC 7009 revocation of a refresh token while it is refreshed twice (a rotation's token is
 *   refused once both are done), and revocations of eight access tokens (each adds a jti, then
 *   sweeps expired ones) that the bearer check then refuses;
 * - plants created at once under one id (exactly one wins, the others 1006) and under new ids;
 * - a signing key rotation (every other round `now`; every third round a `now` rotation on the
 *   other instance at the same time) while all of that issues tokens (each access token is
 *   accepted by the instance that issued it);
 * - prune on both instances (one unbudgeted, one in batches of 5), over and over, with work to do:
 *   access tokens live 3 s, unused refresh tokens 5 s, failed-attempt windows 1 s, and 40 audit
 *   events past the retention are added each round.
 *
 * Every token request must get a documented answer: 200, 400 `invalid_grant` or 401
 * `invalid_client`, never a 500 or a 503; every admin operation must succeed (none here is refused
 * by design) and nothing may be logged as an error. Outcomes are counted per kind and printed, with
 * the deadlocks the server broke meanwhile (server-wide: other tests on the server count too), so a
 * run shows what the races produced.
 *
 * Found (2026-11-30): in storage-sql nothing to fix. In core, with both instances rotating `now`
 * at once: carol's access token, issued by one instance and revoked (200) on the other within the
 * second that instance waits before it looks for a kid it does not know, stayed valid where it was
 * issued (once, round 16 of 20 on MariaDB): the revocation endpoint now looks for an unknown kid at
 * once (core's test/key-rotation.test.ts). Otherwise 150 rounds on each engine gave only documented
 * answers and no half-done operation; MariaDB broke a deadlock every 10-40 rounds (two `attempts.increment`s of
 * one new key beside the sweep; two prunes' sweeps of `pg_attempts` or `pg_revoked_tokens`), which
 * the existing retries absorbed; PostgreSQL none. The test is not blind: with those retries turned
 * off it failed on MariaDB in 2 of 3 runs of 20 rounds (prune failed: `attempts.deleteExpired`,
 * `revokedTokens.deleteExpired`, ER_LOCK_DEADLOCK) and at 40 rounds a refresh answered 503.
 * Without the disable's `revokeByAccount`, or without the password grant's account check after
 * storing its family, it failed on both engines in 10 rounds; without the console sign-in's check
 * after storing its session, on both in 20 (on PostgreSQL alone in 10).
 *
 * Rounds: `PLANTGATE_RACE_ROUNDS` (default 20: 5-11 s an engine on the 2-core test machine, shared).
 */
import { AdminNotFoundError, createPlantgate, type Plantgate } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { TABLES } from "../src/schema.js";
import { describeIfReachable, MYSQL_URL, mysqlEngine, POSTGRES_URL, postgresEngine, probeMysql, probePostgres, type Engine } from "./support.js";

const ROUNDS = Number(process.env.PLANTGATE_RACE_ROUNDS ?? 20);
if (!Number.isSafeInteger(ROUNDS) || ROUNDS < 1) throw new Error(`PLANTGATE_RACE_ROUNDS must be a positive integer, not ${JSON.stringify(process.env.PLANTGATE_RACE_ROUNDS)}`);
const BASE = "https://as.example.test";
const SCOPE = "Platform_UserAPIs offline_access";
/**
 * How long another instance may still answer from its client cache after a client change:
 * PostgreSQL's notification delay (a few ms, as its README says), with room for a loaded CI
 * machine. Asked at once after the regeneration resolved, the other instance still took the old
 * secret in 4 of 30 rounds on the test machine; asked after one request on the changing instance,
 * never in 150.
 */
const CACHE_GRACE_MS = 2000;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

function races(engine: Engine): void {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });

  describe(engine.label, () => it(`admin operations race token traffic on two instances: only documented answers, no half-done disable or delete (${ROUNDS} rounds)`, { timeout: 120_000 }, async () => {
    const fresh = await engine.fresh();
    cleanups.push(() => fresh.drop());
    // With the audit store: every event is appended (one INSERT each), and prune deletes old ones.
    const first = await openSqlStorage(fresh.url, { audit: true });
    cleanups.push(() => first.close());
    const second = await openSqlStorage(fresh.url, { migrate: false, audit: true });
    cleanups.push(() => second.close());
    const logged: string[] = [];
    // Errors, and warnings of a failure the answer did not show (a key prune after a rotation); not
    // the expected ones (keys stored in clear, a reused refresh token's family revoked, and each
    // app's first request without a client address: the test passes none).
    const expectedWarnings = /^(signing keys are stored in clear|refresh token reuse detected|plantgate: a request came with no client address)/;
    const logger = {
      error: (message: string, context?: Record<string, unknown>) => void logged.push(`${message} ${JSON.stringify(context)}`),
      warn: (message: string, context?: Record<string, unknown>) => void (expectedWarnings.test(message) || logged.push(`warn: ${message} ${JSON.stringify(context)}`)),
    };
    const apps: Plantgate[] = [first, second].map((storage) =>
      createPlantgate({
        storage,
        passwordHashIterations: 1000,
        issuer: BASE,
        logger,
        // Short lives, so that prune has work beside the traffic: revoked access-token jtis (3 s),
        // refresh tokens (5 s unused), failed-attempt windows (1 s; counted, never refusing).
        accessTokenTtl: 3,
        refreshTokenTtl: 5,
        bruteForce: { maxFailures: 1_000_000, windowSeconds: 1 },
        console: { enabled: true },
        // The password grants and sign-ins of a round are more than the default allows at once.
        maxConcurrentPasswordChecks: 1000,
      }),
    );
    const app = (i: number) => apps[i % 2]!;

    /** Outcomes by kind ("password 200", "refresh 400 invalid_grant", "disable ok"...). */
    const counts: Record<string, number> = {};
    const count = (what: string) => void (counts[what] = (counts[what] ?? 0) + 1);
    /** Undocumented answers and failed admin operations, and broken invariants. */
    const wrong: string[] = [];

    const post = async (i: number, path: string, auth: [string, string], params: Record<string, string>): Promise<Answer> => {
      const response = await app(i).fetch(
        new Request(`${BASE}/UserService/connect/${path}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`${auth[0]}:${auth[1]}`) },
          body: new URLSearchParams(params).toString(),
        }),
      );
      const text = await response.text();
      return { status: response.status, body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>) };
    };
    /** A token request; its answer counted under `kind`, and recorded as wrong unless documented. */
    const token = async (kind: string, i: number, auth: [string, string], params: Record<string, string>): Promise<Answer> => {
      const answer = await post(i, "token", auth, params);
      const label = answer.status === 200 ? "200" : `${answer.status} ${String(answer.body.error)}`;
      count(`${kind} ${label}`);
      if (!["200", "400 invalid_grant", "401 invalid_client"].includes(label)) wrong.push(`${kind}: ${answer.status} ${JSON.stringify(answer.body)}`);
      if (answer.status === 200) await accepted(i, answer.body.access_token as string, kind, revokedBeside.has(kind));
      return answer;
    };
    /**
     * Kinds whose grant a revocation may reach between the answer and the check: their access token
     * may be refused as revoked by then (since 2026-12-01 revoking a refresh token revokes the access
     * tokens of its grant); the revocation's own check below requires it once both are done.
     */
    const revokedBeside = new Set(["refresh beside revocation"]);
    /** The issuing instance accepts the access token it just issued (whatever key signs now), unless its grant may be revoked meanwhile. */
    const accepted = async (i: number, accessToken: string, kind: string, mayBeRevoked = false) => {
      const response = await app(i).fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList?page=1&pageSize=1`, { headers: { authorization: `Bearer ${accessToken}` } }));
      if (response.status === 200 || (mayBeRevoked && response.status === 401)) return;
      wrong.push(`${kind}: its access token got ${response.status} ${await response.text()}`);
    };
    /** An admin operation: succeeds, or is recorded as wrong. */
    const admin = async <T>(kind: string, call: () => Promise<T>): Promise<T | undefined> => {
      try {
        const value = await call();
        count(`${kind} ok`);
        return value;
      } catch (e) {
        count(`${kind} ${(e as Error).name}`);
        wrong.push(`${kind}: ${(e as Error).name}: ${(e as Error).message}`);
        return undefined;
      }
    };
    /** `answer` must be `status error` (a check made after an admin operation resolved). */
    const refused = (what: string, answer: Answer, status: number, error: string) => {
      if (answer.status !== status || answer.body.error !== error) wrong.push(`${what}: ${answer.status} ${JSON.stringify(answer.body)}, not ${status} ${error}`);
    };
    /** {@link refused}, for a check on the instance that made the client change. */
    const refusedNow = async (what: string, ask: () => Promise<Answer>, status: number, error: string) => refused(what, await ask(), status, error);
    /**
     * {@link refused}, for a check on the instance that did not make the client change: its
     * PostgreSQL client cache drops the client when the change's notification arrives ("within the
     * notification delay (a few ms)", README of storage-sql), so a stale answer is taken for up to
     * {@link CACHE_GRACE_MS} and the check is asked again; past that it is wrong.
     */
    const refusedSoon = async (what: string, ask: () => Promise<Answer>, status: number, error: string) => {
      const deadline = performance.now() + CACHE_GRACE_MS;
      for (;;) {
        const answer = await ask();
        if (answer.status !== 200 || performance.now() > deadline) return refused(what, answer, status, error);
        count("stale client read, asked again");
        await pause(5);
      }
    };

    /** The server's count of deadlocks it broke (server-wide; PostgreSQL's statistics lag a little): printed, to show what the retries absorbed. */
    const deadlocks = async () =>
      Number(Object.values((await engine.exec(fresh, engine.family === "mysql" ? "show global status like 'Innodb_deadlocks'" : "select sum(deadlocks) as n from pg_stat_database"))[0] ?? {}).at(-1) ?? NaN);
    const deadlocksBefore = await deadlocks();

    /** A console sign-in: its session cookie, or null (401 1305 once the account is disabled). */
    const signIn = async (i: number, username: string, password: string): Promise<string | null> => {
      const response = await app(i).fetch(
        new Request(`${BASE}/console/api/session`, { method: "POST", headers: { "content-type": "application/json", origin: BASE }, body: JSON.stringify({ username, password }) }),
      );
      const body = (await response.json()) as Record<string, unknown>;
      count(`console sign-in ${response.status}${response.status === 200 ? "" : ` ${String(body.error)}`}`);
      if (response.status === 200) return response.headers.get("set-cookie")!.split(";")[0]!;
      if (response.status !== 401 || body.error !== 1305) wrong.push(`console sign-in: ${response.status} ${JSON.stringify(body)}`);
      return null;
    };
    /** The session of `cookie` must be refused (1301). */
    const signedOut = async (what: string, i: number, cookie: string) => {
      const response = await app(i).fetch(new Request(`${BASE}/console/api/session`, { headers: { cookie } }));
      const body = (await response.json()) as Record<string, unknown>;
      if (response.status !== 401 || body.error !== 1301) wrong.push(`${what}: ${response.status} ${JSON.stringify(body)}, not 401 1301`);
    };

    const { clientSecret: mainSecret } = await apps[0]!.admin.createClient({ clientId: "main" });
    const main: [string, string] = ["main", mainSecret];
    await apps[0]!.admin.createAccount({ username: "bob", password: "bob-password-1" });
    await apps[0]!.admin.createAccount({ username: "carol", password: "carol-password-1" });

    /** A refresh chain: rotates `start` as long as it works (at most `steps` times); every refresh token it got, with when. */
    const chain = async (kind: string, auth: () => [string, string], start: string, steps: number, got: Array<{ token: string; at: number }>) => {
      let current = start;
      for (let step = 0; step < steps; step++) {
        const answer = await token(kind, step, auth(), { grant_type: "refresh_token", refresh_token: current });
        if (answer.status !== 200) return;
        current = answer.body.refresh_token as string;
        got.push({ token: current, at: performance.now() });
      }
    };

    for (let round = 0; round < ROUNDS; round++) {
      // --- set-up of the round (not raced) ---
      const username = `alice-${round}`;
      const password = `alice-password-${round}`;
      const alice = await apps[0]!.admin.createAccount({ username, password, roles: ["admin"] });
      const seed = await token("seed", 0, main, { grant_type: "password", username, password, scope: SCOPE });
      const clientId = `svc-${round}`;
      const { clientSecret: firstSecret } = await apps[1]!.admin.createClient({ clientId });
      const secrets = [firstSecret];
      const svc = (): [string, string] => [clientId, secrets[secrets.length - 1]!];
      const bobSeed = await token("seed", 1, svc(), { grant_type: "password", username: "bob", password: "bob-password-1", scope: SCOPE });
      const carolSeed = await token("seed", round, main, { grant_type: "password", username: "carol", password: "carol-password-1", scope: SCOPE });
      // Access tokens to revoke during the round: each revocation adds a jti, then sweeps expired ones.
      const toRevoke = await Promise.all(Array.from({ length: 8 }, async (_, i) => (await token("seed", i, main, { grant_type: "client_credentials", scope: "Platform_UserAPIs" })).body.access_token as string));
      // Events past the retention (90 days), for prune to delete while new ones are appended.
      const old = Date.now() - 100 * 86_400_000;
      for (let i = 0; i < 40; i++) await first.audit!.append({ id: `old-${round}-${i}`, type: "token.issued", time: old + round * 40 + i, clientId: "main", accountId: null, username: null, data: "{}" });
      // One per instance, each used where it was issued: the other instance may refuse a token of a
      // key rotated in `now` for up to a second (documented), which is not this race's subject.
      const plantTokens = await Promise.all([0, 1].map(async (i) => (await token("seed", i, main, { grant_type: "client_credentials" })).body.access_token as string));
      const carolRefresh = carolSeed.body.refresh_token as string;
      const carolAccess = carolSeed.body.access_token as string;

      const aliceTokens: Array<{ token: string; at: number }> = [{ token: seed.body.refresh_token as string, at: performance.now() }];
      const svcTokens: Array<{ token: string; at: number }> = [{ token: bobSeed.body.refresh_token as string, at: performance.now() }];
      let enableStarted = Infinity;
      let stop = false;

      const pruning = async (i: number) => {
        while (!stop) {
          const pruned = await admin("prune", () => app(i).admin.prune(i % 2 ? { maxBatches: 7, batchSize: 5 } : {}));
          for (const [store, n] of Object.entries(pruned ?? {})) if (typeof n === "number" && n > 0) counts[`pruned ${store}`] = (counts[`pruned ${store}`] ?? 0) + n;
          await pause(2);
        }
      };

      // The account: password grants and a refresh chain while it is disabled and enabled again.
      const passwordGrants = Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          await pause(i * 5);
          const answer = await token("password", i, main, { grant_type: "password", username, password, scope: SCOPE });
          if (answer.status === 200) aliceTokens.push({ token: answer.body.refresh_token as string, at: performance.now() });
        }),
      );
      const aliceSessions: Array<{ cookie: string; at: number }> = [];
      const signIns = Promise.all(
        Array.from({ length: 4 }, async (_, i) => {
          await pause(i * 8);
          const cookie = await signIn(i, username, password);
          if (cookie !== null) aliceSessions.push({ cookie, at: performance.now() });
        }),
      );
      const aliceChain = chain("refresh", () => main, aliceTokens[0]!.token, 8, aliceTokens);
      const disableEnable = (async () => {
        await pause((round % 6) * 30);
        if ((await admin("disable", () => app(round).admin.setAccountEnabled(username, false))) === undefined) return;
        // Disabled: every refresh token the account got so far is refused.
        for (const { token: t } of [...aliceTokens]) refused(`round ${round}: a refresh token of ${username} while disabled`, await post(round + 1, "token", main, { grant_type: "refresh_token", refresh_token: t }), 400, "invalid_grant");
        for (const { cookie } of [...aliceSessions]) await signedOut(`round ${round}: a console session of ${username} while disabled`, round, cookie);
        // Once the grants and sign-ins in flight are done, the store holds nothing of the account
        // that could work: no live refresh token (the disable revoked what was there; a grant that
        // stored a family after that revoked it itself), no console session.
        await Promise.all([passwordGrants, aliceChain, signIns]);
        const live = await first.db
          .selectFrom(TABLES.refreshTokens)
          .select("token_hash")
          .where("account_id", "=", alice.id)
          .where("revoked_at", "is", null)
          .where("consumed_at", "is", null)
          .execute();
        const sessions = await first.db.selectFrom(TABLES.sessions).select("account_id").where("account_id", "=", alice.id).execute();
        if (live.length || sessions.length) wrong.push(`round ${round}: ${username} disabled, with ${live.length} live refresh tokens and ${sessions.length} console sessions stored`);
        enableStarted = performance.now();
        await admin("enable", () => app(round + 1).admin.setAccountEnabled(username, true));
      })();

      // The client: client credentials and a refresh chain while its secrets change and it is deleted.
      const clientGrants = Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          await pause(i * 2);
          await token("client_credentials", i, svc(), { grant_type: "client_credentials", scope: "Platform_UserAPIs" });
        }),
      );
      const svcChain = chain("client refresh", svc, svcTokens[0]!.token, 8, svcTokens);
      const clientAdmin = (async () => {
        await pause(round % 3 * 3);
        const added = await admin("addClientSecret", () => app(round).admin.addClientSecret(clientId));
        if (added) {
          secrets.push(added.clientSecret);
          await admin("revokeClientSecret", () => app(round + 1).admin.revokeClientSecret(clientId, added.secret.id));
          secrets.pop();
        }
        const rotated = await admin("rotateClientSecret", () => app(round + 1).admin.rotateClientSecret(clientId));
        if (rotated) {
          secrets.push(rotated.clientSecret);
          // On the instance that regenerated it at once, on the other within the notification delay.
          refused(`round ${round}: ${clientId}'s first secret after the regeneration, same instance`, await post(round + 1, "token", [clientId, firstSecret], { grant_type: "client_credentials" }), 401, "invalid_client");
          await refusedSoon(`round ${round}: ${clientId}'s first secret after the regeneration, other instance`, () => post(round, "token", [clientId, firstSecret], { grant_type: "client_credentials" }), 401, "invalid_client");
        }
        await pause(round % 2 * 5);
        // Deleted on one instance while the other regenerates its secret again: that one succeeds
        // or finds the client gone (AdminNotFoundError, the console's 1306); its secret, if any, is
        // refused below with the others.
        const [deleted] = await Promise.all([
          admin("deleteClient", () => app(round).admin.deleteClient(clientId).then(() => true)),
          (async () => {
            try {
              secrets.push((await app(round + 1).admin.rotateClientSecret(clientId)).clientSecret);
              count("rotateClientSecret beside delete ok");
            } catch (e) {
              count(`rotateClientSecret beside delete ${(e as Error).constructor.name}`);
              if (!(e instanceof AdminNotFoundError)) wrong.push(`round ${round}: rotateClientSecret beside delete: ${(e as Error).name}: ${(e as Error).message}`);
            }
          })(),
        ]);
        if (deleted === undefined) return;
        for (const i of [round, round + 1]) {
          const check = i === round ? refusedNow : refusedSoon;
          for (const secret of secrets) await check(`round ${round}: ${clientId} deleted, client credentials on instance ${i % 2}`, () => post(i, "token", [clientId, secret], { grant_type: "client_credentials" }), 401, "invalid_client");
          for (const { token: t } of [...svcTokens]) await check(`round ${round}: ${clientId} deleted, refresh on instance ${i % 2}`, () => post(i, "token", svc(), { grant_type: "refresh_token", refresh_token: t }), 401, "invalid_client");
        }
      })();

      // Revocation of a refresh token while it is refreshed (twice, one on each instance), and of an access token.
      const revocation = (async () => {
        const rotations = Promise.all([0, 1].map(async (i) => {
          await pause(i);
          return token("refresh beside revocation", i, main, { grant_type: "refresh_token", refresh_token: carolRefresh });
        }));
        await pause((round % 4) * 3);
        const revoked = await post(round, "revocation", main, { token: carolRefresh });
        const accessRevoked = await post(round + 1, "revocation", main, { token: carolAccess, token_type_hint: "access_token" });
        for (const [what, answer] of [["refresh token", revoked], ["access token", accessRevoked]] as const) {
          count(`revocation ${answer.status}`);
          if (answer.status !== 200) wrong.push(`round ${round}: revocation of carol's ${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
        }
        for (const answer of await rotations) {
          if (answer.status !== 200) continue;
          refused(`round ${round}: carol's rotated token after the revocation`, await post(round, "token", main, { grant_type: "refresh_token", refresh_token: answer.body.refresh_token as string }), 400, "invalid_grant");
          // The grant's access tokens are revoked with it (RFC 7009 §2.1), on both instances.
          for (const i of [round, round + 1]) {
            const api = await app(i).fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${answer.body.access_token as string}` } }));
            if (revoked.status === 200 && api.status !== 401) wrong.push(`round ${round}: carol's rotated access token after the revocation got ${api.status} on instance ${i % 2}`);
          }
        }
        const bearer = await app(round).fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${carolAccess}` } }));
        if (accessRevoked.status === 200 && bearer.status !== 401) wrong.push(`round ${round}: carol's revoked access token got ${bearer.status}`);
      })();

      const accessRevocations = Promise.all(
        toRevoke.map(async (accessToken, i) => {
          await pause(i);
          const answer = await post(i, "revocation", main, { token: accessToken });
          count(`access-token revocation ${answer.status}`);
          if (answer.status !== 200) return void wrong.push(`round ${round}: revocation of an access token: ${answer.status} ${JSON.stringify(answer.body)}`);
          const bearer = await app(i).fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${accessToken}` } }));
          if (bearer.status !== 401) wrong.push(`round ${round}: a revoked access token got ${bearer.status}`);
        }),
      );

      // Plants: one id created four times at once (one wins, the others are 1006), four new ids.
      const plants = Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          await pause(i);
          const id = i < 4 ? 1_000_000 + round : round * 10 + i;
          const response = await app(i).fetch(
            new Request(`${BASE}/plants`, { method: "POST", headers: { authorization: `Bearer ${plantTokens[i % 2]}`, "content-type": "application/json" }, body: JSON.stringify({ id, name: `plant ${id}` }) }),
          );
          const body = (await response.json()) as Record<string, unknown>;
          count(`plant ${response.status}${response.status === 200 ? "" : ` ${String(body.error)}`}`);
          if (response.status === 200) return id;
          if (i >= 4 || response.status !== 400 || body.error !== 1006) wrong.push(`round ${round}: plant ${id}: ${response.status} ${JSON.stringify(body)}`);
          return null;
        }),
      ).then((ids) => {
        if (ids.filter((id) => id === 1_000_000 + round).length !== 1) wrong.push(`round ${round}: plant ${1_000_000 + round} created ${ids.filter((id) => id === 1_000_000 + round).length} times`);
      });

      const rotation = (async () => {
        await pause(round % 5 * 2);
        await Promise.all([
          admin(round % 2 ? "rotateSigningKey" : "rotateSigningKey now", () => app(round).admin.rotateSigningKey({ now: round % 2 === 0 })),
          // Every third round the other instance rotates too, at once.
          round % 3 === 0 ? admin("rotateSigningKey now", () => app(round + 1).admin.rotateSigningKey({ now: true })) : null,
        ]);
      })();

      const pruners = [pruning(0), pruning(1)];
      await Promise.all([passwordGrants, signIns, aliceChain, disableEnable, clientGrants, svcChain, clientAdmin, revocation, accessRevocations, plants, rotation]);
      stop = true;
      await Promise.all(pruners);

      // Every refresh token of the account given before the enable started was revoked by the
      // disable (or by the enable, which revokes first): refused now the account is enabled.
      for (const { token: t, at } of aliceTokens) {
        if (at < enableStarted) refused(`round ${round}: a refresh token ${username} got before the enable`, await post(round, "token", main, { grant_type: "refresh_token", refresh_token: t }), 400, "invalid_grant");
      }
      for (const { cookie, at } of aliceSessions) if (at < enableStarted) await signedOut(`round ${round}: a console session ${username} got before the enable`, round + 1, cookie);
    }
    console.log(`${engine.label}: ${JSON.stringify(Object.fromEntries(Object.entries(counts).sort()))}; audit events kept: ${(await first.audit!.list({ limit: 1000 })).length}; deadlocks the server broke meanwhile (server-wide): ${(await deadlocks()) - deadlocksBefore}`);
    expect({ wrong, logged }).toEqual({ wrong: [], logged: [] });
  }));
}

const [postgresProblem, mysqlProblem] = await Promise.all([probePostgres(), probeMysql()]);
describeIfReachable("postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", postgresProblem, () => races(postgresEngine()));
describeIfReachable("mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", mysqlProblem, () => races(mysqlEngine()));
