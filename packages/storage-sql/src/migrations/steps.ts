/**
 * The schema migrations themselves, oldest first: the DDL of each version for every engine. The
 * runner (locking, refusing a newer schema, D1 without transactions) is in `../migrations.ts`.
 */
import { sql, type ColumnDataType, type ColumnDefinitionBuilder, type CreateIndexBuilder, type CreateTableBuilder, type Expression, type Kysely, type Migration } from "kysely";
import { TABLES, type SqlFamily } from "../schema.js";
import { clientAuthDown, clientAuthUp } from "./client-auth.js";
import { clientNotifyDown, clientNotifyUp } from "./client-notify.js";

// Migrations live in code (no files on disk) so they ship inside the bundle and run in workerd.
// Names sort in order and start with their version number; never edit one that has shipped.

type DataType = ColumnDataType | Expression<unknown>;

/** Column types per engine: the one place where the dialects' DDL differs. */
export interface ColumnTypes {
  /** Ids, usernames, hashes: compared exactly (case, trailing spaces) and ordered by code point. */
  key: DataType;
  /** Short text that is never compared. */
  text: DataType;
  /** JSON texts (arrays, JWKs) that may outgrow MySQL's 64 kB TEXT. */
  long: DataType;
  /** Text that must keep U+0000 (plant name and tag, from the public JSON API). */
  free: DataType;
  /** MySQL table options (engine, charset and binary no-pad collation), else undefined. */
  tableOptions: Expression<unknown> | undefined;
}

/**
 * MySQL/MariaDB collations that compare by code point *and* keep trailing spaces significant
 * ("alice" != "alice "). `utf8mb4_bin` pads, so it would make those two usernames collide.
 */
const NO_PAD_BINARY_COLLATIONS = ["utf8mb4_nopad_bin", "utf8mb4_0900_bin"] as const;

async function mysqlCollation(db: Kysely<any>): Promise<string> {
  const rows = await db
    .selectFrom("information_schema.COLLATIONS")
    .select("COLLATION_NAME as name")
    .where("COLLATION_NAME", "in", [...NO_PAD_BINARY_COLLATIONS])
    .execute();
  const available = new Set(rows.map((r) => String(r.name)));
  const found = NO_PAD_BINARY_COLLATIONS.find((c) => available.has(c));
  if (!found) {
    throw new Error(
      `@plantgate/storage-sql needs a binary NO PAD utf8mb4 collation (${NO_PAD_BINARY_COLLATIONS.join(" or ")}): MariaDB >= 10.2 or MySQL >= 8.0.`,
    );
  }
  return found;
}

export async function columnTypes(db: Kysely<any>, family: SqlFamily): Promise<ColumnTypes> {
  switch (family) {
    case "postgres":
      // "C" collation: byte order of UTF-8 = code point order, whatever the database's locale.
      return { key: sql`text collate "C"`, text: "text", long: "text", free: "bytea", tableOptions: undefined };
    case "mysql": {
      const collation = await mysqlCollation(db);
      return {
        // 255 utf8mb4 characters stay within InnoDB's 3072-byte index key limit.
        key: "varchar(255)",
        text: "text",
        long: sql`mediumtext`,
        free: "text",
        tableOptions: sql`engine = InnoDB default character set utf8mb4 collate ${sql.raw(collation)}`,
      };
    }
    case "sqlite":
      // SQLite's default BINARY collation already compares bytes exactly.
      return { key: "text", text: "text", long: "text", free: "text", tableOptions: undefined };
  }
}

/**
 * MySQL and MariaDB commit every DDL statement on its own (no transactional DDL), so a migration cut
 * short there (a crash, a lost connection, a deploy that killed the process) leaves its first
 * statements done and is not recorded: the next start runs it again from the top, where a plain
 * `CREATE TABLE` or `ADD COLUMN` of a step already done would fail, and the database would stay
 * unusable until someone repaired it by hand (before 2026-11-29). So on MySQL each step first asks
 * whether its own effect is there (information_schema) and data steps are written to be run again.
 * On PostgreSQL and SQLite a migration is one transaction (on D1 one batch), all of it or none; they
 * run the plain statements, unchanged (D1's are compiled from these ahead of time, see
 * `../d1/compile-migrations.ts`).
 */
