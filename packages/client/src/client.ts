import { NetworkError } from "./errors.js";
import { abortReason, apiFailure, checkSignal, DEFAULT_MAX_RESPONSE_BYTES, deadlineIn, isObject, parseJsonBody, pathOf, send, timeoutError, unexpected, within, type Deadline, type FetchInit, type FetchLike, type ReadResponse } from "./fetch.js";
import { JsonNumber, parseLosslessJson } from "./lossless-json.js";
import { createAssertionSigner } from "./assertion.js";
import { createTokenManager, TOKEN_PATH, type TokenManager } from "./token-manager.js";
import type { Account, AccountPage, CachedToken, CallOptions, ClientOptions, ListAccountsParams, NewPlant, Plant, TokenInfo } from "./types.js";

/** The account-listing path under the base URL. */
export const ACCOUNTS_PATH = "/rbac/ServerCommand/GetAccountList";
/** The plant-creation path under the base URL. */
export const PLANTS_PATH = "/plants";

/**
 * A client for one identity (a client, or a client acting for one user) against one service.
 *
 * Every method that goes to the network takes an optional `signal` (see {@link CallOptions}), as
 * fetch does: aborted, the call rejects with the signal's `reason` (an `AbortError` DOMException
 * after a plain `abort()`), at once and without sending anything if it is aborted already.
 */
export interface PlantgateClient {
  /**
   * Creates a plant. The id is a `bigint` and travels as an exact int64 JSON number both ways.
   *
   * @example
   * const plant = await client.createPlant({ id: 9223372036854775807n, name: "Monstera", tag: "indoor" });
   * plant.id === 9223372036854775807n; // true
   */
  createPlant(plant: NewPlant, options?: CallOptions): Promise<Plant>;
  /**
   * One page of accounts.
   *
   * @example
   * const { accounts, totalPages } = await client.listAccounts({ page: 1, pageSize: 50, signal: AbortSignal.timeout(5000) });
   */
  listAccounts(params?: ListAccountsParams): Promise<AccountPage>;
  /**
   * Every account, walking the pages in order until the last one. `signal` applies to each page's
   * call: aborted, the page being fetched (or the next one asked for) rejects with its reason.
   *
   * @example
   * for await (const account of client.accounts({ pageSize: 100 })) console.log(account.username);
   */
  accounts(params?: { pageSize?: number; signal?: AbortSignal }): AsyncGenerator<Account, void, undefined>;
  /**
   * A valid access token (cached until shortly before it expires; while its renewal gets no usable
   * answer, waits out a Retry-After or the backoff, or its token request has had no answer for 1 s,
   * handed out until it expires). Use it for
   * routes this client has no method for; on a 401 call {@link PlantgateClient.refresh} with the
   * token that was refused.
   */
  getAccessToken(options?: CallOptions): Promise<string>;
  /** The current token's details (fetching one if needed); never the refresh token. */
  getToken(options?: CallOptions): Promise<TokenInfo>;
  /**
   * Gets a new access token now: with the refresh token when held, else by the grant. Given the
   * access token an API refused, it renews only if that token is still the current one, so several
   * callers reporting one refused token cause one renewal, as the SDK's own methods do (without it,
   * each late 401 threw away a token still valid and rotated the session once more). Held like
   * every call that needs a new token by a `Retry-After` and by the backoff after failed token
   * requests: then it rejects at once, sending nothing (`retryAfter` says for how long).
   *
   * @example
   * const token = await client.getAccessToken();
   * const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
   * if (res.status === 401) await client.refresh(token);
   */
  refresh(rejectedAccessToken?: string, options?: CallOptions): Promise<TokenInfo>;
  /** The key this client uses in the shared token cache. */
  readonly cacheKey: string;
}

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Normalizes `scope` to RFC 6749 §3.3 form; undefined when nothing was asked for. */
function normalizeScope(scope: string | readonly string[] | undefined): string | undefined {
  if (scope === undefined) return undefined;
  const parts = (typeof scope === "string" ? scope.split(" ") : [...scope]).flatMap((s) => (typeof s === "string" ? s.split(/[ \t\n\r]+/) : [s])).filter((s) => s !== "");
  for (const part of parts) {
    if (typeof part !== "string" || !SCOPE_TOKEN.test(part)) throw new TypeError("scope: each scope must be a non-empty RFC 6749 scope token");
  }
  const unique = [...new Set(parts)];
  return unique.length === 0 ? undefined : unique.join(" ");
}

function requireString(name: string, value: unknown): string {
  if (typeof value !== "string" || value === "") throw new TypeError(`${name} must be a non-empty string`);
  return value;
}

