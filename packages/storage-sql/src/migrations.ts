import { Migrator, sql, type DatabaseIntrospector, type DialectAdapter, type Kysely, type MigrationProvider, type TableMetadata } from "kysely";
import { SchemaTooNewError, toStorageError } from "./errors.js";
import { MIGRATION_LOCK_WAIT_MS, scopedMigrationLock, type MigrationLockOptions } from "./migration-lock.js";
import { migrations } from "./migrations/steps.js";
import { TABLES, type SqlFamily } from "./schema.js";

// Migrations live in code (no files on disk) so they ship inside the bundle and run in workerd
// (the steps are in migrations/steps.ts). Names sort in order and start with their version number;
// never edit one that has shipped.

/**
 * The schema version this code creates and understands: the number of its migrations. A database
 * with more is refused with `SchemaTooNewError`.
 *
 * @example
 * console.log(`plantgate SQL schema v${LATEST_SCHEMA_VERSION}`);
 */
export const LATEST_SCHEMA_VERSION: number = migrations("sqlite").length;

const versionOf = (name: string): number => {
  const n = Number.parseInt(name, 10);
  return Number.isSafeInteger(n) ? n : Number.NaN;
};

/** The schema the unqualified table names resolve to (PostgreSQL's search_path), else undefined. */
async function currentSchema(db: Kysely<any>, family: SqlFamily): Promise<string | undefined> {
  if (family !== "postgres") return undefined;
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (!schema) throw new Error("PostgreSQL has no current schema: the search_path names no existing schema.");
  return schema;
}

/**
 * The tables of `schema` (PostgreSQL), for the migrator's "does the table exist" questions.
 * Kysely's own PostgreSQL introspection reads every column of every table in the whole database
 * and resolves each schema's name while doing so (`has_schema_privilege`,
 * `pg_get_serial_sequence`): its cost grows with whatever else the database holds, and a schema
 * dropped by someone else in the middle of it failed plantgate's start with "schema ... does not
 * exist" (3F000). This reads the catalog rows of the one schema, by name, and nothing else.
 */
async function tablesIn(db: Kysely<any>, schema: string): Promise<TableMetadata[]> {
  const { rows } = await sql<{ name: string; view: boolean }>`
    select c.relname as name, c.relkind = 'v' as view
    from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relkind in ('r', 'p', 'v')`.execute(db);
  // Column lists are left empty: the migrator only asks which tables exist.
  return rows.map((r) => ({ name: r.name, schema, isView: r.view, columns: [] }));
}

/**
 * `db` as Kysely's Migrator should see it: the same, except that on PostgreSQL its introspection is
 * {@link tablesIn} the current schema (the Migrator asks `db.introspection` whether its two tables
 * and their schema exist), and that its executor's adapter, where the Migrator finds the migration
 * lock, is `adapter` when given. Methods are called on `db` itself (Kysely keeps its state in
 * private fields, which a proxy as `this` cannot read).
 */
function forMigrator(db: Kysely<any>, schema: string | undefined, adapter: DialectAdapter | undefined): Kysely<any> {
  if (schema === undefined && adapter === undefined) return db;
  const introspection: DatabaseIntrospector | undefined =
    schema === undefined
      ? undefined
      : {
          getSchemas: async () => [{ name: schema }],
          getTables: () => tablesIn(db, schema),
          getMetadata: async () => ({ tables: await tablesIn(db, schema) }),
        };
  const bound = <T extends object>(target: T, property: string | symbol): unknown => {
    const value: unknown = Reflect.get(target, property, target);
    return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
  };
  const executor = (): unknown => {
    const base = db.getExecutor();
    return adapter === undefined ? base : new Proxy(base, { get: (target, property) => (property === "adapter" ? adapter : bound(target, property)) });
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === "introspection" && introspection !== undefined) return introspection;
      if (property === "getExecutor") return executor;
      return bound(target, property);
    },
  });
}

