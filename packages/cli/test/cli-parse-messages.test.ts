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

describe("an unknown option is refused alike by every command", () => {
  it("a command that takes words answers `unknown option --bogus; see plantgate <command> --help`, not parseArgs's advice to put it after `--`, which was then refused as one word too many (until 2026-12-02)", async () => {
    const unknown = (name: string, command: string) => refused(`unknown option ${name}; see plantgate ${command} --help`);
    expect(await cli(["client", "delete", "x", "--bogus"])).toEqual(unknown("--bogus", "client delete"));
    expect(await cli(["client", "add-secret", "x", "--expires-in", "60", "--bogus"])).toEqual(unknown("--bogus", "client add-secret"));
    expect(await cli(["client", "revoke-secret", "x", "y", "--bogus"])).toEqual(unknown("--bogus", "client revoke-secret"));
    expect(await cli(["client", "rotate-secret", "x", "--bogus"])).toEqual(unknown("--bogus", "client rotate-secret"));
    expect(await cli(["user", "disable", "alice", "--bogus"])).toEqual(unknown("--bogus", "user disable"));
    expect(await cli(["user", "enable", "alice", "--bogus"])).toEqual(unknown("--bogus", "user enable"));
    expect(await cli(["keys", "revoke", "kid", "--server-defaults", "--bogus"])).toEqual(unknown("--bogus", "keys revoke"));
    // Its name only, never a value given with it, and only a plain name.
    expect(await cli(["client", "delete", "x", "--password=hunter2"])).toEqual(unknown("--password", "client delete"));
    expect(await cli(["client", "delete", "x", "--\u001b[2J"])).toEqual(refused("unknown option (its name not shown); see plantgate client delete --help"));
    // What parseArgs advised led here:
    expect(await cli(["client", "delete", "x", "--", "--bogus"])).toEqual(refused("expected exactly one CLIENT_ID"));
  });

  it("where the word the command still needs may be the option-like argument, the line says that word goes after `--` (which works: `client delete -- --odd`)", async () => {
    const hinted = (name: string, command: string, word: string) => refused(`unknown option ${name}; see plantgate ${command} --help (a ${word} that starts with -- goes after --)`);
    expect(await cli(["client", "delete", "--odd"])).toEqual(hinted("--odd", "client delete", "CLIENT_ID"));
    expect(await cli(["client", "revoke-secret", "x", "--odd"])).toEqual(hinted("--odd", "client revoke-secret", "SECRET_ID"));
    expect(await cli(["client", "add-secret", "--odd", "--expires-in", "60"])).toEqual(hinted("--odd", "client add-secret", "CLIENT_ID"));
    expect(await cli(["user", "disable", "--odd"])).toEqual(hinted("--odd", "user disable", "USERNAME"));
    expect(await cli(["keys", "revoke", "--odd", "--server-defaults"])).toEqual(hinted("--odd", "keys revoke", "KID"));
    expect(await cli(["client", "delete", "--", "--odd"])).toEqual(refused('client "--odd" does not exist'));
  });
});

describe("--expires-in and --secret-expires-in", () => {
  it("an all-digit value past the range is refused with the range whatever its length (11 digits and more said `must be a positive number of seconds` until 2026-12-02)", async () => {
    const range = (flag: string) => refused(`${flag} must be from 1 to 315360000 seconds`);
    for (const value of ["315360001", "9999999999", "99999999999", "12345678901234567890", "9".repeat(400)]) {
      expect(await cli(["client", "create", "--name", "R", "--secret-expires-in", value])).toEqual(range("--secret-expires-in"));
      expect(await cli(["client", "add-secret", "x", "--expires-in", value])).toEqual(range("--expires-in"));
    }
    // Not a positive whole number: as before.
    for (const value of ["0", "-5", "1.5", "1e3", "60s"]) expect(await cli(["client", "add-secret", "x", "--expires-in", value])).toEqual(refused("--expires-in must be a positive number of seconds"));
    // Nothing was made.
    expect(await cli(["client", "list"])).toEqual({ code: 0, stdout: "[]\n", stderr: "" });
  });
});
