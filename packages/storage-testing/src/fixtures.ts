/**
 * Record builders and assertions shared by the suites. Values are chosen to catch the usual
 * backend mistakes: epoch milliseconds that do not fit 32 bits or a TIMESTAMP column, ids whose
 * order differs between code-unit and locale collation, arrays whose order matters, `null` vs "".
 */
import type { AccountRecord, ClientRecord,
  ClientSecretRecord, PlantRecord, RefreshTokenRecord, SessionRecord, SigningKeyRecord, Storage } from "@plantgate/core";
import { expect } from "vitest";
import type { SuiteContext } from "./target.js";

/** 2026-01-01T00:00:00.123Z: a millisecond part, so second-precision columns show up. */
export const T0 = 1_767_225_600_123;
/** The largest valid `Date` in epoch ms (year 275760): needs a 64-bit column. */
export const MAX_DATE_MS = 8_640_000_000_000_000;
export const DAY = 24 * 3600 * 1000;

export const INT64_MIN = -9223372036854775808n;
export const INT64_MAX = 9223372036854775807n;

/**
 * A deterministic 43-character base64url string per label, shaped like the SHA-256 the core
 * stores, so tests need no async hashing to build records.
 */
export function fakeHash(label: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  let h = 0x811c9dc5;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0;
  let out = "";
  for (let i = 0; i < 43; i++) {
    h = Math.imul(h ^ (i + 0x9e), 0x01000193) >>> 0;
    h ^= h >>> 13;
    out += alphabet[h & 63];
  }
  return out;
}

/** A PHC string shaped like `hashPassword`'s output (never verified by the suite). */
export function fakePasswordHash(label: string): string {
  return `$pbkdf2-sha256$i=600000,l=32$${fakeHash(`salt:${label}`).slice(0, 22)}$${fakeHash(`hash:${label}`)}`;
}

export function secretRecord(overrides: Partial<ClientSecretRecord> = {}): ClientSecretRecord {
  return { id: "s1", hash: fakeHash(`secret:${overrides.id ?? "s1"}`), createdAt: T0, expiresAt: null, lastUsedAt: null, ...overrides };
}

export function clientRecord(overrides: Partial<ClientRecord> = {}): ClientRecord {
  const clientId = overrides.clientId ?? "client-a";
  return {
    clientId,
    authMethod: "client_secret",
    secrets: [secretRecord({ hash: fakeHash(`secret:${clientId}`) })],
    jwks: null,
    jwksUri: null,
    name: `Client ${clientId}`,
    grantTypes: ["client_credentials", "password", "refresh_token"],
    scopes: ["Platform_UserAPIs", "Platform_AllAppsServerCommands", "offline_access"],
    accessTokenTtl: null,
    refreshTokenTtl: null,
    refreshTokenAbsoluteTtl: null,
    createdAt: T0,
    secretUpdatedAt: T0,
    ...overrides,
  };
}

export function accountRecord(overrides: Partial<AccountRecord> = {}): AccountRecord {
  const id = overrides.id ?? "acct-1";
  return {
    id,
    username: `user-${id}`,
    displayName: null,
    email: null,
    roles: [],
    enabled: true,
    createdAt: T0,
    passwordHash: fakePasswordHash(id),
    ...overrides,
  };
}

