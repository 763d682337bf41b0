/**
 * `client create --auth private_key_jwt --jwks` refuses a key with any private member: until
 * 2026-12-01 an RSA JWK with `q`, `dp`, `dq`, `qi` but no `d` or `p` was stored as given and printed
 * back by `client create` and every `client list` (and the console). `q` alone is the private key:
 * p = n / q.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../src/cli.js";

let dir: string;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-jwks-"));
  expect((await cli(["migrate"])).code).toBe(0);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function cli(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" }, cwd: dir, readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("plantgate CLI: a JWK Set with private members", () => {
  it("an RSA key with q, dp, dq and qi (d and p left out) is refused as holding private members, not stored and printed by client list", async () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const { d: _d, p: _p, ...partial } = privateKey.export({ format: "jwk" });
    expect(Object.keys(partial).sort()).toEqual(["dp", "dq", "e", "kty", "n", "q", "qi"]);
    const created = await cli(["client", "create", "--name", "Signer", "--id", "signer", "--auth", "private_key_jwt", "--jwks", JSON.stringify({ keys: [partial] })]);
    const listed = await cli(["client", "list"]);
    expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 2, stderr: "plantgate: --jwks: the JWK Set must hold public keys only (a key has private members)\n" });
    expect(listed.stdout).not.toContain(partial.q!);
  });
});
