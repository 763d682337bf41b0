/**
 * Replacing a configured `signingKey` (README "Replacing a configured key": "it may be replaced
 * because it leaked") with a rolling/gradual deployment, two instances on one store: A = old
 * version (k-old configured), B = new version (k-new configured), on SQLite, PostgreSQL and
 * MySQL/MariaDB. Until 2026-12-02 (a) B refused A's fresh tokens and dropped k-old from its JWKS
 * once B had run longer than the token lifetime + 60 s, and (b) k-old, pruned by B and stored again
 * by A, was published and trusted by B for good. Now A stamps `last_signed_at` on k-old's row at each
 * load of the keys (migration 0013), and B trusts k-old until that stamp ages out. From the review
 * of 2026-12-02 (rotate).
 */
import { createPlantgate } from "@plantgate/core";
import { generateKeyPairSync, createPrivateKey, sign as nodeSign, type JsonWebKey as JWK } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { accountListStatus, connectPoster, describeIfReachable, type Engine, MYSQL_URL, mysqlEngine, POSTGRES_URL, postgresEngine, probeMysql, probePostgres, sqliteEngine, twoStorages } from "./support.js";

const BASE = "https://as.example.test";
const TTL_S = 7200;

async function privateJwk(kid: string): Promise<JWK> {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { ...privateKey.export({ format: "jwk" }), kid, alg: "ES256" };
}
const b64 = (x: string | Buffer) => Buffer.from(x).toString("base64url");
function mint(jwk: JWK, header: object, payload: object): string {
  const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(payload))}`;
  const sig = nodeSign("sha256", Buffer.from(input), { key: createPrivateKey({ key: jwk, format: "jwk" }), dsaEncoding: "ieee-p1363" });
  return `${input}.${b64(sig)}`;
}

function suite(engine: Engine) {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });
  const post = connectPoster(BASE);
  const bearer = accountListStatus(BASE);

  /** A (k-old) has issued a token; 10 s later B (k-new) starts and issues one. `time.now` moves both clocks. */
  async function deployment() {
    const [sa, sb] = await twoStorages(engine, cleanups);
    const time = { now: Date.now() };
    const clock = () => time.now;
    const logger = { error() {}, warn() {} };
    const kOld = await privateJwk("k-old");
    const kNew = await privateJwk("k-new");
    const a = createPlantgate({ storage: sa, issuer: BASE, passwordHashIterations: 1000, logger, clock, signingKey: kOld });
    const { clientSecret } = await a.admin.createClient({ clientId: "svc" });
    const auth: [string, string] = ["svc", clientSecret];
    expect((await post(a, "token", auth, { grant_type: "client_credentials" })).status).toBe(200);
    time.now += 10_000;
    const b = createPlantgate({ storage: sb, issuer: BASE, passwordHashIterations: 1000, logger, clock, signingKey: kNew });
    expect((await post(b, "token", auth, { grant_type: "client_credentials" })).status).toBe(200);
    return { a, b, auth, kOld, time };
  }

  describe(engine.label, () => {
    it("a gradual deployment of a new signingKey that lasts longer than the access-token lifetime: the old version's fresh tokens stay accepted by the new version", async () => {
      const { a, b, auth, time } = await deployment();

      // The gradual deployment goes on past the access-token lifetime + the reload minute: A (old
      // version, still serving a share of the traffic) signs with k-old as it always did.
      time.now += (TTL_S + 61) * 1000;
      const fresh = await post(a, "token", auth, { grant_type: "client_credentials" });
      expect(fresh.status).toBe(200);
      const token = fresh.body.access_token as string;
      const problems: string[] = [];
      const onB = await bearer(b, token);
      if (onB !== 200) problems.push(`a token A issued just now (k-old) on B: ${onB}`);
      const jwksB = (await (await b.fetch(new Request(`${BASE}/.well-known/jwks.json`))).json()) as { keys: { kid: string }[] };
      if (!jwksB.keys.some((k) => k.kid === "k-old")) problems.push(`B's JWKS lacks k-old, which A signs with: ${JSON.stringify(jwksB.keys.map((k) => k.kid))}`);
      expect(problems).toEqual([]);
    });

    it("a replaced (leaked) signingKey pruned by the new version and stored again by an old-version instance is not trusted for good once that instance is gone", async () => {
      const { a, b, auth, kOld, time } = await deployment();

      // k-old is prunable on B; B's housekeeping deletes it.
      time.now += (TTL_S + 61) * 1000;
      const counts = await b.admin.prune();
      expect(counts.signingKeys).toBe(1);
      // An instance of the old version still running (or rolled back to, or a CLI with the old
      // PLANTGATE_SIGNING_KEY) loads the keys: k-old is stored again, as a new key.
      expect((await post(a, "token", auth, { grant_type: "client_credentials" })).status).toBe(200);
      // The old version is gone for a day. An attacker holding the leaked k-old mints a token.
      time.now += 24 * 3600 * 1000;
      const iat = Math.floor(time.now / 1000);
      const forged = mint(kOld, { alg: "ES256", kid: "k-old", typ: "at+jwt" }, { client_id: "svc", scope: "Platform_UserAPIs", iss: BASE, sub: "client:svc", aud: BASE, iat, exp: iat + 600, jti: "forged-jti-1" });
      const problems: string[] = [];
      const jwksB = (await (await b.fetch(new Request(`${BASE}/.well-known/jwks.json`))).json()) as { keys: { kid: string }[] };
      if (jwksB.keys.some((k) => k.kid === "k-old")) problems.push(`B (k-new configured) publishes k-old a day after the last instance that signed with it went: ${JSON.stringify(jwksB.keys.map((k) => k.kid))}`);
      const status = await bearer(b, forged);
      if (status !== 401) problems.push(`a token minted with the replaced k-old a day later is accepted by B: ${status}`);
      const listed = await b.admin.listSigningKeys();
      problems.push(`(B lists: ${JSON.stringify(listed.map((k) => [k.kid, k.status]))})`);
      expect(problems).toEqual([expect.stringMatching(/^\(B lists/)]);
    });
  });
}

suite(sqliteEngine());
const [pgProblem, mysqlProblem] = await Promise.all([probePostgres(), probeMysql()]);
describeIfReachable("postgres", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => suite(postgresEngine()));
describeIfReachable("mysql", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", mysqlProblem, () => suite(mysqlEngine()));
