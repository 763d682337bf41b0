/**
 * Two app instances over one database whose clocks differ by 2 s (NTP-level skew between hosts, or
 * the CLI on an operator's machine). A client created on the instance whose clock runs ahead is
 * used at once through the other one (provisioning, then traffic through a load balancer).
 * Expected: the tokens it is given are its own everywhere: the refresh token refreshes, the access
 * token can be revoked (RFC 7009) and introspects active.
 */
import { createPlantgate } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { accountListStatus, connectPoster, describeIfReachable, type Engine, MYSQL_URL, mysqlEngine, POSTGRES_URL, postgresEngine, probeMysql, probePostgres, sqliteEngine, twoStorages } from "./support.js";

const BASE = "https://as.example.test";
const SKEW_MS = 2000;

function suite(engine: Engine) {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });
  const post = connectPoster(BASE);
  const bearer = accountListStatus(BASE);

  describe(engine.label, () => {
    it(`a client created on the instance ${SKEW_MS} ms ahead, used at once on the other: its refresh token refreshes, its access token is revocable and introspects active`, async () => {
      const [sa, sb] = await twoStorages(engine, cleanups);
      const logger = { error() {}, warn() {} };
      const a = createPlantgate({ storage: sa, issuer: BASE, passwordHashIterations: 1000, logger, clock: () => Date.now() });
      const b = createPlantgate({ storage: sb, issuer: BASE, passwordHashIterations: 1000, logger, clock: () => Date.now() + SKEW_MS });
      await a.admin.createAccount({ username: "alice", password: "alice-password-1" });
      // Provisioned through B (clock ahead), used at once through A.
      const { clientSecret } = await b.admin.createClient({ clientId: "fresh-app" });
      const auth: [string, string] = ["fresh-app", clientSecret];

      const grant = await post(a, "token", auth, { grant_type: "password", username: "alice", password: "alice-password-1", scope: "Platform_UserAPIs offline_access" });
      expect(grant.status, JSON.stringify(grant.body)).toBe(200);
      const access = grant.body.access_token as string;
      const refresh = grant.body.refresh_token as string;

      // Wait past the skew: both clocks are now after the client's creation on either one.
      await new Promise((r) => setTimeout(r, SKEW_MS + 200));

      const problems: string[] = [];
      const introspected = await post(b, "introspect", auth, { token: access });
      if (introspected.body.active !== true) problems.push(`introspection of its access token on B: ${JSON.stringify(introspected.body)}`);
      const refreshed = await post(a, "token", auth, { grant_type: "refresh_token", refresh_token: refresh });
      if (refreshed.status !== 200) problems.push(`refresh on A: ${refreshed.status} ${JSON.stringify(refreshed.body)}`);
      const revoked = await post(b, "revocation", auth, { token: access, token_type_hint: "access_token" });
      if (revoked.status !== 200) problems.push(`revocation of its access token on B: ${revoked.status} ${JSON.stringify(revoked.body)}`);
      const after = await bearer(a, access);
      if (after !== 401) problems.push(`GetAccountList with the access token after its revocation: ${after}`);
      expect(problems).toEqual([]);
    });
  });
}

suite(sqliteEngine());
const pgProblem = await probePostgres();
describeIfReachable("postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => suite(postgresEngine()));
const mysqlProblem = await probeMysql();
describeIfReachable("mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", mysqlProblem, () => suite(mysqlEngine()));
