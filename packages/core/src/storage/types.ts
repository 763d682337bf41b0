/**
 * Storage interfaces: one per aggregate, all async, `null` means absent, and everything that must
 * be atomic is one method. Secrets reach storage only as hashes (client secrets and refresh tokens
 * as SHA-256, passwords as PHC strings). A backend signals an outage by throwing `StorageError`.
 */
import type { AuditPruneStore, AuditStore } from "./audit-types.js";

export type { AuditPruneStore, AuditQuery, AuditRecord, AuditStore } from "./audit-types.js";

/** A grant type the token endpoint supports. */
export type GrantType = "client_credentials" | "password" | "refresh_token";

/** How a client authenticates at the token, revocation and introspection endpoints. */
export type ClientAuthMethod = "client_secret" | "private_key_jwt";

/**
 * One secret of a client, stored by hash. A client may hold several at once (rotation without
 * downtime): each works until it expires or is removed.
 */
export interface ClientSecretRecord {
  /** Identifies the secret within its client (random, at most 64 ASCII characters); shown to administrators. */
  id: string;
  /** SHA-256 (base64url) of the secret; the secret itself is never stored. */
  hash: string;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds from which the secret is refused; null = no expiry. */
  expiresAt: number | null;
  /** Epoch milliseconds of the last successful use (recorded at most about once a minute); null = never. */
  lastUsedAt: number | null;
}

/** A third-party application configured by an administrator. */
export interface ClientRecord {
  clientId: string;
  /**
   * `client_secret` (HTTP Basic or the body, against `secrets`) or `private_key_jwt` (RFC 7523
   * assertions signed by a key of `jwks` or `jwksUri`). A client is refused with the other method.
   */
  authMethod: ClientAuthMethod;
  /** The client's secrets, oldest first (by `createdAt`, then `id`); empty for `private_key_jwt`. */
  secrets: ClientSecretRecord[];
  /** `private_key_jwt`: the client's public JWK Set as JSON text (at most 64 KiB), or null. */
  jwks: string | null;
  /** `private_key_jwt`: where the client publishes its JWK Set, or null. */
  jwksUri: string | null;
  name: string;
  /** Grants this client may use; any other -> `unauthorized_client`. */
  grantTypes: GrantType[];
  /** Scopes this client may request. */
  scopes: string[];
  /** Access-token lifetime in seconds; null = the server default. */
  accessTokenTtl: number | null;
  /** Sliding refresh-token lifetime in seconds; null = the server default. */
  refreshTokenTtl: number | null;
  /** Absolute refresh-token family lifetime in seconds; null = the server default. */
  refreshTokenAbsoluteTtl: number | null;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds of the last secret change (added, removed, regenerated). */
  secretUpdatedAt: number;
  /**
   * Tells this client apart from an earlier or later client of the same id (deleted and
   * re-created): random base64url text (16 characters, at most 64), drawn by `admin.createClient`
   * and never changed. Its tokens carry it (the access token's `cgen` claim, the refresh record's
   * `clientGeneration`), and a token is this client's only when the two are equal. Absent on a
   * client created before 2026-12-02 (or stored by a backend that does not keep it): its tokens
   * are then told apart by time, as before (see `issuedTo`). Contract change, 2026-12-02.
   */
  generation?: string;
}

