/** Code of the {@link PlantgateBodyConsumedError}, for error handlers that switch on `err.code`. */
export const BODY_CONSUMED = "PLANTGATE_BODY_CONSUMED";

const DEFAULT_MESSAGE =
  "plantgate: something read the request body before plantgate (a body parser, a middleware that drained the stream); " +
  "mount plantgate before it (or mount it only on your own routes)";

/**
 * What reading the request body fails with when something in the host server read bytes of it
 * before plantgate: a body parser (`express.json()`, body-parser, Fastify's parsers, multer), a
 * middleware that drained or piped the stream. The original bytes are gone, and re-serialising a
 * parsed value would lose int64 precision, so the request is refused. This is a mistake in the host
 * server's order, not the client's: a host fault (`HostFaultError` of `@plantgate/core`, by the mark
 * `Symbol.for("plantgate.hostFault")`, since this package depends on nothing of ours; `instanceof
 * HostFaultError` holds), which plantgate answers with its 500 (`server_error`, or `{"error":1500}`
 * on the plant store and console), logs, and counts and traces as that 500 (`error.type`
 * `PLANTGATE_BODY_CONSUMED`). Only a body of which bytes were delivered to someone else counts: an
 * empty body something read to its end is still the empty body the client sent.
 *
 * @example
 * ```ts
 * import { BODY_CONSUMED } from "@plantgate/node";
 *
 * const onError = (error: unknown) => {
 *   if ((error as { code?: unknown }).code === BODY_CONSUMED) console.error("mount plantgate before the body parser");
 * };
 * ```
 */
export class PlantgateBodyConsumedError extends Error {
  override readonly name = "PlantgateBodyConsumedError";
  readonly code = BODY_CONSUMED;
  /** For frameworks that read a status off an error (Express's error handling). */
  readonly status = 500;
  readonly statusCode = 500;
  /** Express's default handler shows the message only for `expose: true`; this is a server-side mistake. */
  readonly expose = false;

  constructor(message: string = DEFAULT_MESSAGE) {
    super(message);
  }
}
// HostFaultError's mark (see its doc comment in @plantgate/core), on the prototype: nothing per instance.
Object.defineProperty(PlantgateBodyConsumedError.prototype, Symbol.for("plantgate.hostFault"), { value: true });

