import type { Context } from "../context.js";
import { OAuthError } from "../errors/index.js";
import { BodyReadError, charset, contentCoded, mediaType, readBodyText } from "./body.js";
import type { HandleInfo } from "./handle-info.js";
import { FormError, FormLimitError, parseForm } from "./form.js";

/**
 * Step 1 of the token, revocation and introspection endpoints: the request must be a UTF-8 form
 * POST within the size and parameter caps, no parameter of the endpoint's `recognized` repeated;
 * returns the parsed form.
 */
export async function readOAuthForm(ctx: Context, request: Request, info: HandleInfo | undefined, recognized: ReadonlySet<string>): Promise<Map<string, string>> {
  if (mediaType(request) !== "application/x-www-form-urlencoded") {
    throw new OAuthError("invalid_request", "The request body must be application/x-www-form-urlencoded.");
  }
  if (contentCoded(request)) throw new OAuthError("invalid_request", "The request body must not be content-coded (Content-Encoding).");
  const cs = charset(request);
  if (cs !== null && cs !== "utf-8" && cs !== "utf8") {
    throw new OAuthError("invalid_request", cs.includes(",") ? "The Content-Type must not give its charset twice." : "The request body must be UTF-8.");
  }
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
    // RFC 6749 §3.2: unrecognized parameters are ignored, repeated or not (an RFC 8707 client sends
    // `resource` once per API); before 2026-11-29 any repeat was refused. Only names from the set
    // are echoed: an arbitrary one could hold characters §5.2 forbids in error_description.
    const known = parsed.repeated.filter((name) => recognized.has(name));
    if (known.length > 0) throw new OAuthError("invalid_request", `Parameters must not be repeated: ${known.join(", ")}.`);
  }
  return parsed.values;
}

/** Client authentication in the body: RFC 6749 §2.3.1, RFC 7523 §2.2. */
const CLIENT_AUTHENTICATION = ["client_id", "client_secret", "client_assertion_type", "client_assertion"];

/** The token request's parameters: RFC 6749 §4.3.2, §4.4.2, §6, and client authentication. */
export const TOKEN_PARAMETERS: ReadonlySet<string> = new Set(["grant_type", "username", "password", "scope", "refresh_token", ...CLIENT_AUTHENTICATION]);

/** The revocation (RFC 7009 §2.1) and introspection (RFC 7662 §2.1) requests' parameters, and client authentication. */
export const TOKEN_QUERY_PARAMETERS: ReadonlySet<string> = new Set(["token", "token_type_hint", ...CLIENT_AUTHENTICATION]);
