import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startServer } from "@plantgate/example-node-server";
import { kekId } from "@plantgate/http-suite-tests/kek-rows";
import { bundleNodeEntry } from "@plantgate/http-suite-tests/node-entry";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { generateKeyRecord, SECURITY_EVENT_TYPES } from "@plantgate/core";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";
import { sql } from "kysely";
import { LATEST_SCHEMA_VERSION } from "@plantgate/storage-sql";
// As storage-sql's own upgrade tests build an older database (not exported from the package).
import { migrateToVersion } from "../../storage-sql/src/migrations.js";
import { runCli, USAGE } from "../src/cli.js";

/**
 * main.ts, bundled once for the tests that run the CLI as a process many times (closed and broken
 * stdout, stdin read forever): a plain `node` start instead of tsx's two processes and loader
 * thread for each. The real entry point through tsx and `pnpm -s plantgate` keep their own tests.
 */
let bundled: string;
let bundleDir: string | undefined;
beforeAll(async () => {
  bundleDir = mkdtempSync(join(tmpdir(), "plantgate-cli-main-"));
  bundled = await bundleNodeEntry(fileURLToPath(new URL("../src/main.ts", import.meta.url)), join(bundleDir, "main.mjs"));
});
afterAll(() => {
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
});

let dir: string;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-"));
  // The store exists, as after the server's first start or `plantgate migrate`: the CLI's other
  // commands refuse a SQLite file that does not exist.
  const migrated = await cli(["migrate"]);
  expect([migrated.code, migrated.stderr]).toEqual([0, "migrations applied\n"]);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Core's warning for signing keys stored without PLANTGATE_KEY_ENCRYPTION_KEY, as the CLI prints it. */
const CLEAR_KEYS =
  "plantgate: warning: signing keys are stored in clear: anyone who can read the store can sign tokens; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys) to encrypt them at rest\n";

const baseEnv = () => ({ PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" });

/** The signing key rows of the SQLite store in `dir`, read directly. */
async function keyRows() {
  const storage = await openStorageFromEnv({}, { cwd: dir, migrate: false });
  try {
    return await storage.db.selectFrom("pg_signing_keys").select(["kid", "private_jwk"]).execute();
  } finally {
    await storage.close();
  }
}

/** Stores a first signing key, signing now, as a server's start does on a store without one. */
async function storeFirstKey() {
  const storage = await openStorageFromEnv({}, { cwd: dir, migrate: false });
  try {
    await storage.signingKeys.create(await generateKeyRecord("ES256", Date.now()));
  } finally {
    await storage.close();
  }
}

/** Runs one command in-process against the SQLite store in `dir`. */
async function cli(argv: string[], stdin = "", env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    env: { ...baseEnv(), ...env },
    cwd: dir,
    readStdin: async () => stdin,
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
  });
  return { code, stdout, stderr, json: stdout && argv[0] !== "events" && !stdout.startsWith("usage:") ? (JSON.parse(stdout) as any) : undefined };
}

