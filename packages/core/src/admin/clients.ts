import { base64url, fromBase64url, randomToken, sha256 } from "../crypto/index.js";
import type { Context } from "../context.js";
import { checkJwksImports, checkJwksUri, JwksError, parseJwks } from "../oauth/client-keys.js";
import type { ClientAuthMethod, ClientRecord, ClientSecretRecord, GrantType } from "../storage/types.js";
import { BIDI_CONTROL, byCodeUnit, INVISIBLE_CLASS, isStorableText, isWellFormed } from "../util/storable-text.js";
import { AdminConflictError, AdminError, AdminNotFoundError, notFound, quoteId, type AdminField } from "./errors.js";

/** The longest client name (the console's form and API take the same). */
export const MAX_CLIENT_NAME = 200;

/** Input of {@link ClientAdmin.createClient}. */
export interface CreateClientInput {
  /** Default: a random id. */
  clientId?: string;
  /** Default `client_secret`. `private_key_jwt` needs `jwks` or `jwksUri` (one of them) and gets no secret. */
  authMethod?: ClientAuthMethod;
  /** Default: a fresh 256-bit random secret. Give one only to mirror an existing deployment. */
  clientSecret?: string;
  /** Seconds until the first secret expires; default: never. */
  secretExpiresIn?: number;
  /** `private_key_jwt`: the client's public JWK Set (JSON text or object). */
  jwks?: string | object;
  /** `private_key_jwt`: an https URL where the client publishes its JWK Set. */
  jwksUri?: string;
  /** Shown in the console and the CLI; 1-200 characters without U+0000 or unpaired surrogates. Default: the client id. */
  name?: string;
  /** Default: all three grants. */
  grantTypes?: GrantType[];
  /** Default: all known scopes. */
  scopes?: string[];
  accessTokenTtl?: number | null;
  refreshTokenTtl?: number | null;
  refreshTokenAbsoluteTtl?: number | null;
}

/** A client secret as an administrator sees it: when it was made, expires and was last used; never the secret or its hash. */
export type ClientSecretView = Omit<ClientSecretRecord, "hash">;

/** The client view an administrator sees: never a secret or its hash. */
export type ClientView = Omit<ClientRecord, "secrets"> & { secrets: ClientSecretView[] };

/** A secret just made: shown once, with its metadata. */
export interface NewClientSecret {
  clientSecret: string;
  secret: ClientSecretView;
}

/** What {@link ClientAdmin.listClientsPage} reads. */
export interface ClientPageQuery {
  /** The `next` cursor of the previous page; null or absent for the first page. */
  after?: string | null;
  /** 1-1000; default {@link DEFAULT_CLIENT_PAGE}. */
  limit?: number;
}

/** One page of clients, and the cursor of the following page (null on the last one). */
export interface ClientPage {
  clients: ClientView[];
  next: string | null;
}

/** Clients per page when no limit is given (the console's default). */
export const DEFAULT_CLIENT_PAGE = 50;

/** The most clients one page may hold through `admin.listClientsPage`. */
export const MAX_CLIENT_PAGE = 1000;

/**
 * One page of clients in `list()` order. A store with `listPage` reads the page (and one more, to
 * know whether a next page exists) from its index; one without it (a backend written before it)
 * costs a full `list()` per page, cut here. A cursor is a client id as stored, so any string but
 * one with a lone surrogate (which no store holds): of any length, and holding U+0000 or empty,
 * as an id written straight into the store can be (SQLite and MySQL hold U+0000, every engine the
 * empty id). The console's API hands out {@link consoleClientCursor}s instead. A cursor it handed out and then refused stopped a walk of the pages half-way (the
 * CLI's `client list` ended with an unclosed JSON array): an id over 1000 characters until
 * 2026-11-30, one holding U+0000 or empty until later that day.
 */
export async function readClientPage(ctx: Context, query: ClientPageQuery, maxLimit = MAX_CLIENT_PAGE): Promise<ClientPage> {
  const limit = pageLimit(query.limit, maxLimit);
  const after = query.after ?? null;
  if (after !== null && (typeof after !== "string" || !isWellFormed(after))) {
    throw new AdminError("after must be the next cursor of a previous page", { field: "after" });
  }
  const fetched = await clientsAfter(ctx, after, limit + 1);
  const page = fetched.length > limit ? fetched.slice(0, limit) : fetched;
  return { clients: page.map(clientView), next: fetched.length > limit ? page[page.length - 1]!.clientId : null };
}