/** Clients (the console's "settings > security settings"). */
export interface ClientStore {
  get(clientId: string): Promise<ClientRecord | null>;
  /**
   * Inserts; returns false (and changes nothing) when the client id exists. Rejects with a
   * `TypeError` (such as `UnstorableValueError`), storing nothing, for a client id holding a
   * lone UTF-16 surrogate: no page cursor can carry one (core never hands one; an id written
   * straight into the store can).
   */
  create(record: ClientRecord): Promise<boolean>;
  /**
   * Adds one secret beside the existing ones and sets `secretUpdatedAt` to its `createdAt`, in one
   * atomic step: concurrent calls all keep their secret. False (nothing changes) when the client is
   * absent or already has a secret with that id.
   */
  addSecret(clientId: string, secret: ClientSecretRecord): Promise<boolean>;
  /**
   * Replaces every secret of the client by `secret` and sets `secretUpdatedAt` to its `createdAt`,
   * in one atomic step: every earlier secret stops working at once. False when absent.
   */
  replaceSecrets(clientId: string, secret: ClientSecretRecord): Promise<boolean>;
  /**
   * Removes one secret and sets `secretUpdatedAt` to `now`; false when the client or the secret is
   * absent. Concurrent adds and removals of other secrets of the client are kept; a concurrent
   * {@link ClientStore.touchSecret} of another secret, being best effort, may be lost (never a
   * removed secret brought back).
   */
  removeSecret(clientId: string, secretId: string, now: number): Promise<boolean>;
  /**
   * Records a successful use: sets the secret's `lastUsedAt` to `usedAt` unless it is already
   * later. Best effort (no error when the client or secret is gone); never changes anything else.
   */
  touchSecret(clientId: string, secretId: string, usedAt: number): Promise<void>;
  /** All clients, ordered by `clientId` (code-unit order, as accounts). */
  list(): Promise<ClientRecord[]>;
  /**
   * One page of {@link ClientStore.list}'s order: the clients whose `clientId` sorts after `after`
   * (strictly; every client when null), at most `limit` (1 or more) of them, in the same order as
   * `list()` (an `after` that is no client's id, e.g. one deleted meanwhile, still works). A page
   * must cost the same at any depth: a range on an index of `clientId` (`WHERE client_id > ?
   * ORDER BY client_id LIMIT ?`), not OFFSET or a full read. `after` may be empty or hold U+0000
   * (core passes on any id it listed, and one written straight into SQLite or MySQL can be either;
   * since 2026-11-30); a store that holds no id with U+0000 may compare only the part before the
   * first U+0000, which gives the same page. It never holds a lone surrogate (core refuses it).
   *
   * Optional, so a backend written before it still compiles and runs: without it core reads
   * `list()` whole for every page (the console's clients view, `admin.listClientsPage`) and cuts
   * the page out of it. The conformance kit's `listPage` cases fail until it is there.
   */
  listPage?(after: string | null, limit: number): Promise<ClientRecord[]>;
  /**
   * The largest `accessTokenTtl` (seconds) of the stored clients, ignoring nulls; null when no
   * client has one (or there is none). Core asks it to know how long a replaced signing key must
   * stay published (each key re-read while more than one key is stored, about once a minute per
   * instance; automatic rotation, prune, the keys admin commands), never per token (a key re-read may run inside a request). It
   * must cost the same at any number of clients: a kept value or an index (`SELECT
   * MAX(access_token_ttl)` over an index on that column), not a read of every client. It reflects
   * every `create` and `delete` that returned before it was called.
   *
   * Optional, so a backend written before it still compiles and runs: without it core reads
   * `list()` whole each time and takes the largest itself. The conformance kit's
   * `maxAccessTokenTtl` cases fail until it is there.
   */
  maxAccessTokenTtl?(): Promise<number | null>;
  /** Removes the client; false when absent. Its refresh tokens stop working with it. */
  delete(clientId: string): Promise<boolean>;
}

/** A user of the password grant, as stored (with its password hash). */
export interface AccountRecord {
  id: string;
  username: string;
  displayName: string | null;
  email: string | null;
  roles: string[];
  enabled: boolean;
  /** Epoch milliseconds. */
  createdAt: number;
  /** PHC string (see `hashPassword`); never leaves the core. */
  passwordHash: string;
}