async function token(url: string, body: Record<string, string>) {
  const res = await fetch(`${url}/UserService/connect/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe("plantgate CLI", () => {
  it("client create prints {client_id, client_secret} as JSON and the secret works on a server over the same store", async () => {
    const created = await cli(["client", "create", "--name", "Reporting", "--id", "reporting", "--grants", "client_credentials", "--scopes", "Platform_UserAPIs"]);
    expect(created.code).toBe(0);
    expect(created.json).toEqual({
      client_id: "reporting",
      client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      name: "Reporting",
      grant_types: ["client_credentials"],
      scopes: ["Platform_UserAPIs"],
      secret_id: expect.any(String),
      created_at: expect.stringMatching(/Z$/),
      expires_at: null,
    });
    expect(created.stderr).toContain("shown only now");
    // The same id again: refused, the id quoted as JSON (bare until 2026-11-30), no secret shown.
    expect(await cli(["client", "create", "--name", "Again", "--id", "reporting"])).toEqual({ code: 2, stdout: "", stderr: 'plantgate: client "reporting" already exists\n', json: undefined });

    // The server's JSON lines must hold none of the secrets and passwords the CLI and the requests carried.
    const lines = serverLines();
    const sent = [created.json.client_secret as string, "s3cret-passphrase"];
    const server = await startServer({ PORT: "0", PLANTGATE_DB: join(dir, "data", "plantgate.db"), ...baseEnv() }, {}, { destination: lines.destination });
    try {
      expect(server.demo).toBeNull(); // the store was not empty
      const ok = await token(server.url, { grant_type: "client_credentials", client_id: "reporting", client_secret: created.json.client_secret });
      expect(ok.status).toBe(200);
      expect(ok.body.scope).toBe("Platform_UserAPIs");
      // The CLI's client has a generation (admin.createClient), which the server's token carries (cgen).
      expect(JSON.parse(Buffer.from(String(ok.body.access_token).split(".")[1]!, "base64url").toString()).cgen).toMatch(/^[A-Za-z0-9_-]{16}$/);

      // add-secret while the server runs: a second secret works and the first still does.
      const added = await cli(["client", "add-secret", "reporting", "--expires-in", "3600"]);
      expect(added).toMatchObject({ code: 0, stderr: "the earlier secrets keep working; the new one is shown only now\n" });
      expect(added.json).toEqual({
        client_id: "reporting",
        client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        secret_id: expect.any(String),
        created_at: expect.stringMatching(/Z$/),
        expires_at: expect.stringMatching(/Z$/),
      });
      expect(Date.parse(added.json.expires_at) - Date.parse(added.json.created_at)).toBe(3_600_000);
      sent.push(added.json.client_secret);
      for (const secret of [created.json.client_secret, added.json.client_secret]) {
        expect((await token(server.url, { grant_type: "client_credentials", client_id: "reporting", client_secret: secret })).status).toBe(200);
      }
      const listed = (await cli(["client", "list"])).json.find((c: { client_id: string }) => c.client_id === "reporting");
      expect(listed.secrets.map((x: { secret_id: string }) => x.secret_id).sort()).toEqual([created.json.secret_id, added.json.secret_id].sort());
      expect(JSON.stringify(listed)).not.toContain(added.json.client_secret);

      // rotate-secret through the CLI while the server runs: every earlier secret fails at once.
      const rotated = await cli(["client", "rotate-secret", "reporting"]);
      expect(rotated.code).toBe(0);
      expect(rotated.json).toEqual({ client_id: "reporting", client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), secret_id: expect.any(String), created_at: expect.stringMatching(/Z$/), expires_at: null });
      expect(rotated.json.client_secret).not.toBe(created.json.client_secret);
      sent.push(rotated.json.client_secret);
      for (const secret of [created.json.client_secret, added.json.client_secret]) {
        const old = await token(server.url, { grant_type: "client_credentials", client_id: "reporting", client_secret: secret });
        expect(old).toEqual({ status: 401, body: { error: "invalid_client", error_description: "Client authentication failed." } });
      }
      const fresh = await token(server.url, { grant_type: "client_credentials", client_id: "reporting", client_secret: rotated.json.client_secret });
      expect(fresh.status).toBe(200);

      // user create (password on stdin), then log in; user disable stops login and refresh at once.
      // As main.ts hands over a CRLF line (cut at the \n): the \r is no part of the password.
      const user = await cli(["user", "create", "--username", "carol", "--display-name", "Carol", "--email", "carol@example.test", "--roles", "ops admin"], "s3cret-passphrase\r");
      expect(user.code).toBe(0);
      expect(user.json).toEqual({
        id: expect.any(String),
        username: "carol",
        displayName: "Carol",
        email: "carol@example.test",
        roles: ["ops", "admin"],
        enabled: true,
        createdAt: expect.any(String),
      });
      // The same username again: refused, quoted as JSON (bare until 2026-11-30), never the password.
      expect(await cli(["user", "create", "--username", "carol"], "another-passphrase")).toEqual({ code: 2, stdout: "", stderr: 'plantgate: username "carol" is taken\n', json: undefined });
      const app = await cli(["client", "create", "--name", "App", "--id", "app"]);
      const login = await token(server.url, {
        grant_type: "password",
        client_id: "app",
        client_secret: app.json.client_secret,
        username: "carol",
        password: "s3cret-passphrase",
        scope: "Platform_UserAPIs offline_access",
      });
      expect(login.status).toBe(200);
      expect(await cli(["user", "disable", "carol"])).toMatchObject({ code: 0, json: { username: "carol", enabled: false } });
      const again = await token(server.url, {
        grant_type: "password",
        client_id: "app",
        client_secret: app.json.client_secret,
        username: "carol",
        password: "s3cret-passphrase",
      });
      expect(again.body).toEqual({ error: "invalid_grant", error_description: "The username or password is incorrect." });
      const refresh = await token(server.url, {
        grant_type: "refresh_token",
        client_id: "app",
        client_secret: app.json.client_secret,
        refresh_token: login.body.refresh_token,
      });
      expect(refresh.body).toEqual({ error: "invalid_grant", error_description: "The refresh token is invalid, expired or revoked." });

      // keys rotate: the new key is published (next) and signs after the activation delay; the old token still verifies.
      const rotatedKey = await cli(["keys", "rotate", "--server-defaults"]);
      expect(rotatedKey.code).toBe(0);
      expect(rotatedKey.json).toEqual({ kid: expect.any(String), activatesAt: expect.stringMatching(/Z$/), status: "next", deleted: [], cancelled: [] });
      expect(rotatedKey.stderr).toBe(`the new key is published now (status next) and signs from ${rotatedKey.json.activatesAt}; running servers publish it within a minute\n`);
      const list = await fetch(`${server.url}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${fresh.body.access_token}` } });
      expect(list.status).toBe(200);
      const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
      expect(jwks.keys.length).toBe(1); // the running server re-reads keys within a minute, not at once
    } finally {
      await server.close();
    }
    lines.check(sent);
  });

  it("keys rotate on a store without keys (after migrate): the new key signs at once and says so (it was said to be next, signing after the delay)", async () => {
    const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const before = Date.now();
    const rotated = await cli(["keys", "rotate", "--server-defaults"]);
    expect(rotated).toMatchObject({ code: 0, stderr: "the store had no signing key: the new key signs from now on\n" });
    expect(rotated.json).toEqual({ kid: expect.any(String), activatesAt: iso, status: "active", deleted: [], cancelled: [] });
    expect(Date.parse(rotated.json.activatesAt)).toBeGreaterThanOrEqual(before - 1);
    expect(Date.parse(rotated.json.activatesAt)).toBeLessThanOrEqual(Date.now());
    const listed = await cli(["keys", "list"]);
    expect(listed.json.map((k: { kid: string; status: string; activatesAt: string }) => [k.kid, k.status, k.activatesAt])).toEqual([[rotated.json.kid, "active", rotated.json.activatesAt]]);
  });

  it("keys list shows kid, alg, createdAt, activatesAt, status (next / active / retired), stored and atRest; rotate schedules, rotate --now switches", async () => {
    const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // On a fresh store, listing creates no key (it stored one until 2026-11-30): the servers' start makes the first.
    expect(await cli(["keys", "list"])).toEqual({ code: 0, stdout: "[]\n", stderr: "", json: [] });
    expect(await keyRows()).toEqual([]);
    await storeFirstKey();
    const first = await cli(["keys", "list"]);
    // No warning about keys in clear: the listing loads no key, and says so per key (atRest).
    expect(first).toMatchObject({ code: 0, stderr: "" });
    expect(first.json).toEqual([{ kid: expect.any(String), alg: "ES256", createdAt: iso, activatesAt: first.json[0].createdAt, status: "active", stored: true, atRest: "clear", kek: null, kekStatus: null }]);
    const before = Date.now();
    const rotated = await cli(["keys", "rotate", "--server-defaults"]);
    const activatesAt = Date.parse(rotated.json.activatesAt);
    // 360 s = the JWKS cache lifetime (300 s) + the key reload interval (60 s).
    expect(activatesAt - before).toBeGreaterThanOrEqual(360_000);
    expect(activatesAt - Date.now()).toBeLessThanOrEqual(360_000);
    const second = await cli(["keys", "list"]);
    expect(second.json).toEqual([
      { kid: rotated.json.kid, alg: "ES256", createdAt: iso, activatesAt: rotated.json.activatesAt, status: "next", stored: true, atRest: "clear", kek: null, kekStatus: null },
      { ...first.json[0], status: "active" },
    ]);
    // rotate --now deletes the next key made before it, which would take over from it at its own
    // activation time (until 2026-12-02 it did, minutes after "signs from now on"), and says so.
    const urgent = await cli(["keys", "rotate", "--now", "--server-defaults"]);
    expect(urgent.json).toEqual({ kid: expect.any(String), activatesAt: iso, status: "active", deleted: [], cancelled: [rotated.json.kid] });
    expect(urgent.stderr).toBe(
      "the new key signs from now on; running servers switch within a minute; resource servers that cached the JWKS reject its tokens until they fetch it again\n" +
        `next keys stored before it were deleted, never having signed (each would have taken over from it at its activation time): "${rotated.json.kid}"\n`,
    );
    expect((await cli(["keys", "list"])).json.map((k: { kid: string; status: string }) => [k.kid, k.status])).toEqual([
      [urgent.json.kid, "active"],
      [first.json[0].kid, "retired"],
    ]);
    // A rotation after it schedules a next key again.
    const later = await cli(["keys", "rotate", "--server-defaults"]);
    expect(later.json).toEqual({ kid: expect.any(String), activatesAt: iso, status: "next", deleted: [], cancelled: [] });
    const third = await cli(["keys", "list"]);
    expect(third.json.map((k: { kid: string; status: string }) => [k.kid, k.status])).toEqual([
      [later.json.kid, "next"],
      [urgent.json.kid, "active"],
      [first.json[0].kid, "retired"],
    ]);
    expect(third.stdout).not.toContain('"d"');
    // After a leak: rotate --now, then revoke the old key (retired keys verify until they are pruned),
    // once every instance has re-read the keys: right after the rotation it is refused.
    const early = await cli(["keys", "revoke", first.json[0].kid, "--server-defaults"]);
    expect([early.code, early.stdout]).toEqual([2, ""]);
    expect(early.stderr).toMatch(new RegExp(`^${CLEAR_KEYS.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}plantgate: signing key "${first.json[0].kid}" may still sign on instances that have not re-read the keys since "${urgent.json.kid}" took over \\(they do within a minute\\): revoke it from \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\n$`));
    // A next key due later than that is called off at once.
    expect(await cli(["keys", "revoke", later.json.kid, "--server-defaults"])).toEqual({
      code: 0,
      stdout: JSON.stringify({ kid: later.json.kid, status: "next", deleted: [] }, null, 2) + "\n",
      stderr: CLEAR_KEYS + "the key is deleted: running servers drop it from the JWKS and refuse its tokens within a minute; resource servers that cached the JWKS keep it until they fetch it again\n",
      json: { kid: later.json.kid, status: "next", deleted: [] },
    });
    expect(await cli(["keys", "revoke", urgent.json.kid, "--server-defaults"])).toEqual({ code: 2, stdout: "", stderr: `${CLEAR_KEYS}plantgate: signing key "${urgent.json.kid}" signs now: rotate with now (keys rotate --now) first, then revoke it\n`, json: undefined });
    // An unknown kid is answered from the store alone (no load of the keys, so no warning either).
    expect(await cli(["keys", "revoke", later.json.kid, "--server-defaults"])).toEqual({ code: 2, stdout: "", stderr: `plantgate: signing key "${later.json.kid}" does not exist\n`, json: undefined });
    expect((await cli(["keys", "list"])).json.map((k: { kid: string }) => k.kid)).toEqual([urgent.json.kid, first.json[0].kid]);
    expect(await cli(["keys", "list", "extra"])).toMatchObject({ code: 2, stdout: "" });
    expect(await cli(["keys", "rotate", "--later"])).toMatchObject({ code: 2, stdout: "" });
  });

  it("with PLANTGATE_KEY_ENCRYPTION_KEY keys reencrypt seals the stored rows and moves them to the first KEK; keys list shows them encrypted without opening them; a missing KEK is refused in one line", async () => {
    const kek = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
    const oldKek = kek();
    const newKek = kek();
    // A key stored in clear (as before a KEK was set): listing with the KEK shows it so and leaves
    // it so (listing sealed it until 2026-11-30); keys reencrypt seals it (as a server's start does).
    await storeFirstKey();
    const listed = await cli(["keys", "list"], "", { PLANTGATE_KEY_ENCRYPTION_KEY: oldKek });
    expect([listed.code, listed.stderr, listed.json[0].atRest]).toEqual([0, "", "clear"]);
    expect((await keyRows())[0]!.private_jwk).toMatch(/^\{/);
    const kid = listed.json[0].kid as string;
    expect((await cli(["keys", "reencrypt"], "", { PLANTGATE_KEY_ENCRYPTION_KEY: oldKek })).json).toEqual({ reencrypted: [kid], unchanged: [], left: [], complete: true });
    const { openStorageFromEnv } = await import("@plantgate/storage-sql/env");
    const rows = async () => {
      const storage = await openStorageFromEnv({}, { cwd: dir });
      try {
        return await storage.db.selectFrom("pg_signing_keys").select(["kid", "private_jwk"]).execute();
      } finally {
        await storage.close();
      }
    };
    const sealed = await rows();
    expect(sealed).toHaveLength(1);
    expect(sealed[0]!.private_jwk).toMatch(/^enc:A256GCM:/);

    // Listing opens no private key, so it needs no KEK; a command that loads the keys does.
    // It names the KEK the key is sealed under, which this run (no KEK) does not have.
    const sealedListing = [{ ...listed.json[0], atRest: "encrypted", kek: kekId(oldKek), kekStatus: "missing" }];
    expect(await cli(["keys", "list"])).toMatchObject({ code: 0, stderr: "", json: sealedListing });
    const refused = await cli(["keys", "revoke", kid, "--server-defaults"]);
    expect(refused).toEqual({
      code: 2,
      stdout: "",
      stderr: `plantgate: signing key "${kid}" is stored encrypted and no key encryption key is configured; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)\n`,
      json: undefined,
    });
    const moved = await cli(["keys", "reencrypt"], "", { PLANTGATE_KEY_ENCRYPTION_KEY: `${newKek},${oldKek}` });
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.json).toEqual({ reencrypted: [kid], unchanged: [], left: [], complete: true });
    const after = await rows();
    expect(after[0]!.private_jwk).toMatch(/^enc:A256GCM:/);
    expect(after[0]!.private_jwk).not.toBe(sealed[0]!.private_jwk);
    expect((await cli(["keys", "list"], "", { PLANTGATE_KEY_ENCRYPTION_KEY: newKek })).json).toEqual([{ ...sealedListing[0], kek: kekId(newKek), kekStatus: "current" }]);
    const oldOnly = await cli(["keys", "revoke", kid, "--server-defaults"], "", { PLANTGATE_KEY_ENCRYPTION_KEY: oldKek });
    expect([oldOnly.code, oldOnly.stderr]).toEqual([
      2,
      `plantgate: signing key "${kid}" is encrypted with a key encryption key that is not configured; add it to PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)\n`,
    ]);
    for (const r of [refused, moved, oldOnly]) expect(r.stdout + r.stderr).not.toContain(oldKek);
    expect(await cli(["keys", "reencrypt"])).toMatchObject({ code: 2, stderr: "plantgate: No key encryption key is configured; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys).\n" });
  });

  it("keys rotate with PLANTGATE_SIGNING_KEY set is refused: message on stderr, exit 2, keys unchanged", async () => {
    const jwk = (await generateKeyRecord("ES256", 0)).privateJwk;
    const env = { PLANTGATE_SIGNING_KEY: jwk };
    await storeFirstKey();
    const before = await cli(["keys", "list"], "", env);
    // The configured key signs; listing does not store it (it did until 2026-11-30).
    expect([before.code, before.json.map((k: { status: string; stored: boolean }) => [k.status, k.stored])]).toEqual([
      0,
      [
        ["active", false],
        ["retired", true],
      ],
    ]);
    expect(await keyRows()).toHaveLength(1);
    const refused = await cli(["keys", "rotate"], "", env);
    expect(refused).toEqual({
      code: 2,
      stdout: "",
      stderr: "plantgate: The signing key is configured (signingKey / PLANTGATE_SIGNING_KEY); rotate it by changing the configured key.\n",
      json: undefined,
    });
    const after = await cli(["keys", "list"], "", env);
    // The configured key's times are each listing's (it is not stored); the rest is unchanged.
    expect(after.json.map((k: { kid: string; status: string }) => [k.kid, k.status])).toEqual(before.json.map((k: { kid: string; status: string }) => [k.kid, k.status]));
    expect(await keyRows()).toHaveLength(1);
  });

  it("client list and client delete", async () => {
    await cli(["client", "create", "--name", "A", "--id", "a"]);
    await cli(["client", "create", "--name", "B", "--id", "b"]);
    const list = await cli(["client", "list"]);
    expect(list.json.map((c: { client_id: string }) => c.client_id)).toEqual(["a", "b"]);
    // Secret metadata only: no client_secret member, no hash.
    expect(list.json.every((c: Record<string, unknown>) => !("client_secret" in c))).toBe(true);
    expect(list.stdout).not.toMatch(/"hash"|[A-Za-z0-9_-]{43}/);
    expect(await cli(["client", "delete", "a"])).toMatchObject({ code: 0, json: { client_id: "a", deleted: true } });
    expect((await cli(["client", "list"])).json.map((c: { client_id: string }) => c.client_id)).toEqual(["b"]);
    const missing = await cli(["client", "delete", "a"]);
    expect(missing).toMatchObject({ code: 2, stdout: "", stderr: 'plantgate: client "a" does not exist\n' });
  });

  it("client create --auth private_key_jwt --jwks registers keys and no secret; revoke-secret; usage errors", async () => {
    const jwks = '{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"k1"}]}';
    const signed = await cli(["client", "create", "--name", "Signed", "--id", "signed", "--auth", "private_key_jwt", "--jwks", jwks]);
    expect(signed).toMatchObject({ code: 0, stderr: "" });
    expect(signed.json).toEqual({
      client_id: "signed",
      token_endpoint_auth_method: "private_key_jwt",
      name: "Signed",
      grant_types: ["client_credentials", "password", "refresh_token"],
      scopes: ["Platform_UserAPIs", "Platform_AllAppsServerCommands", "offline_access"],
      jwks: JSON.parse(jwks),
    });
    expect(await cli(["client", "add-secret", "signed"])).toMatchObject({ code: 2, stderr: 'plantgate: client "signed" authenticates with private_key_jwt and has no secrets\n' });
    const byUri = await cli(["client", "create", "--name", "Remote", "--auth", "private_key_jwt", "--jwks-uri", "https://client.example/jwks.json"]);
    expect(byUri.json).toMatchObject({ token_endpoint_auth_method: "private_key_jwt", jwks_uri: "https://client.example/jwks.json" });
    expect(await cli(["client", "create", "--name", "X", "--auth", "private_key_jwt"])).toMatchObject({ code: 2, stderr: "plantgate: --auth private_key_jwt needs exactly one of --jwks and --jwks-uri\n" });
    expect(await cli(["client", "create", "--name", "X", "--auth", "private_key_jwt", "--jwks", '{"keys":[{"kty":"oct","k":"AAAA"}]}'])).toMatchObject({ code: 2, stderr: "plantgate: --jwks: symmetric (oct) keys are not accepted\n" });
    expect(await cli(["client", "create", "--name", "X", "--auth", "magic"])).toMatchObject({ code: 2, stderr: "plantgate: --auth must be client_secret or private_key_jwt\n" });

    const plain = await cli(["client", "create", "--name", "Plain", "--id", "plain"]);
    const second = await cli(["client", "add-secret", "plain"]);
    expect(await cli(["client", "revoke-secret", "plain", plain.json.secret_id])).toMatchObject({ code: 0, json: { client_id: "plain", secret_id: plain.json.secret_id, revoked: true } });
    const list = (await cli(["client", "list"])).json.find((c: { client_id: string }) => c.client_id === "plain");
    expect(list.secrets.map((x: { secret_id: string }) => x.secret_id)).toEqual([second.json.secret_id]);
    expect(await cli(["client", "revoke-secret", "plain", plain.json.secret_id])).toMatchObject({ code: 2, stderr: `plantgate: client "plain" has no secret "${plain.json.secret_id}"\n` });
    expect(await cli(["client", "revoke-secret", "plain"])).toMatchObject({ code: 2, stderr: "plantgate: expected CLIENT_ID and SECRET_ID\n" });
    expect(await cli(["client", "add-secret", "plain", "--expires-in", "0"])).toMatchObject({ code: 2, stderr: "plantgate: --expires-in must be a positive number of seconds\n" });
  });

  it("a refusal of a value given as a flag names the flag, not the API's field (AdminError.field); the password read from stdin keeps its name", async () => {
    const refused = (stderr: string) => ({ code: 2, stdout: "", stderr: `plantgate: ${stderr}\n`, json: undefined });
    expect(await cli(["client", "create", "--name", "X", "--secret-expires-in", "315360001"])).toEqual(refused("--secret-expires-in must be from 1 to 315360000 seconds"));
    expect(await cli(["client", "create", "--name", "X", "--id", "a b"])).toEqual(refused("--id must be 1-200 printable ASCII characters without spaces"));
    expect(await cli(["client", "create", "--name", "X", "--scopes", "nope"])).toEqual(refused("--scopes: unknown scope; known: Platform_UserAPIs Platform_AllAppsServerCommands offline_access"));
    expect(await cli(["client", "create", "--name", "\u202Eevil"])).toEqual(refused("--name must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)"));
    expect(await cli(["client", "create", "--name", "Flagged", "--id", "flagged"])).toMatchObject({ code: 0 });
    expect(await cli(["client", "add-secret", "flagged", "--expires-in", "315360001"])).toEqual(refused("--expires-in must be from 1 to 315360000 seconds"));
    expect(await cli(["user", "create", "--username", " eve"], "long-enough-passphrase")).toEqual(refused("--username must not start or end with white space or an invisible character"));
    expect(await cli(["user", "create", "--username", "eve"], "short")).toEqual(refused("password must be 8-1024 characters"));
    // Nothing of the refused calls was stored.
    expect((await cli(["client", "list"])).json.map((c: { client_id: string }) => c.client_id)).toEqual(["flagged"]);
    expect((await cli(["user", "list"])).json).toEqual([]);
  });

  it("an id or username with one leading dash is a value, not an option (ids are base64url: one in 64 starts with '-'); '--' takes the rest as they are", async () => {
    const dash = await cli(["client", "create", "--name", "-Dash", "--id", "-dash"]);
    expect(dash).toMatchObject({ code: 0, json: { client_id: "-dash", name: "-Dash" } });
    const added = await cli(["client", "add-secret", "-dash", "--expires-in", "60"]);
    expect(added).toMatchObject({ code: 0, json: { client_id: "-dash", expires_at: expect.any(String) } });
    expect(await cli(["client", "revoke-secret", "-dash", "-AHwiudrrVbL"])).toEqual({ code: 2, stdout: "", stderr: 'plantgate: client "-dash" has no secret "-AHwiudrrVbL"\n', json: undefined });
    expect(await cli(["client", "revoke-secret", "-dash", added.json.secret_id])).toMatchObject({ code: 0, json: { client_id: "-dash", secret_id: added.json.secret_id, revoked: true } });
    expect(await cli(["client", "revoke-secret", "-dash", "--", "--AHwiudrrVbL"])).toMatchObject({ code: 2, stderr: 'plantgate: client "-dash" has no secret "--AHwiudrrVbL"\n' });
    expect(await cli(["client", "add-secret", "-dash", "--expires-in", "-5"])).toMatchObject({ code: 2, stderr: "plantgate: --expires-in must be a positive number of seconds\n" });
    // A long option that does not exist is still refused (see cli-parse-messages.test.ts).
    expect(await cli(["client", "delete", "-dash", "--bogus"])).toEqual({ code: 2, stdout: "", stderr: "plantgate: unknown option --bogus; see plantgate client delete --help\n", json: undefined });
    expect(await cli(["client", "delete", "-dash"])).toMatchObject({ code: 0, json: { client_id: "-dash", deleted: true } });
  });

  it("user import is all-or-nothing and names the line of the first bad record", async () => {
    const lines = [
      JSON.stringify({ username: "u1", password: "password-1" }),
      "",
      JSON.stringify({ username: "u2", password: "short" }),
      JSON.stringify({ username: "u3", password: "password-3" }),
    ].join("\n");
    const bad = await cli(["user", "import"], lines);
    expect(bad).toMatchObject({ code: 2, stdout: "", stderr: "plantgate: line 3: password must be 8-1024 characters (nothing was imported)\n" });
    const notJson = await cli(["user", "import"], `${JSON.stringify({ username: "u1", password: "password-1" })}\n{oops`);
    expect(notJson).toMatchObject({ code: 2, stderr: "plantgate: line 2: not valid JSON\n" });
    const dup = await cli(["user", "import"], [JSON.stringify({ username: "u1", password: "password-1" }), JSON.stringify({ username: "u1", password: "password-2" })].join("\n"));
    expect(dup).toMatchObject({ code: 2, stderr: 'plantgate: line 2: username "u1" is taken (nothing was imported)\n' });
    expect((await cli(["user", "list"])).json).toEqual([]);

    const good = await cli(["user", "import"], [1, 2, 3].map((n) => JSON.stringify({ username: `u${n}`, password: `password-${n}`, roles: ["r"] })).join("\n") + "\n");
    expect(good).toMatchObject({ code: 0, json: { imported: 3 } });
    const users = (await cli(["user", "list"])).json as { username: string; roles: string[] }[];
    expect(users.map((u) => u.username).sort()).toEqual(["u1", "u2", "u3"]);
    expect(JSON.stringify(users)).not.toMatch(/password|pbkdf2/);
  });

  it("user import refuses a field it does not know, naming it and the line (it was dropped: `display_name` lost the name, `disabled: true` made an enabled account); nothing is imported", async () => {
    const lines = (extra: Record<string, unknown>) =>
      [JSON.stringify({ username: "v1", password: "password-1" }), JSON.stringify({ username: "v2", password: "password-2", ...extra })].join("\n");
    const known = "known: username, password, displayName, email, roles, enabled";
    expect(await cli(["user", "import"], lines({ disabled: true }))).toEqual({ code: 2, stdout: "", stderr: `plantgate: line 2: unknown field "disabled" (${known}; nothing was imported)\n`, json: undefined });
    expect(await cli(["user", "import"], lines({ display_name: "V" }))).toEqual({ code: 2, stdout: "", stderr: `plantgate: line 2: unknown field "display_name" (${known}; nothing was imported)\n`, json: undefined });
    // A key that is not a plain name is not quoted (a record may hold anything).
    expect(await cli(["user", "import"], lines({ "v2:password-2 ": 1 }))).toEqual({ code: 2, stdout: "", stderr: `plantgate: line 2: a field this import does not know (${known}; nothing was imported)\n`, json: undefined });
    expect((await cli(["user", "list"])).json).toEqual([]);
    const disabled = await cli(["user", "import"], lines({ enabled: false, displayName: "V", email: "v@example.com", roles: ["r"] }));
    expect(disabled).toMatchObject({ code: 0, json: { imported: 2 } });
    expect((await cli(["user", "list"])).json.map((a: { username: string; enabled: boolean; displayName: string | null }) => [a.username, a.enabled, a.displayName])).toEqual([
      ["v1", true, null],
      ["v2", false, "V"],
    ]);
  });

  it("errors: unknown command and missing arguments exit 2 with usage on stderr; migrate is idempotent", async () => {
    const unknown = await cli(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr).toContain("plantgate: unknown command: frobnicate");
    expect(unknown.stderr).toContain("usage: plantgate <command>");
    expect(await cli(["client", "create"])).toMatchObject({ code: 2, stderr: "plantgate: --name is required\n" });
    expect(await cli(["client", "create", "--name", "x", "--grants", "implicit"])).toMatchObject({ code: 2 });
    expect(await cli(["user", "create", "--username", "dave"])).toMatchObject({ code: 2, stderr: "plantgate: the password is read from stdin; none was given\n" });
    expect(await cli(["client", "rotate-secret"])).toMatchObject({ code: 2, stderr: "plantgate: expected exactly one CLIENT_ID\n" });
    // A command that takes no positional refuses one rather than ignore it (`user import FILE` would
    // otherwise read stdin, not the file, and wait on a terminal).
    const records = JSON.stringify({ username: "stray", password: "password-1" });
    // Not echoed (a stray word is often a password typed where stdin was meant).
    const stray = "plantgate: unexpected argument (one word not taken by any option; passwords and import records are read from stdin, never from the command line)\n";
    for (const argv of [["client", "list", "extra"], ["user", "list", "extra"], ["user", "import", "accounts.jsonl"], ["keys", "list", "extra"], ["prune", "now"], ["user", "create", "--username", "bob", "hunter2"]]) {
      expect(await cli(argv, records)).toEqual({ code: 2, stdout: "", stderr: stray, json: undefined });
    }
    // Nor is the rest of an unknown command's line, and control characters in a message are escaped.
    const typo = await cli(["user", "crete", "--username", "bob", "--password", "hunter2"]);
    expect([typo.code, typo.stderr.split("\n")[0]]).toEqual([2, "plantgate: unknown command: user crete"]);
    expect(await cli(["client", "delete", "\u001b[31mRED\u001b]0;title\u0007"])).toMatchObject({ code: 2, stderr: 'plantgate: client "\\u001b[31mRED\\u001b]0;title\\u0007" does not exist\n' });
    expect((await cli(["user", "list"])).json).toEqual([]);
    expect(await cli(["migrate"])).toMatchObject({ code: 0, json: { migrated: true } });
    expect(await cli(["migrate"])).toMatchObject({ code: 0, json: { migrated: true } });
    // migrate takes nothing after it: an option is refused as one (until 2026-12-01 "unknown
    // command: migrate"), a word as any stray word.
    expect(await cli(["migrate", "--anything"])).toEqual({ code: 2, stdout: "", stderr: "plantgate: unknown option --anything; see plantgate migrate --help\n", json: undefined });
    expect(await cli(["migrate", "now"])).toEqual({ code: 2, stdout: "", stderr: stray, json: undefined });
    const badUrl = await cli(["client", "list"], "", { PLANTGATE_DATABASE_URL: "redis://127.0.0.1" });
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain("PLANTGATE_DATABASE_URL must start with");
    const unreachable = await cli(["client", "list"], "", { PLANTGATE_DATABASE_URL: "postgres://postgres:hunter2@127.0.0.1:1/test" });
    // An outage, not bad input: 3, as the same outage in the middle of a command is.
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(/^plantgate: cannot open the store at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/test: /);
    expect(unreachable.stderr).not.toContain("hunter2");
  });

  it("an option before the command is refused as such, quoting nothing of the line (it was `unknown command: hunter2`, the option's value)", async () => {
    const refused = { code: 2, stdout: "", stderr: `plantgate: options go after the command: plantgate <command> [options]\n\n${USAGE}\n`, json: undefined };
    // `--server-defaults prune` said `unknown command: prune`, `--version` and `-v` `unknown command: ` with nothing after it.
    for (const argv of [["--secret", "hunter2", "client", "list"], ["--server-defaults", "prune"], ["--limit", "5", "events"], ["--version"], ["-v"], ["--", "client", "list"]]) {
      expect(await cli(argv)).toEqual(refused);
    }
    expect(USAGE.split("\n")[0]).toBe("usage: plantgate <command> [options]");
    // After the command, the same options are the command's.
    expect(await cli(["prune", "--server-defaults"])).toMatchObject({ code: 0, stderr: "" });
  });

  it("an unknown option of a command that takes no word is named with where to look, not parseArgs's advice to put it after `--` (then refused as a stray word)", async () => {
    const stray = "plantgate: unexpected argument (one word not taken by any option; passwords and import records are read from stdin, never from the command line)\n";
    // parseArgs said `... place it at the end of the command after '--', as in '-- "--bogus"`, and following it was refused.
    expect(await cli(["events", "--bogus"])).toEqual({ code: 2, stdout: "", stderr: "plantgate: unknown option --bogus; see plantgate events --help\n", json: undefined });
    expect(await cli(["events", "--", "--bogus"])).toEqual({ code: 2, stdout: "", stderr: stray, json: undefined });
    // Its name only, never a value given with it; a name that is not a plain one is not shown.
    expect(await cli(["prune", "--server-defaults", "--password=hunter2"])).toEqual({ code: 2, stdout: "", stderr: "plantgate: unknown option --password; see plantgate prune --help\n", json: undefined });
    expect(await cli(["client", "list", "--\u001b[2J"])).toEqual({ code: 2, stdout: "", stderr: "plantgate: unknown option (its name not shown); see plantgate client list --help\n", json: undefined });
    expect(await cli(["keys", "rotate", "--now", "--later"])).toEqual({ code: 2, stdout: "", stderr: "plantgate: unknown option --later; see plantgate keys rotate --help\n", json: undefined });
    // A command that takes words says the same, and where its word may be the argument, that it goes after `--` (`client delete -- --odd`):
    // parseArgs's advice was kept there until 2026-12-02, and led to another refusal when the words were given (cli-parse-messages.test.ts).
    expect(await cli(["client", "delete", "--odd"])).toEqual({ code: 2, stdout: "", stderr: "plantgate: unknown option --odd; see plantgate client delete --help (a CLIENT_ID that starts with -- goes after --)\n", json: undefined });
  });

  it("a repeated option and an empty value are refused before anything is written (the last one won, and `--id \"\"` issued a random id); --help after a command prints the usage", async () => {
    const refused = [
      [["client", "create", "--name", "A", "--name", "B"], "--name is given more than once"],
      [["client", "create", "--name", "A", "--name=B"], "--name is given more than once"],
      [["user", "create", "--username", "alice", "--username", "bob"], "--username is given more than once"],
      [["client", "create", "--name", "A", "--id", ""], "--id must not be empty (leave the option out instead)"],
      [["client", "create", "--name", "A", "--grants", ""], "--grants must not be empty (leave the option out instead)"],
      [["client", "create", "--name", " "], "--name must not be empty (leave the option out instead)"],
      [["client", "add-secret", "app", "--expires-in", "60", "--expires-in", "70"], "--expires-in is given more than once"],
    ] as const;
    for (const [argv, message] of refused) {
      expect(await cli([...argv], "a long passphrase\n")).toEqual({ code: 2, stdout: "", stderr: `plantgate: ${message}\n`, json: undefined });
    }
    // --grants "," is no grant either (words() drops the separators).
    expect(await cli(["client", "create", "--name", "A", "--grants", ","])).toMatchObject({ code: 2, stderr: "plantgate: --grants needs at least one of: client_credentials password refresh_token\n" });
    expect((await cli(["client", "list"])).json).toEqual([]);
    expect((await cli(["user", "list"])).json).toEqual([]);
    // An empty scope list is a choice (a client for no scope).
    expect((await cli(["client", "create", "--name", "A", "--scopes", ""])).json).toMatchObject({ scopes: [] });
    for (const argv of [["client", "create", "--help"], ["--help"], ["-h"], ["help"], ["keys", "rotate", "--help"]]) {
      const help = await cli(argv);
      expect([help.code, help.stderr, help.stdout.startsWith("usage: plantgate <command>")]).toEqual([0, "", true]);
    }
  });

  it("the real entry point (`pnpm plantgate`) reads stdin, writes JSON to stdout and sets the exit code", () => {
    const root = fileURLToPath(new URL("../../../", import.meta.url));
    const tsx = join(root, "node_modules", ".bin", "tsx");
    const main = join(root, "packages", "cli", "src", "main.ts");
    const env = { ...process.env, ...baseEnv(), PLANTGATE_DB: join(dir, "data", "plantgate.db") };
    const created = spawnSync(tsx, [main, "user", "create", "--username", "erin"], { input: "erin-password\n", env, encoding: "utf8" });
    expect(created.status, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ username: "erin", enabled: true });
    const failed = spawnSync(tsx, [main, "user", "disable", "nobody"], { env, encoding: "utf8" });
    expect(failed.status).toBe(2);
    expect(failed.stdout).toBe("");
    expect(failed.stderr).toBe('plantgate: user "nobody" does not exist\n');
  });

  it("`pnpm -s plantgate`, as README writes it, leaves stdout to the JSON alone (pnpm's banner would break a pipe into jq)", () => {
    const root = fileURLToPath(new URL("../../../", import.meta.url));
    const env = { ...process.env, ...baseEnv(), PLANTGATE_DB: join(dir, "data", "plantgate.db") };
    const created = spawnSync("pnpm", ["-s", "plantgate", "client", "create", "--name", "Piped", "--id", "piped"], { cwd: root, env, encoding: "utf8" });
    expect(created.status, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ client_id: "piped", name: "Piped", client_secret: expect.stringMatching(/^[\w-]{43}$/) });
  });

  it("a result stdout cannot take (a closed pipe) is one stderr line and exit 1 saying the command was carried out, never an EPIPE stack trace", async () => {
    const env = { ...process.env, ...baseEnv(), PLANTGATE_DB: join(dir, "data", "plantgate.db") };
    const child = spawn(process.execPath, [bundled, "client", "create", "--name", "Lost", "--id", "lost"], { env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect([status, stderr]).toEqual([
      1,
      "the secret is shown only now; store it safely\n" +
        "plantgate: the result could not be written to stdout (EPIPE); the command was carried out, and the secret it made is lost: make another (client add-secret or rotate-secret)\n",
    ]);
    expect((await cli(["client", "list"])).json.map((c: { client_id: string }) => c.client_id)).toEqual(["lost"]);
    // A command that made no secret, read by a reader that stopped early (`| head -1`): exit 0, no message.
    const listing = spawn(process.execPath, [bundled, "client", "list"], { env, stdio: ["ignore", "pipe", "pipe"] });
    listing.stdout.destroy();
    let listingErr = "";
    listing.stderr.on("data", (chunk: Buffer) => (listingErr += chunk.toString()));
    expect([await new Promise<number | null>((resolve) => listing.on("close", resolve)), listingErr]).toEqual([0, ""]);
  });

  it("a stderr that cannot take the messages (a closed pipe: `2>&1 | head -1`, a dead log reader; a full disk) leaves the exit code and stdout as they are: the messages are lost, never the result (it was exit 1, a success and a refusal alike)", async () => {
    const env = { ...process.env, ...baseEnv(), PLANTGATE_DB: join(dir, "data", "plantgate.db") };
    const run = async (...argv: string[]) => {
      const child = spawn(process.execPath, [bundled, ...argv], { env, stdio: ["ignore", "pipe", "pipe"] });
      child.stderr.destroy();
      let stdout = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      return { code: await new Promise<number | null>((resolve) => child.on("close", resolve)), stdout };
    };
    // Made and shown (its stderr line, "the secret is shown only now", went nowhere): exit 0.
    const created = await run("client", "create", "--name", "Quiet", "--id", "quiet");
    expect([created.code, JSON.parse(created.stdout)]).toEqual([0, expect.objectContaining({ client_id: "quiet", client_secret: expect.stringMatching(/^[\w-]{43}$/) })]);
    // A refusal is still 2, an unreachable store still 3 (try again), with no message to show.
    expect(await run("client", "delete", "nobody")).toEqual({ code: 2, stdout: "" });
    // A port nothing listens on: taken from the system, then let go.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const down = spawn(process.execPath, [bundled, "client", "list"], { env: { ...env, PLANTGATE_DATABASE_URL: `postgres://u:p@127.0.0.1:${port}/x` }, stdio: ["ignore", "pipe", "pipe"] });
    down.stderr.destroy();
    expect(await new Promise<number | null>((resolve) => down.on("close", resolve))).toBe(3);
    // stderr on a full disk: the same.
    const shell = (...argv: string[]) => spawnSync("sh", ["-c", 'exec "$@" 2>/dev/full', "sh", process.execPath, bundled, ...argv], { env, encoding: "utf8" });
    const rotated = shell("client", "rotate-secret", "quiet");
    expect([rotated.status, JSON.parse(rotated.stdout)]).toEqual([0, expect.objectContaining({ client_id: "quiet", client_secret: expect.stringMatching(/^[\w-]{43}$/) })]);
    expect([shell("user", "disable", "nobody").status, shell("user", "disable", "nobody").stdout]).toEqual([2, ""]);
  }, 60_000);

  it.runIf(process.platform === "linux")("(Linux only: /dev/full and /bin/sh fd closing) a closed stdout (`>&-`) is refused before a secret is made (exit 2); other commands run (a closed stdout looks like stdio \"ignore\"); a full disk is exit 1; >/dev/null is a choice (exit 0)", async () => {
    const env = { ...process.env, ...baseEnv(), PLANTGATE_DB: join(dir, "data", "plantgate.db") };
    // The shell closes fd 1 and execs the CLI, as `plantgate client create ... >&-` does.
    const shell = (redirect: string, ...argv: string[]) => spawnSync("sh", ["-c", `exec "$@" ${redirect}`, "sh", process.execPath, bundled, ...argv], { env, encoding: "utf8" });
    const closed = (action: string) =>
      `plantgate: stdout is closed (or is /dev/null opened read-write, which Node puts in place of a closed one), so the secret client ${action} makes could not be shown; nothing was done: give it a stdout it can write to (>/dev/null is taken as discarding it on purpose)\n`;
    const create = shell(">&-", "client", "create", "--name", "Closed", "--id", "closed");
    expect([create.status, create.stdout, create.stderr]).toEqual([2, "", closed("create")]);
    // Commands that make no secret run: a prune from a job with stdio "ignore" (the same read-write
    // /dev/null as a closed stdout) must work.
    // A private_key_jwt client has no secret to lose: made (checked below).
    const jwks = '{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","kid":"k1"}]}';
    const signed = shell(">&-", "client", "create", "--name", "Signed", "--id", "signed", "--auth", "private_key_jwt", "--jwks", jwks);
    expect([signed.status, signed.stdout, signed.stderr]).toEqual([0, "", ""]);
    const list = shell(">&-", "client", "list");
    expect([list.status, list.stdout, list.stderr]).toEqual([0, "", ""]);
    const ignored = spawnSync(process.execPath, [bundled, "prune", "--server-defaults"], { env, stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" });
    expect([ignored.status, ignored.stderr]).toEqual([0, ""]);
    // Nothing was made but the private_key_jwt client: no client whose only secret went nowhere.
    expect(((await cli(["client", "list"])).json as Array<{ client_id: string }>).map((c) => c.client_id)).toEqual(["signed"]);
    expect((await cli(["client", "create", "--name", "Kept", "--id", "kept"])).code).toBe(0);
    for (const action of ["add-secret", "rotate-secret"]) {
      const run = shell(">&-", "client", action, "kept");
      expect([run.status, run.stdout, run.stderr]).toEqual([2, "", closed(action)]);
    }
    expect(((await cli(["client", "list"])).json as Array<{ secrets: unknown[] }>)[0]!.secrets).toHaveLength(1);
    // A write that fails (a full disk) is no success either; the client was made, its secret lost.
    const full = shell(">/dev/full", "client", "create", "--name", "Full", "--id", "full");
    expect([full.status, full.stdout, full.stderr]).toEqual([
      1,
      "",
      "the secret is shown only now; store it safely\n" +
        "plantgate: the result could not be written to stdout (ENOSPC); the command was carried out, and the secret it made is lost: make another (client add-secret or rotate-secret)\n",
    ]);
    const listFull = shell(">/dev/full", "client", "list");
    expect([listFull.status, listFull.stdout, listFull.stderr]).toEqual([1, "", "plantgate: the result could not be written to stdout (ENOSPC)\n"]);
    // /dev/null named by the shell is opened for writing only: the caller chose to discard the result.
    const discarded = shell(">/dev/null", "client", "list");
    expect([discarded.status, discarded.stdout, discarded.stderr]).toEqual([0, "", ""]);
  }, 60_000);

  it("core's warnings reach stderr as `plantgate: warning: ` lines with their fields (they were dropped): keys in clear, a rotation whose clean-up failed", async () => {
    const day = 86_400_000;
    const now = Date.now();
    let signing: Awaited<ReturnType<typeof generateKeyRecord>>;
    const storage = await openStorageFromEnv({}, { cwd: dir });
    try {
      // An old key long retired (prunable at the next rotation) and the one signing for 5 days.
      await storage.signingKeys.create(await generateKeyRecord("ES256", now - 10 * day, now - 10 * day));
      signing = await generateKeyRecord("ES256", now - 5 * day, now - 5 * day);
      await storage.signingKeys.create(signing);
      // The store refuses every delete of a signing key: a real failure of SQLite, at the clean-up.
      await sql`create trigger keep_keys before delete on pg_signing_keys begin select raise(abort, 'deletes refused for this test'); end`.execute(storage.db);
    } finally {
      await storage.close();
    }
    const rotated = await cli(["keys", "rotate", "--server-defaults"]);
    expect([rotated.code, rotated.json.deleted, rotated.stderr]).toEqual([
      0,
      [],
      'plantgate: warning: signing key rotated; deleting keys past their use failed (the next rotation or prune deletes them) {"name":"StorageError","message":"sqlite storage failed during signingKeys.delete (SQLITE_CONSTRAINT_TRIGGER)","cause":"SqliteError: deletes refused for this test"}\n' +
        `the new key is published now (status next) and signs from ${rotated.json.activatesAt}; running servers publish it within a minute\n`,
    ]);
    // With the keys sealed under a KEK, nothing to warn about; without it, every command that loads
    // them says so (keys list loads none: its atRest field says which keys are in clear).
    const refused = `plantgate: signing key "${signing!.kid}" signs now: rotate with now (keys rotate --now) first, then revoke it\n`;
    expect((await cli(["keys", "revoke", signing!.kid, "--server-defaults"])).stderr).toBe(CLEAR_KEYS + refused);
    const kek = { PLANTGATE_KEY_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64url") };
    expect((await cli(["keys", "revoke", signing!.kid, "--server-defaults"], "", kek)).stderr).toBe(refused);
  });

  it("a SQLite file that does not exist is refused (exit 2, naming the resolved path, nothing created) except by migrate; the server's first start makes the file the CLI then uses", async () => {
    /** One command in-process from the working directory `cwd`, with `env` as the whole store environment. */
    const from = async (cwd: string, env: Record<string, string>, ...argv: string[]) => {
      let stdout = "";
      let stderr = "";
      const code = await runCli(argv, { env: { ...baseEnv(), ...env }, cwd, readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
      return { code, stdout, stderr };
    };
    // Another working directory than the one the store was made from (beforeEach migrated dir/data/plantgate.db).
    const elsewhere = join(dir, "elsewhere");
    mkdirSync(elsewhere);
    const tail = "; nothing was done: run the command where the server runs or give PLANTGATE_DB as an absolute path (plantgate migrate creates a new store)\n";
    const missing = join(elsewhere, "data", "plantgate.db");
    expect(await from(elsewhere, { PLANTGATE_DB: "data/plantgate.db" }, "client", "create", "--name", "Lost", "--id", "lost")).toEqual({
      code: 2,
      stdout: "",
      stderr: `plantgate: no SQLite database at ${missing} (PLANTGATE_DB=data/plantgate.db, relative to ${elsewhere})${tail}`,
    });
    expect(await from(elsewhere, {}, "user", "list")).toEqual({
      code: 2,
      stdout: "",
      stderr: `plantgate: no SQLite database at ${missing} (PLANTGATE_DB is unset: the default ./data/plantgate.db, relative to ${elsewhere})${tail}`,
    });
    const absent = join(dir, "nowhere", "plantgate.db");
    expect(await from(elsewhere, { PLANTGATE_DB: absent }, "user", "disable", "alice")).toEqual({ code: 2, stdout: "", stderr: `plantgate: no SQLite database at ${absent} (PLANTGATE_DB=${absent})${tail}` });
    // Nothing was created: no file, no folder.
    expect([existsSync(join(elsewhere, "data")), existsSync(join(dir, "nowhere"))]).toEqual([false, false]);
    // From the store's own directory the relative path finds it.
    expect(await from(dir, { PLANTGATE_DB: "data/plantgate.db" }, "client", "list")).toEqual({ code: 0, stdout: "[]\n", stderr: "" });
    // migrate makes a new store where it is told to; the other commands then use it.
    expect(await from(elsewhere, {}, "migrate")).toEqual({ code: 0, stdout: JSON.stringify({ migrated: true }, null, 2) + "\n", stderr: "migrations applied\n" });
    expect(await from(elsewhere, {}, "client", "list")).toEqual({ code: 0, stdout: "[]\n", stderr: "" });

    // The README's first run: `pnpm start` makes the store (and a demo client), the CLI works on the same file.
    const first = join(dir, "first-run", "data", "plantgate.db");
    const lines = serverLines();
    const server = await startServer({ PORT: "0", PLANTGATE_DB: first, ...baseEnv() }, {}, { destination: lines.destination });
    try {
      expect(server.demo).toMatchObject({ clientId: "demo-client" });
      expect((await token(server.url, { grant_type: "client_credentials", client_id: server.demo!.clientId, client_secret: server.demo!.clientSecret })).status).toBe(200);
    } finally {
      await server.close();
    }
    lines.check([server.demo!.clientSecret, server.demo!.password]);
    const listed = await from(join(dir, "first-run"), { PLANTGATE_DB: "./data/plantgate.db" }, "client", "list");
    expect([listed.code, listed.stderr, JSON.parse(listed.stdout).map((c: { client_id: string }) => c.client_id)]).toEqual([0, "", ["demo-client"]]);
  });

  it("only migrate migrates: every other command refuses a store whose schema is behind the code's (exit 2, naming plantgate migrate) and writes nothing; after migrate they work, client create on a new file included", async () => {
    const file = join(dir, "older.db");
    const env = { PLANTGATE_DB: file };
    const older = await openStorageFromEnv(env, { cwd: dir, migrate: false, clientCache: false });
    await migrateToVersion(older.db as any, "sqlite", LATEST_SCHEMA_VERSION - 1);
    await older.close();
    /** What a command could have changed: the applied migrations, the tables and indexes, the rows of every table. */
    const snapshot = async () => {
      const s = await openStorageFromEnv(env, { cwd: dir, migrate: false, clientCache: false });
      try {
        const objects = (await sql<{ type: string; name: string }>`select type, name from sqlite_master order by type, name`.execute(s.db)).rows;
        const counts: Record<string, unknown> = {};
        for (const { name } of objects.filter((o) => o.type === "table")) counts[name] = (await sql`select * from ${sql.table(name)}`.execute(s.db)).rows;
        return { objects, counts };
      } finally {
        await s.close();
      }
    };
    const before = await snapshot();
    const refusal = `plantgate: the store at SQLite ${file} has schema version ${LATEST_SCHEMA_VERSION - 1}, older than version ${LATEST_SCHEMA_VERSION} of this plantgate (1 migration pending); nothing was done: run plantgate migrate (pnpm -s plantgate migrate) when the servers are ready for it (an upgraded server's start migrates too), then this command again\n`;
    const commands = [
      ["client", "list"],
      ["user", "list"],
      ["events"],
      ["keys", "list"],
      ["client", "create", "--name", "Reporting", "--id", "reporting"],
      ["client", "rotate-secret", "reporting"],
      ["user", "create", "--username", "alice"],
      ["user", "disable", "alice"],
      ["keys", "rotate", "--server-defaults"],
      ["prune", "--server-defaults"],
    ];
    for (const argv of commands) {
      expect({ argv, ...(await cli(argv, "pw-of-alice\n", env)) }).toEqual({ argv, code: 2, stdout: "", stderr: refusal, json: undefined });
    }
    expect(await snapshot()).toEqual(before);

    // A file with no schema at all (made by hand, or a server that never started): the same, version 0
    // said plainly, and the file is left as it was: zero bytes, no -wal or -shm beside it (until
    // 2026-11-30 the open set the WAL journal mode before the check, writing the file's first page).
    const empty = join(dir, "empty.db");
    writeFileSync(empty, "");
    const emptyRefusal = `plantgate: the store at SQLite ${empty} has no plantgate schema yet; nothing was done: run plantgate migrate (pnpm -s plantgate migrate) when the servers are ready for it (an upgraded server's start migrates too), then this command again\n`;
    for (const argv of commands) {
      expect({ argv, ...(await cli(argv, "pw-of-alice\n", { PLANTGATE_DB: empty })) }).toEqual({ argv, code: 2, stdout: "", stderr: emptyRefusal, json: undefined });
      expect({ argv, size: statSync(empty).size, wal: existsSync(`${empty}-wal`), shm: existsSync(`${empty}-shm`), journal: existsSync(`${empty}-journal`) }).toEqual({ argv, size: 0, wal: false, shm: false, journal: false });
    }
    // No table made.
    const probe = await openStorageFromEnv({ PLANTGATE_DB: empty }, { cwd: dir, migrate: false, clientCache: false });
    expect((await sql`select name from sqlite_master`.execute(probe.db)).rows).toEqual([]);
    await probe.close();

    // A schema newer than the code is refused as before (exit 2), by a listing too, reading only.
    const newer = join(dir, "newer.db");
    expect(await cli(["migrate"], "", { PLANTGATE_DB: newer })).toMatchObject({ code: 0 });
    const future = await openStorageFromEnv({ PLANTGATE_DB: newer }, { cwd: dir, migrate: false, clientCache: false });
    await sql`insert into pg_migrations (name, timestamp) values ('9999_future', '2030-01-01T00:00:00.000Z')`.execute(future.db);
    await future.close();
    expect(await cli(["client", "list"], "", { PLANTGATE_DB: newer })).toEqual({
      code: 2,
      stdout: "",
      stderr: `plantgate: cannot open the store at SQLite ${newer}: The database schema is at version 9999, newer than version ${LATEST_SCHEMA_VERSION}, the latest this @plantgate/storage-sql knows (unknown migrations: 9999_future). Upgrade @plantgate/storage-sql; nothing was changed.\n`,
      json: undefined,
    });

    // migrate, then every command works; on a new file too (the README's `migrate`, then `client create`).
    expect(await cli(["migrate"], "", env)).toMatchObject({ code: 0, json: { migrated: true } });
    expect(await cli(["client", "list"], "", env)).toMatchObject({ code: 0, stdout: "[]\n" });
    const fresh = { PLANTGATE_DB: join(dir, "fresh", "plantgate.db") };
    expect(await cli(["migrate"], "", fresh)).toMatchObject({ code: 0, stderr: "migrations applied\n" });
    const created = await cli(["client", "create", "--name", "Reporting", "--id", "reporting"], "", fresh);
    expect(created).toMatchObject({ code: 0, json: { client_id: "reporting", client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) } });
    expect((await cli(["client", "list"], "", fresh)).json.map((c: { client_id: string }) => c.client_id)).toEqual(["reporting"]);
  });

  it("a store that cannot be reached prints the driver's reason after the message (cause: ...), exit 3; never the URL's password (in the userinfo, percent-encoded, or ?password=)", async () => {
    // A port nothing listens on: taken from the system, then let go.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const password = "pw-Sécret/42";
    const cases = [
      { url: `postgres://plantgate:${encodeURIComponent(password)}@127.0.0.1:${port}/test`, shown: `postgres://plantgate:***@127.0.0.1:${port}/test`, family: "postgres" },
      { url: `postgres://plantgate@127.0.0.1:${port}/test?password=${encodeURIComponent(password)}`, shown: `postgres://plantgate@127.0.0.1:${port}/test?password=***`, family: "postgres" },
      { url: `mysql://plantgate:${encodeURIComponent(password)}@127.0.0.1:${port}/test`, shown: `mysql://plantgate:***@127.0.0.1:${port}/test`, family: "mysql" },
    ];
    // PostgreSQL's open first checks for a transaction-mode pooler (since 2026-12-02), so even
    // `migrate` fails there at open; MySQL's first statement is the migration's.
    for (const { url, shown, family } of cases) {
      for (const argv of [["client", "list"], ["migrate"]]) {
        const r = await cli(argv, "", { PLANTGATE_DATABASE_URL: url });
        expect(r).toEqual({
          code: 3,
          stdout: "",
          stderr: `plantgate: cannot open the store at ${shown}: ${family} storage failed during ${argv[0] === "migrate" && family === "mysql" ? "migrate" : "open"} (ECONNREFUSED) (cause: Error: connect ECONNREFUSED 127.0.0.1:${port})\n`,
          json: undefined,
        });
        for (const secret of [password, encodeURIComponent(password), "Sécret", "S%C3%A9cret"]) expect(r.stderr).not.toContain(secret);
      }
    }
  });

  it("a PLANTGATE_DATABASE_URL the driver cannot parse (a port that is not a number, a malformed percent-escape for mysql2) is configuration: exit 2 naming the variable, never the password (it was exit 3, try again)", async () => {
    const notParsed =
      "plantgate: PLANTGATE_DATABASE_URL is not a valid URL: check the host and the port (a number up to 65535), and percent-encode any @ : / ? # in the user name or password; nothing was opened\n";
    const cases = [
      { url: "postgres://plantgate:Hunter2secret@127.0.0.1:notaport/test", password: "Hunter2secret", stderr: notParsed },
      { url: "postgresql://plantgate:Hunter2secret@127.0.0.1:99999/test", password: "Hunter2secret", stderr: notParsed },
      {
        url: "mysql://plantgate:Hunter%zz2secret@127.0.0.1:3306/test",
        password: "Hunter%zz2secret",
        stderr: "plantgate: PLANTGATE_DATABASE_URL (mysql://plantgate:***@127.0.0.1:3306/test) has a malformed percent-escape in its password: % must be followed by two hexadecimal digits, and the escapes must spell UTF-8 (write a literal % as %25); nothing was opened\n",
      },
    ];
    for (const { url, password, stderr } of cases) {
      for (const argv of [["client", "list"], ["migrate"]]) {
        const r = await cli(argv, "", { PLANTGATE_DATABASE_URL: url });
        expect(r).toEqual({ code: 2, stdout: "", stderr, json: undefined });
        for (const secret of [password, "Hunter", "2secret"]) expect(r.stdout + r.stderr).not.toContain(secret);
      }
    }
    // pg reads a malformed escape as the characters themselves: such a URL is tried (here nothing listens: exit 3).
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const tried = await cli(["client", "list"], "", { PLANTGATE_DATABASE_URL: `postgres://plantgate:Hunter%zz2secret@127.0.0.1:${port}/test` });
    expect(tried).toEqual({
      code: 3,
      stdout: "",
      stderr: `plantgate: cannot open the store at postgres://plantgate:***@127.0.0.1:${port}/test: postgres storage failed during open (ECONNREFUSED) (cause: Error: connect ECONNREFUSED 127.0.0.1:${port})\n`,
      json: undefined,
    });
  });

  it("PLANTGATE_DB=:memory: is refused (exit 2, nothing reported made): what a command makes there is gone when it ends", async () => {
    expect(await cli(["client", "create", "--name", "mem", "--id", "mem"], "", { PLANTGATE_DB: ":memory:" })).toEqual({
      code: 2,
      stdout: "",
      stderr: "plantgate: PLANTGATE_DB=:memory: keeps nothing after the command; point PLANTGATE_DB or PLANTGATE_DATABASE_URL at the server's store\n",
      json: undefined,
    });
  });

  it("a PLANTGATE_SIGNING_KEY that does not import is exit 2 naming it, and nothing is stored: keys list works without it afterwards", async () => {
    const ecNamedPs256 = JSON.stringify({ kty: "EC", crv: "P-256", alg: "PS256", d: "pNk8OUd9QXUEdMUhnQ3Y1tgNLBlFp0pRtGjjxSU2iMk", x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" });
    const offCurve = JSON.stringify({ kty: "EC", crv: "P-256", d: "AAAA", x: "AAAA", y: "BBBB" });
    // A store with a key: keys list loads the keys, and with them the configured one (on a store without keys it lists [] and loads nothing).
    await storeFirstKey();
    const stored = await keyRows();
    // The article as the alg is read: "a PS256" (until 2026-12-02 "an PS256"), "an ES256".
    for (const [key, alg] of [[ecNamedPs256, "a PS256"], [offCurve, "an ES256"]] as const) {
      const refused = await cli(["keys", "list"], "", { PLANTGATE_SIGNING_KEY: key });
      expect([refused.code, refused.stdout, refused.stderr]).toEqual([2, "", `plantgate: signingKey (PLANTGATE_SIGNING_KEY) does not import as ${alg} key; nothing was stored\n`]);
      expect(refused.stderr).not.toContain("pNk8OUd9");
    }
    expect(await keyRows()).toEqual(stored);
    const listed = await cli(["keys", "list"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json).toHaveLength(1);
  });

  it("stdin: a password is read up to the first newline and no further (`yes pw |` read forever); bytes that are not UTF-8 are refused, not stored as U+FFFD", async () => {
    const env = { ...process.env, ...baseEnv(), PLANTGATE_DB: join(dir, "data", "plantgate.db") };
    const endless = spawn(process.execPath, [bundled, "user", "create", "--username", "yes-user"], { env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    endless.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    endless.stdin.on("error", () => {}); // EPIPE once the CLI has stopped reading
    const line = Buffer.from("longpassword1\n".repeat(4096));
    const feed = setInterval(() => endless.stdin.write(line), 5);
    const status = await new Promise<number | null>((resolve) => endless.on("close", resolve));
    clearInterval(feed);
    expect([status, JSON.parse(out).username]).toEqual([0, "yes-user"]);
    const latin1 = spawnSync(process.execPath, [bundled, "user", "create", "--username", "latin"], { env, input: Buffer.from("p\xe4ssword1\n", "latin1"), encoding: "utf8" });
    expect([latin1.status, latin1.stdout, latin1.stderr]).toEqual([2, "", "plantgate: stdin is not valid UTF-8\n"]);
    expect((await cli(["user", "list"])).json.map((a: { username: string }) => a.username)).toEqual(["yes-user"]);
  }, 60_000);

  it("user import reads at most 64 MiB from stdin and refuses more (exit 2, nothing imported), without reading on: memory stays bounded (it read everything, and past V8's longest string said `stdin is not valid UTF-8`)", async () => {
    const env = { ...process.env, ...baseEnv(), PLANTGATE_DB: join(dir, "data", "plantgate.db") };
    const child = spawn(process.execPath, [bundled, "user", "import"], { env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.stdin.on("error", () => {}); // EPIPE once the CLI has stopped reading
    // Records, 96 MiB of them (about 1.2 million), fed as the reader takes them; the first is refused
    // (a short password), which is not read when the size is.
    const record = Buffer.from(JSON.stringify({ username: "x".repeat(40), password: "p".repeat(40) }) + "\n");
    const chunk = Buffer.concat(Array.from({ length: Math.floor(65536 / record.length) }, () => record));
    child.stdin.write(JSON.stringify({ username: "first", password: "short" }) + "\n");
    let fed = 0;
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    while (fed < 96 * 1024 * 1024 && child.exitCode === null && !child.stdin.destroyed) {
      fed += chunk.length;
      if (!child.stdin.write(chunk)) await new Promise((resolve) => { child.stdin.once("drain", resolve); child.once("close", resolve); });
    }
    child.stdin.end();
    expect([await closed, out, err]).toEqual([2, "", "plantgate: stdin holds more than 64 MiB: split the import into smaller files (each is imported all or nothing)\n"]);
    expect(fed).toBeLessThan(96 * 1024 * 1024);
    expect((await cli(["user", "list"])).json).toEqual([]);
  }, 120_000);

  it("prune deletes what can never matter again from the SQLite store and prints the counts per aggregate as JSON", async () => {
    expect((await cli(["migrate"])).code).toBe(0);
    const now = Date.now();
    const storage = await openStorageFromEnv({}, { cwd: dir });
    try {
      const token = (hash: string, expiresAt: number, familyExpiresAt: number, consumedAt: number | null) => ({
        tokenHash: hash,
        familyId: `family-${hash}`,
        clientId: "c",
        accountId: "a",
        scope: ["offline_access"],
        createdAt: now - 40 * 86_400_000,
        expiresAt,
        familyExpiresAt,
        consumedAt,
        revokedAt: null, replay: null, graceUses: 0,
      });
      await storage.refreshTokens.create(token("sliding-over", now - 60_000, now + 86_400_000, null));
      await storage.refreshTokens.create(token("family-over", now + 60_000, now - 60_000, now - 120_000));
      await storage.refreshTokens.create(token("rotated-family-live", now - 60_000, now + 86_400_000, now - 120_000));
      await storage.sessions.create({ idHash: "s-over", accountId: "a", csrfHash: "c", createdAt: now - 7_200_000, expiresAt: now - 60_000 });
      await storage.sessions.create({ idHash: "s-live", accountId: "a", csrfHash: "c", createdAt: now, expiresAt: now + 3_600_000 });
      await storage.attempts.increment("t:over", now - 16 * 60_000, 15 * 60_000);
      await storage.attempts.increment("t:live", now - 60_000, 15 * 60_000);
      await storage.revokedTokens.add("jti-over", now - 60_000);
      await storage.revokedTokens.add("jti-live", now + 3_600_000);
    } finally {
      await storage.close();
    }

    const pruned = await cli(["prune", "--batch-size", "1", "--server-defaults"]);
    expect(pruned).toEqual({
      code: 0,
      stderr: "",
      stdout: expect.any(String),
      json: { refreshTokens: 2, sessions: 1, attempts: 1, revokedTokens: 1, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: true },
    });
    const again = await cli(["prune", "--server-defaults"]);
    expect(again.json).toEqual({ refreshTokens: 0, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: true });

    const after = await openStorageFromEnv({}, { cwd: dir });
    try {
      expect(await after.refreshTokens.findByHash("sliding-over")).toBeNull();
      expect(await after.refreshTokens.findByHash("family-over")).toBeNull();
      expect((await after.refreshTokens.findByHash("rotated-family-live"))?.consumedAt).toBe(now - 120_000);
      expect(await after.sessions.get("s-over")).toBeNull();
      expect((await after.sessions.get("s-live"))?.expiresAt).toBe(now + 3_600_000);
      expect(await after.attempts.get("t:over")).toBeNull();
      expect(await after.attempts.get("t:live")).toEqual({ key: "t:live", count: 1, windowStart: now - 60_000 });
      expect(await after.revokedTokens.has("jti-over")).toBe(false);
      expect(await after.revokedTokens.has("jti-live")).toBe(true);
    } finally {
      await after.close();
    }

    const bad = await cli(["prune", "--batch-size", "0"]);
    expect(bad).toEqual({ code: 2, stdout: "", stderr: "plantgate: --batch-size must be a positive integer\n", json: undefined });
  });

  it("prune with a store that fails: the others are pruned, core's line names the failed store with the counts, and the exit is 3", async () => {
    expect((await cli(["migrate"])).code).toBe(0);
    const now = Date.now();
    const storage = await openStorageFromEnv({}, { cwd: dir });
    try {
      await storage.sessions.create({ idHash: "s-1", accountId: "a", csrfHash: "c", createdAt: now - 7_200_000, expiresAt: now - 60_000 });
      for (let i = 0; i < 3; i++) await storage.revokedTokens.add(`jti-${i}`, now - 60_000);
      // The store refuses every delete of a session: a real failure of SQLite, in the second store.
      await sql`create trigger keep_sessions before delete on pg_sessions begin select raise(abort, 'deletes refused for this test'); end`.execute(storage.db);
    } finally {
      await storage.close();
    }
    const pruned = await cli(["prune", "--server-defaults"]);
    expect(pruned).toEqual({
      code: 3,
      stdout: "",
      stderr:
        'plantgate: prune: some stores failed; the others were pruned {"failed":[{"store":"sessions","name":"StorageError","message":"sqlite storage failed during sessions.deleteExpired (SQLITE_CONSTRAINT_TRIGGER)","cause":"SqliteError: deletes refused for this test"}],' +
        '"counts":{"refreshTokens":0,"sessions":0,"attempts":0,"revokedTokens":3,"assertionJtis":0,"signingKeys":0,"auditEvents":0,"complete":false}}\n' +
        "plantgate: sqlite storage failed during sessions.deleteExpired (SQLITE_CONSTRAINT_TRIGGER) (cause: SqliteError: deletes refused for this test)\n",
      json: undefined,
    });
    const after = await openStorageFromEnv({}, { cwd: dir });
    try {
      // Until 2026-11-30 the sessions' failure ended the run: the revoked jtis after them stayed.
      expect(await after.sessions.get("s-1")).not.toBeNull();
      for (let i = 0; i < 3; i++) expect(await after.revokedTokens.has(`jti-${i}`), `jti-${i}`).toBe(false);
    } finally {
      await after.close();
    }
  });

  it("prune --max-batches N: at most N batches, the stores in turn, and \"complete\" says whether work was left", async () => {
    expect((await cli(["migrate"])).code).toBe(0);
    const now = Date.now();
    const storage = await openStorageFromEnv({}, { cwd: dir });
    try {
      for (let i = 0; i < 5; i++) await storage.sessions.create({ idHash: `s-${i}`, accountId: "a", csrfHash: "c", createdAt: now - 7_200_000, expiresAt: now - 60_000 });
      for (let i = 0; i < 5; i++) await storage.revokedTokens.add(`jti-${i}`, now - 60_000);
    } finally {
      await storage.close();
    }
    // Batches of 2: refresh tokens 0 (short), family rows 0, sessions 2, counters 0, revoked jtis 2,
    // assertion jtis 0, audit events 0 (round 1: 7); sessions 2, revoked jtis 2 (9). Out of budget.
    const first = await cli(["prune", "--batch-size", "2", "--max-batches", "9", "--server-defaults"]);
    expect(first).toEqual({
      code: 0,
      stderr: "",
      stdout: expect.any(String),
      json: { refreshTokens: 0, sessions: 4, attempts: 0, revokedTokens: 4, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: false },
    });
    const second = await cli(["prune", "--batch-size", "2", "--max-batches", "9", "--server-defaults"]);
    expect(second.json).toEqual({ refreshTokens: 0, sessions: 1, attempts: 0, revokedTokens: 1, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: true });
    // Each run is a new process: a budget below one batch per store would serve the same first stores every time.
    for (const bad of ["0", "-1", "1", "6", "1.5", "many"]) {
      expect(await cli(["prune", "--max-batches", bad, "--server-defaults"]), bad).toEqual({
        code: 2,
        stdout: "",
        stderr: "plantgate: --max-batches must be an integer of at least 7 (a batch for every store in each run)\n",
        json: undefined,
      });
    }
  });

  it("prune and keys rotate refuse (exit 2, nothing changed) without the servers' settings or --server-defaults; given them, they decide by them", async () => {
    expect((await cli(["migrate"])).code).toBe(0);
    const now = Date.now();
    const day = 86_400_000;
    const storage = await openStorageFromEnv({}, { cwd: dir });
    try {
      // An audit event 100 days old and a brute-force counter 20 minutes into its window: the
      // defaults (90 days, 15 minutes) would delete both; servers keeping 365 days and a 1-hour window keep both.
      await storage.audit!.append({ id: "e-100-days", type: "client.created", time: now - 100 * day, clientId: "c", accountId: null, username: null, data: "{}" });
      await storage.attempts.increment("t:20-minutes", now - 20 * 60_000, 60 * 60_000);
    } finally {
      await storage.close();
    }
    const kept = async () => {
      const s = await openStorageFromEnv({}, { cwd: dir });
      try {
        return { audit: (await s.audit!.list({ limit: 10 })).map((e) => e.id), counter: (await s.attempts.get("t:20-minutes"))?.count ?? null, keys: (await s.signingKeys.list()).length };
      } finally {
        await s.close();
      }
    };
    const before = await kept();
    expect(before).toEqual({ audit: ["e-100-days"], counter: 1, keys: 0 });

    const refusal = (command: string, what: string, missing: string) =>
      `plantgate: ${command} decides ${what} from the servers' settings, which the store does not keep: set ${missing} as the servers have ${missing.includes(",") ? "them" : "it"}, or pass --server-defaults if the servers leave ${missing.includes(",") ? "them" : "it"} unset; nothing was changed\n`;
    expect(await cli(["prune"])).toEqual({
      code: 2,
      stdout: "",
      stderr: refusal("prune", "what it deletes", "PLANTGATE_ACCESS_TOKEN_TTL, PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS, PLANTGATE_AUDIT_RETENTION_DAYS"),
      json: undefined,
    });
    expect(await cli(["prune"], "", { PLANTGATE_ACCESS_TOKEN_TTL: "3600", PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: "" })).toMatchObject({
      code: 2,
      stderr: refusal("prune", "what it deletes", "PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS, PLANTGATE_AUDIT_RETENTION_DAYS"),
    });
    expect(await cli(["keys", "rotate"], "", { PLANTGATE_ACCESS_TOKEN_TTL: "3600" })).toEqual({
      code: 2,
      stdout: "",
      stderr: refusal("keys rotate", "which old keys it deletes and when the new key signs", "PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY"),
      json: undefined,
    });
    // --now signs at once: the activation delay is not asked for, the token lifetime is.
    expect(await cli(["keys", "rotate", "--now"])).toEqual({
      code: 2,
      stdout: "",
      stderr: refusal("keys rotate --now", "which old keys it deletes", "PLANTGATE_ACCESS_TOKEN_TTL"),
      json: undefined,
    });
    expect(await kept()).toEqual(before);
    // Listing the keys with PLANTGATE_SIGNING_KEY_MAX_AGE set never rotates (that is the servers' work).
    await storeFirstKey();
    // 420: the least the default activation delay keeps (since 2026-12-01 a shorter one is refused, exit 2).
    expect((await cli(["keys", "list"], "", { PLANTGATE_SIGNING_KEY_MAX_AGE: "420" })).json).toHaveLength(1);
    expect((await cli(["keys", "list"], "", { PLANTGATE_SIGNING_KEY_MAX_AGE: "420" })).json).toHaveLength(1);
    const listed = await kept();
    expect(listed).toEqual({ ...before, keys: 1 });

    // The servers' settings given: a 365-day retention and a 1-hour window keep both.
    const servers = { PLANTGATE_ACCESS_TOKEN_TTL: "3600", PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: "3600", PLANTGATE_AUDIT_RETENTION_DAYS: "365" };
    const pruned = await cli(["prune"], "", servers);
    expect(pruned).toMatchObject({ code: 0, stderr: "", json: { attempts: 0, auditEvents: 0 } });
    expect(await kept()).toEqual(listed);
    // With PLANTGATE_AUDIT=0 the retention is not asked for (a cron line of the version before keeps
    // running), and without it the events kept while the trail was on are left (nothing says how long
    // they are kept); given, they are pruned by it (see the next test).
    const auditOff = { PLANTGATE_ACCESS_TOKEN_TTL: "3600", PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: "3600", PLANTGATE_AUDIT: "0" };
    expect(await cli(["prune"], "", auditOff)).toMatchObject({ code: 0, stderr: "", json: { attempts: 0, auditEvents: 0 } });
    expect(await kept()).toEqual(listed);
    expect(await cli(["prune"], "", { ...auditOff, PLANTGATE_AUDIT_RETENTION_DAYS: "365" })).toMatchObject({ code: 0, stderr: "", json: { attempts: 0, auditEvents: 0 } });
    expect(await kept()).toEqual(listed);
    // --server-defaults: the servers run with the defaults, so 90 days and 15 minutes delete both.
    const defaults = await cli(["prune", "--server-defaults"]);
    expect(defaults).toMatchObject({ code: 0, stderr: "", json: { attempts: 1, auditEvents: 1 } });
    expect(await kept()).toEqual({ audit: [], counter: null, keys: 1 });
    const rotated = await cli(["keys", "rotate"], "", { PLANTGATE_ACCESS_TOKEN_TTL: "3600", PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: "7200" });
    expect(rotated.code).toBe(0);
    expect(Date.parse(rotated.json.activatesAt) - now).toBeGreaterThanOrEqual(7_200_000);
    const urgent = await cli(["keys", "rotate", "--now"], "", { PLANTGATE_ACCESS_TOKEN_TTL: "3600" });
    expect(urgent).toMatchObject({ code: 0, json: { status: "active" } });
  });

  it("prune with PLANTGATE_AUDIT=0 deletes the events kept while the trail was on once past the retention (they were kept for good: usernames, client IPs)", async () => {
    const storage = await openStorageFromEnv({}, { cwd: dir, clientCache: false, migrate: false });
    const day = 86_400_000;
    const event = (id: string, time: number) => ({ id, type: "account.login_failed", time, clientId: "app", accountId: null, username: "alice", data: JSON.stringify({ type: "account.login_failed", username: "alice", client_ip: "203.0.113.9", id, time }) });
    try {
      await storage.audit!.append(event("e-91-days", Date.now() - 91 * day));
      await storage.audit!.append(event("e-89-days", Date.now() - 89 * day));
    } finally {
      await storage.close();
    }
    const env = { PLANTGATE_AUDIT: "0", PLANTGATE_ACCESS_TOKEN_TTL: "3600", PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: "900", PLANTGATE_AUDIT_RETENTION_DAYS: "90" };
    // Without the retention (and without --server-defaults) they are left: nothing says how long.
    const { PLANTGATE_AUDIT_RETENTION_DAYS: _unset, ...withoutRetention } = env;
    expect(await cli(["prune"], "", withoutRetention)).toMatchObject({ code: 0, stderr: "", json: { auditEvents: 0, complete: true } });
    expect(await cli(["prune"], "", env)).toEqual({
      code: 0,
      stdout: expect.any(String),
      stderr: "",
      json: { refreshTokens: 0, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 1, complete: true },
    });
    const after = await openStorageFromEnv({}, { cwd: dir, clientCache: false, migrate: false });
    try {
      expect((await after.db.selectFrom("pg_audit_events").select("id").execute()).map((r) => r.id)).toEqual(["e-89-days"]);
    } finally {
      await after.close();
    }
  });

  it("events prints the kept security events as JSON lines, newest first, by type and limit; the CLI's own actions are among them", async () => {
    const created = await cli(["client", "create", "--name", "Reporting", "--id", "reporting", "--grants", "client_credentials"]);
    expect((await cli(["client", "rotate-secret", "reporting"])).code).toBe(0);
    const serverOutput = serverLines();
    const server = await startServer({ PORT: "0", PLANTGATE_DB: join(dir, "data", "plantgate.db"), ...baseEnv() }, {}, { destination: serverOutput.destination });
    try {
      const bad = await token(server.url, { grant_type: "client_credentials", client_id: "reporting", client_secret: created.json.client_secret });
      expect(bad.status).toBe(401);
      await server.app.flushEvents();
    } finally {
      await server.close();
    }
    serverOutput.check([created.json.client_secret]);
    const lines = async (argv: string[]) => {
      const r = await cli(argv);
      expect([r.code, r.stderr]).toEqual([0, ""]);
      expect(r.stdout.endsWith("\n")).toBe(true);
      return r.stdout.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    };
    const all = await lines(["events"]);
    expect(all.map((e) => e.type)).toEqual(["client.authentication_failed", "client.secret_rotated", "client.created"]);
    expect(all[0]).toEqual({ type: "client.authentication_failed", id: expect.any(String), time: expect.any(Number), client_id: "reporting", reason: "invalid_secret", client_ip: "127.0.0.1" });
    expect(all[2]).toMatchObject({ type: "client.created", client_id: "reporting", name: "Reporting", grant_types: ["client_credentials"], actor: null });
    expect((await lines(["events", "--type", "client.created"])).map((e) => e.type)).toEqual(["client.created"]);
    // More than --limit: stdout holds the newest, stderr the flag for the next page (since 2026-12-03).
    const one = await cli(["events", "--limit", "1"]);
    expect(one.code).toBe(0);
    expect(one.stdout.trimEnd().split("\n").map((l) => (JSON.parse(l) as { type: string }).type)).toEqual(["client.authentication_failed"]);
    expect(one.stderr).toMatch(/^plantgate: more events: add --before \d+\.[0-9a-f-]{36}\n$/);
    // The old secret (rejected above) and the new one appear nowhere in the output.
    expect((await cli(["events", "--limit", "1000"])).stdout).not.toContain(created.json.client_secret);

    expect(await cli(["events", "--limit", "0"])).toEqual({ code: 2, stdout: "", stderr: "plantgate: --limit must be an integer from 1 to 1000\n", json: undefined });
    // Worded with the flag and the variable the user gave (the admin API's field and a storage
    // option until 2026-12-01, against the README's promise).
    expect(await cli(["events", "--type", "nope"])).toEqual({ code: 2, stdout: "", stderr: `plantgate: --type must be one of ${SECURITY_EVENT_TYPES.join(", ")}\n`, json: undefined });
    for (const off of ["0", "false"]) {
      expect(await cli(["events"], "", { PLANTGATE_AUDIT: off })).toEqual({ code: 2, stdout: "", stderr: "plantgate: PLANTGATE_AUDIT is off: the store keeps no security events (nor do the servers with it off)\n", json: undefined });
    }
  });

  it("events filters by client and account as the console does, and pages: past --limit, the next page's --before is said on stderr (stdout holds events only); bad values are refused worded with the flag, never quoted", async () => {
    // Until 2026-12-03 the CLI had --type and --limit only: the newest 1000 at most, no client or
    // account filter, and no way past them, where the console and admin.listEvents had all three.
    expect((await cli(["client", "create", "--name", "Reporting", "--id", "reporting", "--grants", "client_credentials"])).code).toBe(0);
    expect((await cli(["client", "create", "--name", "Billing", "--id", "billing", "--grants", "client_credentials"])).code).toBe(0);
    expect((await cli(["client", "rotate-secret", "reporting"])).code).toBe(0);
    expect((await cli(["user", "create", "--username", "alice"], "wonderland-42\n")).code).toBe(0);
    expect((await cli(["user", "disable", "alice"])).code).toBe(0);
    const run = async (argv: string[]) => {
      const r = await cli(argv);
      expect(r.code).toBe(0);
      return { events: r.stdout === "" ? [] : r.stdout.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>), stderr: r.stderr };
    };
    const all = await run(["events"]);
    expect(all.stderr).toBe("");
    expect(all.events.map((e) => e.type)).toEqual(["account.disabled", "account.created", "client.secret_rotated", "client.created", "client.created"]);
    const accountId = all.events[1]!.account_id as string;

    expect((await run(["events", "--client", "reporting"])).events.map((e) => [e.type, e.client_id])).toEqual([
      ["client.secret_rotated", "reporting"],
      ["client.created", "reporting"],
    ]);
    expect((await run(["events", "--client", "reporting", "--type", "client.created"])).events.map((e) => e.type)).toEqual(["client.created"]);
    // An account by its username or by its id: the same events.
    const byName = await run(["events", "--account", "alice"]);
    expect(byName.events.map((e) => e.type)).toEqual(["account.disabled", "account.created"]);
    expect((await run(["events", "--account", accountId])).events).toEqual(byName.events);
    expect((await run(["events", "--client", "nobody"])).events).toEqual([]);

    // Pages: two, two, one; each page's cursor said on stderr, as a flag to add; the last says none.
    const first = await run(["events", "--limit", "2"]);
    expect(first.events).toEqual(all.events.slice(0, 2));
    const cursor = /^plantgate: more events: add --before (\S+)\n$/.exec(first.stderr)?.[1];
    expect(cursor).toEqual(expect.any(String));
    const second = await run(["events", "--limit", "2", "--before", cursor!]);
    expect(second.events).toEqual(all.events.slice(2, 4));
    const cursor2 = /^plantgate: more events: add --before (\S+)\n$/.exec(second.stderr)?.[1];
    const last = await run(["events", "--limit", "2", "--before", cursor2!]);
    expect(last).toEqual({ events: all.events.slice(4), stderr: "" });

    // --since (inclusive) and --until (exclusive), as a time with its zone or a UTC date (2026-12-03).
    const at = all.events[2]!.time as number;
    const iso = (ms: number) => new Date(ms).toISOString();
    expect((await run(["events", "--since", iso(at)])).events).toEqual(all.events.filter((e) => (e.time as number) >= at));
    expect((await run(["events", "--until", iso(at)])).events).toEqual(all.events.filter((e) => (e.time as number) < at));
    expect((await run(["events", "--since", iso(at), "--until", iso(at + 1)])).events).toEqual(all.events.filter((e) => e.time === at));
    // The same instant in another zone.
    const plusOne = new Date(at + 3600_000).toISOString().replace("Z", "+01:00");
    expect((await run(["events", "--since", plusOne])).events).toEqual(all.events.filter((e) => (e.time as number) >= at));
    expect((await run(["events", "--since", iso(Date.now() - 86400_000).slice(0, 10)])).events).toEqual(all.events);
    expect(await run(["events", "--until", "2000-01-01"])).toEqual({ events: [], stderr: "" });
    // A page within the range that ends at its start says no next page.
    const upTo = all.events.filter((e) => (e.time as number) >= at);
    expect(await run(["events", "--since", iso(at), "--limit", String(upTo.length)])).toEqual({ events: upTo, stderr: "" });
    for (const [flag, bad] of [["--since", "2026-02-30"], ["--since", "2026-12-01T09:30"], ["--until", "yesterday"], ["--until", "2026-12-01T24:00Z"], ["--since", "2026-12-01T09:30+15:00"], ["--since", "1969-12-31"]] as const) {
      expect(await cli(["events", flag, bad])).toEqual({ code: 2, stdout: "", stderr: `plantgate: ${flag} must be a UTC date (2026-12-01) or a time with its zone (2026-12-01T09:30:00Z)\n`, json: undefined });
    }

    const secretLike = "s3cr3t-".repeat(40);
    for (const [argv, message] of [
      [["events", "--client", secretLike], "--client must be 1-200 characters"],
      [["events", "--account", secretLike], "--account must be 1-200 characters"],
      [["events", "--client", ""], "--client must not be empty (leave the option out instead)"],
      [["events", "--before", secretLike], "--before must be the next cursor of a previous page"],
    ] as const) {
      const r = await cli([...argv]);
      expect(r).toEqual({ code: 2, stdout: "", stderr: `plantgate: ${message}\n`, json: undefined });
      expect(r.stderr).not.toContain("s3cr3t");
    }
    // Before the store is opened, as the other checks: with the store unreachable a bad cursor is
    // still the usage error (exit 2), not "try again" (exit 3; a review of 2026-12-03).
    const down = { PLANTGATE_DATABASE_URL: "postgres://postgres@127.0.0.1:1/test" };
    expect(await cli(["events", "--before", secretLike], "", down)).toEqual({ code: 2, stdout: "", stderr: "plantgate: --before must be the next cursor of a previous page\n", json: undefined });
    expect((await cli(["events", "--before", cursor!], "", down)).code).toBe(3);
  });
});
