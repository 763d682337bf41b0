/** Thrown by admin operations for bad input; its message is safe to show. */
export class AdminError extends Error {
  override readonly name = "AdminError";
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
