/**
 * Key pre-publication across two instances on ONE PostgreSQL schema, under an injected clock: a
 * key rotated with the CLI is in both instances' JWKS documents within the reload minute, tokens
 * issued right after the rotation carry the previous kid and verify on both, and both instances
 * switch to the new kid at the stored activation instant. A `now` rotation signs at once where it
 * was made and everywhere within the reload minute. Private keys are sealed under the shared KEK.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "@plantgate/cli";
import { createPlantgate, type Plantgate } from "@plantgate/core";
import { openSqlStorage, type SqlStorage } from "@plantgate/storage-sql";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeIfPostgres, freshSchema, probePostgres, type FreshSchema } from "./support.js";

const problem = await probePostgres();
const ISSUER = "https://keys.plantgate.test";
const KEK = Buffer.from(Array.from({ length: 32 }, (_, i) => i * 7 + 3)).toString("base64url");

const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString()) as { kid: string }).kid;

describeIfPostgres("signing-key pre-publication: two instances on one PostgreSQL schema, injected clock", problem, () => {
  let schema: FreshSchema | undefined;
  const storages: SqlStorage[] = [];
  const workDir = mkdtempSync(join(tmpdir(), "plantgate-keys-"));
  let now = Date.now();
  const clock = () => now;
  let a: Plantgate;
  let b: Plantgate;
  let secret = "";

  const cli = async (argv: string[]) => {
    let stdout = "";
    let stderr = "";
    const code = await runCli(argv, {
      env: { PLANTGATE_DATABASE_URL: schema!.url, PLANTGATE_KEY_ENCRYPTION_KEY: KEK, PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" },
      cwd: workDir,
      readStdin: async () => "",
      stdout: (t) => void (stdout += t),
      stderr: (t) => void (stderr += t),
    });
    expect(code, stderr).toBe(0);
    return JSON.parse(stdout) as any;
  };

  const token = async (app: Plantgate) => {
    const res = await app.fetch(
      new Request(`${ISSUER}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`keys-client:${secret}`) },
        body: "grant_type=client_credentials",
      }),
    );
    const body = (await res.json()) as { access_token: string };
    expect(res.status, JSON.stringify(body)).toBe(200);
    return body.access_token;
  };
  const accepted = async (app: Plantgate, accessToken: string) =>
    (await app.fetch(new Request(`${ISSUER}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${accessToken}` } }))).status;
  const jwksKids = async (app: Plantgate) => {
    const res = await app.fetch(new Request(`${ISSUER}/.well-known/jwks.json`));
    expect(res.headers.get("cache-control")).toBe("public, max-age=300");
    return ((await res.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid).sort();
  };

  beforeAll(async () => {
    schema = await freshSchema();
    for (const _ of [0, 1]) storages.push(await openSqlStorage(schema.url));
    const make = (storage: SqlStorage) =>
      createPlantgate({ storage, issuer: ISSUER, clock, keyEncryptionKeys: [KEK], passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    a = make(storages[0]!);
    b = make(storages[1]!);
    ({ clientSecret: secret } = await a.admin.createClient({ clientId: "keys-client" }));
  });

  afterAll(async () => {
    for (const s of storages) await s.close();
    await schema?.drop();
    rmSync(workDir, { recursive: true, force: true });
  });

  it("keys rotate: published in both JWKS within a minute as next, old kid signs until the stored instant, then both switch together", async () => {
    const k1 = kidOf(await token(a));
    expect(kidOf(await token(b))).toBe(k1);
    expect([await jwksKids(a), await jwksKids(b)]).toEqual([[k1], [k1]]);

    // The instances run with the defaults (no accessTokenTtl, no activation delay given).
    const rotated = await cli(["keys", "rotate", "--server-defaults"]);
    expect(rotated).toMatchObject({ status: "next", deleted: [] });
    const k2 = rotated.kid as string;
    const activatesAt = Date.parse(rotated.activatesAt);
    expect((await cli(["keys", "list"])).map((k: { kid: string; status: string }) => [k.kid, k.status])).toEqual([
      [k2, "next"],
      [k1, "active"],
    ]);
    // Right after the rotation: both instances still sign with the previous key, and each accepts the other's token.
    const rightAfter = [await token(a), await token(b)];
    expect(rightAfter.map(kidOf)).toEqual([k1, k1]);
    for (const t of rightAfter) expect([await accepted(a, t), await accepted(b, t)]).toEqual([200, 200]);

    // Within the key reload interval (60 s) the new key is in both JWKS documents.
    now += 60_000;
    expect([await jwksKids(a), await jwksKids(b)]).toEqual([[k1, k2].sort(), [k1, k2].sort()]);

    // Both switch at the stored activation time: not a millisecond earlier, and together.
    now = activatesAt - 1;
    expect([kidOf(await token(a)), kidOf(await token(b))]).toEqual([k1, k1]);
    now = activatesAt;
    const switched = [await token(a), await token(b)];
    expect(switched.map(kidOf)).toEqual([k2, k2]);
    for (const t of [...rightAfter, ...switched]) expect([await accepted(a, t), await accepted(b, t)]).toEqual([200, 200]);

    // Both keys are stored sealed under the KEK.
    const rows = await storages[0]!.db.selectFrom("pg_signing_keys").select(["kid", "private_jwk", "activates_at"]).execute();
    expect(rows).toHaveLength(2);
    for (const r of rows) expect(r.private_jwk).toMatch(/^enc:A256GCM:/);
    expect(rows.find((r) => r.kid === k2)!.activates_at?.toString()).toBe(String(activatesAt));
  });

  it("rotate now: the instance that rotates signs with the new key at once, the other within the reload minute", async () => {
    const before = kidOf(await token(b));
    const { kid } = await a.admin.rotateSigningKey({ now: true });
    expect(kidOf(await token(a))).toBe(kid);
    now += 60_000;
    expect(kidOf(await token(b))).toBe(kid);
    expect(await jwksKids(b)).toContain(before);
  });
});
