import { isoTimestamp } from "../util/iso-time.js";
import { hashPassword, uuidV4 } from "../crypto/index.js";
import type { Context } from "../context.js";
import type { AccountRecord } from "../storage/types.js";
import { AdminConflictError, AdminError, notFound, quoteId } from "./errors.js";
import { createClientAdmin, type ClientAdmin } from "./clients.js";
import { accountView, type AccountPage, type AccountView } from "../api/accounts.js";
import { parseAccountListQuery } from "../schemas/accounts.js";
import { ApiError, ApiErrorCode } from "../errors/index.js";
import { BIDI_CONTROL, INVISIBLE_CLASS, isStorableText, isWellFormed } from "../util/storable-text.js";
import { EXTERNAL_PRIVATE_KEY, KEK_SOURCE, sealsExternalMarker } from "../crypto/key-encryption.js";
import { generateKeyRecord, listSigningKeys, pruneKeys, resealUnderSigningKek, ROTATION_KEY_DELETES, signingKek, type ListedSigningKey } from "../tokens/keys.js";
import { describeKeys, SIGNING_RELOAD_MS } from "../tokens/key-lifecycle.js";
import { prune, type PruneCounts, type PruneOptions } from "./prune.js";
import { EventQueryError, listAuditEvents, type EventPage, type EventQuery } from "./events.js";
import { describeError } from "../http/respond.js";
import { isRole } from "./roles.js";

/**
 * The most passes `reencryptSigningKeys` makes over the stored keys: it stops at the first that
 * finds none to move (the second, unless a rotation elsewhere stored a key meanwhile).
 */
const REENCRYPT_PASSES = 5;

/**
 * The most keys the console's "Re-encrypt keys" (`POST /console/api/signing-keys/reencrypt`) moves
 * in one request, a statement each: the rest are answered in `left` (`complete: false`), for the
 * operator to press again. 16 keeps the request (at most 21 D1 queries: the session 2, a read of the
 * rows per pass, the moves, the event's audit write) under the Free plan's 50 with the costliest
 * start of an isolate (23) beside it; until 2026-12-02 it moved every key, 56 of them 61 queries.
 */
export const REENCRYPT_MOVES = 16;

export type { PruneCounts, PruneOptions } from "./prune.js";
export type { EventPage, EventQuery } from "./events.js";
export { AdminConflictError, AdminError, AdminNotFoundError, type AdminField } from "./errors.js";
export { DEFAULT_CLIENT_PAGE, MAX_CLIENT_PAGE, MAX_CLIENT_SECRETS, MAX_TTL_SECONDS, type ClientPage, type ClientPageQuery, type ClientSecretView, type ClientView, type CreateClientInput, type NewClientSecret } from "./clients.js";

/** Input of {@link Admin.createAccount}. */
export interface CreateAccountInput {
  username: string;
  password: string;
  displayName?: string | null;
  email?: string | null;
  roles?: string[];
  enabled?: boolean;
}

