import { OAuthError, StorageError, TooManyAttemptsError } from "../errors/index.js";
import type { ClientAuthFailure, ClientLock } from "../events/types.js";
import { presentedClient } from "../http/client-auth.js";
import { describeError, json, NO_STORE, type PlainResponse } from "../http/respond.js";
import type { Context, Urls } from "../context.js";
import { clientAddressBudget } from "../security/credentials.js";
import { reportsRefusal, throttleKeys, type ThrottleKey } from "../security/throttle.js";
import { checkScopeLimits } from "./scopes.js";
import { verifyClientAssertion } from "./client-assertion.js";
import { matchClientSecret } from "./client-secrets.js";
import type { ClientRecord, GrantType } from "../storage/types.js";
import { clientCredentialsGrant } from "./grants/client-credentials.js";
import { passwordGrant } from "./grants/password.js";
import { refreshTokenGrant } from "./grants/refresh-token.js";
import type { Grant } from "./grants/types.js";
import { inSpan } from "../telemetry/spans.js";

/** Path of the token endpoint, relative to the base path. */
export const TOKEN_PATH = "/UserService/connect/token";

/** The grants, by `grant_type`. */
export const GRANTS: ReadonlyMap<string, Grant> = new Map(
  [clientCredentialsGrant, passwordGrant, refreshTokenGrant].map((g) => [g.grantType, g] as const),
);

/** Supported grant types, for the metadata document. */
export const GRANT_TYPES: GrantType[] = [...GRANTS.keys()] as GrantType[];


/** Step 2: the grant type must be given and supported. */
function selectGrant(form: Map<string, string>): Grant {
  const type = form.get("grant_type");
  if (type === undefined) throw new OAuthError("invalid_request", "The grant_type parameter is required.");
  const grant = GRANTS.get(type);
  if (!grant) throw new OAuthError("unsupported_grant_type", "The grant_type is not supported; use client_credentials, password or refresh_token.");
  return grant;
}

/**
 * Step 3: the client must authenticate, by the one method it is registered for, under the
 * brute-force throttle keyed by client id + client IP, and by the address's budget across client
 * ids (`clientAddressBudget`): a locked pair, or an address whose budget is spent, is refused
 * before the credential is looked at, so the answer says nothing about it.
 *
 * - `client_secret` clients: the SHA-256 of the presented secret is compared in constant time with
 *   every unexpired secret of the client (see `matchClientSecret`).
 * - `private_key_jwt` clients: the client assertion is verified (`verifyClientAssertion`).
 */
export function authenticateClient(ctx: Context, urls: Urls, form: Map<string, string>, authorization: string | null, clientIp: string | undefined): Promise<ClientRecord> {
  return inSpan(ctx.tracer, "plantgate.client_authentication", undefined, () => checkClient(ctx, urls, form, authorization, clientIp));
}

