import { hashPassword, randomToken, sha256, uuidV4 } from "../crypto/index.js";
import type { Context } from "../options.js";
import type { AccountRecord, ClientRecord, GrantType } from "../storage/types.js";
import { accountView, type AccountView } from "../api/accounts.js";
import { isStorableText } from "../api/plants.js";
import { describeKeys, generateKeyRecord, pruneKeys, type SigningKeyInfo } from "../tokens/keys.js";
import { prune, type PruneCounts, type PruneOptions } from "./prune.js";

export type { PruneCounts, PruneOptions } from "./prune.js";

/** Input of {@link Admin.createClient}. */
export interface CreateClientInput {
  /** Default: a random id. */
  clientId?: string;
  /** Default: a fresh 256-bit random secret. Give one only to mirror an existing deployment. */
  clientSecret?: string;
  name?: string;
  /** Default: all three grants. */
  grantTypes?: GrantType[];
  /** Default: all known scopes. */
  scopes?: string[];
  accessTokenTtl?: number | null;
  refreshTokenTtl?: number | null;
  refreshTokenAbsoluteTtl?: number | null;
}

/** Input of {@link Admin.createAccount}. */
export interface CreateAccountInput {
  username: string;
  password: string;
  displayName?: string | null;
  email?: string | null;
  roles?: string[];
  enabled?: boolean;
}

/** The client view an administrator sees: never the secret or its hash. */
export type ClientView = Omit<ClientRecord, "secretHash">;

/** Thrown by admin operations for bad input; its message is safe to show. */
export class AdminError extends Error {
  override readonly name = "AdminError";
}

/** What the console, the CLI and the examples use to manage clients and accounts. */
export interface Admin {
  /** Creates a client; the secret is returned once and only its hash is stored. */
  createClient(input?: CreateClientInput): Promise<{ client: ClientView; clientSecret: string }>;
  /** Regenerates a client's secret; the old one stops working at once. */
  rotateClientSecret(clientId: string): Promise<{ clientSecret: string }>;
  listClients(): Promise<ClientView[]>;
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
  /** Enables or disables an account; disabling also revokes its refresh tokens at once. */
  setAccountEnabled(username: string, enabled: boolean): Promise<AccountView>;
  /** Every account, in listing order. */
  listAccounts(): Promise<AccountView[]>;
  /**
   * Creates a new signing key, which signs from now on (other instances switch within a minute);
   * keys superseded longer ago than the longest access-token lifetime are deleted. Throws
   * AdminError when the signing key is configured (`signingKey`): that key is rotated by changing it.
   */
  rotateSigningKey(): Promise<{ kid: string; deleted: string[] }>;
  /**
   * Every stored signing key, newest first, with its status: `active` (signs), `retired` (replaced,
   * still verifies and is published), `prunable` (replaced longer ago than any token lives).
   */
  listSigningKeys(): Promise<SigningKeyInfo[]>;
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
}

const GRANTS: GrantType[] = ["client_credentials", "password", "refresh_token"];
const ID = /^[\x21-\x7e]{1,200}$/;

const clientView = ({ secretHash: _omit, ...rest }: ClientRecord): ClientView => rest;

function checkAccountInput(input: CreateAccountInput): void {
  if (typeof input !== "object" || input === null) throw new AdminError("an account must be an object");
  if (typeof input.username !== "string" || input.username.length < 1 || input.username.length > 200) {
    throw new AdminError("username must be 1-200 characters");
  }
  if (!isStorableText(input.username)) throw new AdminError("username must not contain U+0000 or unpaired surrogates");
  if (typeof input.password !== "string" || input.password.length < 8 || input.password.length > 1024) {
    throw new AdminError("password must be 8-1024 characters");
  }
  const optionalText = (name: string, v: unknown) => {
    if (v !== undefined && v !== null && (typeof v !== "string" || v.length > 320 || !isStorableText(v))) throw new AdminError(`${name} must be a string of at most 320 characters`);
  };
  optionalText("displayName", input.displayName);
  optionalText("email", input.email);
  if (input.roles !== undefined && (!Array.isArray(input.roles) || input.roles.some((r) => typeof r !== "string" || r.length < 1 || r.length > 100))) {
    throw new AdminError("roles must be a list of 1-100 character strings");
  }
  if (input.enabled !== undefined && typeof input.enabled !== "boolean") throw new AdminError("enabled must be true or false");
}

