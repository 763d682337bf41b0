/**
 * The CLI on PostgreSQL: a store that fails in the middle of a command is exit 3 (the store could
 * not be reached or failed; try again), the same as one that cannot be reached at open, not 1.
 */
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";
import type { SqlStorage } from "@plantgate/storage-sql";
import { runCli } from "../src/cli.js";
import { POSTGRES_URL, postgresProblem } from "./postgres.js";

const IN_CI = process.env.CI === "true";

const problem = await postgresProblem();

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

/**
 * Runs `body` with a fresh schema of the test PostgreSQL (dropped after), an admin storage on the
 * default schema, and the URL that puts the CLI in that schema.
 */
async function inSchema(body: (place: { schema: string; admin: SqlStorage; url: string }) => Promise<void>): Promise<void> {
  const schema = `plantgate_cli_${randomBytes(6).toString("hex")}`;
  const admin = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: POSTGRES_URL }, { cwd: "/", migrate: false, clientCache: false });
  opened.push(admin);
  await sql`create schema ${sql.id(schema)}`.execute(admin.db);
  try {
    await body({ schema, admin, url: `${POSTGRES_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}` });
  } finally {
    await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
  }
}

const suite = problem === null || IN_CI ? describe : describe.skip;
suite(problem === null ? "plantgate CLI on PostgreSQL" : `plantgate CLI on PostgreSQL (skipped: unreachable at ${POSTGRES_URL}: ${problem})`, () => {
  it("the service is reachable (required when CI=true)", () => {
    expect(problem).toBeNull();
  });

  it("a server that refuses the credentials or has no such database is configuration (exit 2: trying again cannot help), not an outage (3)", async () => {
    const url = new URL(POSTGRES_URL);
    const wrongUser = new URL(url);
    wrongUser.username = "plantgate_no_such_user";
    wrongUser.password = "hunter2";
    const noDb = new URL(url);
    noDb.pathname = "/plantgate_no_such_database";
    const refused = await cli(["client", "list"], { PLANTGATE_DATABASE_URL: wrongUser.href });
    expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 2, stdout: "" });
    // The driver's reason follows (cause: ...); the password never.
    expect(refused.stderr).toMatch(/^plantgate: cannot open the store at postgres:\/\/plantgate_no_such_user:\*\*\*@[^\n]*\((28000|28P01)\) \(cause: error: (role "plantgate_no_such_user" does not exist|password authentication failed for user "plantgate_no_such_user")\)\n$/);
    expect(refused.stderr).not.toContain("hunter2");
    const missing = await cli(["client", "list"], { PLANTGATE_DATABASE_URL: noDb.href });
    expect({ code: missing.code, stdout: missing.stdout }).toEqual({ code: 2, stdout: "" });
    expect(missing.stderr).toMatch(/^plantgate: cannot open the store at [^\n]*\(3D000\) \(cause: error: database "plantgate_no_such_database" does not exist\)\n$/);
  });

  it("a setting in the URL's options the server refuses (a bad value, an unknown parameter) is configuration (exit 2), not an outage (3)", async () => {
    for (const [option, reason] of [
      ["-c statement_timeout=bad", /\(22023\) \(cause: error: invalid value for parameter "statement_timeout": "bad"\)/],
      ["-c plantgate_no_such_setting=1", /\(42704\) \(cause: error: unrecognized configuration parameter "plantgate_no_such_setting"\)/],
    ] as const) {
      const refused = await cli(["client", "list"], { PLANTGATE_DATABASE_URL: `${POSTGRES_URL}?options=${encodeURIComponent(option)}` });
      expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 2, stdout: "" });
      expect(refused.stderr).toMatch(reason);
    }
  });

  it("an empty schema is refused by every command but migrate (exit 2, naming plantgate migrate; no table made); after migrate, client create works", async () => {
    await inSchema(async ({ schema, admin, url }) => {
      const env = { PLANTGATE_DATABASE_URL: url };
      const tables = async () => (await sql<{ n: number }>`select count(*)::int as n from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace where n.nspname = ${schema}`.execute(admin.db)).rows[0]!.n;
      for (const argv of [["client", "list"], ["client", "create", "--name", "Reporting", "--id", "reporting"]]) {
        const r = await cli(argv, env);
        expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: "" });
        expect(r.stderr).toMatch(/^plantgate: the store at postgres:\/\/[^\n]* has no plantgate schema yet; nothing was done: run plantgate migrate \(pnpm -s plantgate migrate\)[^\n]*\n$/);
      }
      expect(await tables()).toBe(0);
      expect(await cli(["migrate"], env)).toMatchObject({ code: 0, stderr: "migrations applied\n" });
      const created = await cli(["client", "create", "--name", "Reporting", "--id", "reporting"], env);
      expect(created.code).toBe(0);
      expect(JSON.parse(created.stdout)).toMatchObject({ client_id: "reporting" });
    });
  });

  it("a statement that fails mid-command (a table locked by another session, past PLANTGATE_QUERY_TIMEOUT_MS) is exit 3 with one stderr line, as an unreachable store at open is; nothing is printed on stdout", async () => {
    await inSchema(async ({ url }) => {
      const env = { PLANTGATE_DATABASE_URL: url, PLANTGATE_QUERY_TIMEOUT_MS: "300" };
      expect(await cli(["migrate"], env)).toMatchObject({ code: 0 });
      expect(await cli(["client", "create", "--name", "Reporting", "--id", "reporting"], env)).toMatchObject({ code: 0 });
      // Another session holds the clients table (a long migration or a DBA's lock) until released.
      const other = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: url }, { cwd: "/", migrate: false, clientCache: false });
      opened.push(other);
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holding = other.db.transaction().execute(async (trx) => {
        await sql`lock table pg_clients in access exclusive mode`.execute(trx);
        locked();
        await released;
    });
    await isLocked;
    const failed = await cli(["client", "list"], env);
    release();
    await holding;
    expect({ code: failed.code, stdout: failed.stdout }).toEqual({ code: 3, stdout: "" });
    expect(failed.stderr).toMatch(/^plantgate: [^\n]*\n$/);
    // Once the lock is gone the same command answers.
    expect(JSON.parse((await cli(["client", "list"], env)).stdout).map((c: { client_id: string }) => c.client_id)).toEqual(["reporting"]);
    });
  }, 30_000);

  it("migrate waiting for another instance's migration lock says so on stderr as a CLI warning line (the store's onWarning), then migrates once the lock is free", async () => {
    await inSchema(async ({ schema, admin, url }) => {
      // Another instance migrating this schema holds plantgate's lock (key: 0x70676d67 and the schema's oid) for 6 s.
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holding = admin.db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${sql.lit(0x70676d67)}, (select oid::int4 from pg_catalog.pg_namespace where nspname = ${schema}))`.execute(trx);
        locked();
        await new Promise((r) => setTimeout(r, 6000));
    });
    await isLocked;
    const migrated = await cli(["migrate"], { PLANTGATE_DATABASE_URL: url });
    await holding;
    expect({ code: migrated.code, stdout: JSON.parse(migrated.stdout) as unknown }).toEqual({ code: 0, stdout: { migrated: true } });
    expect(migrated.stderr).toMatch(
      new RegExp(`^plantgate: warning: postgres storage: waiting for the migration lock of schema "${schema}" \\(pg_advisory_lock\\(\\d+, \\d+\\), held by backend \\d+: another instance migrating it\\); waited 5 s, waiting up to 900 s in all\\nmigrations applied\\n$`),
    );
    });
  }, 30_000);
});
