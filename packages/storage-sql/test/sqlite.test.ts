import Database from "better-sqlite3";
import { describeStorageConformance } from "@plantgate/storage-testing";
import { Kysely, SqliteDialect } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { createSqlStorage, openSqlStorage, StorageConfigError, type Database as Tables, type SqlStorage } from "../src/index.js";
import { parseStorageUrl } from "../src/open.js";
import { describeSqlBehaviour } from "./behaviour.js";
import { conformanceTarget, rawDump, sqliteEngine } from "./support.js";

const engine = sqliteEngine();

// No `connect`: a second connection to the file in this process would wait for the first one's
// write lock on the one thread (better-sqlite3 is synchronous), which only its own commit could
// release. Separate processes serialise on that lock; one process has one connection per file.
// connectWithoutAudit stays: its case makes one call at a time, never beside a write of the first.
const { connect: _connect, ...fileTarget } = conformanceTarget(engine, "database");
describeStorageConformance("sqlite (file per test)", fileTarget);

describeStorageConformance("sqlite (:memory:)", {
  create: () => openSqlStorage(":memory:"),
  destroy: (storage) => (storage as SqlStorage).close(),
  rawDump,
});

describeSqlBehaviour(engine);

describe("sqlite specifics", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  it("data survives closing and reopening the file", async () => {
    const db = await engine.fresh();
    cleanups.push(() => db.drop());
    const first = await openSqlStorage(db.url);
    await first.plants.create({ id: -9223372036854775808n, name: "min", tag: null });
    await first.close();
    const second = await openSqlStorage(db.url.slice("sqlite:".length));
    cleanups.push(() => second.close());
    expect(await second.plants.get(-9223372036854775808n)).toEqual({ id: -9223372036854775808n, name: "min", tag: null });
  });

  it("a Kysely instance of your own works, even with better-sqlite3 safe integers on (as D1-style drivers differ)", async () => {
    const database = new Database(":memory:");
    database.defaultSafeIntegers(true);
    let closedHook = false;
    const storage = createSqlStorage(new Kysely<Tables>({ dialect: new SqliteDialect({ database }) }), "sqlite", {
      onClose: async () => {
        closedHook = true;
      },
    });
    await storage.migrate();
    await storage.plants.create({ id: 9223372036854775807n, name: "max", tag: "t" });
    expect(await storage.plants.get(9223372036854775807n)).toEqual({ id: 9223372036854775807n, name: "max", tag: "t" });
    await storage.accounts.create({ id: "a", username: "a", displayName: null, email: null, roles: ["r"], enabled: false, createdAt: 8_640_000_000_000_000, passwordHash: "h" });
    const account = await storage.accounts.get("a");
    expect(account?.createdAt).toBe(8_640_000_000_000_000);
    expect(account?.enabled).toBe(false);
    expect((await storage.accounts.list(0, 1)).total).toBe(1);
    await storage.close();
    expect(closedHook).toBe(true);
    expect(database.open).toBe(false);
  });

  it("parses every URL form, and names no secret when refusing one", () => {
    expect(parseStorageUrl("postgres://u:p@h/db")).toEqual({ family: "postgres", url: "postgres://u:p@h/db" });
    expect(parseStorageUrl("postgresql://h/db")).toEqual({ family: "postgres", url: "postgresql://h/db" });
    expect(parseStorageUrl("mysql://h/db")).toEqual({ family: "mysql", url: "mysql://h/db" });
    expect(parseStorageUrl("mariadb://u:p@h:3307/db")).toEqual({ family: "mysql", url: "mysql://u:p@h:3307/db" });
    expect(parseStorageUrl("sqlite:data/pg.db")).toEqual({ family: "sqlite", path: "data/pg.db" });
    expect(parseStorageUrl("sqlite:///var/pg.db")).toEqual({ family: "sqlite", path: "/var/pg.db" });
    expect(parseStorageUrl("sqlite::memory:")).toEqual({ family: "sqlite", path: ":memory:" });
    expect(parseStorageUrl(":memory:")).toEqual({ family: "sqlite", path: ":memory:" });
    expect(parseStorageUrl("./pg.db")).toEqual({ family: "sqlite", path: "./pg.db" });
    expect(() => parseStorageUrl("redis://user:hunter2@h")).toThrow(new StorageConfigError('the database URL (redis://user:***@h) has an unsupported scheme "redis:" (use postgres:, postgresql:, mysql:, mariadb: or sqlite:, or a SQLite file path); nothing was opened'));
    expect(() => parseStorageUrl("redis://user:hunter2@h")).not.toThrow(/hunter2/);
    expect(() => parseStorageUrl("sqlite:")).toThrow(StorageConfigError);
  });
});
