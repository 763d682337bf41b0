import { isoTimestamp } from "../util/iso-time.js";
import { AdminConflictError, AdminError, AdminNotFoundError, createAdmin, REENCRYPT_MOVES, type ClientSecretView, type ClientView } from "../admin/index.js";
import { MAX_CLIENT_NAME, readConsoleClientPage, type ClientPage } from "../admin/clients.js";
import { quoteId } from "../admin/errors.js";
import { accountView, listAccounts } from "../api/accounts.js";
import { KeyEncryptionError } from "../crypto/key-encryption.js";
import { ApiError, ApiErrorCode } from "../errors/index.js";
import { json, plain, type PlainResponse } from "../http/respond.js";
import type { Context } from "../context.js";
import type { GrantType } from "../storage/types.js";
import { REVOKE_KEY_DELETES, signingKeyView, type SigningKeyView } from "../tokens/keys.js";
import { optionalBoolean, optionalSeconds, optionalString, optionalStrings, readJsonObject } from "./body.js";
import type { ConsoleRequest } from "./request.js";
import { deleteAccountSessions, deleteSession, sessionExpiry, type ConsoleSession } from "./session.js";

/**
 * A client as the console API shows it: never the secret or its hash; times in ISO 8601.
 *
 * @example
 * const { clients, next } = (await (await fetch("/console/api/clients?limit=50")).json()) as { clients: ConsoleClient[]; next: string | null };
 */
export interface ConsoleClient {
  clientId: string;
  name: string;
  grantTypes: GrantType[];
  scopes: string[];
  accessTokenTtl: number | null;
  refreshTokenTtl: number | null;
  refreshTokenAbsoluteTtl: number | null;
  createdAt: string;
  secretUpdatedAt: string;
  /** `client_secret` or `private_key_jwt`. */
  authMethod: "client_secret" | "private_key_jwt";
  /** Each secret's id and times (never the secret or its hash), oldest first; empty for `private_key_jwt`. */
  secrets: ConsoleClientSecret[];
  /** `private_key_jwt`: where the client's keys are published, or null (keys registered inline). */
  jwksUri: string | null;
}

/** A client secret as the console shows it: times in ISO 8601; `expiresAt`/`lastUsedAt` null = never. */
export interface ConsoleClientSecret {
  id: string;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  /** Whether it is past its expiry (then it is refused). */
  expired: boolean;
}

/** The grants the console offers, in the order the page lists them. */
export const CONSOLE_GRANTS: GrantType[] = ["client_credentials", "password", "refresh_token"];

const iso = isoTimestamp;

const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

function consoleSecret(x: ClientSecretView, now: number): ConsoleClientSecret {
  return { id: x.id, createdAt: iso(x.createdAt), expiresAt: isoOrNull(x.expiresAt), lastUsedAt: isoOrNull(x.lastUsedAt), expired: x.expiresAt !== null && x.expiresAt <= now };
}

function consoleClient(c: ClientView, now: number): ConsoleClient {
  return {
    clientId: c.clientId,
    name: c.name,
    grantTypes: [...c.grantTypes],
    scopes: [...c.scopes],
    accessTokenTtl: c.accessTokenTtl,
    refreshTokenTtl: c.refreshTokenTtl,
    refreshTokenAbsoluteTtl: c.refreshTokenAbsoluteTtl,
    createdAt: iso(c.createdAt),
    secretUpdatedAt: iso(c.secretUpdatedAt),
    authMethod: c.authMethod,
    secrets: c.secrets.map((x) => consoleSecret(x, now)),
    jwksUri: c.jwksUri,
  };
}

const invalid = (message: string) => new ApiError(400, ApiErrorCode.invalidValue, message);

/**
 * A query parameter of the console's list views, given at most once: its value, undefined when
 * absent or empty; given twice (even with the same value) 400 (error 1009), as a second value would
 * otherwise be dropped without a word.
 */