async function checkClient(ctx: Context, urls: Urls, form: Map<string, string>, authorization: string | null, clientIp: string | undefined): Promise<ClientRecord> {
  const failed = (clientId: string | null, reason: ClientAuthFailure, refusal?: { lock: ClientLock; refused_count: number }) =>
    ctx.events.emit(
      refusal === undefined
        ? { type: "client.authentication_failed", client_id: clientId, reason, client_ip: clientIp ?? null }
        : { type: "client.authentication_failed", client_id: clientId, reason, client_ip: clientIp ?? null, lock: refusal.lock, refused_count: refusal.refused_count },
    );
  let presented;
  try {
    presented = presentedClient(authorization, form);
  } catch (e) {
    // Never the presented id: a client that swapped id and secret would put its secret there.
    if (e instanceof OAuthError && e.code === "invalid_client") failed(null, "malformed");
    throw e;
  }
  const keys: (string | ThrottleKey)[] = throttleKeys("client", { clientId: presented.clientId, ...(clientIp !== undefined ? { ip: clientIp } : {}) });
  // Failures count here too; read beside the pair's counter, so past a spent budget a new client id
  // is refused without a counter row of its own.
  keys.push(clientAddressBudget(clientIp));
  // The client is read while the counters are: one storage wait instead of two (and on SQLite one
  // data_version check serves both cached reads). A locked pair is still refused before the
  // credential is looked at; the record only names the client in the event.
  const reading = ctx.storage.clients.get(presented.clientId);
  reading.catch(() => {}); // awaited below, or dropped when the throttle refuses first
  const checked = await ctx.throttle.check(keys).catch(async (e: unknown) => {
    // Only the 1st, 2nd, 4th, ... refusal within a lock makes an event (with its count), so a
    // flood at a lock makes O(log n) events; the metrics count every refusal.
    if (e instanceof TooManyAttemptsError && e.lock !== undefined && reportsRefusal(e.lock.refused)) {
      const lock = e.lock.keyIndex === keys.length - 1 ? "address_budget" : "client_address";
      failed((await reading.catch(() => null)) ? presented.clientId : null, "throttled", { lock, refused_count: e.lock.refused });
    }
    throw e;
  });
  const client = await reading;
  const now = ctx.clock();
  let reason: ClientAuthFailure = "unknown_client";
  try {
    if (presented.method === "private_key_jwt") {
      if (client && client.authMethod !== "private_key_jwt") reason = "wrong_auth_method";
      if (!client || client.authMethod !== "private_key_jwt") throw new OAuthError("invalid_client", "Client authentication failed.");
      reason = "invalid_assertion";
      await verifyClientAssertion(ctx, urls, `${urls.baseUrl}${TOKEN_PATH}`, client, presented.assertion, now);
    } else {
      // Hashed and compared even for an unknown or key-based client, so every miss costs the same.
      const matched = await matchClientSecret(ctx, client?.authMethod === "client_secret" ? client : null, presented.clientSecret, now);
      if (client) reason = client.authMethod === "client_secret" ? "invalid_secret" : "wrong_auth_method";
      if (!client || !matched) throw new OAuthError("invalid_client", "Client authentication failed.");
    }
  } catch (e) {
    if (e instanceof OAuthError) {
      await ctx.throttle.fail(checked);
      // An unknown id is not named (it may be a secret sent in the id's place).
      failed(client ? presented.clientId : null, reason);
    }
    throw e;
  }
  try {
    await ctx.throttle.succeed(checked);
  } catch (error) {
    // The credential is right: the authentication stands. A success counts nothing (check, then
    // fail only after a failure), so a reset that fails leaves the client's counter where its
    // failures put it: it grants no guess, and the counter ends with its window. Answering 503 here
    // (before 2026-11-30) refused every right credential of a client with a counted failure while
    // the reset kept failing (a Redis whose ACL refuses DEL, a store failing only there).
    if (!(error instanceof StorageError)) throw error;
    ctx.logger.warn("brute-force counter could not be reset after a successful client authentication; the authentication stands, and the counted failures stay until their window ends", describeError(error));
  }
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
 * What the three client-authenticated form endpoints (token, revocation, introspection) receive:
 * the parsed form (step 1, read by `http/oauth-form.ts`), the Authorization header and the client's
 * address as resolved for the throttle. Plain arguments, not an object: this is the hot path.
 */
export type ClientFormEndpoint = (
  ctx: Context,
  urls: Urls,
  form: Map<string, string>,
  authorization: string | null,
  clientIp: string | undefined,
) => Promise<PlainResponse>;

/**
 * `POST /UserService/connect/token`: a short ordered list of named steps (step 1, the form, is
 * read before). Errors are thrown as `OAuthError` and rendered by `respond.ts`.
 */
export const tokenEndpoint: ClientFormEndpoint = async (ctx, urls, form, authorization, clientIp) => {
  const grant = selectGrant(form);
  const client = await authenticateClient(ctx, urls, form, authorization, clientIp);
  checkGrantAllowed(client, grant, form);
  checkScopeLimits(form.get("scope"), ctx.limits);
  const body = await inSpan(ctx.tracer, "plantgate.grant", { "plantgate.grant_type": grant.grantType }, () =>
    grant.handle({ ctx, urls, client, params: form, now: ctx.clock(), clientIp }),
  );
  return json(200, body, { ...NO_STORE });
};
