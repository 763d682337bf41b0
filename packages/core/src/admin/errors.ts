/** Thrown by admin operations for bad input; its message is safe to show. */
export class AdminError extends Error {
  override readonly name = "AdminError";
}