export function oneParam(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name);
  if (all.length > 1) throw invalid(`${name} must be given at most once.`);
  return all[0] === undefined || all[0] === "" ? undefined : all[0];
}
/** 404 (error 1306) for `what`, its ids quoted by `quoteId` (`Client "abc"`): an empty id still shows, a quote in one is escaped. */
const unknown = (what: string) => new ApiError(404, ApiErrorCode.consoleUnknownResource, `${what} does not exist.`);
const conflict = (message: string) => new ApiError(409, ApiErrorCode.consoleConflict, message);

/** The admin operations on behalf of the signed-in administrator (named as `actor` in events). */
const adminOf = (ctx: Context, s: ConsoleSession) => createAdmin(ctx, { actor: s.account.username });

/**
 * Admin operations report bad input as AdminError, whose message is written to be shown. What the
 * handler's own checks could not see (a concurrent request created the same client id or username,
 * or deleted the client or secret, between the check and the write) gets the check's own answer:
 * 409 with `taken`, 404 with `missing`.
 */
async function admin<T>(op: () => Promise<T>, on: { taken?: string; missing?: string } = {}): Promise<T> {
  try {
    return await op();
  } catch (e) {
    if (e instanceof AdminConflictError && on.taken !== undefined) throw conflict(on.taken);
    if (e instanceof AdminNotFoundError && on.missing !== undefined) throw unknown(on.missing);
    if (e instanceof AdminError) throw invalid(e.message);
    throw e;
  }
}

/**
 * The body of `GET /console/api/session` and of a successful sign-in.
 *
 * @example
 * const session = (await (await fetch("/console/api/session")).json()) as ConsoleSessionBody;
 */
export interface SessionBody {
  username: string;
  displayName: string | null;
  csrfToken: string;
  /** ISO 8601. */
  expiresAt: string;
  /** What the page offers in the client form. */
  grantTypes: GrantType[];
  scopes: string[];
  /** The role that makes an account a console administrator. */
  adminRole: string;
  /**
   * The page sizes the accounts list takes (`defaultPageSize`, `maxPageSize`): the page offers
   * sizes within them and asks for the default first (since 2026-12-03: it asked for 20 and
   * offered 10 to 100 whatever they were, and a `maxPageSize` under 20 left the list unusable).
   */
  accountPages: { defaultPageSize: number; maxPageSize: number };
}

export function sessionBody(ctx: Context, s: { username: string; displayName: string | null; csrfToken: string; expiresAt: number }): SessionBody {
  return {
    username: s.username,
    displayName: s.displayName,
    csrfToken: s.csrfToken,
    expiresAt: iso(s.expiresAt),
    grantTypes: [...CONSOLE_GRANTS],
    scopes: [...ctx.scopes.all],
    adminRole: ctx.console!.adminRole,
    accountPages: { defaultPageSize: ctx.defaultPageSize, maxPageSize: ctx.maxPageSize },
  };
}

/** Handlers of the signed-in admin API; each gets a session that already passed every check. */
export type ApiHandler = (ctx: Context, session: ConsoleSession, request: ConsoleRequest, params: string[]) => Promise<PlainResponse>;

export const getSession: ApiHandler = async (ctx, s) =>
  json(200, sessionBody(ctx, { username: s.account.username, displayName: s.account.displayName, csrfToken: s.csrfToken, expiresAt: sessionExpiry(ctx, s.record) }));

/** `POST /console/api/session/sign-out`: ends the request's session; 204 (the router clears the cookie). */
export const signOut: ApiHandler = async (ctx, s, request) => {
  const ended = await deleteSession(ctx, s);
  ctx.events.emit({ type: "console.signed_out", account_id: s.account.id, username: s.account.username, everywhere: false, sessions_ended: ended ? 1 : 0, client_ip: request.clientIp ?? null });
  return plain(204, null);
};

