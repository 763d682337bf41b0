import * as z from "zod/mini";
import { ApiErrorCode, type ApiErrorNumber, type OAuthErrorCode } from "../errors/index.js";
import { meta } from "./meta.js";

/**
 * Error bodies narrowed to some codes -> the component they narrow. The document writes them as
 * `allOf: [{$ref: component}, {narrowed}]`, so a reader sees both the shape and the codes.
 * Module-level on purpose: it is keyed by schema, filled as the (module-level) schemas are
 * defined, and the same for every app; it is not a per-app cache, which would live on the context.
 */
export const NARROWED_ERRORS = new WeakMap<z.core.$ZodType, "Error" | "OAuthError">();

/**
 * The API error body `{error: int32, message}` (the spec's Error schema). `codes` narrows `error`
 * to the numbers a given response can carry, so the document says which causes each status has.
 *
 * @example
 * apiErrorBody([ApiErrorCode.missingToken, ApiErrorCode.invalidToken]);
 */
export function apiErrorBody(codes: readonly ApiErrorNumber[] = Object.values(ApiErrorCode)) {
  const sorted = [...new Set(codes)].sort((a, b) => a - b);
  const schema = meta(
    z.object({
      error: meta(z.literal(sorted as [ApiErrorNumber, ...ApiErrorNumber[]]), {
        type: "integer",
        format: "int32",
        description: "Which cause; see the README's error table.",
      }),
      message: meta(z.string(), { description: "A human-readable description; never contains secrets." }),
    }),
    { description: "An API error." },
  );
  NARROWED_ERRORS.set(schema, "Error");
  return schema;
}

/** Every API error body; the `Error` component. */
export const ApiErrorBody = apiErrorBody();
NARROWED_ERRORS.delete(ApiErrorBody);

/** RFC 6749 §5.2 error codes plus the §4.1.2.1 server codes used at the token endpoint. */
export const OAUTH_ERROR_CODES = [
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope",
  "server_error",
  "temporarily_unavailable",
] as const satisfies readonly OAuthErrorCode[];

/**
 * The OAuth error body `{error, error_description}` (RFC 6749 §5.2). `codes` narrows `error` per response.
 *
 * @example
 * oauthErrorBody(["invalid_client"]);
 */
export function oauthErrorBody(codes: readonly OAuthErrorCode[] = OAUTH_ERROR_CODES) {
  const schema = meta(
    z.object({
      error: z.enum(codes as [OAuthErrorCode, ...OAuthErrorCode[]]),
      error_description: meta(z.string(), { description: "Human-readable ASCII text (RFC 6749 §5.2)." }),
    }),
    { description: "An OAuth 2.0 error (RFC 6749 §5.2)." },
  );
  NARROWED_ERRORS.set(schema, "OAuthError");
  return schema;
}

/** Every OAuth error body; the `OAuthError` component. */
export const OAuthErrorBody = oauthErrorBody();
NARROWED_ERRORS.delete(OAuthErrorBody);