/** What the console, the CLI and the examples use to manage clients and accounts. */
export interface Admin extends ClientAdmin {
  /**
   * The role an account needs to use the console: the app's `console.adminRole` (default `admin`,
   * also with the console off). The role `applyBootstrap` gives with `PLANTGATE_BOOTSTRAP_ADMIN=1`.
   */
  readonly consoleAdminRole: string;
  createAccount(input: CreateAccountInput): Promise<AccountView>;
  /**
   * Idempotent start-up provisioning: ensures the given client (all grants and scopes) and account
   * exist. Existing records are left as they are (the secret is not reset).
   */
  ensureClient(clientId: string, clientSecret: string): Promise<"created" | "exists">;
  ensureAccount(username: string, password: string): Promise<"created" | "exists">;
  /** Deletes a client; its tokens stop working (refresh at once, access tokens at expiry). */
  deleteClient(clientId: string): Promise<void>;
  /**
   * Creates all accounts or none. Every record is checked before anything is written; the error
   * names the 1-based position of the first bad record.
   */
  importAccounts(inputs: CreateAccountInput[]): Promise<AccountView[]>;
  /**
   * Enables or disables an account; disabling also revokes its refresh tokens and deletes its
   * console sessions at once, and enabling a disabled account does both again first (for what a
   * disable that failed after writing its flag left).
   */
  setAccountEnabled(username: string, enabled: boolean): Promise<AccountView>;
  /** Every account, in listing order. Reads them all: for a screen or a large store, page with {@link Admin.listAccountsPage}. */
  listAccounts(): Promise<AccountView[]>;
  /**
   * One page of the accounts, as `GetAccountList` answers it: `page` from 1 (default 1),
   * `pageSize` from 1 to the app's `maxPageSize` (default its `defaultPageSize`), the same rules
   * and the same cost at any depth. Throws AdminError for a page or page size the API would refuse.
   *
   * @example
   * for (let page = 1; ; page++) {
   *   const { accounts, totalPages } = await app.admin.listAccountsPage({ page, pageSize: 100 }); // at most the app's maxPageSize (default 100)
   *   for (const a of accounts) console.log(a.username);
   *   if (page >= totalPages) break;
   * }
   */
  listAccountsPage(query?: { page?: number; pageSize?: number }): Promise<AccountPage>;
  /**
   * Creates a new signing key. It is published at once with status `next` and signs from
   * `activatesAt`, after the activation delay (`signingKeyActivationDelaySeconds`), so resource
   * servers that cached the JWKS know it by then; every instance switches at that instant. With
   * `now: true` (a suspected leak) it signs at once here and on other instances within a minute,
   * and resource servers holding an older JWKS copy refuse its tokens until they fetch it again.
   * The first key of a store without any signs at once too (`status` says which). With `now`, the
   * `next` keys stored before it (an earlier rotation within its activation delay, or automatic
   * rotation's successor published ahead) are deleted, never having signed (`cancelled`): made
   * before the leak, each would otherwise take over from the new key at its own activation time.
   * Keys replaced longer ago than the longest access-token lifetime are deleted (`deleted`). Throws
   * AdminError when the signing key is configured (`signingKey` or `signer`): it is rotated by
   * changing that.
   */
  rotateSigningKey(options?: { now?: boolean }): Promise<{ kid: string; activatesAt: number; status: "active" | "next"; deleted: string[]; cancelled: string[] }>;
  /**
   * Deletes a signing key that does not sign now (`next`, `retired` or `prunable`): after a leak,
   * `rotateSigningKey({ now: true })` alone leaves the old key verifying until every token it could
   * have signed has expired, and whoever holds it can mint tokens meanwhile. Once revoked, the key
   * leaves the JWKS and tokens it signed are refused, here at once and on other instances within a
   * minute (resource servers that cached the JWKS keep it until they fetch it again). Throws
   * AdminNotFoundError for an unknown kid, and AdminError for the key that signs now (rotate with
   * `now` first), within a minute of a rotation taking effect (an instance that has not re-read the
   * keys still signs with the replaced key), for a `next` key due within a minute, and when the
   * signing key is configured. The `prunable` keys activated before it are deleted with it
   * (`deleted`): a key's retirement is read from the key after it, so they would otherwise be
   * published and trusted again. With `maxPrunableDeletes` (the console's: REVOKE_KEY_DELETES, a
   * positive integer; default none), when more of them than that precede it, the oldest that many are
   * deleted and AdminError is thrown, the key not revoked, naming how many are left: call again (or
   * prune) until none is, and the key goes. (A statement each: on a Worker's D1, 50 queries on the
   * Free plan; until 2026-12-02 the console deleted them all.)
   */
  revokeSigningKey(kid: string, options?: { maxPrunableDeletes?: number }): Promise<{ kid: string; status: "next" | "retired" | "prunable"; deleted: string[] }>;
  /**
   * Every stored signing key, newest first, with its status: `next` (published, signs from
   * `activatesAt`), `active` (signs), `retired` (replaced, still verifies and is published),
   * `prunable` (replaced longer ago than any token lives); `stored` and `atRest` say whether and
   * how it is stored (see {@link ListedSigningKey}). Reads only, so a read-only database user can
   * list: a store without keys, and no key configured, lists as `[]` (the first key is made when a server first loads the
   * keys: its start, its first token or JWKS), a key stored in clear is listed `atRest: "clear"`
   * and left so under a configured key encryption key (the servers' next load, or
   * `reencryptSigningKeys`, encrypts it), the configured key (`signingKey` / `signer`) is listed
   * with `stored: false` until a server stores it, and nothing is rotated
   * (`signingKeyMaxAgeSeconds` is the servers' work). Until 2026-11-30 this loaded the keys, with
   * those writes.
   */
  listSigningKeys(): Promise<ListedSigningKey[]>;
  /**
   * Encrypts every stored private key under the first key encryption key (keys in clear, and keys
   * under an older KEK), and stores a `signer`'s marker that a version before 2026-11-29 sealed as
   * the plain marker (it holds no key; sealed, it needed its KEK at every load). Afterwards the older
   * KEKs can be removed from the configuration (`listSigningKeys()` shows no `kekStatus: "older"`,
   * checked again a reload interval later: a rotation under way elsewhere may store its key under
   * the older KEK after this answered, see the README's KEK rotation). Passes over the stored rows
   * until one finds none to move (a rotation elsewhere that read the rows before a move stores its
   * key under the older KEK), at most 5. Throws AdminError when no KEK is configured, and when the
   * fifth pass still moved a key; a key under a KEK that is not configured throws
   * KeyEncryptionError and leaves that key as it was (the keys moved before it stay moved). Event
   * `signing_key.reencrypted` with the kids moved, when any moved (also on such a failure).
   * With `maxMoves` (the console's: REENCRYPT_MOVES, a positive integer; default none), at most that
   * many keys are written; the keys still to move are answered in `left` and `complete` is false:
   * call again until it is true (a statement each: on a Worker's D1, 50 queries on the Free plan;
   * until 2026-12-02 the console moved them all). Without it `left` is `[]` and `complete` true.
   */
  reencryptSigningKeys(options?: { maxMoves?: number }): Promise<{ reencrypted: string[]; unchanged: string[]; left: string[]; complete: boolean }>;
  /**
   * Housekeeping: deletes what can never matter again (expired refresh tokens, keeping rotated
   * ones until their family expires; expired console sessions; finished brute-force windows;
   * revoked jtis past their token's expiry; prunable signing keys), in bounded batches, and
   * returns how many of each. Safe to run from several instances at once.
   *
   * @example
   * const counts = await app.admin.prune();
   * console.log(JSON.stringify(counts)); // {"refreshTokens":42,"sessions":0,...}
   */
  prune(options?: PruneOptions): Promise<PruneCounts>;
  /**
   * A page of the audit trail (security events kept by `storage.audit`), newest first. Throws
   * AdminError when the storage keeps none, or for a bad filter, limit (1-1000) or cursor.
   *
   * @example
   * const { events, next } = await app.admin.listEvents({ type: "account.login_failed", limit: 50 });
   */
  listEvents(query?: EventQuery): Promise<EventPage>;
}


