/**
 * `client list` over a private_key_jwt client whose stored `jwks` is not JSON (written by hand or
 * by a tool of the operator's, past the admin API's check): the row is printed with `"jwks": null`
 * and `"jwks_unreadable": true`, a warning names the client, and the list goes on. Until 2026-12-02
 * JSON.parse threw while the page was printed: exit 1, nothing of that page on stdout (a later
 * page's: the array left unclosed), and V8's message quoting the stored text on stderr
 * (`Unexpected token 'o', "{"keys":[oops-H"... is not valid JSON`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../src/cli.js";
import { writeByHand } from "./support.js";

let dir: string;

async function cli(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_DB: join(dir, "plantgate.db") }, cwd: dir, readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-jwks-unreadable-"));
  expect((await cli(["migrate"])).code).toBe(0);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("client list and a stored jwks that is not JSON", () => {
  it("prints every client, the unreadable one with jwks null and jwks_unreadable, warns naming it without quoting the stored text, exit 0", async () => {
    const jwks = { keys: [{ kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", kid: "k1" }] };
    const base = { authMethod: "private_key_jwt" as const, grantTypes: ["client_credentials" as const], createdAt: 1_700_000_000_000, secretUpdatedAt: 1_700_000_000_000 };
    await writeByHand(dir, {
      clients: [
        { ...base, clientId: "a-good", name: "Good", jwks: JSON.stringify(jwks) },
        { ...base, clientId: "b-broken", name: "Broken", jwks: '{"keys":[oops-Hunter2-stored-text]}' },
        { ...base, clientId: "c-after", name: "After", jwks: JSON.stringify(jwks) },
      ],
    });
    const row = (clientId: string, name: string, keys: object) => ({
      client_id: clientId,
      name,
      grant_types: ["client_credentials"],
      scopes: [],
      token_endpoint_auth_method: "private_key_jwt",
      created_at: "2023-11-14T22:13:20.000Z",
      secret_updated_at: "2023-11-14T22:13:20.000Z",
      ...keys,
    });
    const listed = await cli(["client", "list"]);
    expect(listed.stderr).not.toContain("oops");
    expect({ code: listed.code, stderr: listed.stderr, json: JSON.parse(listed.stdout) as unknown }).toEqual({
      code: 0,
      stderr: 'plantgate: warning: client "b-broken": its stored jwks is not valid JSON (printed as null, with "jwks_unreadable": true); delete the client and create it again with a valid --jwks\n',
      json: [row("a-good", "Good", { jwks }), row("b-broken", "Broken", { jwks: null, jwks_unreadable: true }), row("c-after", "After", { jwks })],
    });
  });
});