export interface Steps {
  /** Whether this engine needs the checks (MySQL/MariaDB). */
  readonly resumable: boolean;
  createTable(builder: CreateTableBuilder<any, any>): Promise<void>;
  createIndex(table: string, index: string, build: (builder: CreateIndexBuilder<any>) => CreateIndexBuilder<any>): Promise<void>;
  dropIndex(table: string, index: string): Promise<void>;
  addColumn(table: string, column: string, type: DataType, build?: (column: ColumnDefinitionBuilder) => ColumnDefinitionBuilder): Promise<void>;
  dropColumn(table: string, column: string): Promise<void>;
  hasColumn(table: string, column: string): Promise<boolean>;
}

export function steps(db: Kysely<any>, family: SqlFamily): Steps {
  const resumable = family === "mysql";
  const exists = async (view: "columns" | "statistics", table: string, column?: [string, string]): Promise<boolean> => {
    let query = db
      .selectFrom(`information_schema.${view}`)
      .select(sql<number>`1`.as("found"))
      .where("TABLE_SCHEMA", "=", sql<string>`database()`)
      .where("TABLE_NAME", "=", table);
    if (column !== undefined) query = query.where(column[0], "=", column[1]);
    return (await query.limit(1).execute()).length > 0;
  };
  const hasIndex = (table: string, index: string) => exists("statistics", table, ["INDEX_NAME", index]);
  const hasColumn = (table: string, column: string) => exists("columns", table, ["COLUMN_NAME", column]);
  return {
    resumable,
    async createTable(builder) {
      await (resumable ? builder.ifNotExists() : builder).execute();
    },
    async createIndex(table, index, build) {
      if (resumable && (await hasIndex(table, index))) return;
      await build(db.schema.createIndex(index).on(table)).execute();
    },
    async dropIndex(table, index) {
      if (resumable && !(await hasIndex(table, index))) return;
      // MySQL names the table in DROP INDEX; the others reject it.
      const drop = db.schema.dropIndex(index);
      await (resumable ? drop.on(table) : drop).execute();
    },
    async addColumn(table, column, type, build) {
      if (resumable && (await hasColumn(table, column))) return;
      await db.schema.alterTable(table).addColumn(column, type, build).execute();
    },
    async dropColumn(table, column) {
      if (resumable && !(await hasColumn(table, column))) return;
      await db.schema.alterTable(table).dropColumn(column).execute();
    },
    async hasColumn(table, column) {
      return hasColumn(table, column);
    },
  };
}