async function executedMigrations(db: Kysely<any>, schema: string | undefined): Promise<string[]> {
  const tables = schema === undefined ? await db.introspection.getTables({ withInternalKyselyTables: true }) : await tablesIn(db, schema);
  if (!tables.some((t) => t.name === TABLES.migrations && (schema === undefined || t.schema === schema))) return [];
  const rows = await (schema === undefined ? db : db.withSchema(schema)).selectFrom(TABLES.migrations).select("name").execute();
  return rows.map((r) => String(r.name));
}

/** The names of `known` not applied yet, oldest first; a database holding one not known is refused. */
async function pendingIn(db: Kysely<any>, schema: string | undefined, known: ReadonlyArray<readonly [string, unknown]>, supported: number): Promise<string[]> {
  const executed = await executedMigrations(db, schema);
  const knownNames = new Set(known.map(([name]) => name));
  const unknown = executed.filter((name) => !knownNames.has(name));
  if (unknown.length > 0) {
    const versions = executed.map(versionOf).filter((v) => !Number.isNaN(v));
    throw new SchemaTooNewError(Math.max(supported + 1, ...versions), supported, unknown.sort());
  }
  const done = new Set(executed);
  return known.map(([name]) => name).filter((name) => !done.has(name));
}

/**
 * The migrations this code knows that the database has not applied yet, oldest first (empty when
 * the schema is current), reading only: nothing is created or locked (a database never migrated
 * has all of them pending). Refuses a newer schema with `SchemaTooNewError`, as `migrate()` does.
 * For a command that must not change the schema as a side effect (the CLI's, except `migrate`).
 */
export async function pendingMigrationsOf(db: Kysely<any>, family: SqlFamily): Promise<string[]> {
  return pendingIn(db, await currentSchema(db, family), migrations(family), LATEST_SCHEMA_VERSION);
}

/**
 * {@link pendingMigrationsOf} for an opened storage (`openSqlStorage(url, { migrate: false })`):
 * the names of the migrations it has not applied yet, oldest first; empty when its schema is
 * current. Reads only. A newer schema is refused with `SchemaTooNewError`; a database that cannot
 * be reached with core's `StorageError` (operation "open").
 *
 * @example
 * const storage = await openSqlStorage(url, { migrate: false });
 * const pending = await pendingMigrations(storage);
 * if (pending.length > 0) throw new Error(`run the migrations first (${pending.length} pending)`);
 */
export async function pendingMigrations(storage: { readonly db: Kysely<any>; readonly family: SqlFamily }): Promise<string[]> {
  try {
    return await pendingMigrationsOf(storage.db, storage.family);
  } catch (e) {
    throw toStorageError(e, storage.family, "open");
  }
}

/**
 * Applies every pending migration. Refuses, before changing anything, a database that already
 * holds a migration this code does not know. Safe to run from several instances at once: on
 * PostgreSQL and MySQL/MariaDB under a lock of plantgate's own (see {@link scopedMigrationLock}),
 * taken only when something is pending; `lock` says how it is waited for.
 */
export async function migrateToLatest(db: Kysely<any>, family: SqlFamily, lock: MigrationLockOptions = {}): Promise<void> {
  await migrateToVersion(db, family, LATEST_SCHEMA_VERSION, lock);
}

/**
 * Applies the migrations up to schema `version` only, as an older release of this package would
 * (any later one counts as unknown). Not exported from the package: the upgrade tests use it to
 * build a database at an earlier version.
 */
