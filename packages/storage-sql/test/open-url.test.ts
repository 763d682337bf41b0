/**
 * `openSqlStorage(url)` called directly (not through PLANTGATE_DATABASE_URL) with a URL its driver
 * cannot parse: a configuration error naming the argument, never the password, before anything is
 * contacted, as the env path has been since 2026-11-30; not a StorageError (an outage, 503, "try
 * again"). A URL the driver does read opens (real PostgreSQL and MariaDB).
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StorageError } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { StorageConfigError as EnvStorageConfigError } from "../src/env.js";
import { openSqlStorage, pendingMigrationsAt, StorageConfigError } from "../src/index.js";
import { MYSQL_URL, POSTGRES_URL } from "./support.js";

/**
 * The refusal's message, the same with and without the migration (without it, pg's pool opened
 * nothing at open, and the URL failed at the first statement, as a StorageError, until 2026-11-30).
 */
const refusal = async (url: string) => {
  const messages: string[] = [];
  for (const migrate of [true, false]) {
    const failure = await openSqlStorage(url, { clientCache: false, migrate }).then(
      async (s) => {
        await s.close();
        return null;
      },
      (e: unknown) => e,
    );
    expect(failure, url).toBeInstanceOf(StorageConfigError);
    expect(failure, url).not.toBeInstanceOf(StorageError);
    const error = failure as StorageConfigError;
    expect(error.message, url).not.toContain("hunter2");
    // No driver error as its cause: Node's "Invalid URL" TypeError carries the whole URL (its `input`).
    expect(error.cause, url).toBeUndefined();
    messages.push(error.message);
  }
  expect(messages[1], url).toBe(messages[0]);
  return messages[0]!;
};

