// migrations.ts as it was before 10fd88f (2026-12-02), Kysely's default migration lock and all, for
// test/migration-lock-mixed-version.test.ts: an instance of that release migrating beside this one.
// Its PostgreSQL and MySQL/MariaDB path only (the SQLite one is cut).
import { Migrator, sql, type DatabaseIntrospector, type Kysely, type MigrationProvider, type TableMetadata } from "kysely";
import { SchemaTooNewError, toStorageError } from "../src/errors.js";
import { migrations } from "../src/migrations/steps.js";
import { TABLES, type SqlFamily } from "../src/schema.js";

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
 * `db` as Kysely's Migrator should see it on PostgreSQL: the same, except that its introspection
 * is {@link tablesIn} the current schema (the Migrator asks `db.introspection` whether its two
 * tables and their schema exist). Methods are called on `db` itself (Kysely keeps its state in
 * private fields, which a proxy as `this` cannot read).
 */
function withSchemaIntrospection(db: Kysely<any>, schema: string): Kysely<any> {
  const introspection: DatabaseIntrospector = {
    getSchemas: async () => [{ name: schema }],
    getTables: () => tablesIn(db, schema),
    getMetadata: async () => ({ tables: await tablesIn(db, schema) }),
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === "introspection") return introspection;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function executedMigrations(db: Kysely<any>, schema: string | undefined): Promise<string[]> {
  const tables = schema === undefined ? await db.introspection.getTables({ withInternalKyselyTables: true }) : await tablesIn(db, schema);
  if (!tables.some((t) => t.name === TABLES.migrations && (schema === undefined || t.schema === schema))) return [];
  const rows = await (schema === undefined ? db : db.withSchema(schema)).selectFrom(TABLES.migrations).select("name").execute();
  return rows.map((r) => String(r.name));
}

async function refuseNewer(db: Kysely<any>, schema: string | undefined, knownNames: Set<string>, supported: number): Promise<void> {
  const executed = await executedMigrations(db, schema);
  const unknown = executed.filter((name) => !knownNames.has(name));
  if (unknown.length === 0) return;
  const versions = executed.map(versionOf).filter((v) => !Number.isNaN(v));
  throw new SchemaTooNewError(Math.max(supported + 1, ...versions), supported, unknown.sort());
}

/**
 * The migrations this code knows that the database has not applied yet, oldest first (empty when
 * the schema is current), reading only: nothing is created or locked (a database never migrated
 * has all of them pending). Refuses a newer schema with `SchemaTooNewError`, as `migrate()` does.
 * For a command that must not change the schema as a side effect (the CLI's, except `migrate`).
 */
export async function pendingMigrationsOf(db: Kysely<any>, family: SqlFamily): Promise<string[]> {
  const known = migrations(family);
  const knownNames = new Set(known.map(([name]) => name));
  const schema = await currentSchema(db, family);
  await refuseNewer(db, schema, knownNames, LATEST_SCHEMA_VERSION);
  const executed = new Set(await executedMigrations(db, schema));
  return known.map(([name]) => name).filter((name) => !executed.has(name));
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
 * holds a migration this code does not know. Safe to run from several instances at once.
 */
export async function migrateToLatest(db: Kysely<any>, family: SqlFamily): Promise<void> {
  await migrateToVersion(db, family, LATEST_SCHEMA_VERSION);
}

/**
 * Applies the migrations up to schema `version` only, as an older release of this package would
 * (any later one counts as unknown). Not exported from the package: the upgrade tests use it to
 * build a database at an earlier version.
 */
export async function migrateToVersion(db: Kysely<any>, family: SqlFamily, version: number): Promise<void> {
  const known = migrations(family).slice(0, version);
  const knownNames = new Set(known.map(([name]) => name));
  // On PostgreSQL the migration table is looked up in the current schema only; otherwise a
  // plantgate schema elsewhere in the same database would look like ours.
  const schema = await currentSchema(db, family);
  const provider: MigrationProvider = { getMigrations: async () => Object.fromEntries(known) };
  const migrate = async (conn: Kysely<any>, disableTransactions: boolean) => {
    await refuseNewer(conn, schema, knownNames, version);
    const migrator = new Migrator({
      db: schema === undefined ? conn : withSchemaIntrospection(conn, schema),
      provider,
      migrationTableName: TABLES.migrations,
      migrationLockTableName: TABLES.migrationLock,
      ...(schema === undefined ? {} : { migrationTableSchema: schema }),
      allowUnorderedMigrations: false,
      disableTransactions,
    });
    const { error } = await migrator.migrateToLatest();
    if (error === undefined) return;
    // A newer instance may have migrated between our check and Kysely's lock: say so plainly.
    await refuseNewer(conn, schema, knownNames, version);
    throw error;
  };

  if (family === "sqlite") throw new Error("only the PostgreSQL and MySQL/MariaDB path of the older release is kept here");
  // Kysely's Migrator locks (an advisory lock on PostgreSQL, GET_LOCK on MySQL) and runs each
  // migration in a transaction where the engine allows.
  await migrate(db, false);
}
