/**
 * MySQL/MariaDB refusing the login for a reason other than a wrong password (ER_ACCESS_DENIED_ERROR):
 * a unix_socket-only account, a locked account, an expired password (and a user that does not exist,
 * which MariaDB answers with 1698 for some names and 1045 for others). Trying again never helps, so
 * these are exit 2 ("credentials the store refuses"), not 3. Until 2026-12-02 they were exit 3: the
 * CLI matched mysql2's code names, and mysql2 misnames MariaDB's 4151 (locked account)
 * ER_BULK_PARSER_INCOMPLETE_ESCAPE_SEQUENCE; it matches the server's errno now.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";
import { runCli } from "../src/cli.js";
import { storeProblem } from "./postgres.js";

const MYSQL_URL = process.env.PLANTGATE_TEST_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";
const myProblem = await storeProblem(MYSQL_URL);
const mySkip = myProblem !== null;

async function cli(argv: string[], env: Record<string, string>) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...env }, cwd: "/", readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("MySQL/MariaDB: a login refused for the account's state is exit 2", () => {
  it.skipIf(mySkip)(`a unix_socket-only account (1698), a locked account (4151 on MariaDB) and an expired password (1820) are exit 2 with the driver's reason, never the password${mySkip ? ` (skipped: unreachable at ${MYSQL_URL}: ${myProblem})` : ""}`, async () => {
    const tag = randomBytes(4).toString("hex");
    const admin = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: MYSQL_URL }, { cwd: "/", migrate: false, clientCache: false });
    const users = { sock: `pg_cli_sock_${tag}`, lock: `pg_cli_lock_${tag}`, exp: `pg_cli_exp_${tag}` };
    try {
      await sql.raw(`CREATE USER '${users.sock}'@'%' IDENTIFIED VIA unix_socket`).execute(admin.db);
      await sql.raw(`CREATE USER '${users.lock}'@'%' IDENTIFIED BY 'pw-Hunter2' ACCOUNT LOCK`).execute(admin.db);
      await sql.raw(`CREATE USER '${users.exp}'@'%' IDENTIFIED BY 'pw-Hunter2' PASSWORD EXPIRE`).execute(admin.db);
      for (const name of [users.lock, users.exp]) await sql.raw(`GRANT ALL ON test.* TO '${name}'@'%'`).execute(admin.db);
      const results: Record<string, { code: number; stdout: string; stderr: string }> = {};
      const shown: Record<string, string> = {};
      for (const [what, user] of Object.entries(users)) {
        const url = new URL(MYSQL_URL);
        url.username = user;
        url.password = "pw-Hunter2";
        shown[what] = `mysql://${user}:***@${url.host}${url.pathname}`;
        results[what] = await cli(["client", "list"], { PLANTGATE_DATABASE_URL: url.href });
      }
      // Trying again never helps: each needs the credentials or the account fixed.
      expect(results).toEqual({
        sock: { code: 2, stdout: "", stderr: `plantgate: cannot open the store at ${shown.sock}: mysql storage failed during open (ER_ACCESS_DENIED_NO_PASSWORD_ERROR) (cause: Error: Access denied for user '${users.sock}'@'${new URL(MYSQL_URL).hostname}')\n` },
        // MariaDB's name for its 4151, not mysql2's (MySQL's 4151 is ER_BULK_PARSER_INCOMPLETE_ESCAPE_SEQUENCE).
        lock: { code: 2, stdout: "", stderr: `plantgate: cannot open the store at ${shown.lock}: mysql storage failed during open (ER_ACCOUNT_HAS_BEEN_LOCKED) (cause: Error: Access denied, this account is locked)\n` },
        exp: { code: 2, stdout: "", stderr: `plantgate: cannot open the store at ${shown.exp}: mysql storage failed during open (ER_MUST_CHANGE_PASSWORD) (cause: Error: You must SET PASSWORD before executing this statement)\n` },
      });
    } finally {
      for (const name of Object.values(users)) await sql.raw(`DROP USER IF EXISTS '${name}'@'%'`).execute(admin.db);
      await admin.close();
    }
  }, 60_000);

  it.skipIf(mySkip)(`a wrong password (1045), a user that does not exist (1698 on MariaDB, whose message does not say "using password") and a database that does not exist (1049) are exit 2${mySkip ? ` (skipped: unreachable at ${MYSQL_URL}: ${myProblem})` : ""}`, async () => {
    const tag = randomBytes(4).toString("hex");
    const admin = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: MYSQL_URL }, { cwd: "/", migrate: false, clientCache: false });
    const user = `pg_cli_pw_${tag}`;
    try {
      await sql.raw(`CREATE USER '${user}'@'%' IDENTIFIED BY 'pw-Right-one'`).execute(admin.db);
      await sql.raw(`GRANT ALL ON test.* TO '${user}'@'%'`).execute(admin.db);
      const wrong = new URL(MYSQL_URL);
      wrong.username = user;
      wrong.password = "pw-Hunter2";
      const nobody = new URL(wrong);
      nobody.username = `pg_cli_nobody_${tag}`;
      const missing = new URL(MYSQL_URL);
      missing.pathname = "/plantgate_no_such_database";
      const shown = (u: URL) => `mysql://${u.username}:***@${u.host}${u.pathname}`;
      expect(await cli(["client", "list"], { PLANTGATE_DATABASE_URL: wrong.href })).toEqual({
        code: 2,
        stdout: "",
        stderr: `plantgate: cannot open the store at ${shown(wrong)}: mysql storage failed during open (ER_ACCESS_DENIED_ERROR) (cause: Error: Access denied for user '${user}'@'${wrong.hostname}' (using password: YES))\n`,
      });
      const stranger = await cli(["client", "list"], { PLANTGATE_DATABASE_URL: nobody.href });
      expect({ code: stranger.code, stdout: stranger.stdout }).toEqual({ code: 2, stdout: "" });
      expect(stranger.stderr).toMatch(new RegExp(`^plantgate: cannot open the store at mysql://${nobody.username}:\\*\\*\\*@[^\\n]*: mysql storage failed during open \\((ER_ACCESS_DENIED_ERROR|ER_ACCESS_DENIED_NO_PASSWORD_ERROR)\\) \\(cause: Error: Access denied for user '${nobody.username}'@'[^']+'( \\(using password: YES\\))?\\)\\n$`));
      const absent = await cli(["client", "list"], { PLANTGATE_DATABASE_URL: missing.href });
      expect({ code: absent.code, stdout: absent.stdout }).toEqual({ code: 2, stdout: "" });
      expect(absent.stderr).toMatch(/^plantgate: cannot open the store at mysql:\/\/[^\n]*\/plantgate_no_such_database: mysql storage failed during open \(ER_BAD_DB_ERROR\) \(cause: Error: Unknown database 'plantgate_no_such_database'\)\n$/);
    } finally {
      await sql.raw(`DROP USER IF EXISTS '${user}'@'%'`).execute(admin.db);
      await admin.close();
    }
  }, 30_000);
});