/** Accounts. */
export interface AccountStore {
  get(id: string): Promise<AccountRecord | null>;
  findByUsername(username: string): Promise<AccountRecord | null>;
  /** Inserts; returns false (and changes nothing) when the id or the username exists. */
  create(record: AccountRecord): Promise<boolean>;
  /**
   * Inserts all records or none (one transaction). Returns null when all were inserted, else the
   * index of the first record whose id or username exists (in the store or earlier in the batch).
   * The records take consecutive places at the end of the creation order, in the order given.
   */
  createMany(records: AccountRecord[]): Promise<number | null>;
  /** Sets `enabled`; false when absent. */
  setEnabled(id: string, enabled: boolean): Promise<boolean>;
  /**
   * Replaces the account's `passwordHash` with `replacement` only if it is still exactly
   * `expected`, in one atomic step, changing nothing else; true when it replaced it (false when the
   * account is absent or its hash differs). Core calls it after a right password checked against a
   * hash made at another cost, to store the hash at today's (`passwordHashIterations`). Optional
   * (added 2026-12-01): without it hashes keep the cost they were made with.
   */
  setPasswordHash?(id: string, expected: string, replacement: string): Promise<boolean>;
  /**
   * One page in creation order, oldest first: the accounts at places `offset + 1` to
   * `offset + limit` of the order in which `create` and `createMany` stored them (not `createdAt`,
   * which the caller chooses). Accounts are never deleted, so places are gapless and stable and
   * walking all pages sees each account exactly once; `total` is the exact number of accounts.
   * Both must stay cheap at any depth (an index range and a kept count, not OFFSET and COUNT(*)):
   * `GetAccountList` calls this on every request. Concurrent creates never share or skip a place,
   * and an account is listed only once every earlier place is listed: a walk racing creates sees
   * each account once (a place taken first and its account shown later repeats one and skips another).
   */
  list(offset: number, limit: number): Promise<{ items: AccountRecord[]; total: number }>;
}

/** One refresh token of a rotation family, stored by hash. */
export interface RefreshTokenRecord {
  /**
   * The token's storage key (`refreshTokenKey`): its issue time (11 lowercase hex digits of epoch
   * ms, the token's first 11 characters) followed by the SHA-256 (base64url) of the whole token; for
   * a token issued before that prefix, the SHA-256 alone. Opaque to storage, compared exactly; since
   * keys start with the time, an ordered index adds each new one at its end.
   */
  tokenHash: string;
  /** All tokens descending from one password grant share it; reuse revokes the family. */
  familyId: string;
  clientId: string;
  accountId: string;
  /** The scope granted at the password grant; rotation keeps it (RFC 6749 §6). */
  scope: string[];
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms; sliding expiry of this token. */
  expiresAt: number;
  /** Epoch ms; absolute expiry of the family. */
  familyExpiresAt: number;
  /** Epoch ms when it was exchanged, or null. */
  consumedAt: number | null;
  /** Epoch ms when its family was revoked, or null. */
  revokedAt: number | null;
  /**
   * The answer of the exchange that consumed this token, sealed (AES-256-GCM) under a key derived
   * from the token itself, so only someone presenting the token can read it; set by `consume`,
   * null before and when the grace window is off. Opaque text to storage (base64url, under 4 KiB).
   */
  replay: string | null;
  /** How many grace uses of this consumed token were answered (see `graceUse`); 0 for a new token. */
  graceUses: number;
  /**
   * The `generation` of the client the token was issued to (see {@link ClientRecord.generation});
   * absent for a token issued before 2026-12-02 or to a client without one. Contract change, 2026-12-02.
   */
  clientGeneration?: string;
}