/** A page's limit, `DEFAULT_CLIENT_PAGE` when none is given; AdminError unless an integer from 1 to `maxLimit`. */
function pageLimit(limit: number | undefined, maxLimit: number): number {
  const n = limit ?? DEFAULT_CLIENT_PAGE;
  if (!Number.isSafeInteger(n) || n < 1 || n > maxLimit) throw new AdminError(`limit must be an integer from 1 to ${maxLimit}`, { field: "limit" });
  return n;
}

/**
 * The most UTF-8 bytes of a client id a console cursor holds: the whole id up to this, else its
 * first bytes up to this (whole characters) and its SHA-256.
 */
const CURSOR_ID_BYTES = 512;

/** The longest console cursor: `h`, the base64url of 512 bytes (683), `.`, a SHA-256 in base64url (43). */
export const CONSOLE_CURSOR_MAX = 728;

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** UTF-8 bytes of one character (a code point; a lone surrogate is U+FFFD there, 3). */
const utf8Length = (cp: number): number => (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);

/** base64url (no padding) as bytes; null for any other text, or one that is not the canonical form of its bytes. */
function canonicalBase64url(text: string): Uint8Array | null {
  const bytes = fromBase64url(text);
  return bytes !== null && base64url(bytes) === text ? bytes : null;
}

/**
 * The console's cursor of the page after client `clientId` (its API's `next`): opaque, URL-safe,
 * at most {@link CONSOLE_CURSOR_MAX} characters whatever the id: `i` and the base64url of the id's
 * UTF-8 when that is at most 512 bytes (every id `createClient` makes), else `h`, the base64url of
 * its first 512 bytes or less (whole characters), `.` and the SHA-256 of the whole id. Until
 * 2026-11-30 the cursor was the id itself, refused from a URL past 1000 characters: an id written
 * straight into the store that ended a page was as far as the console's clients view went.
 */
export async function consoleClientCursor(clientId: string): Promise<string> {
  const bytes = utf8.encode(clientId);
  if (bytes.length <= CURSOR_ID_BYTES) return "i" + base64url(bytes);
  let size = 0;
  let end = 0;
  for (const ch of clientId) {
    const n = utf8Length(ch.codePointAt(0)!);
    if (size + n > CURSOR_ID_BYTES) break;
    size += n;
    end += ch.length;
  }
  return `h${base64url(utf8.encode(clientId.slice(0, end)))}.${await sha256(clientId)}`;
}