async function initialUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const t = await columnTypes(db, family);
  const step = steps(db, family);
  const withOptions = <B extends { modifyEnd(e: Expression<unknown>): B }>(b: B): B => (t.tableOptions ? b.modifyEnd(t.tableOptions) : b);

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.clients)
      .addColumn("client_id", t.key, (c) => c.primaryKey().notNull())
      .addColumn("secret_hash", t.text, (c) => c.notNull())
      .addColumn("name", t.text, (c) => c.notNull())
      .addColumn("grant_types", t.long, (c) => c.notNull())
      .addColumn("scopes", t.long, (c) => c.notNull())
      .addColumn("access_token_ttl", "bigint")
      .addColumn("refresh_token_ttl", "bigint")
      .addColumn("refresh_token_absolute_ttl", "bigint")
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .addColumn("secret_updated_at", "bigint", (c) => c.notNull()),
  ));

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.accounts)
      .addColumn("id", t.key, (c) => c.primaryKey().notNull())
      .addColumn("username", t.key, (c) => c.notNull())
      .addColumn("display_name", t.text)
      .addColumn("email", t.text)
      .addColumn("roles", t.long, (c) => c.notNull())
      .addColumn("enabled", "integer", (c) => c.notNull())
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .addColumn("password_hash", t.text, (c) => c.notNull())
      .addUniqueConstraint("pg_accounts_username_key", ["username"]),
  ));

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.refreshTokens)
      .addColumn("token_hash", t.key, (c) => c.primaryKey().notNull())
      .addColumn("family_id", t.key, (c) => c.notNull())
      .addColumn("client_id", t.key, (c) => c.notNull())
      .addColumn("account_id", t.key, (c) => c.notNull())
      .addColumn("scope", t.long, (c) => c.notNull())
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .addColumn("expires_at", "bigint", (c) => c.notNull())
      .addColumn("family_expires_at", "bigint", (c) => c.notNull())
      .addColumn("consumed_at", "bigint")
      .addColumn("revoked_at", "bigint"),
  ));
  await step.createIndex(TABLES.refreshTokens, "pg_refresh_tokens_family_idx", (b) => b.column("family_id"));
  await step.createIndex(TABLES.refreshTokens, "pg_refresh_tokens_account_idx", (b) => b.column("account_id"));

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.plants)
      .addColumn("id", "bigint", (c) => c.primaryKey().notNull())
      .addColumn("name", t.free, (c) => c.notNull())
      .addColumn("tag", t.free),
  ));

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.signingKeys)
      .addColumn("kid", t.key, (c) => c.primaryKey().notNull())
      .addColumn("alg", t.text, (c) => c.notNull())
      .addColumn("private_jwk", t.long, (c) => c.notNull())
      .addColumn("public_jwk", t.long, (c) => c.notNull())
      .addColumn("created_at", "bigint", (c) => c.notNull()),
  ));
}

async function initialDown(db: Kysely<any>): Promise<void> {
  for (const table of [TABLES.signingKeys, TABLES.plants, TABLES.refreshTokens, TABLES.accounts, TABLES.clients]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}

/**
 * Version 2: the brute-force counters, revoked access tokens and console sessions. Only new
 * tables, so a version 1 database keeps every row and older code never reads them.
 */
async function hardeningUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const t = await columnTypes(db, family);
  const step = steps(db, family);
  const withOptions = <B extends { modifyEnd(e: Expression<unknown>): B }>(b: B): B => (t.tableOptions ? b.modifyEnd(t.tableOptions) : b);

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.attempts)
      .addColumn("attempt_key", t.key, (c) => c.primaryKey().notNull())
      .addColumn("count", "bigint", (c) => c.notNull())
      .addColumn("window_start", "bigint", (c) => c.notNull()),
  ));
  await step.createIndex(TABLES.attempts, "pg_attempts_window_idx", (b) => b.column("window_start"));

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.revokedTokens)
      .addColumn("jti", t.key, (c) => c.primaryKey().notNull())
      .addColumn("expires_at", "bigint", (c) => c.notNull()),
  ));
  await step.createIndex(TABLES.revokedTokens, "pg_revoked_tokens_expires_idx", (b) => b.column("expires_at"));

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.sessions)
      .addColumn("id_hash", t.key, (c) => c.primaryKey().notNull())
      .addColumn("account_id", t.key, (c) => c.notNull())
      .addColumn("csrf_hash", t.text, (c) => c.notNull())
      .addColumn("created_at", "bigint", (c) => c.notNull())
      .addColumn("expires_at", "bigint", (c) => c.notNull()),
  ));
  await step.createIndex(TABLES.sessions, "pg_sessions_account_idx", (b) => b.column("account_id"));
  await step.createIndex(TABLES.sessions, "pg_sessions_expires_idx", (b) => b.column("expires_at"));
}

