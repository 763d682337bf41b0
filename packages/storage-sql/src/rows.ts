import type {
  AccountRecord,
  AttemptRecord,
  AuditRecord,
  ClientAuthMethod,
  ClientRecord,
  ClientSecretRecord,
  GrantType,
  PlantRecord,
  RefreshTokenRecord,
  SessionRecord,
  SigningKeyRecord,
} from "@plantgate/core";
import type { Insertable, Selectable } from "kysely";
import type { AccountTable, AttemptTable, AuditTable, ClientTable, PlantTable, RefreshTokenTable, SessionTable, SigningKeyTable } from "./schema.js";
import { CorruptRowError } from "./errors.js";
import { json, toInt, toNullableInt, toNullableText, toPlantId, toStringArray, toText, type ValueGuards } from "./values.js";

// Rows <-> records. A `xRow` turns a core record into the row written, refusing (through the
// guards) what the engine cannot store exactly; a `xRecord` reads a row back through the
// converters. The key order of a row is the column order of its INSERT, so keep it stable.

export const clientRow = (v: ValueGuards, r: ClientRecord): Insertable<ClientTable> => ({
  client_id: v.text(r.clientId, "clientId"),
  auth_method: v.text(r.authMethod, "authMethod"),
  secrets: secretsJson(v, r.secrets),
  jwks: v.nullableText(r.jwks, "jwks"),
  jwks_uri: v.nullableText(r.jwksUri, "jwksUri"),
  name: v.text(r.name, "name"),
  grant_types: json(r.grantTypes),
  scopes: json(r.scopes),
  access_token_ttl: r.accessTokenTtl,
  refresh_token_ttl: r.refreshTokenTtl,
  refresh_token_absolute_ttl: r.refreshTokenAbsoluteTtl,
  created_at: r.createdAt,
  secret_updated_at: r.secretUpdatedAt,
  generation: r.generation === undefined ? null : v.text(r.generation, "generation"),
});
export const clientRecord = (row: Selectable<ClientTable>): ClientRecord => ({
  clientId: row.client_id,
  authMethod: toAuthMethod(row.auth_method),
  secrets: toSecrets(row.secrets),
  jwks: toNullableText(row.jwks, "jwks"),
  jwksUri: toNullableText(row.jwks_uri, "jwks_uri"),
  name: row.name,
  grantTypes: toStringArray(row.grant_types, "grant_types") as GrantType[],
  scopes: toStringArray(row.scopes, "scopes"),
  accessTokenTtl: toNullableInt(row.access_token_ttl, "access_token_ttl"),
  refreshTokenTtl: toNullableInt(row.refresh_token_ttl, "refresh_token_ttl"),
  refreshTokenAbsoluteTtl: toNullableInt(row.refresh_token_absolute_ttl, "refresh_token_absolute_ttl"),
  createdAt: toInt(row.created_at, "created_at"),
  secretUpdatedAt: toInt(row.secret_updated_at, "secret_updated_at"),
  // Absent, not null, for a client from before version 12 (the record's field is optional).
  ...(row.generation === null || row.generation === undefined ? {} : { generation: toText(row.generation, "generation") }),
});

/** A client's secrets as the JSON text of `pg_clients.secrets`, oldest first (as the interface orders them). */
export function secretsJson(v: ValueGuards, secrets: readonly ClientSecretRecord[]): string {
  const sorted = [...secrets].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return JSON.stringify(
    sorted.map((s) => ({ id: v.text(s.id, "secret id"), hash: v.text(s.hash, "secret hash"), createdAt: s.createdAt, expiresAt: s.expiresAt, lastUsedAt: s.lastUsedAt })),
  );
}

/** A change to a client's secrets list: the new list (and `secret_updated_at`, if it moves), or null for "nothing to do". */
export type SecretsChange = (secrets: ClientSecretRecord[]) => { secrets: ClientSecretRecord[]; updatedAt: number | undefined } | null;

/** Removes one secret (rotation time `now`); null when the client has no such secret. */
export const removingSecret =
  (secretId: string, now: number): SecretsChange =>
  (secrets) =>
    secrets.some((x) => x.id === secretId) ? { secrets: secrets.filter((x) => x.id !== secretId), updatedAt: now } : null;

/** Records a secret's use at `usedAt`; null when absent or already recorded as late (never moves it back). */
export const touchingSecret =
  (secretId: string, usedAt: number): SecretsChange =>
  (secrets) => {
    const x = secrets.find((y) => y.id === secretId);
    if (!x || (x.lastUsedAt !== null && x.lastUsedAt >= usedAt)) return null;
    return { secrets: secrets.map((y) => (y === x ? { ...y, lastUsedAt: usedAt } : y)), updatedAt: undefined };
  };

const isIntOrNull = (x: unknown) => x === null || Number.isSafeInteger(x);

