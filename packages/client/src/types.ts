import type { PrivateKeyInput } from "./assertion.js";
import type { GrantType } from "./errors.js";
import type { FetchLike } from "./fetch.js";

/**
 * A token as the client keeps it, and as a shared {@link TokenCache} stores it. Plain JSON data
 * (strings, numbers, null), so any cache can serialize it with `JSON.stringify`.
 *
 * It includes the **refresh token**: a cache that holds these must be as private as the client
 * secret (not a shared Redis without auth, not a world-readable file, never the browser's storage).
 */
export interface CachedToken {
  accessToken: string;
  tokenType: "Bearer";
  /** Epoch milliseconds (the client's clock) at which the access token expires. */
  expiresAt: number;
  /** Epoch milliseconds at which it was requested; with `expiresAt` it gives the lifetime. */
  obtainedAt: number;
  /** The granted scope (space-separated). */
  scope: string;
  /** The newest refresh token, or null when there is none (client credentials, no offline_access). */
  refreshToken: string | null;
  /** The grant that produced this access token. */
  grantType: GrantType;
  /**
   * SHA-256 (base64url) of the refresh tokens this one replaced, newest first, at most 8: lets
   * processes sharing a cache tell which of two refresh tokens is newer without comparing their
   * clocks. Absent in values cached by older versions.
   */
  lineage?: string[];
}

/**
 * A shared token cache, so several processes (or instances) use one token instead of each
 * fetching its own. `get` returns null for a miss. The key names the base URL, client, user and
 * scope, so one cache can serve many clients.
 *
 * The stored value contains the refresh token: keep the cache private (see {@link CachedToken}).
 * The key holds neither the client secret nor the password, so a client built with the right
 * username and a wrong password gets the cached token without asking the server: share a cache
 * only among clients whose credentials your code configured or already checked, never among
 * clients built from credentials users typed in.
 * Errors thrown by `get` or `set` propagate to the call that needed a token; catch them inside
 * the hook if the cache should be best-effort. A hook call that does not answer within the
 * client's `timeoutMs` fails the renewal with the {@link NetworkError} `timeout`, and the `signal`
 * the call was given is aborted then (its reason a `TimeoutError` DOMException): pass it on to
 * the cache's own requests so they stop too. A hook that ignores it is not waited for anyway.
 *
 * @example
 * const tokenCache: TokenCache = {
 *   async get(key, signal) {
 *     const res = await fetch(`${cacheUrl}/${encodeURIComponent(key)}`, { signal });
 *     return res.status === 404 ? null : await res.json();
 *   },
 *   async set(key, token, signal) {
 *     await fetch(`${cacheUrl}/${encodeURIComponent(key)}`, { method: "PUT", body: JSON.stringify(token), signal });
 *   },
 * };
 */
export interface TokenCache {
  /** The cached token for `key`, or null. `signal` is aborted when the client stops waiting (see above). */
  get(key: string, signal: AbortSignal): Promise<CachedToken | null>;
  /** Stores `token` under `key`. `signal` is aborted when the client stops waiting (see above). */
  set(key: string, token: CachedToken, signal: AbortSignal): Promise<void>;
}

/** A resource owner's credentials for the password grant. */
export interface PasswordCredentials {
  username: string;
  password: string;
}

/**
 * Options of {@link createClient}.
 *
 * @example
 * createClient({ baseUrl: "https://platform.example.com", clientId, clientSecret, auth: "basic", scope: "Platform_UserAPIs" });
 */
