import type { ColumnType } from "kysely";

/**
 * The SQL engine family the queries are built for: `"postgres"`, `"mysql"` (MySQL and MariaDB) or
 * `"sqlite"` (better-sqlite3, D1 and other SQLite drivers).
 *
 * @example
 * const family: SqlFamily = process.env.DATABASE_URL?.startsWith("postgres") ? "postgres" : "sqlite";
 */
export type SqlFamily = "sqlite" | "postgres" | "mysql";

/**
 * Table names. Every table carries the `pg_` prefix so plantgate can share a database with an
 * application's own tables.
 */
export const TABLES = {
  clients: "pg_clients",
  accounts: "pg_accounts",
  refreshTokens: "pg_refresh_tokens",
  refreshFamilies: "pg_refresh_families",
  plants: "pg_plants",
  signingKeys: "pg_signing_keys",
  attempts: "pg_attempts",
  revokedTokens: "pg_revoked_tokens",
  sessions: "pg_sessions",
  assertionJtis: "pg_assertion_jtis",
  counters: "pg_counters",
  audit: "pg_audit_events",
  migrations: "pg_migrations",
  migrationLock: "pg_migrations_lock",
} as const;

/**
 * A BIGINT column. Drivers disagree on how they hand it back (pg: string, mysql2 with
 * `bigNumberStrings`: string, better-sqlite3: number, or bigint with safe integers), so reads are
 * typed as any of them and converted in one place.
 */
type Int64 = ColumnType<number | bigint | string, number, number>;
type NullableInt64 = ColumnType<number | bigint | string | null, number | null, number | null>;
/**
 * Free text that must round-trip every code point, U+0000 included: `bytea` (UTF-8) on
 * PostgreSQL, whose `text` cannot hold NUL; `text` elsewhere.
 */
type FreeText = ColumnType<string | Uint8Array, string | Uint8Array, string | Uint8Array>;
type NullableFreeText = ColumnType<string | Uint8Array | null, string | Uint8Array | null, string | Uint8Array | null>;

/** `pg_clients`: one row per OAuth client. Arrays are JSON text. */
export interface ClientTable {
  client_id: string;
  /** `client_secret` or `private_key_jwt`. */
  auth_method: string;
  /** JSON array of the client's secrets (`ClientSecretRecord`s: hashes and times, never a secret). */
  secrets: string;
  /** JSON text of the public JWK Set, or null. */
  jwks: string | null;
  jwks_uri: string | null;
  name: string;
  /** JSON array of grant types. */
  grant_types: string;
  /** JSON array of scopes. */
  scopes: string;
  access_token_ttl: NullableInt64;
  refresh_token_ttl: NullableInt64;
  refresh_token_absolute_ttl: NullableInt64;
  created_at: Int64;
  secret_updated_at: Int64;
  /** Version 12: the client's generation (`ClientRecord.generation`); null for a client from before. */
  generation: string | null;
}

/** `pg_accounts`: users of the password grant; `username` is unique. */
export interface AccountTable {
  id: string;
  username: string;
  display_name: string | null;
  email: string | null;
  /** JSON array of roles. */
  roles: string;
  /** 1 or 0 (an integer column, which every engine and driver binds alike). */
  enabled: ColumnType<number | bigint | string, number, number>;
  created_at: Int64;
  password_hash: string;
  /**
   * Place in creation order, 1-based and gapless (unique index): assigned from the `accounts`
   * counter of {@link CounterTable} in the transaction of the insert, so a page is an index range.
   * Optional on insert only in type: the account store always computes it in SQL.
   */
  position: ColumnType<number | bigint | string, number | undefined, number>;
}

/**
 * `pg_refresh_tokens`: refresh tokens by SHA-256; indexed by family (and, since version 10, found
 * by account or absolute expiry through {@link RefreshFamilyTable}).
 */
export interface RefreshTokenTable {
  token_hash: string;
  family_id: string;
  client_id: string;
  account_id: string;
  /** JSON array of scopes. */
  scope: string;
  created_at: Int64;
  expires_at: Int64;
  family_expires_at: Int64;
  consumed_at: NullableInt64;
  revoked_at: NullableInt64;
  /** Sealed answer of the rotation that consumed it (opaque base64url text), or null. */
  replay: string | null;
  /** Grace uses answered from `replay`. */
  grace_uses: ColumnType<number | bigint | string, number | undefined, number>;
  /** Version 12: the generation of the client it was issued to (`clientGeneration`); null for a token from before. */
  client_generation: string | null;
}

