/**
 * `pendingMigrationsAt(url)`: which migrations the database at a URL lacks, on a connection that
 * writes nothing. A real SQLite file each: a zero-byte one stays zero bytes (no WAL header, no
 * -wal or -shm), a migrated WAL-mode one keeps its bytes and gets no -wal or -shm left beside it,
 * a missing one is not created.
 */
import { StorageError } from "@plantgate/core";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LATEST_SCHEMA_VERSION, openSqlStorage, pendingMigrationsAt, SchemaTooNewError, StorageConfigError } from "../src/index.js";
import { migrateToVersion } from "../src/migrations.js";
import { sql } from "kysely";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "plantgate-pending-at-"));
  dirs.push(dir);
  return dir;
};
/** Every file of the folder with its bytes and modification time. */
const files = (dir: string) => Object.fromEntries(readdirSync(dir).sort().map((n) => [n, { bytes: readFileSync(join(dir, n)).toString("base64"), mtimeMs: statSync(join(dir, n)).mtimeMs }]));

describe("pendingMigrationsAt", () => {
  it("a zero-byte SQLite file: every migration pending, the file still zero bytes and alone", async () => {
    const dir = tempDir();
    const file = join(dir, "empty.db");
    writeFileSync(file, "");
    const before = files(dir);
    const pending = await pendingMigrationsAt(file);
    expect(pending).toHaveLength(LATEST_SCHEMA_VERSION);
    expect(pending[0]).toMatch(/^0001_/);
    expect(await pendingMigrationsAt(`sqlite:${file}`)).toEqual(pending);
    expect(files(dir)).toEqual(before);
    expect(statSync(file).size).toBe(0);
  });

  it("a WAL-mode file behind, current or ahead: what it lacks, or SchemaTooNewError; its bytes unchanged, no -wal or -shm left", async () => {
    const dir = tempDir();
    const file = join(dir, "older.db");
    const older = await openSqlStorage(file, { migrate: false, sqliteCheckpoints: "inline" });
    await migrateToVersion(older.db as never, "sqlite", LATEST_SCHEMA_VERSION - 1);
    await older.close();
    let before = files(dir);
    expect(Object.keys(before)).toEqual(["older.db"]);
    expect((await pendingMigrationsAt(file)).length).toBe(1);
    expect(files(dir)).toEqual(before);

    const current = await openSqlStorage(file, { sqliteCheckpoints: "inline" });
    await sql`insert into pg_migrations (name, timestamp) values ('9999_future', '2030-01-01T00:00:00.000Z')`.execute(current.db);
    await current.close();
    before = files(dir);
    const failure = await pendingMigrationsAt(file).then(() => null, (e: unknown) => e);
    expect(failure).toBeInstanceOf(SchemaTooNewError);
    expect(files(dir)).toEqual(before);
  });

  it("a file that is not there is not created (StorageError, operation open); a URL its driver cannot parse is StorageConfigError naming the argument", async () => {
    const dir = tempDir();
    const failure = await pendingMigrationsAt(join(dir, "missing.db")).then(() => null, (e: unknown) => e);
    expect(failure).toBeInstanceOf(StorageError);
    expect((failure as Error).message).toBe("sqlite storage failed during open (SQLITE_CANTOPEN)");
    expect(readdirSync(dir)).toEqual([]);
    const malformed = await pendingMigrationsAt("mysql://root:hunter2%zz@127.0.0.1:3306/test").then(() => null, (e: unknown) => e);
    expect(malformed).toBeInstanceOf(StorageConfigError);
    expect((malformed as Error).message).toMatch(/^pendingMigrationsAt's url \(mysql:\/\/root:\*\*\*@127\.0\.0\.1:3306\/test\) has a malformed percent-escape in its password: /);
  });
});
