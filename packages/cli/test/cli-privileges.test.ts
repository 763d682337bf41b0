/**
 * A database user the server lets in but that may not write (a read-only role, as the README
 * suggests for an auditor's `keys list`) running a command that writes: refused for how the CLI was
 * called (no privilege), so exit 2 with the driver's reason after the message, as at open. Until
 * 2026-12-01 PostgreSQL's 42501 mid-command was exit 1 without its reason, and MySQL's table
 * privilege refusal exit 3 ("try again", which never helps).
 */
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";
import type { SqlStorage } from "@plantgate/storage-sql";
import { runCli } from "../src/cli.js";
import { POSTGRES_URL, postgresProblem, storeProblem } from "./postgres.js";

const MYSQL_URL = process.env.PLANTGATE_TEST_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";


const IN_CI = process.env.CI === "true";
const pgProblem = await postgresProblem();
const myProblem = await storeProblem(MYSQL_URL);
// Under CI a missing service is a failure (the test runs and fails), elsewhere a skip naming why.
const pgSkip = pgProblem !== null && !IN_CI;
const mySkip = myProblem !== null && !IN_CI;

const opened: SqlStorage[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

async function cli(argv: string[], env: Record<string, string>) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...env }, cwd: "/", readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("plantgate CLI: a database user without the privilege to write", () => {
  it.skipIf(pgSkip)(`PostgreSQL: client create as a read-only role is exit 2 with the driver's reason${pgSkip ? ` (skipped: unreachable at ${POSTGRES_URL}: ${pgProblem})` : ""}`, async () => {
    const tag = randomBytes(6).toString("hex");
    const schema = `plantgate_cli_ro_${tag}`;
    const role = `plantgate_cli_ro_${tag}`;
    const admin = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: POSTGRES_URL }, { cwd: "/", migrate: false, clientCache: false });
    opened.push(admin);
    await sql`create schema ${sql.id(schema)}`.execute(admin.db);
    try {
      const options = `?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
      expect(await cli(["migrate"], { PLANTGATE_DATABASE_URL: POSTGRES_URL + options })).toMatchObject({ code: 0 });
      await sql`create role ${sql.id(role)} login password 'ro-pass-word'`.execute(admin.db);
      await sql`grant usage on schema ${sql.id(schema)} to ${sql.id(role)}`.execute(admin.db);
      await sql`grant select on all tables in schema ${sql.id(schema)} to ${sql.id(role)}`.execute(admin.db);
      const url = new URL(POSTGRES_URL);
      url.username = role;
      url.password = "ro-pass-word";
      const env = { PLANTGATE_DATABASE_URL: url.href + options };
      // The role reads: listings work.
      expect(await cli(["client", "list"], env)).toEqual({ code: 0, stdout: "[]\n", stderr: "" });
      const refused = await cli(["client", "create", "--name", "Reporting", "--id", "reporting"], env);
      expect(refused.stdout).toBe("");
      expect(refused.stderr).not.toContain("ro-pass-word");
      expect({ code: refused.code, stderr: refused.stderr }).toEqual({
        code: 2,
        stderr: expect.stringMatching(/^plantgate: postgres storage failed during clients\.create \(42501\) \(cause: error: permission denied for table pg_clients\)\n$/),
      });
    } finally {
      await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
      await sql`drop role if exists ${sql.id(role)}`.execute(admin.db);
    }
  }, 30_000);

  it.skipIf(mySkip)(`MySQL/MariaDB: client create as a SELECT-only user is exit 2 with the driver's reason${mySkip ? ` (skipped: unreachable at ${MYSQL_URL}: ${myProblem})` : ""}`, async () => {
    const tag = randomBytes(6).toString("hex");
    const database = `plantgate_cli_ro_${tag}`;
    const user = `pg_cli_ro_${tag}`;
    const admin = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: MYSQL_URL }, { cwd: "/", migrate: false, clientCache: false });
    opened.push(admin);
    await sql`create database ${sql.id(database)}`.execute(admin.db);
    try {
      const rootUrl = new URL(MYSQL_URL);
      rootUrl.pathname = `/${database}`;
      expect(await cli(["migrate"], { PLANTGATE_DATABASE_URL: rootUrl.href })).toMatchObject({ code: 0 });
      await sql.raw(`create user '${user}'@'%' identified by 'ro-pass-word'`).execute(admin.db);
      await sql.raw(`grant select on \`${database}\`.* to '${user}'@'%'`).execute(admin.db);
      const url = new URL(rootUrl);
      url.username = user;
      url.password = "ro-pass-word";
      const env = { PLANTGATE_DATABASE_URL: url.href };
      expect(await cli(["client", "list"], env)).toEqual({ code: 0, stdout: "[]\n", stderr: "" });
      const refused = await cli(["client", "create", "--name", "Reporting", "--id", "reporting"], env);
      expect(refused.stdout).toBe("");
      expect(refused.stderr).not.toContain("ro-pass-word");
      expect({ code: refused.code, stderr: refused.stderr }).toEqual({
        code: 2,
        stderr: expect.stringMatching(/^plantgate: mysql storage failed during clients\.create \(ER_TABLEACCESS_DENIED_ERROR\) \(cause: Error: INSERT command denied to user '[^']+'@'[^']+' for table `plantgate_cli_ro_[0-9a-f]+`\.`pg_clients`\)\n$/),
      });
    } finally {
      await sql`drop database ${sql.id(database)}`.execute(admin.db);
      await sql.raw(`drop user if exists '${user}'@'%'`).execute(admin.db);
    }
  }, 30_000);
});