/** A first or last character that shows as nothing (see {@link INVISIBLE_CLASS}). */
const INVISIBLE_EDGE = new RegExp(`^[${INVISIBLE_CLASS}]|[${INVISIBLE_CLASS}]$`, "u");

/**
 * Checks a new account's fields by the rules {@link Admin.createAccount} applies, throwing the same
 * AdminError naming the field (never the password). Used by env.ts's bootstrap check, and by tools
 * that ask for a password only once the rest is known to be good (the CLI's terminal prompt):
 * `{ password: false }` leaves the password out (`input.password` is then not read), and
 * `{ username: false }` the username's rules, which are a new name's (env.ts's bootstrap check of
 * an account stored before a rule, whose name it keeps).
 *
 * @example
 * checkAccountInput({ username: "ann", password: "" }, { password: false }); // the rest, before a prompt
 * checkAccountInput({ username: "ann", password: typed }); // AdminError "password must be 8-1024 characters"
 */
export function checkAccountInput(input: CreateAccountInput, parts: { password?: boolean; username?: boolean } = {}): void {
  if (typeof input !== "object" || input === null) throw new AdminError("an account must be an object");
  if (parts.username !== false) checkNewUsername(input.username);
  if (parts.password !== false) checkNewPassword(input.password);
  const optionalText = (name: "displayName" | "email", v: unknown) => {
    if (v === undefined || v === null) return;
    if (typeof v !== "string" || v.length > 320) throw new AdminError(`${name} must be a string of at most 320 characters`, { field: name });
    // Said as such since 2026-11-30 (it was "must be a string of at most 320 characters").
    if (!isStorableText(v)) throw new AdminError(`${name} must not contain U+0000 or unpaired surrogates`, { field: name });
  };
  optionalText("displayName", input.displayName);
  optionalText("email", input.email);
  // Each role by the rule `console.adminRole` is held to as well (see isRole).
  if (input.roles !== undefined && (!Array.isArray(input.roles) || input.roles.length > 32 || input.roles.some((r) => !isRole(r)))) {
    throw new AdminError("roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters", { field: "roles" });
  }
  if (input.enabled !== undefined && typeof input.enabled !== "boolean") throw new AdminError("enabled must be true or false", { field: "enabled" });
}

/** The rules of a new account's username (see {@link checkAccountInput}). */
function checkNewUsername(username: unknown): void {
  if (typeof username !== "string" || username.length < 1 || username.length > 200) {
    throw new AdminError("username must be 1-200 characters", { field: "username" });
  }
  if (!isStorableText(username)) throw new AdminError("username must not contain U+0000 or unpaired surrogates", { field: "username" });
  // "alice " beside "alice" would be a second account that reads the same in every list and log;
  // sign-ins match the username exactly, so nothing trims it later either (accounts created before
  // 2026-11-29 with such a name keep working).
  if (INVISIBLE_EDGE.test(username)) throw new AdminError("username must not start or end with white space or an invisible character", { field: "username" });
  // "mal\u202Eyrol" shows as another username in every log line, terminal and list (accounts
  // created before 2026-11-29 with such a name keep working: sign-ins match it exactly).
  if (BIDI_CONTROL.test(username)) throw new AdminError("username must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)", { field: "username" });
  // "jose\u0301" (e + combining acute) beside "jos\u00e9" (é) is a second account that prints the same,
  // and the user whose keyboard sends the other form is refused at sign-in, which matches exactly.
  // New names are in NFC, the form keyboards and browsers send (accounts created before 2026-12-02
  // with another form keep working: sign-ins match it exactly).
  // A control character (C0, DEL, C1: U+009B is CSI to a terminal) could not be typed at a sign-in,
  // and went raw into log lines and terminals; client names refuse them already (since 2026-12-02
  // for usernames; accounts created before keep their names).
  if (/\p{Cc}/u.test(username)) throw new AdminError("username must not contain control characters", { field: "username" });
  if (username !== username.normalize("NFC")) throw new AdminError("username must be in Unicode normalization form C (NFC: a composed é, not e followed by a combining accent)", { field: "username" });
}