export interface ClientOptions {
  /** The service's base address (origin plus any base path), e.g. `https://platform.example.com/api`. */
  baseUrl: string;
  clientId: string;
  /** The client secret; give this or `privateKey`. */
  clientSecret?: string;
  /**
   * `private_key_jwt` (RFC 7523): the client's private key (a WebCrypto `CryptoKey`, or a private
   * JWK as an object or JSON text; ES256, ES384, RS256, PS256 or EdDSA). Every token request
   * carries a fresh assertion signed with it (`aud` the token endpoint, a new `jti`, 60 s).
   *
   * @example
   * createClient({ baseUrl, clientId: "reporting", privateKey: process.env.PLANTGATE_CLIENT_KEY! });
   */
  privateKey?: PrivateKeyInput;
  /** `private_key_jwt`: the `kid` to put in assertions (default: the JWK's `kid`, if any). */
  keyId?: string;
  /**
   * How the client authenticates at the token endpoint: `basic` = `client_secret_basic` (HTTP Basic
   * with the RFC 6749 App. B form-encoding of id and secret), `post` = `client_secret_post` (in the
   * form body), `private_key_jwt` (with `privateKey`, and then the default). Default `basic`.
   */
  auth?: "basic" | "post" | "private_key_jwt";
  /**
   * Space-separated scope (or a list). Omitted: the server's default for the client. With the
   * password grant, include `offline_access` to get a refresh token.
   */
  scope?: string | readonly string[];
  /** Present: the password grant as this user. Absent: the client credentials grant. */
  credentials?: PasswordCredentials;
  /**
   * Password grant only. `true` (default): keep the password in memory so a dead refresh token can
   * be replaced by logging in again. `false`: forget it once a refresh token is held; when that
   * refresh token is rejected, calls fail with the {@link OAuthError} `invalid_grant`.
   */
  keepCredentials?: boolean;
  /** Default: the global `fetch`, looked up at call time. */
  fetch?: FetchLike;
  /**
   * Milliseconds a call may take, from the moment it is made: getting its token (a renewal in flight,
   * the tokenCache hooks), the API request with its body, and the renewal and retry after a 401.
   * Past it the request is aborted and the call fails with the {@link NetworkError} `timeout`
   * (default 20000; `0`: no deadline, up to 2147483647). Each token request and tokenCache hook
   * call is also bounded by it on its own, so a renewal shared by many callers always ends.
   * Keep it below the server's refresh-token grace window (plantgate: 30 s): a refresh that timed
   * out is retried with the same refresh token, which the server answers within the window and
   * takes for reuse after it (the family revoked).
   * Without one, a server that accepts the connection and never answers holds every caller (they
   * share one token request) until the platform's own timeout, if it has one. A call's own
   * `signal` ({@link CallOptions}) can end it sooner; whichever comes first wins.
   */
  timeoutMs?: number;
  /**
   * The most bytes of a response body the client reads (default 1048576, far above any answer
   * plantgate gives). A declared `Content-Length` over it is refused before reading, and a body
   * that passes it while arriving is cut off there (its stream cancelled): the call fails with the
   * {@link NetworkError} `response_too_large`, so a broken or hostile server cannot fill the
   * caller's memory.
   */
  maxResponseBytes?: number;
  /** Current time in epoch milliseconds. Default `Date.now`. */
  clock?: () => number;
  /**
   * Renew this many seconds before `expires_in` runs out (default 30), so a token never expires in
   * flight. Capped at half the token's lifetime, so short-lived tokens are still reused.
   */
  refreshSkewSeconds?: number;
  /**
   * With a `tokenCache` only: each client renews at its own random point from `refreshSkewSeconds`
   * before expiry to this many seconds later (default 20; at most two thirds of the skew, so a
   * third of it is always kept), drawn once per client. Processes sharing one cache entry hold the
   * same token: spread out, the first renews and the others find its token in the cache, instead of
   * all presenting the same refresh token at once (past the server's `refreshGraceMaxUses` replays,
   * reuse: the family revoked). 0: every client renews at `refreshSkewSeconds`.
   */
  refreshJitterSeconds?: number;
  /** Optional shared cache; see {@link TokenCache}. */
  tokenCache?: TokenCache;
  /**
   * Registers the client's background work with the runtime, for runtimes that end a request's
   * work when its response is sent: Cloudflare Workers run no timer of a request after that unless
   * it was handed to `waitUntil`. Called at once (in the call that started the work) with a promise
   * that settles, never rejecting, when that work has ended: each token renewal (shared with the
   * calls of later requests, it would otherwise be cut off with the response of a call that gave
   * up, and never settle), each timed retry of a refresh whose
   * answer was lost and of a failed `tokenCache` write (from the moment it is set until its run has
   * ended, or it is cleared), and each catch-up write of the cache. Without it, in a Worker, none of
   * these run once the response is sent. A `waitUntil` that throws, or returns a promise that
   * rejects (an async wrapper), is ignored.
   *
   * @example
   * // A Worker with one client per isolate: cloudflare:workers' waitUntil registers with the request being served.
   * import { waitUntil } from "cloudflare:workers";
   * const client = createClient({ baseUrl, clientId, clientSecret, waitUntil });
   */
  waitUntil?: (promise: Promise<void>) => void;
}

/** The current token, without the refresh token. */
export interface TokenInfo {
  accessToken: string;
  tokenType: "Bearer";
  /** Epoch milliseconds (the client's clock). */
  expiresAt: number;
  scope: string;
  /** The grant that produced this access token. */
  grantType: GrantType;
  /** Whether a refresh token is held. */
  hasRefreshToken: boolean;
}

/** `POST /plants` request: `id` is int64, sent exactly. */
export interface NewPlant {
  id: bigint;
  name: string;
  tag?: string;
}

/** `POST /plants` response: the stored plant; `tag` is absent when none was stored. */
export interface Plant {
  id: bigint;
  name: string;
  tag?: string;
}

/** An account as the listing shows it. */
export interface Account {
  id: string;
  username: string;
  displayName: string | null;
  email: string | null;
  roles: string[];
  enabled: boolean;
  /** ISO 8601. */
  createdAt: string;
}

/** One page of `GetAccountList`. */
export interface AccountPage {
  accounts: Account[];
  page: number;
  pageSize: number;
  total: number;
  totalPages: number;
}

/**
 * Per-call options of the client's methods.
 *
 * @example
 * const controller = new AbortController();
 * const page = client.listAccounts({ page: 1, signal: controller.signal });
 * controller.abort(); // page rejects with a DOMException named AbortError
 */
export interface CallOptions {
  /**
   * Cancels the call, as fetch's `signal` does: already aborted, the call rejects at once and
   * sends nothing; aborted while it runs, its API request is aborted and the call rejects at once
   * with `signal.reason` (the `AbortError` DOMException of a plain `abort()`, the `TimeoutError`
   * of `AbortSignal.timeout()`, or whatever was passed to `abort(reason)`), not with a
   * {@link NetworkError}. `timeoutMs` still applies: whichever comes first ends the call. A token
   * renewal the call started or was waiting for is shared by all the client's calls and is not
   * cancelled (it stays bounded by `timeoutMs`, and its token is kept for the next call); the call
   * only stops waiting for it. The client removes its listener from the signal when the call
   * ends, so one long-lived signal can serve any number of calls.
   */
  signal?: AbortSignal;
}

/** Paging of {@link PlantgateClient.listAccounts}; omitted values use the server's defaults (1 and 20). */
export interface ListAccountsParams extends CallOptions {
  page?: number;
  pageSize?: number;
}

export type { FetchLike };