/**
 * `POST /console/api/session/sign-out-everywhere`: ends every console session of the signed-in
 * account, in every browser, the request's own included (a laptop left signed in); other
 * administrators' sessions stay. 204 (the router clears the cookie); event `console.signed_out`
 * with `everywhere: true` and how many sessions ended.
 */
export const signOutEverywhere: ApiHandler = async (ctx, s, request) => {
  const ended = await deleteAccountSessions(ctx, s);
  ctx.events.emit({ type: "console.signed_out", account_id: s.account.id, username: s.account.username, everywhere: true, sessions_ended: ended, client_ip: request.clientIp ?? null });
  return plain(204, null);
};

/** Most clients per page of the console's clients view. */
export const CONSOLE_CLIENTS_MAX_LIMIT = 200;

/**
 * `GET /console/api/clients?limit=&after=`: one page of the clients, ordered by client id:
 * `{"clients": [...], "next": cursor | null}`; pass `next` as `after` for the following page. The
 * cursor is opaque and URL-safe, at most 728 characters whatever the id (see
 * `consoleClientCursor`); until 2026-11-30 it was the last client id itself, refused past 1000
 * characters. `limit` 1-200, default 50. A bad limit or cursor (one this API did not hand out), or
 * either given twice: 400 (error 1009).
 */
export const listClients: ApiHandler = async (ctx, _s, request) => {
  const params = request.url.searchParams;
  const limit = oneParam(params, "limit");
  const after = oneParam(params, "after");
  if (limit !== undefined && !/^\d{1,4}$/.test(limit)) throw invalid(`limit must be an integer from 1 to ${CONSOLE_CLIENTS_MAX_LIMIT}.`);
  let page: ClientPage;
  try {
    page = await readConsoleClientPage(ctx, after ?? null, limit !== undefined ? Number(limit) : undefined, CONSOLE_CLIENTS_MAX_LIMIT);
  } catch (e) {
    if (e instanceof AdminError) throw invalid(`${e.message}.`);
    throw e;
  }
  const now = ctx.clock();
  return json(200, { clients: page.clients.map((c) => consoleClient(c, now)), next: page.next });
};

export const createClient: ApiHandler = async (ctx, s, request) => {
  const body = await readJsonObject(request);
  const clientId = optionalString(body, "clientId", 200);
  const name = optionalString(body, "name", MAX_CLIENT_NAME);
  if (name === undefined) throw new ApiError(400, ApiErrorCode.missingField, "name is required.");
  const grantTypes = optionalStrings(body, "grantTypes");
  if (grantTypes !== undefined && grantTypes.length === 0) throw invalid("Choose at least one grant type.");
  if (grantTypes?.some((g) => !CONSOLE_GRANTS.includes(g as GrantType))) throw invalid(`grantTypes must be among ${CONSOLE_GRANTS.join(", ")}.`);
  const scopes = optionalStrings(body, "scopes");
  if (scopes?.some((s) => !ctx.scopes.all.includes(s))) throw invalid(`scopes must be among ${ctx.scopes.all.join(", ")}.`);
  const ttls = {
    accessTokenTtl: optionalSeconds(body, "accessTokenTtl"),
    refreshTokenTtl: optionalSeconds(body, "refreshTokenTtl"),
    refreshTokenAbsoluteTtl: optionalSeconds(body, "refreshTokenAbsoluteTtl"),
  };
  const taken = clientId === undefined ? undefined : `A client with id ${quoteId(clientId)} already exists.`;
  if (clientId !== undefined && (await ctx.storage.clients.get(clientId))) throw conflict(taken!);
  const { client, clientSecret } = await admin(() =>
    adminOf(ctx, s).createClient({
      ...(clientId !== undefined ? { clientId } : {}),
      name,
      ...(grantTypes !== undefined ? { grantTypes: grantTypes as GrantType[] } : {}),
      ...(scopes !== undefined ? { scopes } : {}),
      ...ttls,
    }),
    taken === undefined ? {} : { taken },
  );
  return json(201, { client: consoleClient(client, ctx.clock()), clientSecret });
};

