import type {
  AccountRecord,
  AttemptRecord,
  ClientRecord,
  GrantType,
  PlantRecord,
  RefreshTokenRecord,
  SessionRecord,
  SigningKeyRecord,
  Storage,
} from "@plantgate/core";
import { sql, type Compilable, type CompiledQuery, type Insertable, type Kysely, type QueryResult, type Selectable } from "kysely";
import { isDeadlock, isUniqueViolation, toStorageError, UnstorableValueError } from "./errors.js";
import { migrateToLatest } from "./migrations.js";
import {
  TABLES,
  type AccountTable,
  type AttemptTable,
  type ClientTable,
  type Database,
  type PlantTable,
  type RefreshTokenTable,
  type SessionTable,
  type SigningKeyTable,
  type SqlFamily,
} from "./schema.js";

/**
 * A `Storage` on a SQL database through Kysely, plus what its owner needs around it.
 *
 * @example
 * const storage = await openSqlStorage("postgres://app@db.internal/app");
 * const app = createPlantgate({ storage });
 * // ... on shutdown:
 * await storage.close();
 */
export interface SqlStorage extends Storage {
  /** The engine family the queries are built for. */
  readonly family: SqlFamily;
  /** The Kysely instance underneath (for health checks or your own queries on the same pool). */
  readonly db: Kysely<Database>;
  /**
   * Applies pending migrations; refuses a newer schema with `SchemaTooNewError` before changing
   * anything. Idempotent and safe to run from several instances at once.
   */
  migrate(): Promise<void>;
  /** Destroys the Kysely instance (ending its pool), then runs `onClose`. Idempotent. */
  close(): Promise<void>;
}

/**
 * Options of {@link createSqlStorage}.
 *
 * @example
 * createSqlStorage(db, "sqlite", { onClose: async () => console.log("storage closed") });
 */
export interface CreateSqlStorageOptions {
  /** Runs after `close()` has destroyed the Kysely instance, e.g. to close a driver it wraps. */
  onClose?: () => Promise<void>;
  /**
   * The Cloudflare D1 binding under `db` (family `"sqlite"` only). D1 rejects `BEGIN`, so with
   * this set, migrations run without transactions and `refreshTokens.consume` and
   * `accounts.createMany` are made atomic with one `batch()` on this binding instead. Usually
   * set for you by `createD1Storage` from `@plantgate/storage-sql/d1`.
   */
  d1?: D1DatabaseLike;
}

/**
 * The part of Cloudflare's `D1Database` binding that storage-sql uses (structural, so no
 * dependency on `@cloudflare/workers-types`).
 */
export interface D1DatabaseLike {
  prepare(query: string): D1PreparedStatementLike;
  /** Runs the statements in order as one implicit transaction: any failure rolls all back. */
  batch(statements: D1PreparedStatementLike[]): Promise<Array<{ meta?: { changes?: number } }>>;
}

/** The part of D1's prepared statement that storage-sql uses. */
export interface D1PreparedStatementLike {
  bind(...values: unknown[]): D1PreparedStatementLike;
}

// ---------------------------------------------------------------------------------------------
// Values in and out. Drivers differ in what they return (pg hands BIGINT back as text, mysql2 as
// text with bigNumberStrings, better-sqlite3 as number or bigint), so every read goes through
// these converters, which accept each form and refuse anything that would lose precision.

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const utf8 = new TextDecoder("utf-8", { fatal: true });
const utf8Encoder = new TextEncoder();

/** A row that no write of ours produces (edited by hand, or a driver setting we cannot read). */
class CorruptRowError extends Error {
  override readonly name = "CorruptRowError";
}

function toInt(value: unknown, column: string): number {
  const n = typeof value === "number" ? value : typeof value === "bigint" || (typeof value === "string" && /^-?\d+$/.test(value)) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new CorruptRowError(`column ${column} does not hold a safe integer`);
  return n;
}

const toNullableInt = (value: unknown, column: string): number | null => (value === null || value === undefined ? null : toInt(value, column));

function toStringArray(value: unknown, column: string): string[] {
  let parsed: unknown;
  try {
    parsed = typeof value === "string" ? JSON.parse(value) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.some((v) => typeof v !== "string")) throw new CorruptRowError(`column ${column} is not a JSON array of strings`);
  return parsed as string[];
}

function toText(value: unknown, column: string): string {
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) {
    try {
      return utf8.decode(value);
    } catch {
      throw new CorruptRowError(`column ${column} is not UTF-8`);
    }
  }
  throw new CorruptRowError(`column ${column} is not text`);
}

const toNullableText = (value: unknown, column: string): string | null => (value === null || value === undefined ? null : toText(value, column));