async function hardeningDown(db: Kysely<any>): Promise<void> {
  for (const table of [TABLES.sessions, TABLES.revokedTokens, TABLES.attempts]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}

/**
 * Signing keys get their activation time (pre-publication: a key is published before it signs).
 * Existing keys signed from their creation, so they activate at `created_at`.
 */
async function keyActivationUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const step = steps(db, family);
  await step.addColumn(TABLES.signingKeys, "activates_at", "bigint");
  const update = db.updateTable(TABLES.signingKeys).set({ activates_at: sql`created_at` });
  await (step.resumable ? update.where("activates_at", "is", null) : update).execute();
}

async function keyActivationDown(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable(TABLES.signingKeys).dropColumn("activates_at").execute();
}

/**
 * Account positions: each account gets its place in creation order (`position`, 1-based,
 * gapless, unique), existing ones backfilled by `created_at` then `id`, and `pg_counters` holds
 * the count, so GetAccountList reads an index range and one row instead of OFFSET and COUNT(*).
 * Self-contained: adds one table, one column and one index, and rewrites no other row.
 * Instances of an older release must be stopped first: their inserts carry no position.
 */
async function accountPositionsUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const t = await columnTypes(db, family);
  const step = steps(db, family);
  const withOptions = <B extends { modifyEnd(e: Expression<unknown>): B }>(b: B): B => (t.tableOptions ? b.modifyEnd(t.tableOptions) : b);

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.counters)
      .addColumn("name", t.key, (c) => c.primaryKey().notNull())
      .addColumn("value", "bigint", (c) => c.notNull()),
  ));
  // NOT NULL needs a default for the rows already there; it is dropped again below where the
  // engine can (SQLite cannot alter a column; every insert of ours sets the position anyway).
  await step.addColumn(TABLES.accounts, "position", "bigint", (c) => c.notNull().defaultTo(0));

  const accounts = sql.table(TABLES.accounts);
  const ranked = sql`(select ${sql.ref("id")}, row_number() over (order by ${sql.ref("created_at")}, ${sql.ref("id")}) as ${sql.ref("n")} from ${accounts})`;
  switch (family) {
    case "postgres":
      await sql`update ${accounts} as a set ${sql.ref("position")} = r.n from ${ranked} as r where a.id = r.id`.execute(db);
      await sql`alter table ${accounts} alter column ${sql.ref("position")} drop default`.execute(db);
      break;
    case "mysql":
      // A derived table with a window function is materialized, so MySQL lets it feed an UPDATE of its own table.
      await sql`update ${accounts} as a join ${ranked} as r on a.id = r.id set a.${sql.ref("position")} = r.n`.execute(db);
      await sql`alter table ${accounts} alter column ${sql.ref("position")} drop default`.execute(db);
      break;
    case "sqlite":
      await sql`update ${accounts} set ${sql.ref("position")} = r.n from ${ranked} as r where ${accounts}.id = r.id`.execute(db);
      break;
  }
  await step.createIndex(TABLES.accounts, "pg_accounts_position_key", (b) => b.column("position").unique());
  // Run again on MySQL, the count is taken afresh (the row may be there from the cut-short run).
  await sql`${sql.raw(step.resumable ? "replace" : "insert")} into ${sql.table(TABLES.counters)} (${sql.ref("name")}, ${sql.ref("value")}) select 'accounts', count(*) from ${accounts}`.execute(db);
}

async function accountPositionsDown(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const drop = db.schema.dropIndex("pg_accounts_position_key");
  await (family === "mysql" ? drop.on(TABLES.accounts) : drop).execute();
  await db.schema.alterTable(TABLES.accounts).dropColumn("position").execute();
  await db.schema.dropTable(TABLES.counters).ifExists().execute();
}

/**
 * Refresh-token expiry indexes, so each bounded `deleteExpired` batch (housekeeping) is an index
 * range, not a table scan: one per rule of what goes (the family's absolute expiry; an unconsumed
 * token's sliding expiry). Only new indexes: every row is kept, older code ignores them.
 */