/** How a 404 names the client of the path: `Client "abc"`. */
const clientNamed = (clientId: string) => `Client ${quoteId(clientId)}`;

export const deleteClient: ApiHandler = async (ctx, s, _r, [clientId]) => {
  const missing = clientNamed(clientId!);
  if (!(await ctx.storage.clients.get(clientId!))) throw unknown(missing);
  await admin(() => adminOf(ctx, s).deleteClient(clientId!), { missing });
  return plain(204, null);
};

export const regenerateSecret: ApiHandler = async (ctx, s, _r, [clientId]) => {
  const missing = clientNamed(clientId!);
  if (!(await ctx.storage.clients.get(clientId!))) throw unknown(missing);
  const { clientSecret, secret } = await admin(() => adminOf(ctx, s).rotateClientSecret(clientId!), { missing });
  // From what the rotation stored (the client's secretUpdatedAt is the new secret's createdAt):
  // once the old secrets are refused, nothing that can fail may stand between the new one and its
  // answer. Until 2026-12-01 a re-read of the client came between, and when it failed the answer
  // was a 503 "retry later": the new secret lost, the client locked out.
  return json(200, { clientId: clientId!, clientSecret, secretUpdatedAt: iso(secret.createdAt) });
};

/** Adds a secret beside the existing ones (`{expiresIn?}` seconds); the earlier secrets keep working. */
export const addSecret: ApiHandler = async (ctx, s, request, [clientId]) => {
  const body = await readJsonObject(request);
  const expiresIn = optionalSeconds(body, "expiresIn");
  const missing = clientNamed(clientId!);
  if (!(await ctx.storage.clients.get(clientId!))) throw unknown(missing);
  // A rotation that replaced every secret between the add and its check (the added one went with
  // them) is a conflict to try again, as the admin API says (until 2026-12-02 400 1009).
  const taken = `The secrets of client ${quoteId(clientId!)} changed meanwhile; try again.`;
  const { clientSecret, secret } = await admin(() => adminOf(ctx, s).addClientSecret(clientId!, expiresIn === null || expiresIn === undefined ? {} : { expiresIn }), { missing, taken });
  return json(201, { clientId, clientSecret, secret: consoleSecret(secret, ctx.clock()) });
};

/** Revokes one secret at once. */
export const revokeSecret: ApiHandler = async (ctx, s, _r, [clientId, secretId]) => {
  const client = await ctx.storage.clients.get(clientId!);
  if (!client) throw unknown(clientNamed(clientId!));
  const missing = `Secret ${quoteId(secretId!)} of client ${quoteId(clientId!)}`;
  if (!client.secrets.some((x) => x.id === secretId)) throw unknown(missing);
  await admin(() => adminOf(ctx, s).revokeClientSecret(clientId!, secretId!), { missing });
  return plain(204, null);
};

/** The same paging, validation and body as GetAccountList. */
export const getAccounts: ApiHandler = async (ctx, _s, request) => listAccounts(ctx, request.url.searchParams);

export const createAccount: ApiHandler = async (ctx, s, request) => {
  const body = await readJsonObject(request);
  const username = optionalString(body, "username", 200);
  if (username === undefined) throw new ApiError(400, ApiErrorCode.missingField, "username is required.");
  const password = optionalString(body, "password", 1024);
  if (password === undefined) throw new ApiError(400, ApiErrorCode.missingField, "password is required.");
  const displayName = optionalString(body, "displayName", 320);
  const email = optionalString(body, "email", 320);
  const roles = optionalStrings(body, "roles");
  const enabled = optionalBoolean(body, "enabled");
  const taken = `The username ${quoteId(username)} is taken.`;
  if (await ctx.storage.accounts.findByUsername(username)) throw conflict(taken);
  const view = await admin(() =>
    adminOf(ctx, s).createAccount({
      username,
      password,
      displayName: displayName ?? null,
      email: email ?? null,
      roles: roles ?? [],
      ...(enabled !== undefined ? { enabled } : {}),
    }),
    { taken },
  );
  return json(201, view);
};