/** Refresh tokens. */
export interface RefreshTokenStore {
  create(record: RefreshTokenRecord): Promise<void>;
  findByHash(tokenHash: string): Promise<RefreshTokenRecord | null>;
  /**
   * Rotation in one atomic step: if the token is neither consumed nor revoked, marks it consumed
   * (`consumedAt = now`, `replay` = the given replay data, or null when omitted) and stores
   * `replacement`, returning true; otherwise changes nothing and returns false. Exactly one of any
   * number of concurrent callers gets `true`, and the replay data is visible to every caller that
   * sees the token consumed (the same transaction writes both).
   */
  consume(tokenHash: string, now: number, replacement: RefreshTokenRecord, replay?: string | null): Promise<boolean>;
  /**
   * One grace use of a rotated token, in one atomic step: if the token is consumed with
   * `consumedAt > consumedAfter`, not revoked, has replay data and `graceUses < maxUses`, adds one
   * to `graceUses` and returns the record after that update; otherwise changes nothing and returns
   * null. Of any number of concurrent callers, at most `maxUses - graceUses` get a record, and a
   * token whose family is revoked never gets one.
   */
  graceUse(tokenHash: string, consumedAfter: number, maxUses: number): Promise<RefreshTokenRecord | null>;
  /**
   * Marks every token of the family revoked (idempotent: a token already revoked keeps its
   * `revokedAt`). Including a replacement stored by a `consume` running at the same time: when both
   * have resolved, either `consume` returned false or its replacement is revoked too (reuse
   * detection and logout depend on it). A SQL UPDATE under PostgreSQL's READ COMMITTED misses a
   * replacement committed while it waited for the consumed row's lock: run it again until it
   * revokes nothing (storage-sql does).
   *
   * Resolves to true when this call marked a token that was not revoked (`revokedAt` null), false
   * when it marked none (the family already revoked, or no such family): of any number of
   * concurrent calls on a live family, exactly one gets true (a call that marks only a replacement
   * stored by a `consume` racing them may get true too). The revocation endpoint records
   * `token.revoked` only for the call that got true. Contract change, 2026-12-02: a store written
   * before resolves to nothing, and the endpoint then reads the token back and counts the call as
   * the revoker when the token's `revokedAt` is its `now` (two calls in one millisecond both count).
   */
  revokeFamily(familyId: string, now: number): Promise<boolean | void>;
  /** Marks every token of the account revoked (idempotent), e.g. when it is disabled; a racing `consume` as in `revokeFamily`. */
  revokeByAccount(accountId: string, now: number): Promise<void>;
  /**
   * Deletes tokens that can never matter again and returns how many: every token of a family with
   * `familyExpiresAt <= now`, and every token not consumed with `expiresAt <= now`. A consumed
   * (rotated) token stays until its family's absolute expiry, because presenting it again is how
   * reuse is detected (it revokes the family), whatever its own sliding expiry.
   *
   * With `limit`, deletes at most that many (any of the matching ones) so a backlog never holds a
   * long lock; `prune` calls again until a call returns less than `limit`. Concurrent calls must
   * delete each token once (their counts add up to what was deleted). Without `limit`, all.
   */
  deleteExpired(now: number, limit?: number): Promise<number>;
  /**
   * Optional, for a store that keeps a row per family beside its tokens (the SQL stores'
   * `pg_refresh_families`): deletes at most `limit` of those rows whose family is past its absolute
   * expiry (`familyExpiresAt <= now`) and has no token of that expiry left, and returns how many.
   * A store that offers it leaves those rows to it when `deleteExpired` is given a `limit` (without
   * one, `deleteExpired` deletes them too), so each call of either is a bounded number of
   * statements; `prune` calls it in batches after the tokens', until one comes back short once the
   * tokens are done (a batch that comes back short while the tokens have work left sits out the
   * rounds until they are done; its count is not reported: `PruneCounts` counts tokens).
   * Concurrent calls must delete each row once.
   */
  deleteEndedFamilies?(now: number, limit: number): Promise<number>;
  /**
   * Optional (since 2026-12-03): sets `replay` to null on at most `limit` tokens consumed at or
   * before `consumedBefore` (`consumedAt <= consumedBefore`) whose `replay` is not null, and returns
   * how many it changed; nothing else of them changes (they stay for reuse detection). Concurrent
   * calls must change each token once (their counts add up). `prune` calls it once beside the
   * expired tokens' first batch of each run and in batches once those are done, with
   * `consumedBefore` 6 minutes before its instant (past the longest
   * grace window, 300 s, and a minute of clock difference between instances), so no grace answer
   * changes. Why: a rotated token's replay holds the sealed answer of its rotation, the next refresh
   * token among it, opened with the rotated token itself; kept until the family's end, the replays
   * chained a stale token to the family's live one for anyone who held a rotated token and could
   * read the table (a backup), without a request that reuse detection would see. A store without
   * it keeps them until the family ends, as before. A batch should cost what it changes, not what
   * earlier batches changed: the SQL stores read an index of only the rows holding a replay.
   */
  dropReplays?(consumedBefore: number, limit: number): Promise<number>;
}

