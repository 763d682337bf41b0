import type { Context } from "../context.js";
import { OAuthError } from "../errors/index.js";
import { BodyReadError, charset, mediaType, readBodyText } from "./body.js";
import type { HandleInfo } from "./handle-info.js";
import { FormError, FormLimitError, parseForm } from "./form.js";

/**
 * Step 1 of the token, revocation and introspection endpoints: the request must be a UTF-8 form
 * POST within the size and parameter caps, no parameter repeated; returns the parsed form.
 */
export async function readOAuthForm(ctx: Context, request: Request, info: HandleInfo | undefined): Promise<Map<string, string>> {
  if (mediaType(request) !== "application/x-www-form-urlencoded") {
    throw new OAuthError("invalid_request", "The request body must be application/x-www-form-urlencoded.");
  }
  const cs = charset(request);
  if (cs !== null && cs !== "utf-8" && cs !== "utf8") throw new OAuthError("invalid_request", "The request body must be UTF-8.");
  let text: string;
  try {
    text = await readBodyText(request, info, ctx.maxBodyBytes);
  } catch (e) {
    if (e instanceof BodyReadError) {
      throw new OAuthError(
        "invalid_request",
        e.reason === "too_large" ? `The request body exceeds ${ctx.maxBodyBytes} bytes.` : e.reason === "not_utf8" ? "The request body must be UTF-8." : "The request body could not be read.",
      );
    }
    throw e;
  }
  let parsed: ReturnType<typeof parseForm>;
  try {
    parsed = parseForm(text, ctx.limits);
  } catch (e) {
    if (e instanceof FormLimitError) throw new OAuthError("invalid_request", e.message);
    if (e instanceof FormError) throw new OAuthError("invalid_request", "The request body is not valid form encoding.");
    throw e;
  }
  if (parsed.repeated.length > 0) {
    throw new OAuthError("invalid_request", `Parameters must not be repeated: ${describeRepeated(parsed.repeated)}.`);
  }
  return parsed.values;
}

/** The parameters of a token request (RFC 6749 §4.3.2, §4.4.2, §6, §2.3.1). */
const KNOWN_PARAMETERS = new Set(["grant_type", "client_id", "client_secret", "username", "password", "scope", "refresh_token", "token", "token_type_hint", "client_assertion_type", "client_assertion"]);

/**
 * Names only parameters we know: an arbitrary name could hold characters RFC 6749 §5.2 forbids in
 * error_description (quotes, backslashes, control or non-ASCII characters), or a credential.
 */
function describeRepeated(names: string[]): string {
  const known = names.filter((n) => KNOWN_PARAMETERS.has(n));
  const unknown = names.length - known.length;
  if (unknown > 0) known.push(unknown === 1 ? "an unrecognized parameter" : `${unknown} unrecognized parameters`);
  return known.join(", ");
}