function toPlantId(value: unknown): bigint {
  if (typeof value === "string" && /^-?\d+$/.test(value)) return BigInt(value);
  if (typeof value === "bigint") return value;
  if (typeof value === "number" && Number.isSafeInteger(value)) return BigInt(value);
  throw new CorruptRowError("column id of pg_plants is not an integer");
}

// ---------------------------------------------------------------------------------------------
// Queries built once. Building a Kysely query and compiling it to SQL costs more than running a
// point lookup on SQLite, so the hot ones are compiled on first use with markers in place of the
// values, and each call only puts its values where the markers went.

/** Stands for the value of `params[key]` while a prepared query is compiled. */
class Slot {
  constructor(readonly key: string) {}
}

/** What runs a compiled query: the Kysely instance or a transaction on it. */
type Runner = Pick<Kysely<Database>, "executeQuery">;

/** A query compiled once; call it to run it with these values, or `compile` them for a D1 batch. */
interface Prepared<P, R> {
  (runner: Runner, params: P): Promise<QueryResult<R>>;
  compile(params: P): CompiledQuery<R>;
}

/**
 * Builds and compiles `build(params)` once, on the first call, with a {@link Slot} in place of each
 * value of `params`; later calls reuse the SQL and bind their own values where the slots went.
 * So the query's shape must not depend on the values (a value decides nothing but itself), every
 * call must pass the same keys, and `undefined` is bound as NULL (Kysely would drop an undefined
 * column from an INSERT, which for our nullable columns without defaults stores NULL as well).
 */
function prepared<P extends object, R>(build: (params: P) => Compilable<R>): Prepared<P, R> {
  let base: CompiledQuery<R> | undefined;
  let keys: Array<string | null> = [];
  const compile = (params: P): CompiledQuery<R> => {
    if (base === undefined) {
      const names = Object.keys(params);
      const compiled = build(Object.fromEntries(names.map((k) => [k, new Slot(k)])) as P).compile();
      keys = compiled.parameters.map((v) => (v instanceof Slot ? v.key : null));
      const unused = names.filter((k) => !keys.includes(k));
      if (unused.length > 0) throw new Error(`prepared query binds no value for ${unused.join(", ")}: ${compiled.sql}`);
      base = compiled;
    }
    const values = params as Record<string, unknown>;
    const constants = base.parameters;
    const parameters = keys.map((k, i) => (k === null ? constants[i] : (values[k] ?? null)));
    return { query: base.query, queryId: base.queryId, sql: base.sql, parameters };
  };
  const run = (runner: Runner, params: P): Promise<QueryResult<R>> => runner.executeQuery(compile(params));
  return Object.assign(run, { compile });
}

// ---------------------------------------------------------------------------------------------

/**
 * Wraps an existing Kysely instance as plantgate `Storage`: for D1, a pool you configure yourself,
 * or a database shared with your application. Does not migrate; call `migrate()` once first.
 * Duplicate keys make `create` return false; any other database failure is thrown as core's
 * `StorageError` (plantgate answers 503) with the driver's error as `cause`.
 *
 * @example
 * import Database from "better-sqlite3";
 * import { Kysely, SqliteDialect } from "kysely";
 * import { createSqlStorage, type Database as Tables } from "@plantgate/storage-sql";
 *
 * const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: new Database("plantgate.db") }) });
 * const storage = createSqlStorage(db, "sqlite");
 * await storage.migrate();
 */