async function refreshExpiryIndexesUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const step = steps(db, family);
  await step.createIndex(TABLES.refreshTokens, "pg_refresh_tokens_family_expires_idx", (b) => b.column("family_expires_at"));
  await step.createIndex(TABLES.refreshTokens, "pg_refresh_tokens_unconsumed_expires_idx", (b) => b.columns(["consumed_at", "expires_at"]));
}

async function refreshExpiryIndexesDown(db: Kysely<any>, family: SqlFamily): Promise<void> {
  for (const index of ["pg_refresh_tokens_unconsumed_expires_idx", "pg_refresh_tokens_family_expires_idx"]) {
    // MySQL names the table in DROP INDEX; the others reject it.
    const drop = db.schema.dropIndex(index);
    await (family === "mysql" ? drop.on(TABLES.refreshTokens) : drop).execute();
  }
}

/**
 * The refresh-token grace window: the sealed answer of the rotation that consumed a token
 * (`replay`, opaque text, null before) and how many grace uses it answered (`grace_uses`).
 * Columns with defaults only, so existing rows read as "no replay, no uses" and strict reuse
 * detection holds for tokens rotated before the upgrade.
 */
async function refreshGraceUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const t = await columnTypes(db, family);
  const step = steps(db, family);
  await step.addColumn(TABLES.refreshTokens, "replay", t.long);
  await step.addColumn(TABLES.refreshTokens, "grace_uses", "bigint", (c) => c.notNull().defaultTo(0));
}

async function refreshGraceDown(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable(TABLES.refreshTokens).dropColumn("grace_uses").execute();
  await db.schema.alterTable(TABLES.refreshTokens).dropColumn("replay").execute();
}

/**
 * The audit trail (security events kept for review): one new table, indexed for the console's
 * filters (type, client, account, username), each newest first, and for pruning by age. Only a
 * new table, so older code ignores it.
 */
async function auditEventsUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const t = await columnTypes(db, family);
  const create = db.schema
    .createTable(TABLES.audit)
    .addColumn("id", t.key, (c) => c.primaryKey().notNull())
    .addColumn("type", t.key, (c) => c.notNull())
    .addColumn("time", "bigint", (c) => c.notNull())
    .addColumn("client_id", t.key)
    .addColumn("account_id", t.key)
    .addColumn("username", t.key)
    .addColumn("data", t.long, (c) => c.notNull());
  const step = steps(db, family);
  await step.createTable(t.tableOptions ? create.modifyEnd(t.tableOptions) : create);
  await step.createIndex(TABLES.audit, "pg_audit_events_time_idx", (b) => b.columns(["time", "id"]));
  for (const column of ["type", "client_id", "account_id", "username"]) {
    await step.createIndex(TABLES.audit, `pg_audit_events_${column}_idx`, (b) => b.columns([column, "time", "id"]));
  }
}

async function auditEventsDown(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable(TABLES.audit).ifExists().execute();
}

/**
 * Version 10: refresh tokens found by account and by absolute expiry through a side table of their
 * families (`pg_refresh_families`, one row per family, account and absolute expiry), instead of two
 * indexes on `pg_refresh_tokens` whose entries every rotation added at a random place: a rotation
 * now writes two index entries (hash, family) instead of four, which on SQLite halves the pages a
 * group commit writes (README, performance). Filled from the existing tokens, then the two indexes
 * go; down puts them back (the side table is then dropped: older code neither reads nor writes it).
 */