/** A plant as stored; `id` is a signed 64-bit integer. */
export interface PlantRecord {
  id: bigint;
  name: string;
  tag: string | null;
}

/** Plants. */
export interface PlantStore {
  /** Inserts; returns false (and changes nothing) when the id exists. */
  create(record: PlantRecord): Promise<boolean>;
  get(id: bigint): Promise<PlantRecord | null>;
}

/** A JWT signing key pair as JWKs. */
export interface SigningKeyRecord {
  kid: string;
  alg: string;
  /**
   * The private key, as opaque text to the store: the private JWK (JSON) when no key encryption
   * key is configured, `enc:A256GCM:...` when it is encrypted at rest, or `external` for a key held
   * by a `signer` outside plantgate. Up to a few kB.
   */
  privateJwk: string;
  /** Public JWK (JSON), published at /.well-known/jwks.json. */
  publicJwk: string;
  /** Epoch ms. */
  createdAt: number;
  /**
   * Epoch ms from which the key signs (stored, so every instance switches at the same instant);
   * until then it is published as `next`. Equal to `createdAt` for a key that signs at once.
   */
  activatesAt: number;
  /**
   * Epoch ms of the last load of the keys by an instance that signs with this key because it is
   * configured there (`signingKey` / `signer`), stamped by {@link SigningKeyStore.markSigning};
   * absent when none ever did (a rotated key, a store without `markSigning`). Such an instance
   * signs with the key until its next load, so the key is not retired before this time (see the
   * README, "Replacing a configured key"). Added 2026-12-02.
   */
  lastSignedAt?: number;
}

/** Signing keys; shared by every instance of a persistent store. */
export interface SigningKeyStore {
  list(): Promise<SigningKeyRecord[]>;
  /** Inserts; returns false when the kid exists. */
  create(record: SigningKeyRecord): Promise<boolean>;
  /**
   * Inserts `record` only if the store holds no key at all, in one atomic step: of any number of
   * concurrent calls on an empty store (other instances included) exactly one stores its record and
   * returns true; the others store nothing and return false, as does a call when any key is stored.
   * The keyring makes a store's first key with it, so instances starting together on an empty store
   * all sign with that one key. Optional (added 2026-11-30), so a store written before it still
   * runs; without it the keyring calls `create` and instances starting together may each store a
   * first key (see the README, "Writing a storage backend").
   */
  createIfEmpty?(record: SigningKeyRecord): Promise<boolean>;
  /** Removes a key (after rotation, once no unexpired token can carry it); false when absent. */
  delete(kid: string): Promise<boolean>;
  /**
   * Replaces the stored `privateJwk` of `kid` with `replacement` only if it is still exactly
   * `expected`, in one atomic step (encrypting a clear key, or moving it to a new key encryption
   * key, while another instance may do the same). Returns whether it replaced; false when the kid
   * is absent or the value differs. Nothing else of the record changes.
   */
  replacePrivateJwk(kid: string, expected: string, replacement: string): Promise<boolean>;
  /**
   * Stamps `at` as the `lastSignedAt` of `kid`, keeping the later time when one is stored (a
   * stamp from an instance whose clock is behind moves nothing back), in one atomic step; nothing
   * when the kid is absent. Nothing else of the record changes. An instance with a configured key
   * calls it at every load of the keys (at least once a minute while it serves), so that other
   * instances keep trusting and publishing the key for as long as it signs there, and no longer.
   * Optional (added 2026-12-02), so a store written before it still runs; without it nothing is
   * stamped and a configured key is retired as before, when the key after it activates (see the
   * README, "Writing a storage backend").
   */
  markSigning?(kid: string, at: number): Promise<void>;
}