export function refreshRecord(overrides: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord {
  const tokenHash = overrides.tokenHash ?? fakeHash("rt-1");
  return {
    tokenHash,
    familyId: "family-1",
    clientId: "client-a",
    accountId: "acct-1",
    scope: ["Platform_UserAPIs", "offline_access"],
    createdAt: T0,
    expiresAt: T0 + 7 * DAY,
    familyExpiresAt: T0 + 30 * DAY,
    consumedAt: null,
    revokedAt: null,
    replay: null,
    graceUses: 0,
    ...overrides,
  };
}

export function plantRecord(overrides: Partial<PlantRecord> = {}): PlantRecord {
  return { id: 1n, name: "Monstera", tag: null, ...overrides };
}

/** A key record whose private JWK text is about 6 kB, longer than a 4096-bit RSA private JWK (~3.2 kB). */
export function signingKeyRecord(overrides: Partial<SigningKeyRecord> = {}): SigningKeyRecord {
  const kid = overrides.kid ?? "kid-1";
  const filler = (n: number) => Array.from({ length: n }, (_, i) => fakeHash(`${kid}:${i}`)).join("");
  return {
    kid,
    alg: "RS256",
    privateJwk: JSON.stringify({ kty: "RSA", kid, alg: "RS256", n: filler(32), e: "AQAB", d: filler(32), p: filler(16), q: filler(16), dp: filler(16), dq: filler(16), qi: filler(16) }),
    publicJwk: JSON.stringify({ kty: "RSA", kid, alg: "RS256", n: filler(32), e: "AQAB" }),
    createdAt: T0,
    activatesAt: overrides.createdAt ?? T0,
    ...overrides,
  };
}

export function sessionRecord(overrides: Partial<SessionRecord> = {}): SessionRecord {
  const idHash = overrides.idHash ?? fakeHash("session-1");
  return {
    idHash,
    accountId: "acct-1",
    csrfHash: fakeHash(`csrf:${idHash}`),
    createdAt: T0,
    expiresAt: T0 + DAY,
    ...overrides,
  };
}

/**
 * An attempt-counter key shaped like the core's: a label, a colon and a 43-character hash, at
 * most 64 ASCII characters.
 */
export function attemptKey(label: string): string {
  return `${label.slice(0, 20)}:${fakeHash(label)}`;
}

/**
 * Asserts that a record read back is present and equal to what was written: the same keys, no
 * extras, each value of the same type (`5` is not `"5"`, `1n` is not `1`, `null` is not `""` or
 * absent), arrays in the same order. Spreading first ignores the row object's prototype.
 */
export function expectRecord<T extends object>(actual: T | null | undefined, expected: T, what = "record"): void {
  expect(actual, `${what} should be present`).not.toBeNull();
  expect(actual, `${what} should be present`).not.toBeUndefined();
  expect({ ...actual }, `${what} should round-trip exactly`).toStrictEqual({ ...expected });
}

/** As {@link expectRecord}, element by element, for a list in a defined order. */
export function expectRecords<T extends object>(actual: T[], expected: T[], what = "records"): void {
  expect(Array.isArray(actual), `${what} should be an array`).toBe(true);
  expect(actual.map((r) => ({ ...r })), `${what} should round-trip exactly, in order`).toStrictEqual(expected.map((r) => ({ ...r })));
}

/** JavaScript's default string order: by UTF-16 code unit, the order the interfaces define. */
export const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The client and accounts the refresh-token fixtures point at, for backends with foreign keys. */
export async function seedOwners(storage: Storage): Promise<void> {
  for (const clientId of ["client-a", "client-b"]) {
    expect(await storage.clients.create(clientRecord({ clientId })), `seeding client ${clientId}`).toBe(true);
  }
  for (const id of ["acct-1", "acct-2"]) {
    expect(await storage.accounts.create(accountRecord({ id })), `seeding account ${id}`).toBe(true);
  }
}

/**
 * Runs `count` calls at once and returns their results, failing with every rejection's message
 * when any call threw: under contention a backend must answer `false`, not throw.
 */
export async function inParallel<T>(count: number, call: (i: number) => Promise<T>): Promise<T[]> {
  const settled = await Promise.allSettled(Array.from({ length: count }, (_, i) => call(i)));
  const errors = settled.flatMap((s, i) => (s.status === "rejected" ? [`call ${i}: ${String((s.reason as Error)?.message ?? s.reason)}`] : []));
  expect(errors, "no concurrent call may throw (a losing caller must get false)").toEqual([]);
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/**
 * Runs `body` with another instance over the same data: a second one from `target.connect` when
 * the target can open one (released after), else the test's own store, so a race "between two
 * instances" still runs, as two callers of one instance, on every backend.
 */
export async function withOtherInstance<T>(s: SuiteContext, body: (other: Storage) => Promise<T>): Promise<T> {
  if (!s.target.connect) return body(s.storage());
  const other = await s.target.connect(s.storage());
  try {
    return await body(other);
  } finally {
    await s.target.disconnect?.(other);
  }
}

/**
 * The bound of each case of the suites that race or loop over many storage calls (concurrency,
 * housekeeping), whatever the consumer's `testTimeout`: at 25 ms a storage call several passed
 * vitest's default 5 s.
 */
export const RACES_TIMEOUT = 120_000;

/** Resolves after `ms` milliseconds (a timer turn even at 0), to vary which racer starts first. */
export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