function setEnabled(enabled: boolean): ApiHandler {
  return async (ctx, session, _r, [id]) => {
    const account = await ctx.storage.accounts.get(id!);
    const missing = `Account ${quoteId(id!)}`;
    if (!account) throw unknown(missing);
    if (!enabled && account.id === session.account.id) throw invalid("You cannot disable your own account.");
    // Disabling also revokes its refresh tokens and deletes its console sessions (admin.setAccountEnabled).
    await admin(() => adminOf(ctx, session).setAccountEnabled(account.username, enabled), { missing });
    if (!enabled && account.enabled) {
      // Two administrators disabling each other at the same instant both passed their session
      // checks: the one found disabled after its own write undoes it, so at least one of them stays
      // enabled (before 2026-11-29 both ended disabled, the console locked for everyone).
      const self = await ctx.storage.accounts.get(session.account.id);
      if (!self || !self.enabled) {
        await admin(() => adminOf(ctx, session).setAccountEnabled(account.username, true), { missing });
        throw new ApiError(401, ApiErrorCode.consoleNotSignedIn, "Your account was disabled while this request ran; it changed nothing.");
      }
    }
    const updated = await ctx.storage.accounts.get(account.id);
    return json(200, accountView(updated ?? { ...account, enabled }));
  };
}

export const disableAccount = setEnabled(false);
export const enableAccount = setEnabled(true);

/**
 * A signing key as the console's key table shows it: what `keys list` prints (the same
 * {@link signingKeyView} of `admin.listSigningKeys()`), plus `signing` (the status is `active`).
 * Times in ISO 8601. `stored`, `atRest`, `kek` and `kekStatus` as in `admin.listSigningKeys()` (a
 * configured key not stored yet; a key stored in clear; the key encryption key a key is sealed
 * under, and whether it is the current one). The listing writes nothing: a store without keys and
 * no configured key answers `{keys: []}` (the first key is made when a server first loads the
 * keys); with a configured key, that key, `stored: false`.
 *
 * @example
 * const { keys } = (await (await fetch("/console/api/signing-keys")).json()) as { keys: ConsoleSigningKey[] };
 */
export interface ConsoleSigningKey extends SigningKeyView {
  signing: boolean;
}

export const listSigningKeys: ApiHandler = async (ctx) => {
  const keys = (await createAdmin(ctx).listSigningKeys()).map((k): ConsoleSigningKey => ({ ...signingKeyView(k), signing: k.status === "active" }));
  return json(200, { keys });
};

/**
 * `DELETE /console/api/signing-keys/{kid}`: deletes a key that does not sign now (after a leak):
 * it leaves the JWKS and the tokens it signed are refused (on other instances within a minute).
 * 204; 404 for an unknown key; 409 with the reason for the key that signs now, a retired key while
 * other instances may still sign with it, a next key due within a minute, or a configured key;
 * and when more than REVOKE_KEY_DELETES prunable keys were activated before it (which go first):
 * the oldest that many are deleted and the message says how many are left (revoke again).
 */
export const revokeSigningKey: ApiHandler = async (ctx, s, _r, [kid]) => {
  try {
    // Bounded (a statement each): the request stays within a Worker's D1 query budget.
    await adminOf(ctx, s).revokeSigningKey(kid!, { maxPrunableDeletes: REVOKE_KEY_DELETES });
  } catch (e) {
    if (e instanceof AdminNotFoundError) throw unknown(`Signing key ${quoteId(kid!)}`);
    // Every other refusal is about the key's state, not the request's form.
    if (e instanceof AdminError) throw conflict(e.message);
    throw e;
  }
  return plain(204, null);
};