/**
 * A failure counter of the brute-force defence. Core chooses the keys (fixed-length hashes of
 * e.g. the username, or the client id and IP), so they are at most 64 ASCII characters.
 */
export interface AttemptRecord {
  key: string;
  /** Failures counted in the current window. */
  count: number;
  /** Epoch ms of the first failure of the current window. */
  windowStart: number;
}

/** Failure counters; shared by every instance so a lock-out holds across them. */
export interface AttemptStore {
  /**
   * Counts one failure in one atomic step: when the key has no record, or its window started at or
   * before `now - windowMs`, the record becomes `{count: 1, windowStart: now}`; otherwise `count`
   * grows by one. Returns the record after the update. Concurrent calls never lose a count.
   */
  increment(key: string, now: number, windowMs: number): Promise<AttemptRecord>;
  get(key: string): Promise<AttemptRecord | null>;
  /** Forgets the key (after a success); no error when absent. */
  reset(key: string): Promise<void>;
  /**
   * Takes back `count` counts (a positive integer): when the key's record has `windowStart` equal
   * to the given one and a count above 0, its count drops by `count` but not below 0, and a record
   * left at 0 is deleted (as `reset` would); otherwise nothing changes (no record, another window).
   * No error when absent. The throttle calls it after a successful password check on a key shared
   * across usernames (a budget), with `count` 1 today: the success gives back its own count, and the
   * failures counted at other usernames stand; `reset` would erase them. Concurrent calls and increments never lose a change:
   * the decrement is one atomic step, and the delete removes a record only while its count is 0 (in
   * SQL, `UPDATE ... SET count = CASE WHEN count > ? THEN count - ? ELSE 0 END WHERE key = ? AND
   * window_start = ? AND count > 0`, then `DELETE ... WHERE key = ? AND count <= 0`; a process
   * that dies between the two leaves a record at 0, which counts as none and goes at its expiry).
   *
   * Optional so a backend written before it still compiles: without it a success resets the
   * budget instead (the behaviour before), which lets whoever holds one working password reset the
   * budget between guesses at other usernames. The conformance kit fails a store without it.
   */
  refund?(key: string, windowStart: number, count: number): Promise<void>;
  /**
   * Deletes records whose window started at or before `before`; returns how many. With `limit`, at
   * most that many (see {@link RefreshTokenStore.deleteExpired} for the batch contract).
   */
  deleteExpired(before: number, limit?: number): Promise<number>;
}

/** Revoked access tokens (RFC 7009), by `jti`, kept until the token would have expired anyway. */
export interface RevokedTokenStore {
  /**
   * Records the `jti` as revoked until `expiresAt` (epoch ms). Idempotent: adding a `jti` already
   * recorded changes nothing and keeps its first `expiresAt`.
   *
   * Resolves to true when this call recorded the `jti`, false when it was recorded already: of any
   * number of concurrent calls with one `jti`, exactly one gets true (one whose entry has expired
   * and may be gone may be recorded again, once). The revocation endpoint records `token.revoked`
   * for an access token only for the call that got true. Contract change, 2026-12-02: a store
   * written before resolves to nothing, and the endpoint then goes by its own read (`has` before
   * the add), so concurrent revocations of one token each record one.
   */
  add(jti: string, expiresAt: number): Promise<boolean | void>;
  has(jti: string): Promise<boolean>;
  /**
   * Deletes entries with `expiresAt <= now`; returns how many. With `limit`, at most that many
   * (see {@link RefreshTokenStore.deleteExpired} for the batch contract).
   */
  deleteExpired(now: number, limit?: number): Promise<number>;
}

/**
 * `jti`s of `private_key_jwt` client assertions already accepted (RFC 7523 §3 item 7), so each
 * assertion is used once, on every instance. Core passes a fixed-length key (SHA-256, base64url,
 * of the client id and the jti), never the assertion.
 */