export async function migrateToVersion(db: Kysely<any>, family: SqlFamily, version: number, lock: MigrationLockOptions = {}): Promise<void> {
  const known = migrations(family).slice(0, version);
  // On PostgreSQL the migration table is looked up in the current schema only; otherwise a
  // plantgate schema elsewhere in the same database would look like ours.
  const schema = await currentSchema(db, family);
  const provider: MigrationProvider = { getMigrations: async () => Object.fromEntries(known) };
  const migrate = async (conn: Kysely<any>, disableTransactions: boolean, adapter?: DialectAdapter) => {
    await pendingIn(conn, schema, known, version);
    const migrator = new Migrator({
      db: forMigrator(conn, schema, adapter),
      provider,
      migrationTableName: TABLES.migrations,
      migrationLockTableName: TABLES.migrationLock,
      ...(schema === undefined ? {} : { migrationTableSchema: schema }),
      allowUnorderedMigrations: false,
      disableTransactions,
    });
    const { error } = await migrator.migrateToLatest();
    if (error === undefined) return;
    // A newer instance may have migrated between our check and the lock: say so plainly.
    await pendingIn(conn, schema, known, version);
    throw error;
  };

  if (family !== "sqlite") {
    // Up to date (the usual start): no lock taken, nothing created. Else Kysely's Migrator takes
    // plantgate's lock, reads again under it which migrations are pending (another instance may
    // have applied them meanwhile), and runs each in a transaction where the engine allows.
    if ((await pendingIn(db, schema, known, version)).length === 0) return;
    await migrate(db, false, scopedMigrationLock(db.getExecutor().adapter, family, schema, lock));
    return;
  }
  // Kysely assumes one connection per SQLite database and takes no lock, but several processes
  // (or connections) can open one file. BEGIN IMMEDIATE takes the write lock before anything is
  // read, so a second migrator waits (see beginImmediate) and then finds the work done. Within one
  // process migrations of one file are also queued in memory first.
  await inProcessQueue(await sqliteFile(db), () =>
    db.connection().execute(async (conn) => {
      await beginImmediate(conn);
      try {
        await migrate(conn, true);
      } catch (e) {
        await sql`rollback`.execute(conn).catch(() => {});
        throw e;
      }
      await sql`commit`.execute(conn);
    }),
  );
}

/** The longest a SQLite migrator waits for another's write lock, as on the other engines. */
const SQLITE_MIGRATION_LOCK_WAIT_MS = MIGRATION_LOCK_WAIT_MS;

/**
 * BEGIN IMMEDIATE on a SQLite connection, waiting for another connection's write lock (another
 * process migrating the file) for up to {@link SQLITE_MIGRATION_LOCK_WAIT_MS}, with the event loop
 * free: busy_timeout 0 for the BEGIN, and an SQLITE_BUSY is tried again after a timer. Until
 * 2026-12-01 the wait was the connection's busy_timeout (5 s), blocking the thread (better-sqlite3
 * is synchronous), and a start beside a migration longer than that failed with SQLITE_BUSY, as on
 * PostgreSQL and MySQL a second migrator waits for the migration lock.
 */
async function beginImmediate(conn: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ timeout: number }>`pragma busy_timeout`.execute(conn);
  const timeout = Number(rows[0]?.timeout ?? 5000);
  await sql.raw("pragma busy_timeout = 0").execute(conn);
  try {
    const deadline = Date.now() + SQLITE_MIGRATION_LOCK_WAIT_MS;
    for (let pause = 20; ; pause = Math.min(pause * 2, 250)) {
      try {
        await sql`begin immediate`.execute(conn);
        return;
      } catch (e) {
        // SQLITE_BUSY and its extended codes (SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_RECOVERY on WAL).
        const code = (e as { code?: unknown } | null)?.code;
        if (typeof code !== "string" || !code.startsWith("SQLITE_BUSY") || Date.now() + pause > deadline) throw e;
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  } finally {
    await sql.raw(`pragma busy_timeout = ${Number.isSafeInteger(timeout) && timeout >= 0 ? timeout : 5000}`).execute(conn);
  }
}

/** The main database file of a SQLite connection; "" for in-memory (or when the driver won't say). */
async function sqliteFile(db: Kysely<any>): Promise<string> {
  try {
    const { rows } = await sql<{ file: string | null }>`select file from pragma_database_list where name = 'main'`.execute(db);
    return rows[0]?.file ?? "";
  } catch {
    return "";
  }
}

const queues = new Map<string, Promise<unknown>>();

/** Runs `fn` after every earlier call with the same key has settled; "" is not queued. */
async function inProcessQueue<T>(key: string, fn: () => Promise<T>): Promise<T> {
  if (key === "") return fn();
  const previous = queues.get(key) ?? Promise.resolve();
  const current = previous.catch(() => {}).then(fn);
  queues.set(key, current);
  try {
    return await current;
  } finally {
    if (queues.get(key) === current) queues.delete(key);
  }
}