/** The rules of a new account's password (see {@link checkAccountInput}). */
function checkNewPassword(password: unknown): void {
  if (typeof password !== "string" || password.length < 8 || password.length > 1024) {
    throw new AdminError("password must be 8-1024 characters", { field: "password" });
  }
  // PBKDF2 would hash `pw` followed by U+0000 as `pw` (see hashPassword).
  if (password.includes("\u0000")) throw new AdminError("password must not contain U+0000", { field: "password" });
  // UTF-8 (PBKDF2's input) makes a lone surrogate U+FFFD: "pw\uD800" and "pw\uDC00" would be one
  // password. Taken before 2026-11-30 (the console's JSON and app.admin could give one).
  if (!isWellFormed(password)) throw new AdminError("password must not contain unpaired surrogates", { field: "password" });
}

/**
 * Builds the admin operations over a context. `actor` (the console administrator's username) is
 * named in the events the operations emit; null for the CLI, provisioning and `app.admin`.
 */
export function createAdmin(ctx: Context, by: { actor: string | null } = { actor: null }): Admin {
  const { actor } = by;
  const accountEvent = (a: AccountRecord) =>
    ctx.events.emit({ type: "account.created", account_id: a.id, username: a.username, roles: a.roles, enabled: a.enabled, actor });
  const buildAccount = async (input: CreateAccountInput): Promise<AccountRecord> => {
    checkAccountInput(input);
    return {
      id: uuidV4(ctx.random),
      username: input.username,
      displayName: input.displayName ?? null,
      email: input.email ?? null,
      roles: [...new Set(input.roles ?? [])],
      enabled: input.enabled ?? true,
      createdAt: ctx.clock(),
      passwordHash: await hashPassword(input.password, ctx.random, { iterations: ctx.passwordHashIterations }),
    };
  };
  return {
    ...createClientAdmin(ctx, actor),
    consoleAdminRole: ctx.console?.adminRole ?? "admin",
    async createAccount(input) {
      const record = await buildAccount(input);
      if (!(await ctx.storage.accounts.create(record))) throw new AdminConflictError(`username ${quoteId(input.username)} is taken`);
      accountEvent(record);
      return accountView(record);
    },
    async ensureClient(clientId, clientSecret) {
      if (await ctx.storage.clients.get(clientId)) return "exists";
      try {
        await this.createClient({ clientId, clientSecret, name: clientId });
      } catch (error) {
        // Another instance made it between the read and the write (Worker isolates or servers
        // starting at once): ensured all the same. It failed their start before 2026-11-29.
        if (error instanceof AdminConflictError && (await ctx.storage.clients.get(clientId))) return "exists";
        throw error;
      }
      return "created";
    },
    async ensureAccount(username, password) {
      if (await ctx.storage.accounts.findByUsername(username)) return "exists";
      try {
        await this.createAccount({ username, password });
      } catch (error) {
        // As for ensureClient.
        if (error instanceof AdminConflictError && (await ctx.storage.accounts.findByUsername(username))) return "exists";
        throw error;
      }
      return "created";
    },
    async deleteClient(clientId) {
      if (!(await ctx.storage.clients.delete(clientId))) throw notFound("client", clientId);
      ctx.events.emit({ type: "client.deleted", client_id: clientId, actor });
    },
    async importAccounts(inputs) {
      const records: AccountRecord[] = [];
      for (const [i, input] of inputs.entries()) {
        try {
          checkAccountInput(input);
        } catch (e) {
          const field = e instanceof AdminError ? e.field : undefined;
          throw new AdminError(`record ${i + 1}: ${(e as Error).message}`, field === undefined ? { record: i + 1 } : { field, record: i + 1 });
        }
      }
      for (const input of inputs) records.push(await buildAccount(input));
      const conflict = await ctx.storage.accounts.createMany(records);
      if (conflict !== null) throw new AdminConflictError(`record ${conflict + 1}: username ${quoteId(records[conflict]!.username)} is taken`, { record: conflict + 1 });
      records.forEach(accountEvent);
      return records.map(accountView);
    },
    async setAccountEnabled(username, enabled) {
      const account = await ctx.storage.accounts.findByUsername(username);
      if (account && enabled && !account.enabled) {
        // A disabled account comes back signed out everywhere: a disable that failed after writing
        // its flag (below) left refresh tokens and console sessions, refused only while the flag
        // holds; before 2026-11-30 enabling the account without retrying the disable brought them
        // back. Done before the flag changes: a failure here leaves the account disabled. While it
        // is disabled no sign-in or password grant makes new ones, so none is lost that was wanted.
        await ctx.storage.refreshTokens.revokeByAccount(account.id, ctx.clock());
        await ctx.storage.sessions.deleteByAccount(account.id);
      }
      if (!account || !(await ctx.storage.accounts.setEnabled(account.id, enabled))) {
        throw notFound("user", username);
      }
      // Recorded as soon as it is made: a failure below answers 503 with the account already
      // disabled, and the retry that finishes the job finds it so and would record nothing.
      if (account.enabled !== enabled) ctx.events.emit({ type: enabled ? "account.enabled" : "account.disabled", account_id: account.id, username: account.username, actor });
      if (!enabled) {
        // Signed out everywhere, whoever disables it (CLI, app.admin, console): its refresh tokens
        // and its console sessions, which would otherwise come back if it were enabled again.
        await ctx.storage.refreshTokens.revokeByAccount(account.id, ctx.clock());
        await ctx.storage.sessions.deleteByAccount(account.id);
      }
      return accountView({ ...account, enabled });
    },
    async listAccounts() {
      const out: AccountView[] = [];
      for (let offset = 0; ; offset += 100) {
        const { items } = await ctx.storage.accounts.list(offset, 100);
        out.push(...items.map(accountView));
        if (items.length < 100) return out;
      }
    },
    async listAccountsPage(query = {}) {
      // The API's own rules (its schema, the app's page-size bounds), from numbers instead of text.
      const params = new URLSearchParams();
      for (const name of ["page", "pageSize"] as const) {
        const value: unknown = query[name];
        if (value === undefined) continue;
        if (typeof value !== "number") throw new AdminError(`${name} must be a number`, { field: name });
        params.set(name, String(value));
      }
      let page: number, pageSize: number;
      try {
        ({ page, pageSize } = parseAccountListQuery(ctx.accountListQuery, params));
      } catch (error) {
        // Numbers, so never a repeated parameter: the code says which of the two it is.
        if (error instanceof ApiError) throw new AdminError(error.message, { field: error.code === ApiErrorCode.invalidPage ? "page" : "pageSize" });
        throw error;
      }
      const { items, total } = await ctx.storage.accounts.list((page - 1) * pageSize, pageSize);
      return { accounts: items.map(accountView), page, pageSize, total, totalPages: Math.ceil(total / pageSize) };
    },
    async rotateSigningKey(options = {}) {
      // A configured key signs whatever the store holds: a generated key would never sign.
      if (ctx.keyring.configured === "signingKey") {
        throw new AdminError("The signing key is configured (signingKey / PLANTGATE_SIGNING_KEY); rotate it by changing the configured key.");
      }
      if (ctx.keyring.configured === "signer") throw new AdminError("The signing key is held by a signer (option signer); rotate it by changing the signer.");
      const now = ctx.clock();
      const existing = await ctx.storage.signingKeys.list();
      // Strictly newer than every existing key, so a key activating now is ordered after one that
      // activated in the same millisecond.
      const createdAt = Math.max(now, ...existing.map((k) => k.createdAt + 1));
      // The first key of a store signs at once whatever its activation time (the oldest key signs
      // until a newer one activates), and no JWKS without it can be cached anywhere: until
      // 2026-12-01 it was said to be `next` (the CLI after `migrate`, the event's `immediate`).
      const immediate = options.now === true || existing.length === 0;
      // The new key goes under the KEK of the key signing now (see signingKek); a process without
      // that KEK refuses, as `keys revoke` does: until 2026-12-01 one without any stored the new key
      // in clear beside encrypted ones (the servers sealed it at their next load, after it had
      // reached the WAL and the backups), and one with only another KEK sealed it where the
      // servers could not open it.
      const kek = signingKek(existing, now);
      if (kek !== null && !(await ctx.keyEncryption.ids()).includes(kek)) {
        throw new AdminError(
          `The signing key is stored encrypted under a key encryption key (id ${kek}) this process does not have: give it ${KEK_SOURCE} as the servers have it; nothing was stored.`,
        );
      }
      const generated = await generateKeyRecord(ctx.signingAlg, createdAt);
      // The delay counts from after the key's generation (an RS256 key takes a while) and its seal, not from
      // `now`: an instance re-reading the keys during the generation publishes the key at its next
      // re-read, a reload interval later, and until 2026-12-03 that came the generation's time
      // after the delay's margin, so a resource server fetching from it then refused the key's
      // first tokens for that long (the README's "activation edge").
      // The seal too (a KEK held remotely may take as long): the clock is read after both.
      const privateJwk = ctx.keyEncryption.configured ? await ctx.keyEncryption.seal(generated.kid, generated.privateJwk, kek) : generated.privateJwk;
      const activatesAt = immediate ? now : Math.max(now, ctx.clock()) + ctx.signingKeyActivationDelayMs;
      const record = { ...generated, activatesAt };
      const stored = { ...record, privateJwk };
      await ctx.storage.signingKeys.create(stored);
      // `now` (a suspected leak): a `next` key stored before (a rotation within its activation
      // delay, automatic rotation's successor published ahead) activates after this one, and would
      // take over from it then: made before the leak, its private part in every instance's memory.
      // Until 2026-12-02 it did, minutes later, and the operator was told the new key signs from
      // now on. Such keys never signed: deleted here, read after the create so one another process
      // stored meanwhile goes too. An instance holding one as `next` re-reads the keys before it
      // first signs with a key whose time came since its last read (see the keyring's
      // signingKey), so it signs with this one instead; from its next reload it no longer has it.
      // Only keys stored before this one (created earlier: every key read above was, see
      // createdAt) and not active yet on this process's clock at this read: until 2026-12-02 any
      // key activating later went, so a concurrent `--now` rotation (another operator, the console
      // of another instance) had its key, made after the leak and already signing, deleted, and its
      // tokens refused. A key created in the same millisecond cannot be ordered and is left; one
      // from a process whose clock is ahead has a later createdAt and is left too; one from a
      // process whose clock is behind is active here already.
      const cancelled: string[] = [];
      if (options.now === true) {
        try {
          const stored = await ctx.storage.signingKeys.list();
          const readAt = ctx.clock();
          for (const k of stored) {
            if (k.kid !== record.kid && k.createdAt < createdAt && k.activatesAt > readAt && (await ctx.storage.signingKeys.delete(k.kid))) cancelled.push(k.kid);
          }
        } catch (error) {
          // The new key is stored and signs (its event says so, with what was deleted), but a
          // pending key left would still take over from it: the caller's failure (a 503, the CLI's
          // exit 3), so the operator rotates with now again, which deletes it.
          ctx.keyring.invalidate();
          ctx.events.emit({ type: "signing_key.rotated", kid: record.kid, alg: record.alg, activates_at: activatesAt, immediate, automatic: false, deleted: [], cancelled, actor });
          ctx.logger.warn(
            `signing key ${quoteId(record.kid)} was stored and signs from now on, but deleting the next keys stored before it, which would take over from it, failed: rotate with now again`,
            describeError(error),
          );
          throw error;
        }
      }
      // The new key was sealed under the KEK of the key signing when the rows were read above: a
      // `keys reencrypt` (another process, the console of another instance) may have moved the keys
      // since, and answered that every key was moved. Read again after the create and, if so,
      // sealed again under the KEK they are under now (see resealUnderSigningKek). Until 2026-12-02
      // the key stayed under the old KEK. A failure is logged, not thrown (the key is stored):
      // `keys list` then shows it under the older KEK, and `keys reencrypt` moves it.
      if (ctx.keyEncryption.configured) {
        try {
          await resealUnderSigningKek(ctx.storage.signingKeys, ctx.keyEncryption, record.kid, record.privateJwk, stored.privateJwk, await ctx.storage.signingKeys.list(), now);
        } catch (error) {
          ctx.logger.warn(`signing key ${quoteId(record.kid)} rotated; checking the key encryption key it is sealed under against a re-encryption meanwhile failed (keys list shows it; keys reencrypt moves it)`, describeError(error));
        }
      }
      // A key is safe to delete once the key after it has been signing for longer than any token
      // lives. Housekeeping: the rotation is made once the key is stored, so a failure here is
      // logged, not thrown (a retry would store a second key), and the next rotation or prune
      // deletes what is left. At most ROTATION_KEY_DELETES, the oldest first (a statement each, in
      // the console's request: until 2026-12-02 every prunable key, 59 of them 66 D1 queries on a
      // Worker, past the Free plan's 50); the next rotations or the prune delete the rest.
      let deleted: string[] = [];
      try {
        deleted = await pruneKeys(ctx.storage.signingKeys, now, await ctx.maxAccessTokenTtlMs(), undefined, ROTATION_KEY_DELETES);
      } catch (error) {
        ctx.logger.warn("signing key rotated; deleting keys past their use failed (the next rotation or prune deletes them)", describeError(error));
      }
      ctx.keyring.invalidate();
      ctx.events.emit({ type: "signing_key.rotated", kid: record.kid, alg: record.alg, activates_at: activatesAt, immediate, automatic: false, deleted, cancelled, actor });
      return { kid: record.kid, activatesAt, status: immediate ? "active" : "next", deleted, cancelled };
    },
    async revokeSigningKey(kid, options = {}) {
      const maxDeletes = options.maxPrunableDeletes ?? Number.POSITIVE_INFINITY;
      if (options.maxPrunableDeletes !== undefined && (!Number.isSafeInteger(maxDeletes) || maxDeletes < 1)) throw new TypeError("maxPrunableDeletes must be a positive integer");
      if (ctx.keyring.configured === "signingKey") throw new AdminError("The signing key is configured (signingKey / PLANTGATE_SIGNING_KEY); the store's keys are not used.");
      if (ctx.keyring.configured === "signer") throw new AdminError("The signing key is held by a signer (option signer); the store's keys are not used.");
      // An unknown kid is answered from the store alone: loading the keys below would make the
      // first key of a store without any (until 2026-11-30 a mistyped kid on a fresh store did).
      const records = await ctx.storage.signingKeys.list();
      if (!records.some((r) => r.kid === kid)) throw notFound("signing key", kid);
      const keys = await ctx.keyring.list();
      const key = keys.find((k) => k.kid === kid);
      if (key === undefined) throw notFound("signing key", kid);
      if (key.status === "active") throw new AdminError(`signing key ${quoteId(kid)} signs now: rotate with now (keys rotate --now) first, then revoke it`);
      // Other instances re-read the keys once a minute: until then one may still sign with the key
      // the active one replaced less than a minute ago, or start signing with a next key due within
      // a minute; deleting it now would refuse the tokens they issue meanwhile.
      const now = ctx.clock();
      if (key.status === "next" && key.activatesAt - now < SIGNING_RELOAD_MS) {
        throw new AdminError(`signing key ${quoteId(kid)} starts signing within a minute, too soon for every instance to learn of its revocation: rotate with now once it signs, then revoke it`);
      }
      const active = keys.find((k) => k.status === "active");
      if (key.status !== "next" && active !== undefined && now - active.activatesAt < SIGNING_RELOAD_MS) {
        const from = isoTimestamp(active.activatesAt + SIGNING_RELOAD_MS);
        throw new AdminError(`signing key ${quoteId(kid)} may still sign on instances that have not re-read the keys since ${quoteId(active.kid)} took over (they do within a minute): revoke it from ${from}`);
      }
      // The prunable keys before it go first: a key's retirement is read from the key after it, so
      // deleting a retired key moved its prunable predecessor's to the next key's activation, and
      // that key was published and trusted again (up to a token lifetime; until 2026-12-01 a
      // revocation after a leak so brought back a key the operator had been told was dead).
      // describeKeys lists newest first: the keys after `kid` activated before it. Oldest first, so
      // that a bounded call (the console's, `maxPrunableDeletes`) may delete a prefix of them alone:
      // deleting the oldest changes no other key's retirement (see prunableKids).
      const described = describeKeys(records, now, await ctx.maxAccessTokenTtlMs());
      const before = described
        .slice(described.findIndex((d) => d.kid === kid) + 1)
        .filter((k) => k.status === "prunable")
        .map((k) => k.kid)
        .reverse();
      const deleted: string[] = [];
      // The prunable keys are gone for good once deleted (as a prune deletes them); the revocation
      // is not: a failure says which went, as a prune's counts are logged (no event: the retry's
      // says only what it deletes). Until 2026-12-03 only the revoked key's own delete said so, and
      // a failure among the prunable ones left those already deleted named nowhere.
      const failed = (error: unknown) => {
        if (deleted.length > 0) ctx.logger.warn(`signing key revocation failed; the prunable keys before it were deleted: ${deleted.map(quoteId).join(", ")}`, describeError(error));
        return error;
      };
      // A failure leaves the cached keys as they are: the deleted keys were prunable (trusted by
      // none), and dropping the cache in the outage that failed the delete would make every
      // signing and JWKS request re-read the store (a 503 while it fails) where the cached keys
      // serve until the minute's reload.
      const deleteEach = async (kids: readonly string[]) => {
        try {
          for (const k of kids) if (await ctx.storage.signingKeys.delete(k)) deleted.push(k);
        } catch (error) {
          throw failed(error);
        }
      };
      if (before.length > maxDeletes) {
        await deleteEach(before.slice(0, maxDeletes));
        if (deleted.length > 0) ctx.keyring.invalidate();
        throw new AdminError(
          `signing key ${quoteId(kid)} is not revoked yet: the ${before.length} prunable keys activated before it go first (deleting it alone would make the last of them trusted again), at most ${maxDeletes} a request; deleted the oldest ${maxDeletes}, ${before.length - maxDeletes} left: revoke it again (or let the prune delete them)`,
        );
      }
      await deleteEach(before);
      let gone: boolean;
      try {
        gone = await ctx.storage.signingKeys.delete(kid);
      } catch (error) {
        throw failed(error);
      }
      if (gone || deleted.length > 0) ctx.keyring.invalidate();
      if (!gone) throw notFound("signing key", kid);
      ctx.events.emit({ type: "signing_key.revoked", kid, status: key.status, deleted, actor });
      return { kid, status: key.status, deleted };
    },
    async listSigningKeys() {
      // Never through the keyring's load, which writes (a first key, sealing, the configured key,
      // automatic rotation): an auditor's listing must leave the store as it was.
      const now = ctx.clock();
      return listSigningKeys(ctx.storage.signingKeys, {
        now,
        maxTokenTtlMs: await ctx.maxAccessTokenTtlMs(),
        configured: await ctx.keyring.configuredRecord(now),
        keks: await ctx.keyEncryption.ids(),
      });
    },
    async reencryptSigningKeys(options = {}) {
      const maxMoves = options.maxMoves ?? Number.POSITIVE_INFINITY;
      if (options.maxMoves !== undefined && (!Number.isSafeInteger(maxMoves) || maxMoves < 1)) throw new TypeError("maxMoves must be a positive integer");
      if (!ctx.keyEncryption.configured) throw new AdminError(`No key encryption key is configured; set ${KEK_SOURCE}.`);
      const reencrypted: string[] = [];
      // Keys still to move once `maxMoves` writes were made (each compare-and-set, a retry's too).
      const left: string[] = [];
      let writes = 0;
      // Whether a row is as reencrypt leaves it: a private key sealed under the first KEK, or a
      // signer's marker stored as such (it holds no key, so needs no KEK; one that is sealed, under
      // any KEK, is told by its length, see sealsExternalMarker).
      const done = async (stored: string) =>
        stored === EXTERNAL_PRIVATE_KEY || ((await ctx.keyEncryption.sealedWithPrimary(stored)) && !sealsExternalMarker(stored));
      // What a row becomes: its private key sealed under the first KEK; a signer's marker that a
      // version before 2026-11-29 sealed becomes the marker again, so it no longer needs any KEK.
      const moved = async (kid: string, stored: string) => {
        const clear = await ctx.keyEncryption.open(kid, stored);
        return clear === EXTERNAL_PRIVATE_KEY ? EXTERNAL_PRIVATE_KEY : ctx.keyEncryption.seal(kid, clear);
      };
      let unchanged: string[] = [];
      try {
        // Pass after pass over the stored rows until one finds none to move: a rotation elsewhere
        // (automatic on another instance, `keys rotate` in another process) that read the rows
        // before the move seals its new key under the old KEK and may store it after this pass read
        // them. Until 2026-12-02 one pass answered that every key was moved, and such a key was
        // left under the old KEK. A key stored after the last pass's read is the rotation's own to
        // move (see resealUnderSigningKek): it reads the rows after its create, and sees the keys
        // moved.
        for (let pass = 1; ; pass++) {
          const moves = reencrypted.length;
          unchanged = [];
          for (const k of await ctx.storage.signingKeys.list()) {
            if (await done(k.privateJwk)) {
              if (!reencrypted.includes(k.kid)) unchanged.push(k.kid);
              continue;
            }
            if (writes >= maxMoves) {
              left.push(k.kid);
              continue;
            }
            writes++;
            // Compare-and-set: a row changed meanwhile (by a starting instance) is read again.
            if (await ctx.storage.signingKeys.replacePrivateJwk(k.kid, k.privateJwk, await moved(k.kid, k.privateJwk))) reencrypted.push(k.kid);
            else {
              const now = (await ctx.storage.signingKeys.list()).find((r) => r.kid === k.kid);
              if (now === undefined || (await done(now.privateJwk))) {
                if (!reencrypted.includes(k.kid)) unchanged.push(k.kid);
              } else if (writes >= maxMoves) left.push(k.kid);
              else {
                writes++;
                if (await ctx.storage.signingKeys.replacePrivateJwk(k.kid, now.privateJwk, await moved(k.kid, now.privateJwk))) reencrypted.push(k.kid);
                else throw new AdminError(`signing key ${quoteId(k.kid)} changed while it was being re-encrypted; re-encrypt again (pnpm plantgate keys reencrypt, or Re-encrypt keys in the console)`);
              }
            }
          }
          // The budget spent: the rest is the next call's (no further pass: it could move nothing).
          if (left.length > 0 || reencrypted.length === moves) break;
          if (pass === REENCRYPT_PASSES) {
            throw new AdminError(
              `signing keys were still being stored under an older key encryption key after ${REENCRYPT_PASSES} passes (rotations under way elsewhere); re-encrypt again (pnpm plantgate keys reencrypt, or Re-encrypt keys in the console)`,
            );
          }
        }
      } finally {
        // Also when a later key failed (a KEK not configured): the keys moved before it stay moved,
        // and the event says which.
        if (reencrypted.length > 0) {
          ctx.keyring.invalidate();
          const [kek] = await ctx.keyEncryption.ids();
          ctx.events.emit({ type: "signing_key.reencrypted", reencrypted: [...reencrypted], kek: kek!, actor });
        }
      }
      return { reencrypted, unchanged, left, complete: left.length === 0 };
    },
    prune(options) {
      return prune(ctx, options);
    },
    async listEvents(query = {}) {
      let page: EventPage | null;
      try {
        page = await listAuditEvents(ctx, query);
      } catch (e) {
        if (e instanceof EventQueryError) throw new AdminError(e.message, { field: e.field });
        throw e;
      }
      if (!page) throw new AdminError("This storage keeps no audit trail: give it an audit store (the audit: true option of createMemoryStorage, openSqlStorage and createD1Storage).");
      return page;
    },
  };
}
