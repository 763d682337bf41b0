import { timingSafeEqual } from "../crypto/index.js";
import { OAuthError } from "../errors/index.js";
import { BodyReadError, charset, mediaType, readBodyText } from "../http/body.js";
import { presentedClient } from "../http/client-auth.js";
import { FormError, FormLimitError, parseForm } from "../http/form.js";
import { json, NO_STORE, type PlainResponse } from "../http/respond.js";
import type { Context, Urls } from "../context.js";
import { throttleKeys } from "../security/throttle.js";
import { checkScopeLimits } from "./scopes.js";
import type { ClientRecord, GrantType } from "../storage/types.js";
import { clientCredentialsGrant } from "./grants/client-credentials.js";
import { passwordGrant } from "./grants/password.js";
import { refreshTokenGrant } from "./grants/refresh-token.js";
import type { Grant } from "./grants/types.js";

/** The grants, by `grant_type`. */
export const GRANTS: ReadonlyMap<string, Grant> = new Map(
  [clientCredentialsGrant, passwordGrant, refreshTokenGrant].map((g) => [g.grantType, g] as const),
);

/** Supported grant types, for the metadata document. */
export const GRANT_TYPES: GrantType[] = [...GRANTS.keys()] as GrantType[];

// A fixed hash to compare against when the client does not exist, so unknown ids cost the same.
const UNKNOWN_CLIENT_HASH = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

/** Step 1: the request must be a form POST; returns the parsed form. Shared with revocation and introspection. */
export async function readForm(ctx: Context, request: Request): Promise<Map<string, string>> {
  if (mediaType(request) !== "application/x-www-form-urlencoded") {
    throw new OAuthError("invalid_request", "The request body must be application/x-www-form-urlencoded.");
  }
  const cs = charset(request);
  if (cs !== null && cs !== "utf-8" && cs !== "utf8") throw new OAuthError("invalid_request", "The request body must be UTF-8.");
  let text: string;
  try {
    text = await readBodyText(request, ctx.maxBodyBytes);
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
const KNOWN_PARAMETERS = new Set(["grant_type", "client_id", "client_secret", "username", "password", "scope", "refresh_token", "token", "token_type_hint"]);

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

/** Step 2: the grant type must be given and supported. */
function selectGrant(form: Map<string, string>): Grant {
  const type = form.get("grant_type");
  if (type === undefined) throw new OAuthError("invalid_request", "The grant_type parameter is required.");
  const grant = GRANTS.get(type);
  if (!grant) throw new OAuthError("unsupported_grant_type", "The grant_type is not supported; use client_credentials, password or refresh_token.");
  return grant;
}

/**
 * Step 3: the client must authenticate (constant-time compare of SHA-256 hashes), under the
 * brute-force throttle keyed by client id + client IP: a locked pair is refused before the secret
 * is looked at, so the answer says nothing about it.
 */
export async function authenticateClient(ctx: Context, request: Request, form: Map<string, string>, clientIp: string | undefined): Promise<ClientRecord> {
  const presented = presentedClient(request, form);
  const keys = throttleKeys("client", { clientId: presented.clientId, ...(clientIp !== undefined ? { ip: clientIp } : {}) });
  const checked = await ctx.throttle.check(keys);
  const client = await ctx.storage.clients.get(presented.clientId);
  const hash = await ctx.sha256(presented.clientSecret);
  const ok = timingSafeEqual(hash, client?.secretHash ?? UNKNOWN_CLIENT_HASH);
  if (!client || !ok) {
    await ctx.throttle.fail(checked);
    throw new OAuthError("invalid_client", "Client authentication failed.");
  }
  await ctx.throttle.succeed(checked);
  return client;
}

/** Step 4: the client must be allowed this grant, and its required parameters present. */
function checkGrantAllowed(client: ClientRecord, grant: Grant, form: Map<string, string>): void {
  if (!client.grantTypes.includes(grant.grantType)) {
    throw new OAuthError("unauthorized_client", `This client is not allowed the ${grant.grantType} grant.`);
  }
  const missing = grant.required.filter((p) => !form.has(p));
  if (missing.length > 0) throw new OAuthError("invalid_request", `Missing required parameter: ${missing.join(", ")}.`);
}

/**
 * `POST /UserService/connect/token`: a short ordered list of named steps. Errors are thrown as
 * `OAuthError` and rendered by `respond.ts`.
 */
export async function tokenEndpoint(ctx: Context, urls: Urls, request: Request, clientIp?: string): Promise<PlainResponse> {
  const form = await readForm(ctx, request);
  const grant = selectGrant(form);
  const client = await authenticateClient(ctx, request, form, clientIp);
  checkGrantAllowed(client, grant, form);
  checkScopeLimits(form.get("scope"), ctx.limits);
  const body = await grant.handle({ ctx, urls, client, params: form, now: ctx.clock(), clientIp });
  return json(200, body, { ...NO_STORE });
}