export interface AssertionJtiStore {
  /**
   * Records the key until `expiresAt` (epoch ms, the assertion's `exp`) in one atomic step and
   * returns true; returns false (and changes nothing) when the key is already recorded. Of any
   * number of concurrent calls with one key, exactly one gets true. An entry past its `expiresAt`
   * may be gone (then the key can be recorded again, once): core refuses expired assertions
   * anyway. An entry not yet expired is never deleted, so its key is never accepted twice,
   * whatever `deleteExpired` calls run at the same time on any instance.
   */
  use(key: string, expiresAt: number): Promise<boolean>;
  /**
   * Deletes entries with `expiresAt <= now`; returns how many. With `limit`, at most that many
   * (see {@link RefreshTokenStore.deleteExpired} for the batch contract). Only entries expired when
   * deleted: a sweep that picks keys first and deletes by key later must check `expiresAt` again
   * in its delete, or a key swept by another pruner and recorded again meanwhile with a live
   * expiry is deleted, and a replayed assertion accepted.
   */
  deleteExpired(now: number, limit?: number): Promise<number>;
}

/** A management-console session, stored by hash (the cookie holds the only copy of the id). */
export interface SessionRecord {
  /** SHA-256 (base64url) of the session id. */
  idHash: string;
  accountId: string;
  /** SHA-256 (base64url) of the CSRF token bound to this session. */
  csrfHash: string;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms. */
  expiresAt: number;
}

/** Console sessions. */
export interface SessionStore {
  /** Inserts; returns false (and changes nothing) when the hash exists. */
  create(record: SessionRecord): Promise<boolean>;
  get(idHash: string): Promise<SessionRecord | null>;
  /** Removes the session (sign-out); false when absent. */
  delete(idHash: string): Promise<boolean>;
  /** Removes every session of the account (e.g. when it is disabled); returns how many. */
  deleteByAccount(accountId: string): Promise<number>;
  /**
   * Deletes sessions with `expiresAt <= now`; returns how many. With `limit`, at most that many
   * (see {@link RefreshTokenStore.deleteExpired} for the batch contract).
   */
  deleteExpired(now: number, limit?: number): Promise<number>;
  /**
   * The console's idle timeout (`console.idleTimeoutSeconds`): sets the session's `expiresAt` to
   * `expiresAt` when that is later than the stored one, and leaves it otherwise; true when it
   * moved, false when the session is absent or already ends at or after `expiresAt`. One atomic
   * step (a conditional `UPDATE ... WHERE expires_at < ?`, a script), so of two racing calls the
   * later end stays whatever order they land in; it never creates a session (one deleted by a
   * sign-out or a sweep stays deleted) and changes no other field.
   *
   * Optional, for backends written before 2026-11-30: without it the app refuses to start when
   * `console.idleTimeoutSeconds` is set, and runs the console with the absolute lifetime alone
   * (and a `warn` line at start) when it is not (README, Writing a storage backend).
   */
  touch?(idHash: string, expiresAt: number): Promise<boolean>;
}

/** Everything plantgate stores. Pass your own to `createPlantgate({ storage })`. */
export interface Storage {
  clients: ClientStore;
  accounts: AccountStore;
  refreshTokens: RefreshTokenStore;
  plants: PlantStore;
  signingKeys: SigningKeyStore;
  attempts: AttemptStore;
  revokedTokens: RevokedTokenStore;
  sessions: SessionStore;
  /** The audit trail. When present, every security event is kept in it; absent = not kept. */
  audit?: AuditStore;
  /**
   * For a storage without `audit` whose backend may still hold events kept earlier (the SQL and D1
   * storages with `audit: false`, e.g. after `PLANTGATE_AUDIT=0`): `prune` deletes them by the
   * retention through it, as it does an audit store's, so usernames and client IPs kept while the
   * trail was on do not stay for good. Nothing is written or listed through it. Ignored when
   * `audit` is present. Optional (since 2026-12-02: before, such events were never pruned).
   */
  auditPrune?: AuditPruneStore;
  assertionJtis: AssertionJtiStore;
}
