/**
 * How the CLI words a command line it refuses: Node's multi-line parseArgs texts on one line, the
 * same `unknown option --x; see plantgate <command> --help` for every command, and the range of
 * seconds for any all-digit value too large.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../src/cli.js";

let dir: string;

async function cli(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const env = { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_DB: join(dir, "plantgate.db") };
  const code = await runCli(argv, { env, cwd: dir, readStdin: async () => "password-1\n", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-parse-"));
  expect(await cli(["migrate"])).toEqual({ code: 0, stdout: '{\n  "migrated": true\n}\n', stderr: "migrations applied\n" });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const refused = (message: string) => ({ code: 2, stdout: "", stderr: `plantgate: ${message}\n` });

describe("parseArgs's own refusals", () => {
  it("an option whose value starts with a dash is refused on one line (Node's three lines were printed with literal \\u000a between them until 2026-12-02)", async () => {
    const ambiguous = (name: string) => `Option '${name}' argument is ambiguous. Did you forget to specify the option argument for '${name}'? To specify an option argument starting with a dash use '${name}=-XYZ'.`;
    expect(await cli(["user", "create", "--username", "--", "alice"])).toEqual(refused(ambiguous("--username")));
    expect(await cli(["client", "create", "--name", "--"])).toEqual(refused(ambiguous("--name")));
    expect(await cli(["client", "add-secret", "x", "--expires-in", "--7"])).toEqual(refused(ambiguous("--expires-in")));
    // Following the advice works.
    expect(await cli(["client", "create", "--name=--", "--id", "dashes"])).toMatchObject({ code: 0, stderr: "the secret is shown only now; store it safely\n" });
  });
});