/** Builds the admin operations over a context. */
export function createAdmin(ctx: Context): Admin {
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
  const ttl = (name: string, v: number | null | undefined): number | null => {
    if (v === undefined || v === null) return null;
    if (!Number.isSafeInteger(v) || v < 1) throw new AdminError(`${name} must be a positive integer`);
    return v;
  };
  return {
    async createClient(input = {}) {
      const clientId = input.clientId ?? randomToken(ctx.random, 16);
      if (!ID.test(clientId)) throw new AdminError("clientId must be 1-200 printable ASCII characters without spaces");
      // As a URL path segment ("/console/api/clients/.."), "." and ".." are removed by URL
      // normalisation, so such a client could never be addressed through the console.
      if (clientId === "." || clientId === "..") throw new AdminError('clientId must not be "." or ".."');
      const clientSecret = input.clientSecret ?? randomToken(ctx.random, 32);
      if (clientSecret.length < 16 || clientSecret.length > 1024) throw new AdminError("clientSecret must be 16-1024 characters");
      const grantTypes = input.grantTypes ?? GRANTS;
      if (grantTypes.some((g) => !GRANTS.includes(g))) throw new AdminError("unknown grant type");
      const scopes = input.scopes ?? ctx.scopes.all;
      if (scopes.some((s) => !ctx.scopes.all.includes(s))) throw new AdminError(`unknown scope; known: ${ctx.scopes.all.join(" ")}`);
      const now = ctx.clock();
      const record: ClientRecord = {
        clientId,
        secretHash: await sha256(clientSecret),
        name: input.name ?? clientId,
        grantTypes: [...new Set(grantTypes)],
        scopes: [...new Set(scopes)],
        accessTokenTtl: ttl("accessTokenTtl", input.accessTokenTtl),
        refreshTokenTtl: ttl("refreshTokenTtl", input.refreshTokenTtl),
        refreshTokenAbsoluteTtl: ttl("refreshTokenAbsoluteTtl", input.refreshTokenAbsoluteTtl),
        createdAt: now,
        secretUpdatedAt: now,
      };
      if (!(await ctx.storage.clients.create(record))) throw new AdminError(`client ${clientId} already exists`);
      return { client: clientView(record), clientSecret };
    },
    async rotateClientSecret(clientId) {
      const clientSecret = randomToken(ctx.random, 32);
      if (!(await ctx.storage.clients.updateSecret(clientId, await sha256(clientSecret), ctx.clock()))) {
        throw new AdminError(`client ${clientId} does not exist`);
      }
      return { clientSecret };
    },
    async listClients() {
      return (await ctx.storage.clients.list()).map(clientView);
    },
    async createAccount(input) {
      const record = await buildAccount(input);
      if (!(await ctx.storage.accounts.create(record))) throw new AdminError(`username ${input.username} is taken`);
      return accountView(record);
    },
    async ensureClient(clientId, clientSecret) {
      if (await ctx.storage.clients.get(clientId)) return "exists";
      await this.createClient({ clientId, clientSecret, name: clientId });
      return "created";
    },
    async ensureAccount(username, password) {
      if (await ctx.storage.accounts.findByUsername(username)) return "exists";
      await this.createAccount({ username, password });
      return "created";
    },
    async deleteClient(clientId) {
      if (!(await ctx.storage.clients.delete(clientId))) throw new AdminError(`client ${clientId} does not exist`);
    },
    async importAccounts(inputs) {
      const records: AccountRecord[] = [];
      for (const [i, input] of inputs.entries()) {
        try {
          checkAccountInput(input);
        } catch (e) {
          throw new AdminError(`record ${i + 1}: ${(e as Error).message}`);
        }
      }
      for (const input of inputs) records.push(await buildAccount(input));
      const conflict = await ctx.storage.accounts.createMany(records);
      if (conflict !== null) throw new AdminError(`record ${conflict + 1}: username ${records[conflict]!.username} is taken`);
      return records.map(accountView);
    },
    async setAccountEnabled(username, enabled) {
      const account = await ctx.storage.accounts.findByUsername(username);
      if (!account || !(await ctx.storage.accounts.setEnabled(account.id, enabled))) {
        throw new AdminError(`user ${username} does not exist`);
      }
      if (!enabled) await ctx.storage.refreshTokens.revokeByAccount(account.id, ctx.clock());
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
    async rotateSigningKey() {
      // A configured key signs whatever the store holds: a generated key would never sign, and the
      // prune below, which takes the newest key as active, could delete the configured one.
      if (ctx.keyring.configured) {
        throw new AdminError("The signing key is configured (signingKey / PLANTGATE_SIGNING_KEY); rotate it by changing the configured key.");
      }
      const now = ctx.clock();
      const existing = await ctx.storage.signingKeys.list();
      // Strictly newer than every existing key, so "newest signs" is unambiguous even within one ms.
      const createdAt = Math.max(now, ...existing.map((k) => k.createdAt + 1));
      const record = await generateKeyRecord(ctx.signingAlg, createdAt);
      await ctx.storage.signingKeys.create(record);
      // A key is safe to delete once the key after it has been signing for longer than any token lives.
      const deleted = await pruneKeys(ctx.storage.signingKeys, now, await ctx.maxAccessTokenTtlMs(), record.kid);
      ctx.keyring.invalidate();
      return { kid: record.kid, deleted };
    },
    async listSigningKeys() {
      // Through the keyring first: on a fresh store that creates the first key (and applies
      // automatic rotation), so the list shows what servers act on.
      const { kid } = await ctx.keyring.signingKey();
      return describeKeys(await ctx.storage.signingKeys.list(), ctx.clock(), await ctx.maxAccessTokenTtlMs(), kid);
    },
    prune(options) {
      return prune(ctx, options);
    },
  };
}
