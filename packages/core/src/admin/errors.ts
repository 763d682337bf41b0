/**
 * The input field an {@link AdminError} is about: a member of `CreateClientInput` (`expiresIn` is
 * `addClientSecret`'s option), of `CreateAccountInput`, or of a page query (`listClientsPage`'s
 * `limit`/`after`, `listAccountsPage`'s `page`/`pageSize`).
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
  | "pageSize";

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

  constructor(message: string, options: { field?: AdminField } = {}) {
    super(message);
    if (options.field !== undefined) this.field = options.field;
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
