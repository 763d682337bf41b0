/**
 * mysql2 names a server's errno from MySQL's list, where 4150 and 4151 are errors of MySQL's bulk
 * loader; on MariaDB a login gets them for an account blocked after `max_password_errors` failures
 * (4150, ER_USER_IS_BLOCKED) and a locked account (4151, ER_ACCOUNT_HAS_BEEN_LOCKED). The
 * StorageError names MariaDB's meaning. Until 2026-12-02 a locked account's open failed with
 * `mysql storage failed during open (ER_BULK_PARSER_INCOMPLETE_ESCAPE_SEQUENCE)`.
 */
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { StorageError } from "@plantgate/core";
import { expect, it } from "vitest";
import { driverErrorCode, openSqlStorage } from "../src/index.js";
import { describeIfReachable, MYSQL_URL, probeMysql } from "./support.js";

const problem = await probeMysql();

describeIfReachable("MariaDB's login error names", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", problem, () => {
  it("a locked account (MariaDB 4151): the StorageError says ER_ACCOUNT_HAS_BEEN_LOCKED, not mysql2's ER_BULK_PARSER_INCOMPLETE_ESCAPE_SEQUENCE", async (ctx) => {
    const admin = await mysql.createConnection({ uri: MYSQL_URL.replace(/^mariadb:/i, "mysql:") });
    const [[version]] = (await admin.query("select version() as v")) as unknown as [[{ v: string }]];
    if (!/MariaDB/i.test(version!.v)) {
      await admin.end();
      ctx.skip("MySQL answers a locked account with 3118, which mysql2 names right");
    }
    const user = `pg_sql_lock_${randomBytes(4).toString("hex")}`;
    try {
      await admin.query(`CREATE USER '${user}'@'%' IDENTIFIED BY 'pw-Hunter2' ACCOUNT LOCK`);
      const url = new URL(MYSQL_URL);
      url.username = user;
      url.password = "pw-Hunter2";
      let failure: unknown;
      try {
        // Migrating connects (the pool opens its first connection then): the login is refused there.
        const storage = await openSqlStorage(url.href);
        await storage.close();
      } catch (e) {
        failure = e;
      }
      expect(failure).toBeInstanceOf(StorageError);
      expect((failure as Error).message).toBe("mysql storage failed during migrate (ER_ACCOUNT_HAS_BEEN_LOCKED)");
      const cause = (failure as Error).cause as { errno?: unknown; code?: unknown; message?: unknown };
      // The driver's error is kept as it came (mysql2's name), under its own.
      expect({ errno: cause.errno, code: cause.code, message: cause.message }).toEqual({ errno: 4151, code: "ER_BULK_PARSER_INCOMPLETE_ESCAPE_SEQUENCE", message: "Access denied, this account is locked" });
      expect(driverErrorCode(cause)).toBe("ER_ACCOUNT_HAS_BEEN_LOCKED");
    } finally {
      await admin.query(`DROP USER IF EXISTS '${user}'@'%'`);
      await admin.end();
    }
  }, 30_000);
});

// 4150 needs the server-wide max_password_errors set low, which would block the accounts of every
// other test on a shared server: its name is checked on an error as mysql2 builds it.
it("driverErrorCode: MariaDB's names for 4150 and 4151 only where mysql2 gives MySQL's, every other code as it is", () => {
  expect(driverErrorCode({ errno: 4150, sqlState: "HY000", code: "ER_BULK_PARSER_UNEXPECTED_CHAR_AFTER_COLUMN_TERMINATOR" })).toBe("ER_USER_IS_BLOCKED");
  expect(driverErrorCode({ errno: 4151, sqlState: "HY000", code: "ER_BULK_PARSER_INCOMPLETE_ESCAPE_SEQUENCE" })).toBe("ER_ACCOUNT_HAS_BEEN_LOCKED");
  expect(driverErrorCode({ errno: 4151, code: "ER_ACCOUNT_HAS_BEEN_LOCKED" })).toBe("ER_ACCOUNT_HAS_BEEN_LOCKED");
  expect(driverErrorCode({ errno: 3118, code: "ER_ACCOUNT_HAS_BEEN_LOCKED" })).toBe("ER_ACCOUNT_HAS_BEEN_LOCKED");
  expect(driverErrorCode({ errno: 1045, code: "ER_ACCESS_DENIED_ERROR" })).toBe("ER_ACCESS_DENIED_ERROR");
  expect(driverErrorCode({ errno: -111, code: "ECONNREFUSED" })).toBe("ECONNREFUSED");
  expect(driverErrorCode({ code: "28P01" })).toBe("28P01");
  expect(driverErrorCode(new Error("no code"))).toBeUndefined();
  expect(driverErrorCode(null)).toBeUndefined();
});
