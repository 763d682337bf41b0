import { inspect } from "node:util";
/**
 * What the storage environment prints and leaves on disk: connection URLs without their
 * passwords (userinfo and query, and an unparsable URL shown as its scheme only), and a new SQLite
 * database (with its -wal and -shm files) and its new folder readable by this user only.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStorageFromEnv, redactUrl, storageUrlFromEnv, StorageConfigError } from "../src/env.js";
import type { SqlStorage } from "../src/index.js";

const dirs: string[] = [];
const opened: SqlStorage[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const mode = (path: string) => statSync(path).mode & 0o777;

describe("storage env: secrets", () => {
  it("redactUrl hides the userinfo password, secret query parameters, and everything of an unparsable URL but its scheme", () => {
    expect(redactUrl("postgres://app:hunter2@db.internal:5432/plantgate")).toBe("postgres://app:***@db.internal:5432/plantgate");
    expect(redactUrl("postgres://app@db.internal/plantgate?password=hunter2&sslmode=require&sslpassword=pw2&sslkey=%2Fk")).toBe(
      "postgres://app@db.internal/plantgate?password=***&sslmode=require&sslpassword=***&sslkey=***",
    );
    expect(redactUrl("mysql://root@127.0.0.1:3306/test")).toBe("mysql://root@127.0.0.1:3306/test");
    // A base64 password with an unescaped "/": where the userinfo ends cannot be told.
    expect(redactUrl("postgres://plantgate:Zm9v/YmFy+cXV4@db.internal:5432/plantgate")).toBe("postgres://*** (not a valid URL: shown without its address)");
    expect(redactUrl("no scheme at all hunter2")).toBe("*** (not a valid URL)");
    // Digits first and an unescaped "/", "?" or "#": it parses, as a port and a path, query or fragment.
    for (const password of ["2024/Spring", "1234#tail", "42?x=hunter2"]) {
      expect(redactUrl(`postgres://admin:${password}@db.internal:5432/app`)).toBe("postgres://*** (userinfo not parsable: shown without its address)");
    }
    // An "@" in it and then "/", "?" or "#": a userinfo is parsed, ending at that "@", and the rest of
    // the password reads as the host and the path, query or fragment (shown until 2026-12-01).
    for (const password of ["hunter2@zqsec/xkwd", "hunter2@zqsec?xkwd", "hunter2@zqsec#xkwd"]) {
      expect(redactUrl(`postgres://admin:${password}@db.internal:5432/app`)).toBe("postgres://*** (userinfo not parsable: shown without its address)");
    }
    // Two "@" in the authority alone: the parser takes the last one, and the password is whole.
    expect(redactUrl("postgres://admin:hunter2@zqsec@db.internal:5432/app")).toBe("postgres://admin:***@db.internal:5432/app");
  });

  it("such a URL is refused before any driver sees it, naming nothing of the password (the host tried was part of it: ENOTFOUND zqsec)", async () => {
    for (const url of ["postgres://admin:hunter2@zqsec/xkwd@127.0.0.1:1/test", "mysql://root:hunter2@zqsec?xkwd@127.0.0.1:1/test"]) {
      const failure = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: url }, { cwd: "/" }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(failure).toBeInstanceOf(StorageConfigError);
      expect((failure as Error).message).toBe(
        'PLANTGATE_DATABASE_URL is not a valid URL: an "@" follows its host, so where its user name and password end cannot be told: percent-encode any @ : / ? # in the user name or password (@ as %40); nothing was opened',
      );
      for (const part of ["hunter2", "zqsec", "xkwd"]) expect(inspect(failure, { depth: 10 })).not.toContain(part);
    }
  });

  it("the store address printed at start-up and in the unreachable-store error holds no password", async () => {
    const url = "postgres://app@127.0.0.1:1/test?password=hunter2hunter2";
    expect(storageUrlFromEnv({ PLANTGATE_DATABASE_URL: url }, "/").display).toBe("postgres://app@127.0.0.1:1/test?password=***");
    const failure = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: "postgres://plantgate:Zm9v/hunter2@127.0.0.1:1/test" }, { cwd: "/" }).then(
      () => null,
      (e: unknown) => e,
    );
    // A password with an unescaped "/" leaves pg a port that is not a number: refused before any driver sees it.
    expect(failure).toBeInstanceOf(StorageConfigError);
    expect((failure as Error).message).toBe(
      "PLANTGATE_DATABASE_URL is not a valid URL: check the host and the port (a number up to 65535), and percent-encode any @ : / ? # in the user name or password; nothing was opened",
    );
    expect((failure as StorageConfigError).cause).toBeUndefined();
  });

  it("a URL its driver would refuse to parse is a StorageConfigError naming PLANTGATE_DATABASE_URL, not an open failure; one it reads is passed on", () => {
    const refusal = (url: string) => {
      try {
        storageUrlFromEnv({ PLANTGATE_DATABASE_URL: url }, "/");
        return null;
      } catch (e) {
        expect(e).toBeInstanceOf(StorageConfigError);
        expect((e as Error).message).not.toContain("hunter2");
        return (e as Error).message;
      }
    };
    for (const url of ["postgres://u:hunter2@db.internal:notaport/db", "mariadb://u:hunter2@db.internal:65536/db"]) expect(refusal(url)).toMatch(/^PLANTGATE_DATABASE_URL is not a valid URL: /);
    // mysql2 decodes the user, password, host and database with decodeURIComponent, which throws on a malformed escape.
    expect(refusal("mysql://u:hunter2%zz@db.internal:3306/db")).toBe(
      "PLANTGATE_DATABASE_URL (mysql://u:***@db.internal:3306/db) has a malformed percent-escape in its password: % must be followed by two hexadecimal digits, and the escapes must spell UTF-8 (write a literal % as %25); nothing was opened",
    );
    expect(refusal("mysql://u@db.internal:3306/db%e")).toMatch(/malformed percent-escape in its database name/);
    // pg encodes a malformed escape and reads it as the characters themselves; a space too.
    expect(refusal("postgres://u:hunter2%zz@db.internal:5432/db")).toBeNull();
    expect(refusal("postgres://u:hunter 2@db.internal:5432/db")).toBeNull();
    expect(refusal("postgres://u:hunter2@/db")).toBeNull();
  });

  it("a postgres:// URL whose ?user=, ?password= or ?host= stands in for a part pg would otherwise decode is passed on, as pg reads it", () => {
    // pg-connection-string: `config.user = config.user || decodeURIComponent(result.username)`, and
    // the same for the password and the host: a query parameter given, that part is never decoded,
    // so an escape that does not decode there (%ff: not UTF-8) is no refusal of pg's.
    for (const url of [
      "postgres://%ff@db.internal:5432/db?user=app",
      "postgres://app:%ff@db.internal:5432/db?password=hunter2",
      "postgres://app:hunter2@%ff/db?host=db.internal",
      "postgres://app:hunter2@db%ff.internal/db?host=/var/run/postgresql",
    ]) expect(storageUrlFromEnv({ PLANTGATE_DATABASE_URL: url }, "/").url, url).toBe(url);
    // Without the parameter (or with an empty one, which pg treats as absent) pg decodes that part and throws: still refused.
    for (const [url, part] of [
      ["postgres://%ff@db.internal:5432/db", "user name"],
      ["postgres://%ff@db.internal:5432/db?user=", "user name"],
      ["postgres://app:%ff@db.internal:5432/db?user=app", "password"],
      ["postgres://app:hunter2@db%ff.internal/db?user=app", "host"],
      // A URL-encoded socket path as the host, with ?host=: pg moves it in front of the database name and decodes that.
      ["postgres://app:hunter2@%2Fsock%ff/db?host=db.internal", "database name"],
    ] as const) {
      expect(() => storageUrlFromEnv({ PLANTGATE_DATABASE_URL: url }, "/"), url).toThrow(new RegExp(`malformed percent-escape in its ${part}:`));
    }
  });

  it("a new SQLite database and its new folder are this user's only (0600, 0700); an existing file keeps its mode", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plantgate-env-"));
    dirs.push(dir);
    const storage = await openStorageFromEnv({ PLANTGATE_DB: join(dir, "data", "plantgate.db") }, { cwd: dir });
    opened.push(storage);
    await storage.clients.list();
    expect(mode(join(dir, "data"))).toBe(0o700);
    expect(mode(join(dir, "data", "plantgate.db"))).toBe(0o600);
    expect(mode(join(dir, "data", "plantgate.db-wal"))).toBe(0o600);
    expect(mode(join(dir, "data", "plantgate.db-shm"))).toBe(0o600);
    const mine = join(dir, "mine.db");
    writeFileSync(mine, "", { mode: 0o640 });
    opened.push(await openStorageFromEnv({ PLANTGATE_DB: mine }, { cwd: dir }));
    expect(mode(mine)).toBe(0o640);
  });

  it("a database path that cannot be opened (a folder) is a StorageConfigError naming it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plantgate-env-"));
    dirs.push(dir);
    const failure = await openStorageFromEnv({ PLANTGATE_DB: dir }, { cwd: dir }).then(() => null, (e: unknown) => e);
    expect(failure).toBeInstanceOf(StorageConfigError);
    expect((failure as Error).message).toMatch(new RegExp(`^cannot open the store at SQLite ${dir}: `));
  });
});