async function refreshFamiliesUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const t = await columnTypes(db, family);
  const create = db.schema
    .createTable(TABLES.refreshFamilies)
    .addColumn("family_id", t.key, (c) => c.notNull())
    .addColumn("account_id", t.key, (c) => c.notNull())
    .addColumn("family_expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("pg_refresh_families_pkey", ["family_id", "account_id", "family_expires_at"]);
  const step = steps(db, family);
  await step.createTable(t.tableOptions ? create.modifyEnd(t.tableOptions) : create);
  const tokens = sql.table(TABLES.refreshTokens);
  const columns = sql.join([sql.ref("family_id"), sql.ref("account_id"), sql.ref("family_expires_at")]);
  // Run again on MySQL, the rows the cut-short run copied are kept (the key is the whole row).
  await sql`${sql.raw(step.resumable ? "insert ignore" : "insert")} into ${sql.table(TABLES.refreshFamilies)} (${columns}) select distinct ${columns} from ${tokens}`.execute(db);
  await step.createIndex(TABLES.refreshFamilies, "pg_refresh_families_account_idx", (b) => b.column("account_id"));
  await step.createIndex(TABLES.refreshFamilies, "pg_refresh_families_expires_idx", (b) => b.column("family_expires_at"));
  for (const index of ["pg_refresh_tokens_account_idx", "pg_refresh_tokens_family_expires_idx"]) await step.dropIndex(TABLES.refreshTokens, index);
}

async function refreshFamiliesDown(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex("pg_refresh_tokens_account_idx").on(TABLES.refreshTokens).column("account_id").execute();
  await db.schema.createIndex("pg_refresh_tokens_family_expires_idx").on(TABLES.refreshTokens).column("family_expires_at").execute();
  await db.schema.dropTable(TABLES.refreshFamilies).ifExists().execute();
}

/**
 * Version 11: an index on `pg_clients.access_token_ttl`, so the longest client access-token
 * lifetime (`clients.maxAccessTokenTtl`, read on each key re-read while several signing keys are
 * stored, about once a minute per instance) is one index probe instead of a scan of every client.
 * Only a new index: every row is kept, older code ignores it.
 */
async function clientTtlIndexUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  await steps(db, family).createIndex(TABLES.clients, "pg_clients_access_token_ttl_idx", (b) => b.column("access_token_ttl"));
}

async function clientTtlIndexDown(db: Kysely<any>, family: SqlFamily): Promise<void> {
  // MySQL names the table in DROP INDEX; the others reject it.
  const drop = db.schema.dropIndex("pg_clients_access_token_ttl_idx");
  await (family === "mysql" ? drop.on(TABLES.clients) : drop).execute();
}

/**
 * Version 12: client generations. Each client gets a random `generation` at creation, which its
 * tokens carry (a refresh token in `client_generation`), so a client deleted and re-created under
 * its id is told apart from the earlier one by identity instead of by comparing the clocks of the
 * processes that created the client and issued the token. Nullable columns only: rows from before
 * have none, and core then compares times as before; older code neither reads nor writes them.
 */
async function clientGenerationUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const t = await columnTypes(db, family);
  const step = steps(db, family);
  await step.addColumn(TABLES.clients, "generation", t.text);
  await step.addColumn(TABLES.refreshTokens, "client_generation", t.text);
}

async function clientGenerationDown(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable(TABLES.refreshTokens).dropColumn("client_generation").execute();
  await db.schema.alterTable(TABLES.clients).dropColumn("generation").execute();
}

/**
 * Version 13: `pg_signing_keys.last_signed_at`, when an instance configured with the key
 * (`signingKey`, `signer`) last loaded the keys (`signingKeys.markSigning`), so that instances pinned
 * to another key keep trusting it while it signs somewhere, and not after. Nullable: rows from
 * before, and keys no configured instance signs with, have none (placed as before); older code
 * neither reads nor writes it.
 */
async function signingKeyLastSignedUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  await steps(db, family).addColumn(TABLES.signingKeys, "last_signed_at", "bigint");
}

async function signingKeyLastSignedDown(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable(TABLES.signingKeys).dropColumn("last_signed_at").execute();
}

