/**
 * Two instances over one store during a rolling change of `accessTokenTtl` (600 s on A, the old
 * configuration; 7200 s on B, the new one). A user signs in through B, then signs out through A
 * (RFC 7009 revocation of the refresh token). A's `sid:` entry is kept for A's longest lifetime
 * (600 s), so once it is swept the grant's access token (7200 s) works again: the documented limit
 * (README, "Revocation and introspection": every instance must share `accessTokenTtl`), asserted
 * as documented, beside the documented way round it (a stored client with the new lifetime makes
 * every instance's entry last that long). Found by a review (2026-12-02) as a failing test
 * expecting 401 on both; kept as evidence of the behaviour the README states.
 */
import { createPlantgate } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { accountListStatus, connectPoster, describeIfReachable, type Engine, POSTGRES_URL, postgresEngine, probePostgres, sqliteEngine, twoStorages } from "./support.js";

const BASE = "https://as.example.test";

function suite(engine: Engine) {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });
  const post = connectPoster(BASE);
  const list = accountListStatus(BASE);

  describe(engine.label, () => {
    const scenario = async (withLongClient: boolean) => {
      const [sa, sb] = await twoStorages(engine, cleanups);
      const offset = { ms: 0 };
      const clock = () => Date.now() + offset.ms;
      const logger = { error() {}, warn() {} };
      const a = createPlantgate({ storage: sa, issuer: BASE, passwordHashIterations: 1000, logger, clock, accessTokenTtl: 600 });
      const b = createPlantgate({ storage: sb, issuer: BASE, passwordHashIterations: 1000, logger, clock, accessTokenTtl: 7200 });
      await a.admin.createAccount({ username: "alice", password: "alice-password-1" });
      const { clientSecret } = await a.admin.createClient({ clientId: "app" });
      // The documented way round: a client (never used) whose own lifetime is the new one.
      if (withLongClient) await a.admin.createClient({ clientId: "ttl-holder", grantTypes: ["client_credentials"], accessTokenTtl: 7200 });
      const auth: [string, string] = ["app", clientSecret];

      const grant = await post(b, "token", auth, { grant_type: "password", username: "alice", password: "alice-password-1", scope: "Platform_UserAPIs offline_access" });
      expect(grant.status, JSON.stringify(grant.body)).toBe(200);
      expect(grant.body.expires_in).toBe(7200);
      const access = grant.body.access_token as string;
      // Sign-out through A.
      expect((await post(a, "revocation", auth, { token: grant.body.refresh_token as string })).status).toBe(200);
      expect(await list(b, access)).toBe(401);

      // 20 minutes later (the token has 100 minutes left), housekeeping runs on either instance.
      offset.ms += 20 * 60_000;
      await a.admin.prune();
      return { onB: await list(b, access), onA: await list(a, access) };
    };

    it("documented limit: an access token of a family revoked on an instance with a shorter accessTokenTtl works again once the sid: entry is swept", async () => {
      expect(await scenario(false)).toEqual({ onB: 200, onA: 200 });
    });

    it("documented way round: with a stored client whose own accessTokenTtl is the longer one, the entry outlives the token", async () => {
      expect(await scenario(true)).toEqual({ onB: 401, onA: 401 });
    });
  });
}

suite(sqliteEngine());
const pgProblem = await probePostgres();
describeIfReachable("postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => suite(postgresEngine()));