export function createSqlStorage(db: Kysely<Database>, family: SqlFamily, options: CreateSqlStorageOptions = {}): SqlStorage {
  // --- guards: values the engine cannot store exactly are refused before any query ------------

  /** Whether a key can exist in the store at all; a lookup of one that cannot is simply absent. */
  const storableKey = (s: string): boolean => !LONE_SURROGATE.test(s) && !(family === "postgres" && s.includes("\u0000"));

  /** For a text column written: refuses what the engine would silently alter or reject. */
  const text = (s: string, field: string): string => {
    if (LONE_SURROGATE.test(s)) throw new UnstorableValueError(`${field} contains a lone UTF-16 surrogate, which no SQL engine stores exactly`);
    if (family === "postgres" && s.includes("\u0000")) throw new UnstorableValueError(`${field} contains U+0000, which PostgreSQL text cannot hold`);
    return s;
  };
  const nullableText = (s: string | null, field: string): string | null => (s === null ? null : text(s, field));

  /** Free text keeps U+0000: PostgreSQL stores it as UTF-8 bytes in a bytea column. */
  const free = (s: string, field: string): string | Uint8Array => {
    if (LONE_SURROGATE.test(s)) throw new UnstorableValueError(`${field} contains a lone UTF-16 surrogate, which no SQL engine stores exactly`);
    return family === "postgres" ? utf8Encoder.encode(s) : s;
  };

  /**
   * Plant ids as parameters: pg and mysql2 bind bigint exactly; SQLite drivers differ (D1 binds
   * no bigint), so SQLite gets decimal text, which an INTEGER-affinity column stores and compares
   * as the exact 64-bit integer.
   */
  const plantIdParam = (id: bigint): bigint | string => (family === "sqlite" ? id.toString() : id);

  const json = (items: string[]): string => JSON.stringify(items);

  // --- failure mapping ------------------------------------------------------------------------

  /** Runs one storage operation; every failure but our own typed ones becomes StorageError. */
  const run = async <T>(operation: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof CorruptRowError || e instanceof UnstorableValueError) throw e;
      throw toStorageError(e, family, operation);
    }
  };

  /** An INSERT whose duplicate key means "false"; being one statement, it never half-writes. */
  const insertOrFalse = async (insert: () => Promise<unknown>): Promise<boolean> => {
    try {
      await insert();
      return true;
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  };

  /**
   * Whether an UPDATE found its row. MySQL reports *changed* rows unless the connection sets
   * CLIENT_FOUND_ROWS (mysql2 does by default, a pool you built may not), so on MySQL a 0 is
   * double-checked.
   */
  const updated = async (count: bigint, exists: () => Promise<boolean>): Promise<boolean> => {
    if (count > 0n) return true;
    return family === "mysql" ? exists() : false;
  };

  // Large batches are split so no statement binds too many parameters: D1 allows 100 per
  // statement, the other engines tens of thousands.
  const maxParams = family === "sqlite" ? 99 : 5000;
  const chunks = <T>(items: T[], size: number): T[][] => {
    const out: T[][] = [];
    for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
    return out;
  };

  // --- rows <-> records -----------------------------------------------------------------------

  const clientRow = (r: ClientRecord): Insertable<ClientTable> => ({
    client_id: text(r.clientId, "clientId"),
    secret_hash: text(r.secretHash, "secretHash"),
    name: text(r.name, "name"),
    grant_types: json(r.grantTypes),
    scopes: json(r.scopes),
    access_token_ttl: r.accessTokenTtl,
    refresh_token_ttl: r.refreshTokenTtl,
    refresh_token_absolute_ttl: r.refreshTokenAbsoluteTtl,
    created_at: r.createdAt,
    secret_updated_at: r.secretUpdatedAt,
  });
  const clientRecord = (row: Selectable<ClientTable>): ClientRecord => ({
    clientId: row.client_id,
    secretHash: row.secret_hash,
    name: row.name,
    grantTypes: toStringArray(row.grant_types, "grant_types") as GrantType[],
    scopes: toStringArray(row.scopes, "scopes"),
    accessTokenTtl: toNullableInt(row.access_token_ttl, "access_token_ttl"),
    refreshTokenTtl: toNullableInt(row.refresh_token_ttl, "refresh_token_ttl"),
    refreshTokenAbsoluteTtl: toNullableInt(row.refresh_token_absolute_ttl, "refresh_token_absolute_ttl"),
    createdAt: toInt(row.created_at, "created_at"),
    secretUpdatedAt: toInt(row.secret_updated_at, "secret_updated_at"),
  });

  const accountRow = (r: AccountRecord): Insertable<AccountTable> => ({
    id: text(r.id, "id"),
    username: text(r.username, "username"),
    display_name: nullableText(r.displayName, "displayName"),
    email: nullableText(r.email, "email"),
    roles: json(r.roles),
    enabled: r.enabled ? 1 : 0,
    created_at: r.createdAt,
    password_hash: text(r.passwordHash, "passwordHash"),
  });
  const accountRecord = (row: Selectable<AccountTable>): AccountRecord => ({
    id: row.id,
    username: row.username,
    displayName: row.display_name,
    email: row.email,
    roles: toStringArray(row.roles, "roles"),
    enabled: toInt(row.enabled, "enabled") !== 0,
    createdAt: toInt(row.created_at, "created_at"),
    passwordHash: row.password_hash,
  });

  const refreshRow = (r: RefreshTokenRecord): Insertable<RefreshTokenTable> => ({
    token_hash: text(r.tokenHash, "tokenHash"),
    family_id: text(r.familyId, "familyId"),
    client_id: text(r.clientId, "clientId"),
    account_id: text(r.accountId, "accountId"),
    scope: json(r.scope),
    created_at: r.createdAt,
    expires_at: r.expiresAt,
    family_expires_at: r.familyExpiresAt,
    consumed_at: r.consumedAt,
    revoked_at: r.revokedAt,
  });
  const refreshRecord = (row: Selectable<RefreshTokenTable>): RefreshTokenRecord => ({
    tokenHash: row.token_hash,
    familyId: row.family_id,
    clientId: row.client_id,
    accountId: row.account_id,
    scope: toStringArray(row.scope, "scope"),
    createdAt: toInt(row.created_at, "created_at"),
    expiresAt: toInt(row.expires_at, "expires_at"),
    familyExpiresAt: toInt(row.family_expires_at, "family_expires_at"),
    consumedAt: toNullableInt(row.consumed_at, "consumed_at"),
    revokedAt: toNullableInt(row.revoked_at, "revoked_at"),
  });

  const keyRow = (r: SigningKeyRecord): Insertable<SigningKeyTable> => ({
    kid: text(r.kid, "kid"),
    alg: text(r.alg, "alg"),
    private_jwk: text(r.privateJwk, "privateJwk"),
    public_jwk: text(r.publicJwk, "publicJwk"),
    created_at: r.createdAt,
  });
  const keyRecord = (row: Selectable<SigningKeyTable>): SigningKeyRecord => ({
    kid: row.kid,
    alg: row.alg,
    privateJwk: row.private_jwk,
    publicJwk: row.public_jwk,
    createdAt: toInt(row.created_at, "created_at"),
  });

  const attemptRecord = (row: Selectable<AttemptTable>): AttemptRecord => ({
    key: row.attempt_key,
    count: toInt(row.count, "count"),
    windowStart: toInt(row.window_start, "window_start"),
  });

  const sessionRow = (r: SessionRecord): Insertable<SessionTable> => ({
    id_hash: text(r.idHash, "idHash"),
    account_id: text(r.accountId, "accountId"),
    csrf_hash: text(r.csrfHash, "csrfHash"),
    created_at: r.createdAt,
    expires_at: r.expiresAt,
  });
  const sessionRecord = (row: Selectable<SessionTable>): SessionRecord => ({
    idHash: row.id_hash,
    accountId: row.account_id,
    csrfHash: row.csrf_hash,
    createdAt: toInt(row.created_at, "created_at"),
    expiresAt: toInt(row.expires_at, "expires_at"),
  });

  const plantRecord = (row: { id: unknown; name: Selectable<PlantTable>["name"]; tag: Selectable<PlantTable>["tag"] }): PlantRecord => ({
    id: toPlantId(row.id),
    name: toText(row.name, "name"),
    tag: toNullableText(row.tag, "tag"),
  });

  // --- accounts.createMany helpers ------------------------------------------------------------

  /** Index of the first record whose id or username is stored or repeats an earlier one; else null. */
  const firstConflict = async (trx: Kysely<Database>, records: AccountRecord[]): Promise<number | null> => {
    const storedIds = new Set<string>();
    const storedNames = new Set<string>();
    for (const chunk of chunks(records, Math.floor(maxParams / 2))) {
      const rows = await trx
        .selectFrom(TABLES.accounts)
        .select(["id", "username"])
        .where((eb) => eb.or([eb("id", "in", chunk.map((r) => r.id)), eb("username", "in", chunk.map((r) => r.username))]))
        .execute();
      for (const row of rows) {
        storedIds.add(row.id);
        storedNames.add(row.username);
      }
    }
    const ids = new Set<string>();
    const names = new Set<string>();
    for (const [i, r] of records.entries()) {
      if (storedIds.has(r.id) || storedNames.has(r.username) || ids.has(r.id) || names.has(r.username)) return i;
      ids.add(r.id);
      names.add(r.username);
    }
    return null;
  };

  // --- D1: atomic writes without SQL transactions --------------------------------------------

  const d1 = options.d1;
  if (d1 !== undefined && family !== "sqlite") throw new TypeError('createSqlStorage: the d1 option needs family "sqlite"');

  /**
   * Runs compiled statements as one D1 batch, which D1 executes as a single implicit transaction
   * (a failing statement rolls back the whole batch); returns each statement's changed-row count.
   */
  const batch = async (binding: D1DatabaseLike, queries: CompiledQuery[]): Promise<number[]> => {
    const results = await binding.batch(queries.map((q) => binding.prepare(q.sql).bind(...q.parameters)));
    return results.map((r) => r.meta?.changes ?? 0);
  };

  // --- the hot queries, each compiled once (see `prepared`) -----------------------------------

  /** Row count of UPDATE, DELETE or INSERT, as Kysely's result objects report it. */
  const affected = (result: QueryResult<unknown>): bigint => result.numAffectedRows ?? 0n;

  const q = {
    clientGet: prepared((p: { clientId: string }) => db.selectFrom(TABLES.clients).selectAll().where("client_id", "=", p.clientId)),
    clientInsert: prepared((row: Insertable<ClientTable>) => db.insertInto(TABLES.clients).values(row)),
    accountGet: prepared((p: { id: string }) => db.selectFrom(TABLES.accounts).selectAll().where("id", "=", p.id)),
    accountByUsername: prepared((p: { username: string }) => db.selectFrom(TABLES.accounts).selectAll().where("username", "=", p.username)),
    accountInsert: prepared((row: Insertable<AccountTable>) => db.insertInto(TABLES.accounts).values(row)),
    accountCount: prepared((_: Record<string, never>) => db.selectFrom(TABLES.accounts).select((eb) => eb.fn.countAll().as("n"))),
    accountIdAt: prepared((p: { offset: number }) => db.selectFrom(TABLES.accounts).select("id").orderBy("id").limit(1).offset(p.offset)),
    accountPage: prepared((p: { limit: number }) => db.selectFrom(TABLES.accounts).selectAll().orderBy("id").limit(p.limit)),
    accountPageFrom: prepared((p: { first: string; limit: number }) =>
      db.selectFrom(TABLES.accounts).selectAll().where("id", ">=", p.first).orderBy("id").limit(p.limit),
    ),
    refreshGet: prepared((p: { tokenHash: string }) => db.selectFrom(TABLES.refreshTokens).selectAll().where("token_hash", "=", p.tokenHash)),
    refreshUpsert: prepared((row: Insertable<RefreshTokenTable>) => {
      const { token_hash: _key, ...rest } = row;
      // Same hash again replaces the record, as the reference implementation does.
      const insert = db.insertInto(TABLES.refreshTokens).values(row);
      return family === "mysql" ? insert.onDuplicateKeyUpdate(rest) : insert.onConflict((oc) => oc.column("token_hash").doUpdateSet(rest));
    }),
    refreshInsert: prepared((row: Insertable<RefreshTokenTable>) => db.insertInto(TABLES.refreshTokens).values(row)),
    /** D1 only: copies the replacement in only if the statement before it changed exactly one row. */
    refreshInsertAfterConsume: prepared((row: Insertable<RefreshTokenTable>) => {
      const columns = Object.keys(row) as Array<keyof typeof row & string>;
      return db
        .insertInto(TABLES.refreshTokens)
        .columns(columns)
        .expression(db.selectNoFrom((eb) => columns.map((c) => eb.val(row[c]).as(c))).where(sql<number>`changes()`, "=", 1));
    }),
    refreshConsume: prepared((p: { tokenHash: string; now: number }) =>
      db
        .updateTable(TABLES.refreshTokens)
        .set({ consumed_at: p.now })
        .where("token_hash", "=", p.tokenHash)
        .where("consumed_at", "is", null)
        .where("revoked_at", "is", null),
    ),
    plantInsert: prepared((row: Insertable<PlantTable>) => db.insertInto(TABLES.plants).values(row)),
    plantGet: prepared((p: { id: bigint | string }) =>
      // Read the id back as text so no driver setting (pg type parsers, mysql2 without
      // bigNumberStrings, SQLite drivers without safe integers) can round it.
      db
        .selectFrom(TABLES.plants)
        .select((eb) => [eb.cast<string>("id", family === "mysql" ? "char" : "text").as("id"), "name", "tag"])
        .where("id", "=", p.id),
    ),
    attemptGet: prepared((p: { key: string }) => db.selectFrom(TABLES.attempts).selectAll().where("attempt_key", "=", p.key)),
    attemptReset: prepared((p: { key: string }) => db.deleteFrom(TABLES.attempts).where("attempt_key", "=", p.key)),
    /**
     * PostgreSQL and SQLite: one upsert with RETURNING. A window that started at or before
     * `expiredBefore` is over: the failure opens a new one.
     */
    attemptCount: prepared((p: { key: string; now: number; expiredBefore: number }) =>
      db
        .insertInto(TABLES.attempts)
        .values({ attempt_key: p.key, count: 1, window_start: p.now })
        .onConflict((oc) =>
          oc.column("attempt_key").doUpdateSet((eb) => {
            const expired = eb(`${TABLES.attempts}.window_start`, "<=", p.expiredBefore);
            return {
              count: eb.case().when(expired).then(sql<number>`1`).else(sql<number>`${eb.ref(`${TABLES.attempts}.count`)} + 1`).end(),
              window_start: eb.case().when(expired).then(p.now).else(sql<number>`${eb.ref(`${TABLES.attempts}.window_start`)}`).end(),
            };
          }),
        )
        .returningAll(),
    ),
    /**
     * MySQL: assigns left to right and later assignments see earlier ones, so `count` (which reads
     * the old window_start) goes first.
     */
    attemptCountMysql: prepared((p: { key: string; now: number; expiredBefore: number }) =>
      db
        .insertInto(TABLES.attempts)
        .values({ attempt_key: p.key, count: 1, window_start: p.now })
        .onDuplicateKeyUpdate((eb) => ({
          count: eb.case().when("window_start", "<=", p.expiredBefore).then(sql<number>`1`).else(sql<number>`${eb.ref("count")} + 1`).end(),
          window_start: eb.case().when("window_start", "<=", p.expiredBefore).then(p.now).else(sql<number>`${eb.ref("window_start")}`).end(),
        })),
    ),
    revokedHas: prepared((p: { jti: string }) => db.selectFrom(TABLES.revokedTokens).select("jti").where("jti", "=", p.jti)),
    revokedAdd: prepared((row: { jti: string; expires_at: number }) => {
      // Idempotent and keeps the first expiry: a repeat changes nothing (a no-op update on
      // MySQL, where INSERT IGNORE would also swallow unrelated errors).
      const insert = db.insertInto(TABLES.revokedTokens).values(row);
      return family === "mysql" ? insert.onDuplicateKeyUpdate((eb) => ({ jti: eb.ref("jti") })) : insert.onConflict((oc) => oc.column("jti").doNothing());
    }),
    sessionGet: prepared((p: { idHash: string }) => db.selectFrom(TABLES.sessions).selectAll().where("id_hash", "=", p.idHash)),
    sessionInsert: prepared((row: Insertable<SessionTable>) => db.insertInto(TABLES.sessions).values(row)),
    sessionDelete: prepared((p: { idHash: string }) => db.deleteFrom(TABLES.sessions).where("id_hash", "=", p.idHash)),
  };

  let closed: Promise<void> | null = null;

  return {
    family,
    db,

    async migrate() {
      await run("migrate", () => migrateToLatest(db as Kysely<any>, family, { d1: d1 !== undefined }));
    },

    close() {
      closed ??= (async () => {
        try {
          await db.destroy();
        } finally {
          await options.onClose?.();
        }
      })();
      return closed;
    },

    clients: {
      get: (clientId) =>
        run("clients.get", async () => {
          if (!storableKey(clientId)) return null;
          const row = (await q.clientGet(db, { clientId })).rows[0];
          return row ? clientRecord(row) : null;
        }),
      create: (record) =>
        run("clients.create", async () => {
          const row = clientRow(record);
          return insertOrFalse(() => q.clientInsert(db, row));
        }),
      updateSecret: (clientId, secretHash, updatedAt) =>
        run("clients.updateSecret", async () => {
          if (!storableKey(clientId)) return false;
          const result = await db
            .updateTable(TABLES.clients)
            .set({ secret_hash: text(secretHash, "secretHash"), secret_updated_at: updatedAt })
            .where("client_id", "=", clientId)
            .executeTakeFirst();
          return updated(result.numUpdatedRows, async () => (await db.selectFrom(TABLES.clients).select("client_id").where("client_id", "=", clientId).executeTakeFirst()) !== undefined);
        }),
      list: () =>
        run("clients.list", async () => {
          const rows = await db.selectFrom(TABLES.clients).selectAll().orderBy("client_id").execute();
          return rows.map(clientRecord);
        }),
      delete: (clientId) =>
        run("clients.delete", async () => {
          if (!storableKey(clientId)) return false;
          const result = await db.deleteFrom(TABLES.clients).where("client_id", "=", clientId).executeTakeFirst();
          return result.numDeletedRows > 0n;
        }),
    },

    accounts: {
      get: (id) =>
        run("accounts.get", async () => {
          if (!storableKey(id)) return null;
          const row = (await q.accountGet(db, { id })).rows[0];
          return row ? accountRecord(row) : null;
        }),
      findByUsername: (username) =>
        run("accounts.findByUsername", async () => {
          if (!storableKey(username)) return null;
          const row = (await q.accountByUsername(db, { username })).rows[0];
          return row ? accountRecord(row) : null;
        }),
      create: (record) =>
        run("accounts.create", async () => {
          const row = accountRow(record);
          return insertOrFalse(() => q.accountInsert(db, row));
        }),
      createMany: (records) =>
        run("accounts.createMany", async () => {
          const rows = records.map(accountRow);
          if (rows.length === 0) return null;
          const perInsert = Math.max(1, Math.floor(maxParams / Object.keys(rows[0]!).length));
          // A concurrent writer can take an id or username between our check and our insert; the
          // unique violation then rolls everything back and the next attempt's check names it.
          for (let attempt = 1; ; attempt++) {
            try {
              if (d1 !== undefined) {
                // No transaction to check in: check, then insert every chunk in one batch. A
                // writer slipping in between fails the batch on the unique index, so nothing of
                // it is written, and the next attempt's check names the conflict.
                const conflict = await firstConflict(db, records);
                if (conflict !== null) return conflict;
                await batch(d1, chunks(rows, perInsert).map((chunk) => db.insertInto(TABLES.accounts).values(chunk).compile()));
                return null;
              }
              return await db.transaction().execute(async (trx) => {
                const conflict = await firstConflict(trx, records);
                if (conflict !== null) return conflict;
                for (const chunk of chunks(rows, perInsert)) await trx.insertInto(TABLES.accounts).values(chunk).execute();
                return null;
              });
            } catch (e) {
              if (!isUniqueViolation(e) || attempt >= 3) throw e;
            }
          }
        }),
      setEnabled: (id, enabled) =>
        run("accounts.setEnabled", async () => {
          if (!storableKey(id)) return false;
          const result = await db
            .updateTable(TABLES.accounts)
            .set({ enabled: enabled ? 1 : 0 })
            .where("id", "=", id)
            .executeTakeFirst();
          return updated(result.numUpdatedRows, async () => (await db.selectFrom(TABLES.accounts).select("id").where("id", "=", id).executeTakeFirst()) !== undefined);
        }),
      list: (offset, limit) =>
        run("accounts.list", async () => {
          const count = (await q.accountCount(db, {})).rows[0];
          if (count === undefined) throw new Error("count(*) of pg_accounts returned no row");
          // Deferred join: OFFSET over the id index alone (an index-only scan) finds the page's first id,
          // then only the page's rows are read. A plain OFFSET reads every skipped row in full, which
          // made the last page of 1,000,000 accounts on PostgreSQL ~25x slower than the first.
          let rows: Array<Selectable<AccountTable>>;
          if (offset === 0) {
            rows = (await q.accountPage(db, { limit })).rows;
          } else {
            const first = (await q.accountIdAt(db, { offset })).rows[0];
            rows = first === undefined ? [] : (await q.accountPageFrom(db, { first: first.id, limit })).rows;
          }
          return { items: rows.map(accountRecord), total: toInt(count.n, "count(*)") };
        }),
    },

    refreshTokens: {
      create: (record) =>
        run("refreshTokens.create", async () => {
          await q.refreshUpsert(db, refreshRow(record));
        }),
      findByHash: (tokenHash) =>
        run("refreshTokens.findByHash", async () => {
          if (!storableKey(tokenHash)) return null;
          const row = (await q.refreshGet(db, { tokenHash })).rows[0];
          return row ? refreshRecord(row) : null;
        }),
      consume: (tokenHash, now, replacement) =>
        run("refreshTokens.consume", async () => {
          const row = refreshRow(replacement);
          if (!storableKey(tokenHash)) return false;
          try {
            if (d1 !== undefined) {
              // One batch = one implicit transaction, run serially by D1. The conditional UPDATE
              // is the arbiter; the INSERT copies the replacement in only if that UPDATE changed
              // exactly one row (changes() still reports it: the INSERT has not completed yet).
              // A duplicate replacement hash fails the batch, rolling the UPDATE back too.
              const [, inserted] = await batch(d1, [q.refreshConsume.compile({ tokenHash, now }), q.refreshInsertAfterConsume.compile(row)]);
              return inserted === 1;
            }
            return await db.transaction().execute(async (trx) => {
              // The conditional UPDATE is the arbiter: the row lock (PostgreSQL, InnoDB) or the
              // single connection (SQLite) lets exactly one caller see 1 row updated.
              if (affected(await q.refreshConsume(trx, { tokenHash, now })) !== 1n) return false;
              await q.refreshInsert(trx, row);
              return true;
            });
          } catch (e) {
            // The replacement's hash already exists: the transaction rolled back, nothing changed.
            if (isUniqueViolation(e)) return false;
            throw e;
          }
        }),
      revokeFamily: (familyId, now) =>
        run("refreshTokens.revokeFamily", async () => {
          if (!storableKey(familyId)) return;
          await db.updateTable(TABLES.refreshTokens).set({ revoked_at: now }).where("family_id", "=", familyId).where("revoked_at", "is", null).execute();
        }),
      revokeByAccount: (accountId, now) =>
        run("refreshTokens.revokeByAccount", async () => {
          if (!storableKey(accountId)) return;
          await db.updateTable(TABLES.refreshTokens).set({ revoked_at: now }).where("account_id", "=", accountId).where("revoked_at", "is", null).execute();
        }),
      deleteExpired: (now) =>
        run("refreshTokens.deleteExpired", async () => {
          const result = await db
            .deleteFrom(TABLES.refreshTokens)
            .where((eb) => eb.or([eb("expires_at", "<=", now), eb("family_expires_at", "<=", now)]))
            .executeTakeFirst();
          return Number(result.numDeletedRows);
        }),
    },

    plants: {
      create: (record) =>
        run("plants.create", async () => {
          const row = { id: plantIdParam(record.id), name: free(record.name, "name"), tag: record.tag === null ? null : free(record.tag, "tag") };
          return insertOrFalse(() => q.plantInsert(db, row));
        }),
      get: (id) =>
        run("plants.get", async () => {
          const row = (await q.plantGet(db, { id: plantIdParam(id) })).rows[0];
          return row ? plantRecord(row) : null;
        }),
    },

    signingKeys: {
      list: () =>
        run("signingKeys.list", async () => {
          const rows = await db.selectFrom(TABLES.signingKeys).selectAll().orderBy("created_at").orderBy("kid").execute();
          return rows.map(keyRecord);
        }),
      create: (record) =>
        run("signingKeys.create", async () => {
          const row = keyRow(record);
          return insertOrFalse(() => db.insertInto(TABLES.signingKeys).values(row).execute());
        }),
      delete: (kid) =>
        run("signingKeys.delete", async () => {
          if (!storableKey(kid)) return false;
          const result = await db.deleteFrom(TABLES.signingKeys).where("kid", "=", kid).executeTakeFirst();
          return result.numDeletedRows > 0n;
        }),
    },

    attempts: {
      increment: (key, now, windowMs) =>
        run("attempts.increment", async () => {
          const attemptKey = text(key, "key");
          // A window that started at or before this instant is over: the failure opens a new one.
          const expiredBefore = now - windowMs;
          const params = { key: attemptKey, now, expiredBefore };
          if (family === "mysql") {
            // ON DUPLICATE KEY UPDATE locks the row until commit, so the read-back in the same
            // transaction sees exactly this call's result.
            for (let attempt = 1; ; attempt++) {
              try {
                return await db.transaction().execute(async (trx) => {
                  await q.attemptCountMysql(trx, params);
                  const row = (await q.attemptGet(trx, { key: attemptKey })).rows[0];
                  if (row === undefined) throw new Error("pg_attempts lost the row just counted");
                  return attemptRecord(row);
                });
              } catch (e) {
                // InnoDB may pick a racing first insert of a key as a deadlock victim; its
                // transaction rolled back (nothing counted), so it is safe to count again.
                if (!isDeadlock(e) || attempt >= 5) throw e;
              }
            }
          }
          // One upsert with RETURNING: the row lock (PostgreSQL) or the single writer (SQLite, D1)
          // makes each call see the previous one's count, so none is lost.
          const row = (await q.attemptCount(db, params)).rows[0];
          if (row === undefined) throw new Error("the upsert of pg_attempts returned no row");
          return attemptRecord(row);
        }),
      get: (key) =>
        run("attempts.get", async () => {
          if (!storableKey(key)) return null;
          const row = (await q.attemptGet(db, { key })).rows[0];
          return row ? attemptRecord(row) : null;
        }),
      reset: (key) =>
        run("attempts.reset", async () => {
          if (!storableKey(key)) return;
          await q.attemptReset(db, { key });
        }),
      deleteExpired: (before) =>
        run("attempts.deleteExpired", async () => {
          const result = await db.deleteFrom(TABLES.attempts).where("window_start", "<=", before).executeTakeFirst();
          return Number(result.numDeletedRows);
        }),
    },

    revokedTokens: {
      add: (jti, expiresAt) =>
        run("revokedTokens.add", async () => {
          await q.revokedAdd(db, { jti: text(jti, "jti"), expires_at: expiresAt });
        }),
      has: (jti) =>
        run("revokedTokens.has", async () => {
          if (!storableKey(jti)) return false;
          return (await q.revokedHas(db, { jti })).rows.length > 0;
        }),
      deleteExpired: (now) =>
        run("revokedTokens.deleteExpired", async () => {
          const result = await db.deleteFrom(TABLES.revokedTokens).where("expires_at", "<=", now).executeTakeFirst();
          return Number(result.numDeletedRows);
        }),
    },

    sessions: {
      create: (record) =>
        run("sessions.create", async () => {
          const row = sessionRow(record);
          return insertOrFalse(() => q.sessionInsert(db, row));
        }),
      get: (idHash) =>
        run("sessions.get", async () => {
          if (!storableKey(idHash)) return null;
          const row = (await q.sessionGet(db, { idHash })).rows[0];
          return row ? sessionRecord(row) : null;
        }),
      delete: (idHash) =>
        run("sessions.delete", async () => {
          if (!storableKey(idHash)) return false;
          return affected(await q.sessionDelete(db, { idHash })) > 0n;
        }),
      deleteByAccount: (accountId) =>
        run("sessions.deleteByAccount", async () => {
          if (!storableKey(accountId)) return 0;
          const result = await db.deleteFrom(TABLES.sessions).where("account_id", "=", accountId).executeTakeFirst();
          return Number(result.numDeletedRows);
        }),
      deleteExpired: (now) =>
        run("sessions.deleteExpired", async () => {
          const result = await db.deleteFrom(TABLES.sessions).where("expires_at", "<=", now).executeTakeFirst();
          return Number(result.numDeletedRows);
        }),
    },
  };
}