/**
 * `pg_refresh_families` (version 10): one row per (family, account, absolute expiry) that a refresh
 * token carries, in practice one per family, written when the family starts, not at each rotation.
 * Indexed by account and by absolute expiry, so `revokeByAccount` and the family rule of
 * `deleteExpired` find their families here and then the tokens through the family index, and a
 * rotation writes two index entries (hash, family) instead of four.
 */
export interface RefreshFamilyTable {
  family_id: string;
  account_id: string;
  family_expires_at: Int64;
}

/** `pg_plants`: the plant store; `id` is a signed 64-bit integer. */
export interface PlantTable {
  /** Written as a bigint or its decimal text; read back as text (cast in SQL) so no driver rounds it. */
  id: ColumnType<number | bigint | string, bigint | string, never>;
  name: FreeText;
  tag: NullableFreeText;
}

/** `pg_signing_keys`: JWT signing keys as JWK JSON (the private one possibly encrypted). */
export interface SigningKeyTable {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  created_at: Int64;
  /** Added by migration 3; null only in a row an older release wrote meanwhile (read as `created_at`). */
  activates_at: ColumnType<number | bigint | string | null, number, number>;
  /**
   * Added by migration 13: the last load of the keys by an instance configured with this key
   * (`lastSignedAt`, stamped by `markSigning`); null when none ever did (a rotated key, a row from before).
   */
  last_signed_at: ColumnType<number | bigint | string | null, number | null | undefined, number | null>;
}

/** `pg_attempts`: failure counters of the brute-force defence, one row per key. */
export interface AttemptTable {
  attempt_key: string;
  count: Int64;
  /** Epoch ms of the first failure of the current window. */
  window_start: Int64;
}

/** `pg_revoked_tokens`: revoked access tokens by `jti`, until they would have expired. */
export interface RevokedTokenTable {
  jti: string;
  expires_at: Int64;
}

/** `pg_assertion_jtis`: used client-assertion jtis (keys: SHA-256 of client id and jti) until they expire. */
export interface AssertionJtiTable {
  jti_key: string;
  expires_at: Int64;
}

/** `pg_sessions`: console sessions by SHA-256 of the session id; indexed by account. */
export interface SessionTable {
  id_hash: string;
  account_id: string;
  csrf_hash: string;
  created_at: Int64;
  expires_at: Int64;
}

/**
 * `pg_counters`: named counters kept in the same transaction as the rows they count. `accounts`
 * is the number of accounts, and so the place of the newest one.
 */
export interface CounterTable {
  name: string;
  value: Int64;
}

/**
 * The Kysely database type of plantgate's tables. Type your own `Kysely<Database>` with it when
 * you build the instance yourself (D1, a shared pool) and pass it to `createSqlStorage`.
 *
 * @example
 * import { Kysely, PostgresDialect } from "kysely";
 * import pg from "pg";
 * import { createSqlStorage, type Database } from "@plantgate/storage-sql";
 *
 * const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) }) });
 * const storage = createSqlStorage(db, "postgres");
 */
/** `pg_audit_events`: kept security events (the optional audit store), newest first by (time, id). */
export interface AuditTable {
  id: string;
  type: string;
  time: Int64;
  client_id: string | null;
  account_id: string | null;
  username: string | null;
  /** The whole event, JSON text. */
  data: string;
}

export interface Database {
  pg_clients: ClientTable;
  pg_accounts: AccountTable;
  pg_refresh_tokens: RefreshTokenTable;
  pg_refresh_families: RefreshFamilyTable;
  pg_plants: PlantTable;
  pg_signing_keys: SigningKeyTable;
  pg_attempts: AttemptTable;
  pg_revoked_tokens: RevokedTokenTable;
  pg_sessions: SessionTable;
  pg_assertion_jtis: AssertionJtiTable;
  pg_counters: CounterTable;
  pg_audit_events: AuditTable;
}