/**
 * Version 14: the audit trail's filters together. Core lists a page of events of a type, a client
 * and an account (once by `account_id`, once by `username`, merged) newest first from a (time, id)
 * cursor; with one index per filter, two filters used one filter's index and tested the other row
 * by row, so a type and a client that rarely meet cost a walk over one of them (on PostgreSQL at
 * 1,000,000 events, 50,000 rows read and 215 ms for a page half-way down; 4.5 ms with these: README,
 * "Audit trail"). One index per combination, each its equality columns then
 * (time, id), makes every combination a range read newest first, at any depth. The single-column
 * indexes stay: none of these gives one column's events in time order. Each append now writes 12
 * index entries besides the primary key's, instead of 5. On MySQL a three-filter index with its
 * keys whole (four keys of 1020 bytes) passes InnoDB's 3072-byte limit, and without `id` MariaDB
 * sorts (it orders by no primary key it appends), so there its filter columns are prefixes: `type`
 * of 100 characters, the client and the account (or username) of 200, all core writes in them. A
 * prefix of an equality column keeps the range in (time, id) order (rows of a longer value sharing
 * the prefix are tested and left out). Only new indexes: older code ignores them.
 */
const AUDIT_COMBINED_INDEXES: ReadonlyArray<[name: string, columns: string[]]> = [
  ["pg_audit_events_type_client_idx", ["type", "client_id"]],
  ["pg_audit_events_type_account_idx", ["type", "account_id"]],
  ["pg_audit_events_type_username_idx", ["type", "username"]],
  ["pg_audit_events_client_account_idx", ["client_id", "account_id"]],
  ["pg_audit_events_client_username_idx", ["client_id", "username"]],
  ["pg_audit_events_type_client_account_idx", ["type", "client_id", "account_id"]],
  ["pg_audit_events_type_client_username_idx", ["type", "client_id", "username"]],
];

async function auditCombinedIndexesUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const step = steps(db, family);
  const prefix: Record<string, number> = { type: 100, client_id: 200, account_id: 200, username: 200 };
  for (const [index, columns] of AUDIT_COMBINED_INDEXES) {
    if (family === "mysql" && columns.length > 2) {
      const parts = columns.map((c) => sql`${sql.ref(c)}(${sql.raw(String(prefix[c]))})`);
      await step.createIndex(TABLES.audit, index, (b) => parts.reduce((built, part) => built.expression(part), b).columns(["time", "id"]));
    } else {
      await step.createIndex(TABLES.audit, index, (b) => b.columns([...columns, "time", "id"]));
    }
  }
}

async function auditCombinedIndexesDown(db: Kysely<any>, family: SqlFamily): Promise<void> {
  for (const [index] of [...AUDIT_COMBINED_INDEXES].reverse()) {
    // MySQL names the table in DROP INDEX; the others reject it.
    const drop = db.schema.dropIndex(index);
    await (family === "mysql" ? drop.on(TABLES.audit) : drop).execute();
  }
}

/**
 * Version 15: an index of only the rotated refresh tokens that still hold a replay, by
 * `consumed_at`, for `refreshTokens.dropReplays` (since 2026-12-03). Each replay holds the next
 * refresh token, so prune drops them once past every grace window; without an index of their own,
 * each batch read back through the rows it had cleared before (quadratic over a backlog: 300 000
 * rotated tokens took 34 s on PostgreSQL, which planned every batch as a whole-table scan) and each
 * run's last batch read every rotated token of the table. With it, a batch reads the entries it
 * clears, and a cleared row leaves the index. PostgreSQL, SQLite and D1 take a partial index
 * (`where replay is not null`); MySQL and MariaDB have none, so there a virtual column
 * `replay_consumed_at` (`consumed_at` while `replay` is set, null after) is indexed, and a range
 * `<= ?` over it skips its nulls. The cost is one index entry on every rotation (the refresh
 * grant's write), gone at the next prune. Only a new index (and, on MySQL, a generated column no
 * write names): older code ignores them.
 */