/** A console cursor read back: the id itself, or a long id's first bytes and SHA-256; null when it is no cursor {@link consoleClientCursor} makes. */
function parseConsoleCursor(cursor: string): { id: string } | { prefix: string; digest: string } | null {
  if (cursor.length > CONSOLE_CURSOR_MAX) return null;
  const text = (bytes: Uint8Array | null): string | null => {
    if (bytes === null) return null;
    try {
      return strictUtf8.decode(bytes);
    } catch {
      return null;
    }
  };
  if (cursor.startsWith("i")) {
    const bytes = canonicalBase64url(cursor.slice(1));
    const id = bytes !== null && bytes.length <= CURSOR_ID_BYTES ? text(bytes) : null;
    return id === null ? null : { id };
  }
  const long = /^h([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(cursor);
  if (long === null) return null;
  const bytes = canonicalBase64url(long[1]!);
  // The longest whole-character prefix within 512 bytes: the next character (4 bytes at most) did not fit.
  const prefix = bytes !== null && bytes.length > CURSOR_ID_BYTES - 4 && bytes.length <= CURSOR_ID_BYTES ? text(bytes) : null;
  return prefix === null || canonicalBase64url(long[2]!)?.length !== 32 ? null : { prefix, digest: long[2]! };
}

/** Clients compared for one long id's cursor at a time. */
const LOCATE_BATCH = 100;

/**
 * The console's page after `cursor` (a {@link consoleClientCursor}, or null for the first), with
 * its `next` as such a cursor; AdminError for anything else. A long id's cursor is found again
 * among the ids that begin with its first bytes (they follow that prefix in the store's order,
 * and are few: no id `createClient` makes is that long) by their SHA-256. If that client was
 * deleted meanwhile, its place among them is unknown: the page starts at the first of them, so
 * those before it are shown again (none is missed).
 */
export async function readConsoleClientPage(ctx: Context, cursor: string | null, limit: number | undefined, maxLimit: number): Promise<ClientPage> {
  // The limit first, as readClientPage does: a bad one is refused with its own reason, before a
  // long id's cursor is looked up in the store.
  pageLimit(limit, maxLimit);
  let after: string | null = null;
  if (cursor !== null) {
    const parsed = parseConsoleCursor(cursor);
    if (parsed === null) throw new AdminError("after must be the next cursor of a previous page", { field: "after" });
    after = "id" in parsed ? parsed.id : await locateLongId(ctx, parsed.prefix, parsed.digest);
  }
  const page = await readClientPage(ctx, { after, ...(limit !== undefined ? { limit } : {}) }, maxLimit);
  return { clients: page.clients, next: page.next === null ? null : await consoleClientCursor(page.next) };
}

/** The id after `prefix` whose SHA-256 is `digest`, or `prefix` itself when no id that begins with it has that digest. */
async function locateLongId(ctx: Context, prefix: string, digest: string): Promise<string> {
  for (let after = prefix; ; ) {
    const batch = await clientsAfter(ctx, after, LOCATE_BATCH);
    for (const c of batch) {
      if (!c.clientId.startsWith(prefix)) return prefix;
      if ((await sha256(c.clientId)) === digest) return c.clientId;
    }
    if (batch.length < LOCATE_BATCH) return prefix;
    after = batch[batch.length - 1]!.clientId;
  }
}

/**
 * Up to `count` clients after `after` (all when null): the store's `listPage`, or `list()` cut. The
 * cut sorts what it keeps by code unit, the order its `>` compares in: a `list()` in code-point order
 * (a SQL binary collation; the two differ only between U+E000-U+FFFF and characters past U+FFFF,
 * which no id the admin API makes holds) otherwise lost the ids past such a page's end (until
 * 2026-12-01). Nearly sorted already, so the sort is about one pass.
 */
async function clientsAfter(ctx: Context, after: string | null, count: number): Promise<ClientRecord[]> {
  const store = ctx.storage.clients;
  if (typeof store.listPage === "function") return store.listPage(after, count);
  return (await store.list())
    .filter((c) => after === null || c.clientId > after)
    .sort((a, b) => byCodeUnit(a.clientId, b.clientId))
    .slice(0, count);
}

/** Client management (part of {@link Admin}). */
export interface ClientAdmin {
  /** Creates a client; its secret (if it uses secrets) is returned once and only its hash is stored. */
  createClient(input: CreateClientInput & { authMethod: "private_key_jwt" }): Promise<{ client: ClientView; clientSecret: null }>;
  createClient(input?: CreateClientInput): Promise<{ client: ClientView; clientSecret: string }>;
  /** Regenerates a client's secret: one new secret, every earlier one refused at once. */
  rotateClientSecret(clientId: string): Promise<NewClientSecret>;
  /**
   * Adds a secret beside the existing ones (rotation without downtime: deploy the new one, then
   * revoke the old one, or let it expire). At most {@link MAX_CLIENT_SECRETS} per client.
   */
  addClientSecret(clientId: string, options?: { expiresIn?: number }): Promise<NewClientSecret>;
  /** Revokes one secret of a client at once. */
  revokeClientSecret(clientId: string, secretId: string): Promise<void>;
  /** Every client, ordered by client id (code-unit order; a SQL store's binary collation orders by code point, the same for the printable-ASCII ids this API makes). Reads them all: for a screen, page with {@link ClientAdmin.listClientsPage}. */
  listClients(): Promise<ClientView[]>;
  /**
   * One page of {@link ClientAdmin.listClients}'s order: the clients after the cursor `after` (the
   * `next` of the previous page; none for the first page), at most `limit` (1-1000, default 50).
   * `next` is the cursor of the following page, null on the last one. Keyset paging: a page costs
   * the same at any depth, and a client created or deleted meanwhile neither shifts nor repeats
   * the others. Any `next` is taken back, whatever the stored id it is (however long; holding
   * U+0000 or empty, as an id written straight into SQLite or MySQL can be). Throws AdminError for
   * a bad limit or cursor (not a string, or holding a lone surrogate, which no store can hold).
   *
   * @example
   * for (let after = null; ; ) {
   *   const page = await app.admin.listClientsPage({ after, limit: 200 });
   *   for (const c of page.clients) console.log(c.clientId);
   *   if ((after = page.next) === null) break;
   * }
   */
  listClientsPage(options?: ClientPageQuery): Promise<ClientPage>;
  /** One client, or AdminError when absent. */
  getClient(clientId: string): Promise<ClientView>;
}

/** The longest lifetime, in seconds, a client's secret or tokens may be given: 10 years (the console's bound too). */
export const MAX_TTL_SECONDS = 10 * 365 * 24 * 3600;

/** Most secrets one client may hold at once. */
export const MAX_CLIENT_SECRETS = 10;

const GRANTS: GrantType[] = ["client_credentials", "password", "refresh_token"];
const ID = /^[\x21-\x7e]{1,200}$/;
/**
 * {@link ClientAdmin.createClient}'s rules for a client id, an AdminError naming `clientId`; also
 * what `checkBootstrap` (env.ts) applies to the bootstrap client before a server listens.
 */
export function checkClientId(clientId: string): void {
  if (!ID.test(clientId)) throw new AdminError("clientId must be 1-200 printable ASCII characters without spaces", { field: "clientId" });
  // As a URL path segment ("/console/api/clients/.."), "." and ".." are removed by URL
  // normalisation, so such a client could never be addressed through the console.
  if (clientId === "." || clientId === "..") throw new AdminError('clientId must not be "." or ".."', { field: "clientId" });
}

/**
 * {@link ClientAdmin.createClient}'s rule for a secret given to it, an AdminError naming `clientSecret` (never its value).
 * Its SHA-256 is of its UTF-8, where a lone surrogate is U+FFFD: `...\uD800` would be stored as
 * the secret `...\uFFFD`, which is what a client presenting it (a form or Basic header cannot
 * carry a lone surrogate) then sends. Refused since 2026-11-30.
 */
export function checkClientSecret(clientSecret: unknown): void {
  if (typeof clientSecret !== "string" || clientSecret.length < 16 || clientSecret.length > 1024) throw new AdminError("clientSecret must be 16-1024 characters", { field: "clientSecret" });
  if (!isWellFormed(clientSecret)) throw new AdminError("clientSecret must not contain unpaired surrogates", { field: "clientSecret" });
}

/** Only characters that show as nothing (see {@link INVISIBLE_CLASS}). */
const BLANK = new RegExp(`^[${INVISIBLE_CLASS}]*$`, "u");

export const secretView = ({ hash: _omit, ...rest }: ClientSecretRecord): ClientSecretView => rest;
export const clientView = ({ secrets, ...rest }: ClientRecord): ClientView => ({ ...rest, secrets: secrets.map(secretView) });

/**
 * A generated client id or secret id: random base64url that never starts with `-`, so it can be
 * passed to a command line as it is (`plantgate client delete <id>`) without being read as an
 * option. A leading `-` (one id in 64) becomes `_`: ids are names, not secrets.
 */
function generatedId(random: Context["random"], bytes: number): string {
  const id = randomToken(random, bytes);
  return id.startsWith("-") ? `_${id.slice(1)}` : id;
}

/** Builds the client operations over a context. */
export function createClientAdmin(ctx: Context, actor: string | null): ClientAdmin {
  // The message names the field the caller passed: createClient's `secretExpiresIn`, addClientSecret's
  // `expiresIn` (until 2026-11-30 both said expiresIn).
  const ttl = (field: AdminField, v: number | null | undefined): number | null => {
    if (v === undefined || v === null) return null;
    // Bounded so every time it makes is a date (a secret expiring past year 275760 made every
    // client listing of the console and the CLI fail) and stays exact in epoch ms.
    if (!Number.isSafeInteger(v) || v < 1 || v > MAX_TTL_SECONDS) throw new AdminError(`${field} must be from 1 to ${MAX_TTL_SECONDS} seconds`, { field });
    return v;
  };
  const newSecret = async (clientSecret: string, expiresIn: number | undefined, now: number, field: AdminField): Promise<ClientSecretRecord> => {
    const seconds = ttl(field, expiresIn);
    return { id: generatedId(ctx.random, 9), hash: await sha256(clientSecret), createdAt: now, expiresAt: seconds === null ? null : now + seconds * 1000, lastUsedAt: null };
  };
  const secretClient = async (clientId: string): Promise<ClientRecord> => {
    const client = await ctx.storage.clients.get(clientId);
    if (!client) throw notFound("client", clientId);
    if (client.authMethod !== "client_secret") throw new AdminError(`client ${quoteId(clientId)} authenticates with private_key_jwt and has no secrets`);
    return client;
  };
  const keySource = async (input: CreateClientInput): Promise<{ jwks: string | null; jwksUri: string | null }> => {
    const given = (input.jwks !== undefined ? 1 : 0) + (input.jwksUri !== undefined ? 1 : 0);
    if ((input.authMethod ?? "client_secret") === "client_secret") {
      if (given > 0) throw new AdminError("jwks and jwksUri are for authMethod private_key_jwt");
      return { jwks: null, jwksUri: null };
    }
    if (given !== 1) throw new AdminError("a private_key_jwt client needs exactly one of jwks and jwksUri");
    if (input.clientSecret !== undefined || input.secretExpiresIn !== undefined) throw new AdminError("a private_key_jwt client has no secret");
    try {
      if (input.jwksUri !== undefined) {
        if (typeof input.jwksUri !== "string") throw new JwksError("jwksUri must be a string");
        checkJwksUri(input.jwksUri);
        return { jwks: null, jwksUri: input.jwksUri };
      }
      const text = typeof input.jwks === "string" ? input.jwks : JSON.stringify(input.jwks);
      // The text is stored as given: one holding a raw lone surrogate (inside a JSON string) was
      // kept by the memory store and refused by every SQL engine (a 500 from the console) until
      // 2026-11-30. Given as an object, JSON.stringify writes one as an ASCII escape, stored alike
      // everywhere. (Raw U+0000 is no JSON; JSON.parse refuses it.)
      if (!isWellFormed(text)) throw new JwksError("jwks must not contain unpaired surrogates");
      await checkJwksImports(parseJwks(text, { registration: true }));
      return { jwks: text, jwksUri: null };
    } catch (e) {
      if (e instanceof JwksError) throw new AdminError(e.message, { field: input.jwksUri !== undefined ? "jwksUri" : "jwks" });
      throw e;
    }
  };
  const createClient = async (input: CreateClientInput = {}): Promise<{ client: ClientView; clientSecret: string | null }> => {
      const clientId = input.clientId ?? generatedId(ctx.random, 16);
      checkClientId(clientId);
      // Storable on every backend: PostgreSQL text holds no U+0000 and no SQL engine a lone
      // surrogate, so such a name would fail the insert (a 500 from the console) instead of this answer.
      if (input.name !== undefined && (typeof input.name !== "string" || input.name.length < 1 || input.name.length > MAX_CLIENT_NAME || !isStorableText(input.name))) {
        throw new AdminError(`name must be 1-${MAX_CLIENT_NAME} characters without U+0000 or unpaired surrogates`, { field: "name" });
      }
      // A name that shows as nothing (white space, format characters) or that breaks a line in the
      // console's lists and the CLI's table could not be told apart from another client's.
      if (input.name !== undefined && (BLANK.test(input.name) || /\p{Cc}/u.test(input.name))) {
        throw new AdminError("name must hold a visible character and no control characters", { field: "name" });
      }
      if (input.name !== undefined && BIDI_CONTROL.test(input.name)) {
        throw new AdminError("name must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)", { field: "name" });
      }
      const authMethod = input.authMethod ?? "client_secret";
      if (authMethod !== "client_secret" && authMethod !== "private_key_jwt") throw new AdminError("authMethod must be client_secret or private_key_jwt", { field: "authMethod" });
      const keys = await keySource(input);
      const clientSecret = authMethod === "client_secret" ? (input.clientSecret ?? randomToken(ctx.random, 32)) : null;
      if (clientSecret !== null) checkClientSecret(clientSecret);
      const grantTypes = input.grantTypes ?? GRANTS;
      if (grantTypes.some((g) => !GRANTS.includes(g))) throw new AdminError("unknown grant type", { field: "grantTypes" });
      const scopes = input.scopes ?? ctx.scopes.all;
      if (scopes.some((s) => !ctx.scopes.all.includes(s))) throw new AdminError(`unknown scope; known: ${ctx.scopes.all.join(" ")}`, { field: "scopes" });
      const now = ctx.clock();
      const record: ClientRecord = {
        clientId,
        authMethod,
        secrets: clientSecret === null ? [] : [await newSecret(clientSecret, input.secretExpiresIn, now, "secretExpiresIn")],
        ...keys,
        name: input.name ?? clientId,
        grantTypes: [...new Set(grantTypes)],
        scopes: [...new Set(scopes)],
        accessTokenTtl: ttl("accessTokenTtl", input.accessTokenTtl),
        refreshTokenTtl: ttl("refreshTokenTtl", input.refreshTokenTtl),
        refreshTokenAbsoluteTtl: ttl("refreshTokenAbsoluteTtl", input.refreshTokenAbsoluteTtl),
        createdAt: now,
        secretUpdatedAt: now,
        // Tells this client apart from an earlier one of the same id by identity, not by comparing
        // clocks of different processes (see `issuedTo`): 96 random bits.
        generation: randomToken(ctx.random, 12),
      };
      if (!(await ctx.storage.clients.create(record))) throw new AdminConflictError(`client ${quoteId(clientId)} already exists`);
      ctx.events.emit({ type: "client.created", client_id: clientId, name: record.name, grant_types: record.grantTypes, scopes: record.scopes, actor });
      return { client: clientView(record), clientSecret };
  };
  return {
    createClient: createClient as ClientAdmin["createClient"],
    async rotateClientSecret(clientId) {
      await secretClient(clientId);
      const clientSecret = randomToken(ctx.random, 32);
      const secret = await newSecret(clientSecret, undefined, ctx.clock(), "expiresIn");
      if (!(await ctx.storage.clients.replaceSecrets(clientId, secret))) throw notFound("client", clientId);
      ctx.events.emit({ type: "client.secret_rotated", client_id: clientId, actor });
      return { clientSecret, secret: secretView(secret) };
    },
    async addClientSecret(clientId, options = {}) {
      const client = await secretClient(clientId);
      const now = ctx.clock();
      const live = client.secrets.filter((s) => s.expiresAt === null || s.expiresAt > now);
      if (live.length >= MAX_CLIENT_SECRETS) throw new AdminError(`client ${quoteId(clientId)} already has ${MAX_CLIENT_SECRETS} secrets; revoke one first`);
      // Expired secrets are dropped when a new one is added, so they do not pile up.
      for (const s of client.secrets) if (!live.includes(s)) await ctx.storage.clients.removeSecret(clientId, s.id, now);
      const clientSecret = randomToken(ctx.random, 32);
      const secret = await newSecret(clientSecret, options.expiresIn, now, "expiresIn");
      if (!(await ctx.storage.clients.addSecret(clientId, secret))) throw notFound("client", clientId);
      // The count above was read before the add, so concurrent adds could all pass it (12 parallel
      // CLI calls left 12 secrets before 2026-11-29). Count again after the add: the new secret
      // stays only if the client then holds at most MAX_CLIENT_SECRETS live ones; otherwise it is
      // taken back before anyone has seen it. Never more than the limit stay (the last add to keep
      // its secret counted every other kept one), on every backend and with no storage contract
      // change; adds racing near the limit may all be refused, and can be tried again.
      let after: ClientRecord | null;
      try {
        after = await ctx.storage.clients.get(clientId);
      } catch (e) {
        // Nobody will see this secret: take it back (until 2026-12-02 it stayed, counted toward the
        // limit until revoked). If the store refuses that too it stays, hashed and unknown to anyone.
        await ctx.storage.clients.removeSecret(clientId, secret.id, now).catch(() => undefined);
        throw e;
      }
      const mine = after?.secrets.some((s) => s.id === secret.id) === true;
      const liveAfter = (after?.secrets ?? []).filter((s) => s.expiresAt === null || s.expiresAt > now).length;
      if (!mine || liveAfter > MAX_CLIENT_SECRETS) {
        if (mine) await ctx.storage.clients.removeSecret(clientId, secret.id, now);
        if (after === null) throw notFound("client", clientId);
        // Gone already: a rotation (every secret replaced) won the race.
        if (!mine) throw new AdminConflictError(`the secrets of client ${quoteId(clientId)} changed meanwhile; try again`);
        throw new AdminError(`client ${quoteId(clientId)} already has ${MAX_CLIENT_SECRETS} secrets; revoke one first`);
      }
      ctx.events.emit({ type: "client.secret_added", client_id: clientId, secret_id: secret.id, actor });
      return { clientSecret, secret: secretView(secret) };
    },
    async revokeClientSecret(clientId, secretId) {
      await secretClient(clientId);
      if (!(await ctx.storage.clients.removeSecret(clientId, secretId, ctx.clock()))) throw new AdminNotFoundError(`client ${quoteId(clientId)} has no secret ${quoteId(secretId)}`);
      ctx.events.emit({ type: "client.secret_revoked", client_id: clientId, secret_id: secretId, actor });
    },
    async listClients() {
      return (await ctx.storage.clients.list()).map(clientView);
    },
    listClientsPage: (query = {}) => readClientPage(ctx, query),
    async getClient(clientId) {
      const client = await ctx.storage.clients.get(clientId);
      if (!client) throw notFound("client", clientId);
      return clientView(client);
    },
  };
}