export function toSecrets(value: unknown): ClientSecretRecord[] {
  let parsed: unknown;
  try {
    parsed = typeof value === "string" ? JSON.parse(value) : undefined;
  } catch {
    parsed = undefined;
  }
  const ok =
    Array.isArray(parsed) &&
    parsed.every(
      (s: Record<string, unknown>) =>
        typeof s === "object" && s !== null && typeof s.id === "string" && typeof s.hash === "string" && Number.isSafeInteger(s.createdAt) && isIntOrNull(s.expiresAt) && isIntOrNull(s.lastUsedAt),
    );
  if (!ok) throw new CorruptRowError("column secrets is not a JSON array of client secrets");
  return (parsed as ClientSecretRecord[])
    .map(({ id, hash, createdAt, expiresAt, lastUsedAt }) => ({ id, hash, createdAt, expiresAt, lastUsedAt }))
    .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function toAuthMethod(value: unknown): ClientAuthMethod {
  if (value !== "client_secret" && value !== "private_key_jwt") throw new CorruptRowError("column auth_method is neither client_secret nor private_key_jwt");
  return value;
}

export const accountRow = (v: ValueGuards, r: AccountRecord): Insertable<AccountTable> => ({
  id: v.text(r.id, "id"),
  username: v.text(r.username, "username"),
  display_name: v.nullableText(r.displayName, "displayName"),
  email: v.nullableText(r.email, "email"),
  roles: json(r.roles),
  enabled: r.enabled ? 1 : 0,
  created_at: r.createdAt,
  password_hash: v.text(r.passwordHash, "passwordHash"),
});
export const accountRecord = (row: Selectable<AccountTable>): AccountRecord => ({
  id: row.id,
  username: row.username,
  displayName: row.display_name,
  email: row.email,
  roles: toStringArray(row.roles, "roles"),
  enabled: toInt(row.enabled, "enabled") !== 0,
  createdAt: toInt(row.created_at, "created_at"),
  passwordHash: row.password_hash,
});

export const refreshRow = (v: ValueGuards, r: RefreshTokenRecord): Insertable<RefreshTokenTable> => ({
  token_hash: v.text(r.tokenHash, "tokenHash"),
  family_id: v.text(r.familyId, "familyId"),
  client_id: v.text(r.clientId, "clientId"),
  account_id: v.text(r.accountId, "accountId"),
  scope: json(r.scope),
  created_at: r.createdAt,
  expires_at: r.expiresAt,
  family_expires_at: r.familyExpiresAt,
  consumed_at: r.consumedAt,
  revoked_at: r.revokedAt,
  replay: r.replay === null ? null : v.text(r.replay, "replay"),
  grace_uses: r.graceUses,
  client_generation: r.clientGeneration === undefined ? null : v.text(r.clientGeneration, "clientGeneration"),
});
export const refreshRecord = (row: Selectable<RefreshTokenTable>): RefreshTokenRecord => ({
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
  replay: row.replay,
  graceUses: toInt(row.grace_uses, "grace_uses"),
  ...(row.client_generation === null || row.client_generation === undefined ? {} : { clientGeneration: toText(row.client_generation, "client_generation") }),
});

export const keyRow = (v: ValueGuards, r: SigningKeyRecord): Insertable<SigningKeyTable> => ({
  kid: v.text(r.kid, "kid"),
  alg: v.text(r.alg, "alg"),
  private_jwk: v.text(r.privateJwk, "privateJwk"),
  public_jwk: v.text(r.publicJwk, "publicJwk"),
  created_at: r.createdAt,
  activates_at: r.activatesAt,
  // Only when stamped: a key without a stamp inserts the columns of before.
  ...(r.lastSignedAt === undefined ? {} : { last_signed_at: r.lastSignedAt }),
});
export const keyRecord = (row: Selectable<SigningKeyTable>): SigningKeyRecord => ({
  kid: row.kid,
  alg: row.alg,
  privateJwk: row.private_jwk,
  publicJwk: row.public_jwk,
  createdAt: toInt(row.created_at, "created_at"),
  activatesAt: row.activates_at === null ? toInt(row.created_at, "created_at") : toInt(row.activates_at, "activates_at"),
  // Absent, not undefined, when never stamped: a record comes back as it was stored.
  ...(row.last_signed_at === null || row.last_signed_at === undefined ? {} : { lastSignedAt: toInt(row.last_signed_at, "last_signed_at") }),
});

export const attemptRecord = (row: Selectable<AttemptTable>): AttemptRecord => ({
  key: row.attempt_key,
  count: toInt(row.count, "count"),
  windowStart: toInt(row.window_start, "window_start"),
});

export const sessionRow = (v: ValueGuards, r: SessionRecord): Insertable<SessionTable> => ({
  id_hash: v.text(r.idHash, "idHash"),
  account_id: v.text(r.accountId, "accountId"),
  csrf_hash: v.text(r.csrfHash, "csrfHash"),
  created_at: r.createdAt,
  expires_at: r.expiresAt,
});
export const sessionRecord = (row: Selectable<SessionTable>): SessionRecord => ({
  idHash: row.id_hash,
  accountId: row.account_id,
  csrfHash: row.csrf_hash,
  createdAt: toInt(row.created_at, "created_at"),
  expiresAt: toInt(row.expires_at, "expires_at"),
});

/** The id goes in as {@link ValueGuards.plantIdParam}; name and tag keep U+0000 (see `free`). */
export const plantRow = (v: ValueGuards, r: PlantRecord) => ({
  id: v.plantIdParam(r.id),
  name: v.free(r.name, "name"),
  tag: r.tag === null ? null : v.free(r.tag, "tag"),
});
export const plantRecord = (row: { id: unknown; name: Selectable<PlantTable>["name"]; tag: Selectable<PlantTable>["tag"] }): PlantRecord => ({
  id: toPlantId(row.id),
  name: toText(row.name, "name"),
  tag: toNullableText(row.tag, "tag"),
});

export const auditRecord = (r: Selectable<AuditTable>): AuditRecord => ({
  id: toText(r.id, "id"),
  type: toText(r.type, "type"),
  time: toInt(r.time, "time"),
  clientId: toNullableText(r.client_id, "client_id"),
  accountId: toNullableText(r.account_id, "account_id"),
  username: toNullableText(r.username, "username"),
  data: toText(r.data, "data"),
});

/** A `clients.listPage` size as a LIMIT: a positive integer (core asks for at most 1001). */
export function pageLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`listPage limit must be a positive integer, not ${limit}`);
  return limit;
}