async function refreshReplayIndexUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const step = steps(db, family);
  if (family === "mysql") {
    await step.addColumn(TABLES.refreshTokens, REPLAY_CONSUMED_AT, "bigint", (c) => c.generatedAlwaysAs(sql`if(${sql.ref("replay")} is null, null, ${sql.ref("consumed_at")})`));
    await step.createIndex(TABLES.refreshTokens, REPLAY_INDEX, (b) => b.column(REPLAY_CONSUMED_AT));
    return;
  }
  // `if not exists`: an operator may have built it first (PostgreSQL's `create index concurrently`,
  // which does not hold writes; the storage README). Such a build that was cancelled or failed
  // leaves the index marked invalid, which the planner never uses: dropped and built again here.
  if (family === "postgres") {
    const { rows } = await sql<{ valid: boolean }>`select indisvalid as valid from pg_index where indexrelid = to_regclass(${REPLAY_INDEX})`.execute(db);
    if (rows[0]?.valid === false) await sql`drop index ${sql.id(REPLAY_INDEX)}`.execute(db);
  }
  await step.createIndex(TABLES.refreshTokens, REPLAY_INDEX, (b) => b.ifNotExists().column("consumed_at").where(sql.ref("replay"), "is not", null));
}

async function refreshReplayIndexDown(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const step = steps(db, family);
  await step.dropIndex(TABLES.refreshTokens, REPLAY_INDEX);
  if (family === "mysql") await step.dropColumn(TABLES.refreshTokens, REPLAY_CONSUMED_AT);
}

/** The index of migration 15 and, on MySQL, the virtual column it is on. */
export const REPLAY_INDEX = "pg_refresh_tokens_replay_idx";
export const REPLAY_CONSUMED_AT = "replay_consumed_at";

/** Every migration, oldest first. The version of a schema is the number of migrations applied. */
export function migrations(family: SqlFamily): Array<[name: string, migration: Migration]> {
  return [
    ["0001_initial", { up: (db) => initialUp(db, family), down: initialDown }],
    ["0002_attempts_revoked_tokens_sessions", { up: (db) => hardeningUp(db, family), down: hardeningDown }],
    ["0003_signing_key_activation", { up: (db) => keyActivationUp(db, family), down: keyActivationDown }],
    ["0004_account_positions", { up: (db) => accountPositionsUp(db, family), down: (db) => accountPositionsDown(db, family) }],
    ["0005_refresh_token_expiry_indexes", { up: (db) => refreshExpiryIndexesUp(db, family), down: (db) => refreshExpiryIndexesDown(db, family) }],
    ["0006_refresh_token_grace", { up: (db) => refreshGraceUp(db, family), down: refreshGraceDown }],
    ["0007_client_auth", { up: (db) => clientAuthUp(db, family), down: (db) => clientAuthDown(db, family) }],
    ["0008_audit_events", { up: (db) => auditEventsUp(db, family), down: auditEventsDown }],
    ["0009_client_notify", { up: (db) => clientNotifyUp(db, family), down: (db) => clientNotifyDown(db, family) }],
    ["0010_refresh_families", { up: (db) => refreshFamiliesUp(db, family), down: refreshFamiliesDown }],
    ["0011_client_access_token_ttl_index", { up: (db) => clientTtlIndexUp(db, family), down: (db) => clientTtlIndexDown(db, family) }],
    ["0012_client_generation", { up: (db) => clientGenerationUp(db, family), down: clientGenerationDown }],
    ["0013_signing_key_last_signed", { up: (db) => signingKeyLastSignedUp(db, family), down: signingKeyLastSignedDown }],
    ["0014_audit_combined_indexes", { up: (db) => auditCombinedIndexesUp(db, family), down: (db) => auditCombinedIndexesDown(db, family) }],
    ["0015_refresh_token_replay_index", { up: (db) => refreshReplayIndexUp(db, family), down: (db) => refreshReplayIndexDown(db, family) }],
  ];
}