describe("openSqlStorage: a URL its driver cannot parse", () => {
  it("is a StorageConfigError naming openSqlStorage's url (the env's class), not a StorageError; nothing is opened", async () => {
    expect(StorageConfigError).toBe(EnvStorageConfigError);
    const invalid =
      "openSqlStorage's url is not a valid URL: check the host and the port (a number up to 65535), and percent-encode any @ : / ? # in the user name or password; nothing was opened";
    // A port that is not a number (a base64 password with an unescaped "/"), one past 65535.
    expect(await refusal("postgres://postgres:Zm9v/hunter2@127.0.0.1:5432/test")).toBe(invalid);
    expect(await refusal("postgres://u:hunter2@127.0.0.1:notaport/test")).toBe(invalid);
    expect(await refusal("mariadb://root:hunter2@127.0.0.1:65536/test")).toBe(invalid);
    // mysql2 decodes the parts with decodeURIComponent: a malformed escape throws there.
    expect(await refusal("mysql://root:hunter2%zz@127.0.0.1:3306/test")).toBe(
      "openSqlStorage's url (mysql://root:***@127.0.0.1:3306/test) has a malformed percent-escape in its password: % must be followed by two hexadecimal digits, and the escapes must spell UTF-8 (write a literal % as %25); nothing was opened",
    );
    expect(await refusal("mysql://root@127.0.0.1:3306/test%e")).toMatch(/^openSqlStorage's url \(mysql:\/\/root@127\.0\.0\.1:3306\/test%e\) has a malformed percent-escape in its database name: /);
    // pg decodes the user name (no ?user= in its place): not UTF-8 is refused there.
    expect(await refusal("postgres://%ff:hunter2@127.0.0.1:5432/test")).toMatch(/^openSqlStorage's url \(postgres:\/\/%ff:\*\*\*@127\.0\.0\.1:5432\/test\) has a malformed percent-escape in its user name: /);
  });

  it("a mysql:// or mariadb:// URL giving the user or password as a query parameter (mysql2 ignores both there, so the connection would go without them) is refused, the value never shown", async () => {
    // Until 2026-12-03 mysql2 kept the URL's own (empty) user name and password and dropped these
    // quietly: the server then answered "Access denied for user ''@'...' (using password: NO)".
    const hint = "percent-encode any reserved character in them";
    expect(await refusal("mysql://root@127.0.0.1:3306/test?password=hunter2")).toBe(
      `openSqlStorage's url (mysql://root@127.0.0.1:3306/test?password=***) gives the password as a query parameter, which the MySQL driver ignores: write mysql://user:password@host:port/database (${hint}); nothing was opened`,
    );
    expect(await refusal("mariadb://127.0.0.1:3306/test?user=root&password=hunter2")).toBe(
      `openSqlStorage's url (mariadb://127.0.0.1:3306/test?user=root&password=***) gives the user name and password as query parameters, which the MySQL driver ignores: write mysql://user:password@host:port/database (${hint}); nothing was opened`,
    );
  });

  it("an unsupported scheme, an empty URL and sqlite: without a path are StorageConfigError too (a TypeError until 2026-11-30), the password never shown", async () => {
    const expected: [string, string][] = [
      ["redis://user:hunter2@127.0.0.1:6379", 'openSqlStorage\'s url (redis://user:***@127.0.0.1:6379) has an unsupported scheme "redis:" (use postgres:, postgresql:, mysql:, mariadb: or sqlite:, or a SQLite file path); nothing was opened'],
      ["", "openSqlStorage's url is empty (give a postgres:, postgresql:, mysql:, mariadb: or sqlite: URL, a SQLite file path or :memory:); nothing was opened"],
      ["sqlite:", "openSqlStorage's url is sqlite: without a path (use sqlite::memory: for an in-memory database); nothing was opened"],
      ["sqlite://", "openSqlStorage's url is sqlite: without a path (use sqlite::memory: for an in-memory database); nothing was opened"],
    ];
    for (const [url, message] of expected) {
      const failure = await refusal(url);
      expect(failure, url).toBe(message);
      // pendingMigrationsAt reads the URL the same way, naming its own argument.
      const pending = await pendingMigrationsAt(url).then(
        () => null,
        (e: unknown) => e,
      );
      expect(pending, url).toBeInstanceOf(StorageConfigError);
      expect((pending as Error).message, url).toBe(message.replace("openSqlStorage's url", "pendingMigrationsAt's url"));
    }
  });

  it("a server scheme without its // (postgres:u:pw@h) is a StorageConfigError, not a new SQLite file named after the URL and its password", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pg-noslash-"));
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      for (const [url, scheme] of [
        ["postgres:u:hunter2@127.0.0.1", "postgres"],
        ["postgres:u:hunter2@127.0.0.1/test", "postgres"],
        ["PostgreSQL:/u:hunter2@127.0.0.1/test", "PostgreSQL"],
        ["mysql:root:hunter2@127.0.0.1/test", "mysql"],
        ["mariadb:hunter2", "mariadb"],
      ] as const) {
        const message = `openSqlStorage's url starts with "${scheme}:" but not "${scheme}://" (write ${scheme}://user:password@host:port/database); nothing was opened`;
        expect(await refusal(url), url).toBe(message);
        const pending = await pendingMigrationsAt(url).then(
          () => null,
          (e: unknown) => e,
        );
        expect([pending instanceof StorageConfigError, (pending as Error).message], url).toEqual([true, message.replace("openSqlStorage's url", "pendingMigrationsAt's url")]);
      }
      // Nothing was created: until 2026-11-30 each of them opened (and made) a SQLite file by that name.
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      process.chdir(cwd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a URL the driver reads opens as before: pg reads a stray % in a password as it is (trust auth), and a MariaDB URL without one", async () => {
    const pg = new URL(POSTGRES_URL);
    pg.password = "hunter2%zz";
    for (const url of [pg.href.replace("%25zz", "%zz"), MYSQL_URL.replace(/^mysql:/, "mariadb:")]) {
      const storage = await openSqlStorage(url, { clientCache: false });
      try {
        expect(await storage.clients.get("open-url-test-no-such-client")).toBeNull();
      } finally {
        await storage.close();
      }
    }
  });
});
