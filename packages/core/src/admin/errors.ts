/**
 * The input field an {@link AdminError} is about: a member of `CreateClientInput` (`expiresIn` is
 * `addClientSecret`'s option), of `CreateAccountInput`, or of a page query (`listClientsPage`'s
 * `limit`/`after`, `listAccountsPage`'s `page`/`pageSize`, `listEvents`' `type`, `clientId`,
 * `account`, `limit` and `before`: since 2026-12-03, so the CLI's `events` words its refusals with
 * its flags).
 */
export type AdminField =
  | "clientId"
  | "clientSecret"
  | "secretExpiresIn"
  | "expiresIn"
  | "name"
  | "authMethod"
  | "jwks"
  | "jwksUri"
  | "grantTypes"
  | "scopes"
  | "accessTokenTtl"
  | "refreshTokenTtl"
  | "refreshTokenAbsoluteTtl"
  | "username"
  | "password"
  | "displayName"
  | "email"
  | "roles"
  | "enabled"
  | "limit"
  | "after"
  | "page"
  | "pageSize"
  | "type"
  | "account"
  | "before"
  | "since"
  | "until";

/**
 * Thrown by admin operations for bad input; its message is safe to show (it names the rule, never
 * a secret or password). `field` names the one input field the refusal is about, when there is
 * one (`clientSecret` for "clientSecret must be 16-1024 characters"); undefined for a refusal about
 * several fields or none (a client that does not exist, the state of a key). Code that tells
 * refusals apart reads `field`, never the message's wording.
 *
 * @example
 * try {
 *   await app.admin.createClient({ clientSecret: "short" });
 * } catch (e) {
 *   if (e instanceof AdminError && e.field === "clientSecret") showNextTo("secret", e.message);
 * }
 */
export class AdminError extends Error {
  override readonly name = "AdminError";
  // Declared only: an error about no one field has no `field` property at all.
  declare readonly field?: AdminField;
  /**
   * `importAccounts`: which record (1-based, in the order given) was refused, the number its message
   * begins with (`record 2: password must be 8-1024 characters`). Declared only, as `field` is.
   */
  declare readonly record?: number;

  constructor(message: string, options: { field?: AdminField; record?: number } = {}) {
    super(message);
    if (options.field !== undefined) this.field = options.field;
    if (options.record !== undefined) this.record = options.record;
  }

  /**
   * The message with the field called by the caller's own name for it (an environment variable, a
   * command-line flag): `clientSecret must be 16-1024 characters` ->
   * `PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters`; a message that does not begin
   * with its field's name gets the name in front (`--scopes: unknown scope; ...`). Used by
   * `checkBootstrap` and the CLI.
   */
  messageNaming(name: string): string {
    const { field, message } = this;
    return field !== undefined && message.startsWith(`${field} `) ? name + message.slice(field.length) : `${name}: ${message}`;
  }
}

/**
 * The admin operation lost to what is stored: the client id or username exists (created meanwhile
 * by a concurrent call, when the caller checked first). The console answers it 409 like its own
 * check. Its `name` stays "AdminError", so code that tells errors apart by name sees no change.
 */
export class AdminConflictError extends AdminError {}

/**
 * The client, secret or account the operation names is not stored (deleted meanwhile by a
 * concurrent call, when the caller checked first). The console answers it 404 like its own check.
 * Its `name` stays "AdminError".
 */
export class AdminNotFoundError extends AdminError {}

/**
 * An id (client id, secret id, username, kid) as every message names it, those of app.admin, the
 * CLI, the console API and the key encryption: quoted as JSON (`client "abc" already exists`), so
 * an empty id still reads as one (`signing key "" does not exist`), a quote, backslash or control
 * character in it is escaped and cannot end the id or break a log line, and the console page can
 * find it to bidi-isolate it. Until 2026-11-30 ids were written bare (not-found messages were
 * quoted first, the others later that day).
 */
export const quoteId = (id: string): string => JSON.stringify(id);

/** The {@link AdminNotFoundError} for `what` (`client`, `user`, `signing key`) by that id. */
export const notFound = (what: string, id: string): AdminNotFoundError => new AdminNotFoundError(`${what} ${quoteId(id)} does not exist`);
