/**
 * `keys revoke KID` deletes, with the revoked key, the `prunable` keys activated before it; whether
 * a key is prunable depends on the longest access-token lifetime, a server setting the store does
 * not keep (PLANTGATE_ACCESS_TOKEN_TTL). Until 2026-12-02 `prune` and `keys rotate` refused without
 * it (exit 2, or --server-defaults) but `keys revoke` took the CLI's default (7200 s): with servers
 * at 24 hours, revoking a leaked key deleted an older key they still published and verified with.
 * Now it refuses as they do, and decides by the setting given (or the declared defaults).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { generateKeyRecord } from "@plantgate/core";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";
import { runCli } from "../src/cli.js";

let dir: string;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-revoke-ttl-"));
  expect((await cli(["migrate"])).code).toBe(0);
  // k1 was replaced by k2 5 hours ago, k2 (the leaked key) by k3 10 minutes ago.
  const hour = 3_600_000;
  const now = Date.now();
  const storage = await openStorageFromEnv({}, { cwd: dir, migrate: false });
  try {
    await storage.signingKeys.create({ ...(await generateKeyRecord("ES256", now - 10 * hour)), kid: "k1-old" });
    await storage.signingKeys.create({ ...(await generateKeyRecord("ES256", now - 5 * hour)), kid: "k2-leaked" });
    await storage.signingKeys.create({ ...(await generateKeyRecord("ES256", now - 10 * 60_000)), kid: "k3-active" });
  } finally {
    await storage.close();
  }
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function cli(argv: string[], env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env, cwd: dir, readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr, json: stdout ? (JSON.parse(stdout) as any) : undefined };
}

/** Core's warning for signing keys stored without PLANTGATE_KEY_ENCRYPTION_KEY, as the CLI prints it. */
const CLEAR_KEYS =
  "plantgate: warning: signing keys are stored in clear: anyone who can read the store can sign tokens; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys) to encrypt them at rest\n";
const DELETED =
  "the key is deleted: running servers drop it from the JWKS and refuse its tokens within a minute; resource servers that cached the JWKS keep it until they fetch it again\n";
/** The servers run with a 24-hour token lifetime: k1 (replaced 5 hours ago) still verifies their tokens. */
const servers = { PLANTGATE_ACCESS_TOKEN_TTL: "86400" };
const statuses = async (env: Record<string, string>) => (await cli(["keys", "list"], env)).json.map((k: { kid: string; status: string }) => [k.kid, k.status]);

it("keys revoke without the servers' PLANTGATE_ACCESS_TOKEN_TTL or --server-defaults is refused (exit 2, nothing changed); given it, an older key the servers still trust stays", async () => {
  const before = await statuses(servers);
  expect(before).toEqual([
    ["k3-active", "active"],
    ["k2-leaked", "retired"],
    ["k1-old", "retired"],
  ]);
  // The operator follows the README after a leak without the servers' setting.
  expect(await cli(["keys", "revoke", "k2-leaked"])).toEqual({
    code: 2,
    stdout: "",
    stderr:
      "plantgate: keys revoke decides which old keys it deletes from the servers' settings, which the store does not keep: set PLANTGATE_ACCESS_TOKEN_TTL as the servers have it, or pass --server-defaults if the servers leave it unset; nothing was changed\n",
    json: undefined,
  });
  expect(await statuses(servers)).toEqual(before);
  // With the servers' setting: only the leaked key goes; k1 stays, as the servers still trust it.
  expect(await cli(["keys", "revoke", "k2-leaked"], servers)).toEqual({
    code: 0,
    stdout: JSON.stringify({ kid: "k2-leaked", status: "retired", deleted: [] }, null, 2) + "\n",
    stderr: CLEAR_KEYS + DELETED,
    json: { kid: "k2-leaked", status: "retired", deleted: [] },
  });
  expect(await statuses(servers)).toEqual([
    ["k3-active", "active"],
    ["k1-old", "retired"],
  ]);
});

it("keys revoke --server-defaults decides by the default lifetime (7200 s): the prunable key before the revoked one goes with it", async () => {
  // keys list takes the setting it is given, the default without it: k1 is prunable by 7200 s.
  expect(await statuses({})).toEqual([
    ["k3-active", "active"],
    ["k2-leaked", "retired"],
    ["k1-old", "prunable"],
  ]);
  expect(await cli(["keys", "revoke", "--server-defaults", "k2-leaked"])).toEqual({
    code: 0,
    stdout: JSON.stringify({ kid: "k2-leaked", status: "retired", deleted: ["k1-old"] }, null, 2) + "\n",
    stderr: CLEAR_KEYS + DELETED,
    json: { kid: "k2-leaked", status: "retired", deleted: ["k1-old"] },
  });
  expect(await statuses({})).toEqual([["k3-active", "active"]]);
});

it("keys revoke with PLANTGATE_SIGNING_KEY set is not asked for the setting: it is refused for the configured key, nothing changed", async () => {
  const env = { PLANTGATE_SIGNING_KEY: (await generateKeyRecord("ES256", 0)).privateJwk };
  expect(await cli(["keys", "revoke", "k2-leaked"], env)).toEqual({
    code: 2,
    stdout: "",
    stderr: "plantgate: The signing key is configured (signingKey / PLANTGATE_SIGNING_KEY); the store's keys are not used.\n",
    json: undefined,
  });
  expect(await statuses(servers)).toHaveLength(3);
});
