import { Kysely, sql, type DatabaseIntrospector, type DatabaseMetadataOptions, type Dialect, type SchemaMetadata, type TableMetadata } from "kysely";
import { D1Dialect } from "kysely-d1";
import type { D1DatabaseLike } from "./batch.js";
import type { Database } from "./schema.js";
import { createSqlStorage, type SqlStorage } from "./storage.js";

export type { D1DatabaseLike, D1PreparedStatementLike } from "./batch.js";
export type { SqlStorage } from "./storage.js";

/**
 * Kysely's SQLite introspector reads every table in sqlite_master, but D1 forbids access to its
 * internal `_cf_*` tables (SQLITE_AUTH), which breaks the Migrator. This one skips them.
 */
class D1Introspector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<any>) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    return [];
  }

  async getTables(options: DatabaseMetadataOptions = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const { rows } = await sql<{ table: string; type: string; name: string; col_type: string; notnull: number; dflt_value: unknown; pk: number }>`
      select m.name as "table", m.type as type, p.name as name, p.type as col_type, p."notnull" as "notnull", p.dflt_value as dflt_value, p.pk as pk
      from sqlite_master m, pragma_table_info(m.name) p
      where m.type in ('table', 'view') and substr(m.name, 1, 7) <> 'sqlite_' and substr(m.name, 1, 4) <> '_cf_'
      order by m.name, p.cid`.execute(this.db);
    const tables = new Map<string, TableMetadata>();
    for (const r of rows) {
      const table = tables.get(r.table) ?? { name: r.table, isView: r.type === "view", columns: [] };
      tables.set(r.table, table);
      (table.columns as TableMetadata["columns"][number][]).push({
        name: r.name,
        dataType: r.col_type,
        isNullable: !r.notnull,
        isAutoIncrementing: r.pk > 0 && r.col_type.toLowerCase() === "integer",
        hasDefaultValue: r.dflt_value !== null,
      });
    }
    const internal = new Set(["kysely_migration", "kysely_migration_lock"]);
    return [...tables.values()].filter((t) => options.withInternalKyselyTables || !internal.has(t.name));
  }

  async getMetadata(options?: DatabaseMetadataOptions): Promise<{ tables: TableMetadata[] }> {
    return { tables: await this.getTables(options) };
  }
}

/**
 * Options of {@link createD1Storage}.
 *
 * @example
 * const storage = createD1Storage(env.DB, { onClose: async () => {} });
 */
export interface CreateD1StorageOptions {
  /** Runs after `close()`; D1 bindings need no closing. */
  onClose?: () => Promise<void>;
  /** Keep security events in an audit store (see `CreateSqlStorageOptions.audit`). Default false. */
  audit?: boolean;
}

/**
 * plantgate `Storage` on a Cloudflare D1 binding (through `kysely-d1`). D1 has no SQL
 * transactions, so migrations run statement by statement and the two multi-statement writes
 * (`refreshTokens.consume`, `accounts.createMany`) each run as one atomic D1 `batch()`. Does not
 * migrate; call `migrate()` once (e.g. from a deploy step) before serving.
 * This entry imports no Node driver, so a Worker bundle stays free of them.
 *
 * @example
 * import { createD1Storage } from "@plantgate/storage-sql/d1";
 *
 * export default {
 *   async fetch(request: Request, env: { DB: D1Database }) {
 *     const storage = createD1Storage(env.DB);
 *     return createPlantgate({ storage }).fetch(request);
 *   },
 * };
 */
export function createD1Storage(database: D1DatabaseLike, options: CreateD1StorageOptions = {}): SqlStorage {
  // kysely-d1 types its binding with @cloudflare/workers-types; ours is the structural subset.
  const d1 = new D1Dialect({ database: database as ConstructorParameters<typeof D1Dialect>[0]["database"] });
  const dialect: Dialect = {
    createAdapter: () => d1.createAdapter(),
    createDriver: () => d1.createDriver(),
    createQueryCompiler: () => d1.createQueryCompiler(),
    createIntrospector: (db) => new D1Introspector(db),
  };
  const db = new Kysely<Database>({ dialect });
  return createSqlStorage(db, "sqlite", { d1: database, ...(options.onClose ? { onClose: options.onClose } : {}), ...(options.audit === true ? { audit: true } : {}) });
}
