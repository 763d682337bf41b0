/**
 * Two instances over one database revoke the same token at once (a sign-out sent to both, a retry
 * racing the first try), in the same millisecond, each having read the token live before either
 * writes: one `token.revoked` between them. Until 2026-12-02 each recorded one, as
 * `revokedTokens.add` did not say whether the `jti` was new and `revokeFamily` did not say whether
 * it revoked the family (its `revokedAt` read back equal to both calls' `now`).
 */
import { createPlantgate, type SecurityEvent, type Storage } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { connectPoster, describeIfReachable, type Engine, MYSQL_URL, mysqlEngine, POSTGRES_URL, postgresEngine, probeMysql, probePostgres, sqliteEngine, twoStorages } from "./support.js";

const BASE = "https://as.example.test";

/**
 * The storage with each `revokedTokens.add` held at `gate` until every racing revocation has reached
 * its own (each has read the token live by then); the add then runs on the real store and its answer
 * passes through.
 */
function held(storage: Storage, gate: { arrive(): Promise<void> }): Storage {
  const add = async (key: string, expiresAt: number) => {
    await gate.arrive();
    return storage.revokedTokens.add(key, expiresAt);
  };
  return { ...storage, revokedTokens: { ...storage.revokedTokens, add } };
}

function barrier(n: number) {
  let armed = false;
  let arrived = 0;
  let release = () => {};
  const all = new Promise<void>((resolve) => (release = resolve));
  return {
    arm: () => void (armed = true),
    arrive: async () => {
      if (!armed) return;
      if (++arrived === n) release();
      await all;
    },
  };
}

function suite(engine: Engine) {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });
  const post = connectPoster(BASE);

  describe(engine.label, () => {
    const twoInstances = async () => {
      const [sa, sb] = await twoStorages(engine, cleanups);
      const gate = barrier(2);
      const now = Date.now();
      const events: SecurityEvent[] = [];
      const options = { issuer: BASE, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, clock: () => now, onEvent: (e: SecurityEvent) => void events.push(e) };
      const a = createPlantgate({ ...options, storage: held(sa, gate) });
      const b = createPlantgate({ ...options, storage: held(sb, gate) });
      await a.admin.createAccount({ username: "alice", password: "alice-password-1" });
      const { clientSecret } = await a.admin.createClient({ clientId: "app" });
      const auth: [string, string] = ["app", clientSecret];
      const grant = await post(a, "token", auth, { grant_type: "password", username: "alice", password: "alice-password-1", scope: "Platform_UserAPIs offline_access" });
      expect(grant.status, JSON.stringify(grant.body)).toBe(200);
      const revokeOnBoth = async (token: string) => {
        gate.arm();
        return Promise.all([post(a, "revocation", auth, { token }), post(b, "revocation", auth, { token })]);
      };
      const revoked = async () => {
        await Promise.all([a.flushEvents(), b.flushEvents()]);
        return events.filter((e) => e.type === "token.revoked").map((e) => (e as Extract<SecurityEvent, { type: "token.revoked" }>).token_type);
      };
      return { tokens: grant.body as { access_token: string; refresh_token: string }, revokeOnBoth, revoked };
    };

    it("an access token revoked on both instances at once: 200 on each, one token.revoked", async () => {
      const { tokens, revokeOnBoth, revoked } = await twoInstances();
      expect(await revokeOnBoth(tokens.access_token)).toEqual([{ status: 200, body: {} }, { status: 200, body: {} }]);
      expect(await revoked()).toEqual(["access_token"]);
    });

    it("a refresh token revoked on both instances at once, in the same millisecond: 200 on each, one token.revoked", async () => {
      const { tokens, revokeOnBoth, revoked } = await twoInstances();
      expect(await revokeOnBoth(tokens.refresh_token)).toEqual([{ status: 200, body: {} }, { status: 200, body: {} }]);
      expect(await revoked()).toEqual(["refresh_token"]);
    });
  });
}

suite(sqliteEngine());
const pgProblem = await probePostgres();
describeIfReachable("postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => suite(postgresEngine()));
const mysqlProblem = await probeMysql();
describeIfReachable("mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", mysqlProblem, () => suite(mysqlEngine()));