/**
 * `DELETE /console/api/signing-keys?kid={kid}`: {@link revokeSigningKey} for any kid, those a path
 * segment cannot carry included (URL parsing drops a segment `.` or `..`, `%2E` too, and an empty
 * one fits no route): a configured key is stored under its own kid, any string. The page sends
 * this form. 400 (error 1003) without `kid`, (1009) with it twice, each message naming this form
 * (until 2026-11-30 the second said "kid must be given once."); `?kid=` is the empty kid.
 */
export const revokeSigningKeyByQuery: ApiHandler = async (ctx, s, request) => {
  const kids = request.url.searchParams.getAll("kid");
  const form = "DELETE /console/api/signing-keys?kid={kid}";
  if (kids.length === 0) throw new ApiError(400, ApiErrorCode.missingField, `kid is required: ${form}.`);
  if (kids.length > 1) throw invalid(`kid must be given exactly once: ${form}.`);
  return revokeSigningKey(ctx, s, request, kids);
};

/** Why `now` needs `confirm`: what the page's confirmation says. */
export const ROTATE_NOW_WARNING =
  "Rotating now skips the activation delay: the new key signs at once (on other instances within a minute), and resource servers that cached the JWKS reject its tokens until they fetch it again (up to 5 minutes). Keys scheduled to sign later (next) are deleted, so none made before it takes over. Do it only when the current key may have leaked; send confirm: true to proceed.";

/**
 * `POST /console/api/signing-keys`: no body, or `{}`, schedules a key (published now, signing
 * after the activation delay); `{"now": true, "confirm": true}` makes it sign at once, deleting
 * the `next` keys stored before it (`cancelled`), which would take over from it. `now`
 * without `confirm` changes nothing and answers 400 (error 1308) with the reason, for the page to
 * show in its confirmation.
 */
export const rotateSigningKey: ApiHandler = async (ctx, s, request) => {
  // The page of earlier releases posts without a body: that is a scheduled rotation.
  const body = request.hasBody ? await readJsonObject(request) : {};
  const now = optionalBoolean(body, "now") ?? false;
  const confirm = optionalBoolean(body, "confirm") ?? false;
  if (now && !confirm) throw new ApiError(400, ApiErrorCode.consoleConfirmationRequired, ROTATE_NOW_WARNING);
  let result: { kid: string; activatesAt: number; status: "active" | "next"; deleted: string[]; cancelled: string[] };
  try {
    result = await adminOf(ctx, s).rotateSigningKey({ now });
  } catch (e) {
    // The only refusal: a configured key, which conflicts with the request, not bad input.
    if (e instanceof AdminError) throw conflict(e.message);
    throw e;
  }
  const { kid, activatesAt, status, deleted, cancelled } = result;
  return json(200, { kid, activatesAt: iso(activatesAt), status, deleted, cancelled });
};

/**
 * `POST /console/api/signing-keys/reencrypt`: the `keys reencrypt` step of a key encryption key
 * rotation, for where no CLI reaches the store (a Worker's D1): moves every stored signing key under
 * the first configured KEK (`admin.reencryptSigningKeys()`), then the older KEKs can be removed.
 * No body is read. 200 `{reencrypted, unchanged, left, complete}` (kids): at most REENCRYPT_MOVES
 * keys are moved a request, the rest are `left` with `complete: false` (press again). 409 (error 1307) with the reason when
 * this server has no KEK, or a key is under a KEK it does not have (the keys before it are moved):
 * the message names the variable and the kid, never key material.
 */
export const reencryptSigningKeys: ApiHandler = async (ctx, s) => {
  try {
    // Bounded (a statement each): the request stays within a Worker's D1 query budget.
    const { reencrypted, unchanged, left, complete } = await adminOf(ctx, s).reencryptSigningKeys({ maxMoves: REENCRYPT_MOVES });
    return json(200, { reencrypted, unchanged, left, complete });
  } catch (e) {
    // The server's configuration (or a concurrent change) conflicts with the request, not its form.
    if (e instanceof AdminError || e instanceof KeyEncryptionError) throw conflict(e.message);
    throw e;
  }
};