/**
 * Creates a client for the plantgate APIs. With `credentials` it uses the password grant (and,
 * with `offline_access` in `scope`, keeps and rotates the refresh token); without, client
 * credentials. Tokens are fetched lazily, cached until `refreshSkewSeconds` before expiry, renewed
 * by one request however many calls wait, and renewed once more when an API answers 401.
 *
 * Runs anywhere `fetch` does (Node 20+, workerd, browsers); pass `fetch` to use another one.
 * Throws `TypeError` for invalid options; calls reject with {@link OAuthError}, {@link ApiError}
 * or {@link NetworkError}, or with their `signal`'s reason when it is aborted.
 *
 * @example
 * import { createClient } from "@plantgate/client";
 * const client = createClient({
 *   baseUrl: "http://127.0.0.1:3000",
 *   clientId: "demo-client",
 *   clientSecret: process.env.PLANTGATE_CLIENT_SECRET!,
 *   auth: "basic",
 *   scope: "Platform_UserAPIs offline_access",
 *   credentials: { username: "demo", password: process.env.PLANTGATE_PASSWORD! },
 * });
 * const page = await client.listAccounts({ page: 1, pageSize: 20 });
 */
export function createClient(options: ClientOptions): PlantgateClient {
  if (!isObject(options)) throw new TypeError("createClient needs an options object");
  const rawBase = requireString("baseUrl", options.baseUrl);
  let base: URL;
  try {
    base = new URL(rawBase);
  } catch {
    throw new TypeError("baseUrl must be an absolute URL");
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new TypeError("baseUrl must be an http(s) URL");
  // Any `?` or `#`, an empty query or fragment too (`https://host/api?`: `search` and `hash` read
  // empty, but `href` kept it and every path was appended after it, so the client secret went to
  // `/api` until 2026-12-01).
  if (/[?#]/.test(rawBase) || base.username !== "" || base.password !== "") {
    throw new TypeError("baseUrl must not have a query, fragment or user info");
  }
  const baseUrl = base.href.replace(/\/+$/, "");
  const clientId = requireString("clientId", options.clientId);
  if ((options.clientSecret === undefined) === (options.privateKey === undefined)) throw new TypeError("give exactly one of clientSecret and privateKey");
  const clientSecret = options.privateKey === undefined ? requireString("clientSecret", options.clientSecret) : "";
  const auth = options.auth ?? (options.privateKey === undefined ? "basic" : "private_key_jwt");
  if (options.privateKey === undefined ? auth !== "basic" && auth !== "post" : auth !== "private_key_jwt") {
    throw new TypeError(options.privateKey === undefined ? "auth must be 'basic' or 'post'" : "with privateKey, auth is 'private_key_jwt'");
  }
  if (options.keyId !== undefined && typeof options.keyId !== "string") throw new TypeError("keyId must be a string");
  const assertion = options.privateKey === undefined ? null : createAssertionSigner(clientId, options.privateKey, options.keyId);
  const scope = normalizeScope(options.scope);
  let credentials: { username: string; password: string } | null = null;
  if (options.credentials !== undefined) {
    if (!isObject(options.credentials)) throw new TypeError("credentials must be { username, password }");
    credentials = {
      username: requireString("credentials.username", options.credentials.username),
      password: requireString("credentials.password", options.credentials.password),
    };
  }
  const skew = options.refreshSkewSeconds ?? 30;
  if (typeof skew !== "number" || !Number.isFinite(skew) || skew < 0) throw new TypeError("refreshSkewSeconds must be a number >= 0");
  const jitter = options.refreshJitterSeconds ?? 20;
  if (typeof jitter !== "number" || !Number.isFinite(jitter) || jitter < 0) throw new TypeError("refreshJitterSeconds must be a number >= 0");
  let fetch: FetchLike;
  if (options.fetch !== undefined) {
    if (typeof options.fetch !== "function") throw new TypeError("fetch must be a function");
    fetch = options.fetch;
  } else {
    if (typeof globalThis.fetch !== "function") throw new TypeError("this runtime has no fetch; pass the fetch option");
    // Looked up per call (so a fetch installed later is used) and called unbound-safe.
    fetch = (url, init) => globalThis.fetch(url, init);
  }
  const timeoutMs = options.timeoutMs ?? 20_000;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > 2_147_483_647) throw new TypeError("timeoutMs must be an integer from 0 to 2147483647");
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (!Number.isSafeInteger(maxResponseBytes) || maxResponseBytes < 1) throw new TypeError("maxResponseBytes must be a positive integer");
  const clock = options.clock ?? Date.now;
  if (typeof clock !== "function") throw new TypeError("clock must be a function returning epoch milliseconds");
  const tokenCache = options.tokenCache ?? null;
  if (tokenCache !== null && (typeof tokenCache.get !== "function" || typeof tokenCache.set !== "function")) {
    throw new TypeError("tokenCache must have get(key) and set(key, token)");
  }
  const waitUntil = options.waitUntil ?? null;
  if (waitUntil !== null && typeof waitUntil !== "function") throw new TypeError("waitUntil must be a function");
  const scopeKey = scope === undefined ? "" : scope.split(" ").sort().join(" ");
  const cacheKey = `plantgate-client:${JSON.stringify([baseUrl, clientId, credentials?.username ?? null, scopeKey])}`;

  const tokens = createTokenManager({
    baseUrl,
    clientId,
    clientSecret,
    auth,
    assertion,
    scope,
    credentials,
    keepCredentials: options.keepCredentials ?? true,
    fetch,
    timeoutMs,
    maxResponseBytes,
    clock,
    refreshSkewMs: skew * 1000,
    refreshJitterMs: jitter * 1000,
    tokenCache,
    cacheKey,
    waitUntil,
  });

  const call = (method: "GET" | "POST", path: string, body: string | undefined, signal: AbortSignal | undefined) =>
    authorized(tokens, fetch, { deadline: deadlineIn(timeoutMs), maxResponseBytes, clock, signal }, baseUrl + path, method, body);
  /**
   * A token for getAccessToken/getToken/refresh, within timeoutMs from the call (a renewal in
   * flight may hang in a hook or a request) and until `signal` is aborted. An aborted signal
   * rejects before `token` is called, so no renewal is started for it.
   */
  const tokenWithin = (token: (deadline: Deadline | null) => Promise<CachedToken>, signal: AbortSignal | undefined) => {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    const deadline = deadlineIn(timeoutMs);
    return within(deadline, token(deadline), () => timeoutError(`POST ${pathOf(baseUrl + TOKEN_PATH)}`, deadline!.ms), signal);
  };

  async function listAccounts(params: ListAccountsParams = {}): Promise<AccountPage> {
    if (!isObject(params)) throw new TypeError("listAccounts takes { page?, pageSize?, signal? }");
    const signal = checkSignal(params.signal);
    const query = new URLSearchParams();
    if (params.page !== undefined) query.set("page", String(params.page));
    if (params.pageSize !== undefined) query.set("pageSize", String(params.pageSize));
    const q = query.toString();
    const response = await call("GET", ACCOUNTS_PATH + (q === "" ? "" : `?${q}`), undefined, signal);
    const what = "GetAccountList";
    if (response.status !== 200) throw apiFailure(response, what, clock());
    return toAccountPage(response, parseJsonBody(response, what));
  }

  return {
    cacheKey,
    async createPlant(plant, options) {
      const body = plantBody(plant);
      const response = await call("POST", PLANTS_PATH, body, signalOf(options));
      if (response.status !== 200) throw apiFailure(response, "POST /plants", clock());
      return toPlant(response);
    },
    listAccounts,
    async *accounts(params = {}) {
      if (!isObject(params)) throw new TypeError("accounts takes { pageSize?, signal? }");
      const signal = checkSignal(params.signal);
      for (let page = 1; ; page++) {
        const result = await listAccounts({ page, ...(params.pageSize === undefined ? {} : { pageSize: params.pageSize }), ...(signal === undefined ? {} : { signal }) });
        // A server (or a proxy dropping the query) that answers another page than asked would
        // make the walk repeat that page without end.
        if (result.page !== page) throw new NetworkError("unexpected_response", `GetAccountList: asked for page ${page}, got page ${result.page}`, 200);
        yield* result.accounts;
        // totalPages is re-read on every page, so accounts added while walking extend the walk.
        if (page >= result.totalPages || result.accounts.length === 0) return;
      }
    },
    async getAccessToken(options) {
      return (await tokenWithin(tokens.getToken, signalOf(options))).accessToken;
    },
    async getToken(options) {
      return tokens.info(await tokenWithin(tokens.getToken, signalOf(options)));
    },
    async refresh(rejectedAccessToken?: string, options?: CallOptions) {
      const signal = signalOf(options);
      return tokens.info(await tokenWithin((deadline) => tokens.refresh(rejectedAccessToken, deadline), signal));
    },
  };
}

/** The `signal` of a method's {@link CallOptions}, checked. */
function signalOf(options: CallOptions | undefined): AbortSignal | undefined {
  if (options === undefined) return undefined;
  if (!isObject(options)) throw new TypeError("options must be an object: { signal? }");
  return checkSignal(options.signal);
}

/**
 * Sends an API request with the current token. On a 401 the token is renewed once and the request
 * sent once more: the API checks the token before reading the body and stores nothing on a 401,
 * so repeating even a POST is safe. With a tokenCache that renewal first waits a random moment
 * (bounded by the deadline) and reads the cache again, as a due renewal is spread (see
 * `refusedWaitMs` in token-manager.ts; until 2026-12-02 it presented the refresh token at once,
 * and a 401 reaching every process on one cache entry revoked the family). A second 401 is
 * returned to the caller (an ApiError).
 * One deadline covers it all: getting the token (or waiting for a renewal already in flight, the
 * cache hooks included), the request, and the renewal and request of the retry. The caller's
 * `signal` ends it all the same (with its reason), whichever of the two comes first; aborted
 * before the token is asked for, nothing is started or sent.
 */
async function authorized(
  tokens: TokenManager,
  fetch: FetchLike,
  limits: { deadline: Deadline | null; maxResponseBytes: number; clock: () => number; signal: AbortSignal | undefined },
  url: string,
  method: "GET" | "POST",
  body?: string,
): Promise<ReadResponse> {
  const { deadline, signal } = limits;
  const attempt = async () => {
    // Checked before getToken, which may start a renewal (the retry's, after a 401).
    if (signal?.aborted) throw abortReason(signal);
    const token = await within(deadline, tokens.getToken(deadline), () => timeoutError(`${method} ${pathOf(url)}`, deadline!.ms, " (no access token yet)"), signal);
    const headers: Record<string, string> = { authorization: `Bearer ${token.accessToken}`, accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    const init: FetchInit = body === undefined ? { method, headers, redirect: "manual" } : { method, headers, body, redirect: "manual" };
    return { token, response: await send(fetch, url, init, deadline, limits.maxResponseBytes, limits.clock, signal) };
  };
  const first = await attempt();
  if (first.response.status !== 401) return first.response;
  tokens.invalidate(first.token.accessToken);
  return (await attempt()).response;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Serializes a NewPlant with the id as a raw JSON number written from the bigint (never via a JS number). */
export function plantBody(plant: NewPlant): string {
  if (!isObject(plant)) throw new TypeError("createPlant needs { id, name, tag? }");
  if (typeof plant.id !== "bigint") throw new TypeError("plant id must be a bigint (int64), e.g. 42n or BigInt(\"42\")");
  if (plant.id < INT64_MIN || plant.id > INT64_MAX) throw new RangeError("plant id must be a signed 64-bit integer");
  if (typeof plant.name !== "string") throw new TypeError("plant name must be a string");
  if (plant.tag !== undefined && typeof plant.tag !== "string") throw new TypeError("plant tag must be a string when given");
  const tag = plant.tag === undefined ? "" : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id.toString()},"name":${JSON.stringify(plant.name)}${tag}}`;
}

/** Reads a Plant losslessly: the id's digits become a bigint exactly. */
function toPlant(response: ReadResponse): Plant {
  const what = "POST /plants";
  let body;
  try {
    body = parseLosslessJson(response.text);
  } catch {
    // No cause: a parser's message may quote the body.
    throw new NetworkError("not_json", `${what}: HTTP ${response.status} with a body that is not JSON`, response.status);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body) || body instanceof JsonNumber) {
    throw unexpected(response, what, "the body is not a plant object");
  }
  // int64, as the spec's Plant.id: checked on the digits before BigInt (a megabyte of digits took
  // half a second of synchronous parsing).
  const id = body.id instanceof JsonNumber && /^-?\d{1,19}$/.test(body.id.raw) ? body.id.toBigInt() : null;
  if (id === null || id > INT64_MAX || id < INT64_MIN) throw unexpected(response, what, "the plant has no int64 id");
  if (typeof body.name !== "string") throw unexpected(response, what, "the plant has no name");
  if (body.tag !== undefined && body.tag !== null && typeof body.tag !== "string") throw unexpected(response, what, "the plant's tag is not a string");
  return typeof body.tag === "string" ? { id, name: body.name, tag: body.tag } : { id, name: body.name };
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

function toAccountPage(response: ReadResponse, body: unknown): AccountPage {
  const bad = (detail: string) => unexpected(response, "GetAccountList", detail);
  if (!isObject(body) || !Array.isArray(body.accounts)) throw bad("no accounts list");
  if (!isCount(body.page) || !isCount(body.pageSize) || !isCount(body.total) || !isCount(body.totalPages)) {
    throw bad("page, pageSize, total or totalPages is not a count");
  }
  const accounts = body.accounts.map((a: unknown): Account => {
    if (!isObject(a) || typeof a.id !== "string" || typeof a.username !== "string") throw bad("an account without id or username");
    const text = (v: unknown) => (typeof v === "string" ? v : null);
    return {
      id: a.id,
      username: a.username,
      displayName: text(a.displayName),
      email: text(a.email),
      roles: Array.isArray(a.roles) ? a.roles.filter((r): r is string => typeof r === "string") : [],
      enabled: a.enabled === true,
      createdAt: typeof a.createdAt === "string" ? a.createdAt : "",
    };
  });
  return { accounts, page: body.page, pageSize: body.pageSize, total: body.total, totalPages: body.totalPages };
}
