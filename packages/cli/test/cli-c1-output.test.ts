/**
 * Stored text on stdout (`user create`, `user list`, `client list`, `events`): C1 control
 * characters (U+0080-U+009F) and DEL are written as JSON's `\u` escapes, as C0 ones are by
 * JSON.stringify. Until 2026-12-02 they went raw, and a terminal reads U+009B as CSI: a username or
 * display name holding `\u009b2J` cleared the operator's screen when the list was printed. The
 * output is still JSON that parses to the stored text. The bidi controls stay as the CLI's error
 * lines leave them (admin refuses them in new usernames and client names; see README).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { runCli } from "../src/cli.js";
import { writeByHand } from "./support.js";

let dir: string;
const env = () => ({ PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_DB: join(dir, "plantgate.db") });
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-c1-"));
  expect(await cli(["migrate"])).toEqual({ code: 0, stdout: '{\n  "migrated": true\n}\n', stderr: "migrations applied\n" });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function cli(argv: string[], stdin = "") {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: env(), cwd: dir, readStdin: async () => stdin, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

/** The stored texts: CSI (U+009B) with "2J" (clear the screen), DEL, NEL (U+0085), and U+202E (right-to-left override). */
const USERNAME = "mal\u009b2Jory\u007fx\u0085y";
const DISPLAY_NAME = "\u202Eecila\u009b31m";
const CLIENT_NAME = "Evil\u009b2J\u202Eplh";

it("stored names holding C1 controls are printed with \\u escapes on stdout by user list, client list and events (they went raw: U+009B is CSI to a terminal)", async () => {
  // An older client's and an older account's names, written straight into the store (admin refuses
  // control and bidi characters in new client names and usernames).
  const older = { id: "6f1d2c3b-0000-4000-8000-000000000001", username: USERNAME, displayName: DISPLAY_NAME, email: null, roles: [], enabled: true, createdAt: 1_700_000_000_000, passwordHash: "pbkdf2-sha256$i=1000$c2FsdA$aGFzaA" };
  await writeByHand(dir, { accounts: [older], clients: [{ clientId: "evil", name: CLIENT_NAME }] });
  const esc = (s: string) => s.replace("\u009b", "\\u009b").replace("\u007f", "\\u007f").replace("\u0085", "\\u0085");

  // A new one is refused, naming the rule (since 2026-12-02).
  expect(await cli(["user", "create", "--username", USERNAME], "password-1\n")).toMatchObject({ code: 2, stdout: "" });
  const account = { id: "6f1d2c3b-0000-4000-8000-000000000001", createdAt: "2023-11-14T22:13:20.000Z" };
  const accountJson = [
    "{",
    `  "id": ${JSON.stringify(account.id)},`,
    `  "username": "${esc(USERNAME)}",`,
    `  "displayName": "${esc(DISPLAY_NAME)}",`,
    '  "email": null,',
    '  "roles": [],',
    '  "enabled": true,',
    `  "createdAt": ${JSON.stringify(account.createdAt)}`,
    "}",
  ];
  const users = await cli(["user", "list"]);
  expect(users).toEqual({ code: 0, stdout: "[\n" + accountJson.map((l) => "  " + l).join("\n") + "\n]\n", stderr: "" });

  const clients = await cli(["client", "list"]);
  expect(clients).toEqual({
    code: 0,
    stdout: [
      "[",
      "  {",
      '    "client_id": "evil",',
      `    "name": "${esc(CLIENT_NAME)}",`,
      '    "grant_types": [',
      '      "client_credentials"',
      "    ],",
      '    "scopes": [],',
      '    "token_endpoint_auth_method": "client_secret",',
      '    "created_at": "2023-11-14T22:13:20.000Z",',
      '    "secret_updated_at": "2023-11-14T22:13:20.000Z",',
      '    "secrets": []',
      "  }",
      "]",
      "",
    ].join("\n"),
    stderr: "",
  });
  expect((JSON.parse(clients.stdout) as { name: string }[])[0]!.name).toBe(CLIENT_NAME);

  expect((await cli(["user", "disable", USERNAME])).code).toBe(0);
  const events = await cli(["events", "--type", "account.disabled"]);
  const event = JSON.parse(events.stdout) as { id: string; time: number };
  expect(events).toEqual({
    code: 0,
    stdout: `{"type":"account.disabled","account_id":${JSON.stringify(account.id)},"username":"${esc(USERNAME)}","actor":null,"id":${JSON.stringify(event.id)},"time":${event.time}}\n`,
    stderr: "",
  });
  expect(JSON.parse(events.stdout)).toMatchObject({ username: USERNAME });

  // Nothing anywhere on stdout a terminal would read as a C1 control (or DEL).
  for (const out of [users, clients, events]) expect(out.stdout).not.toMatch(/[\u007f-\u009f]/);
});
