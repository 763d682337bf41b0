// The shape of createPlantgate's options (checked and resolved in options.ts).
import type { JWK } from "jose";
import type { RandomBytes } from "./crypto/index.js";
import type { CryptoProvider } from "./crypto/provider.js";
import type { Logger, ProtectedRoute } from "./context.js";
import type { Storage } from "./storage/types.js";
import type { SigningAlg, SigningKeySigner } from "./tokens/keys.js";
import type { EventHook } from "./events/types.js";
import type { StaticPage } from "./pages/static-page.js";
import type { TelemetryOptions } from "./telemetry/types.js";

/**
 * Options of {@link createPlantgate}. Every field is optional.
 *
 * @example
 * createPlantgate({ issuer: "https://auth.example.com", scopePrefix: "Acme", storage: myStorage });
 */
export interface PlantgateOptions extends TelemetryOptions {
  /** Where everything is stored. Default: a new in-memory store. */
  storage?: Storage;
  /** Path prefix the app is mounted under, e.g. `/api`. Default: none. */
  basePath?: string;
  /**
   * Public base URL (origin + basePath) used for endpoint URLs in the metadata document.
   * Default: the `issuer`'s origin + `basePath` when the issuer is an http(s) URL; otherwise
   * derived from each request's URL (and the metadata and OpenAPI documents are then served
   * `private` with `Vary: Host`). Set it behind a proxy that changes the path. An absolute http(s)
   * URL held to the issuer's rules (the issuer defaults to it): no query or fragment, no white
   * space at either end; else a `TypeError` naming `baseUrl`.
   */
  baseUrl?: string;
  /** `iss` of issued tokens and of the metadata document, a non-empty string. Default: `baseUrl`. */
  issuer?: string;
  /** `aud` of issued tokens, checked on the APIs, a non-empty string. Default: the issuer. */
  audience?: string;
  /**
   * Prefix of the two API scopes, a scope token short enough for `<prefix>_AllAppsServerCommands`
   * to fit `maxScopeLength`. Default `Platform` (env `PLANTGATE_SCOPE_PREFIX` in the examples).
   */
  scopePrefix?: string;
  /** A private JWK (object or JSON text) to sign with; it is also stored so other instances verify it. */
  signingKey?: JWK | string;
  /**
   * A key held outside plantgate (cloud KMS, HSM, non-extractable Web Crypto key) that signs every
   * token: plantgate passes it the JWS signing input and publishes its public JWK. Its public
   * record is stored so other instances verify its tokens. Not together with `signingKey`.
   */
  signer?: SigningKeySigner;
  /** Algorithm for generated keys. Default `ES256`. */
  signingAlg?: SigningAlg;
  /**
   * Rotate the signing key automatically so that none signs for longer than this many seconds: the
   * next key is stored ahead of time, published as `next`, and takes over when the active key
   * reaches this age (every instance at the same instant). Replaced keys stay in the JWKS until
   * the longest access-token lifetime has passed, then are deleted. Ignored with `signingKey` or
   * `signer`. At least `signingKeyActivationDelaySeconds` + 60 (a new key is published that long
   * before it signs), else a `TypeError` naming both, beside `signingKey` or `signer` too. Default:
   * no automatic rotation (env
   * `PLANTGATE_SIGNING_KEY_MAX_AGE`).
   */
  signingKeyMaxAgeSeconds?: number;
  /**
   * Seconds between publishing a rotated key (status `next`) and signing with it, so resource
   * servers that cached the JWKS already hold the new key when the first token carries it. At
   * least, and by default, 360: the JWKS cache lifetime (300 s) plus the key reload interval
   * (60 s); at most 315 360 000 (10 years, as the other lifetimes), else a `TypeError` naming it.
   * `keys rotate --now` skips it. Env `PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY`.
   */
  signingKeyActivationDelaySeconds?: number;
  /**
   * Key encryption keys: base64url-encoded 256-bit keys (a list, or one comma-separated string);
   * the first encrypts every stored private signing key with AES-256-GCM, every one decrypts, so a
   * new key is put first and the old one kept until `keys reencrypt` has run. Default: none, keys
   * are stored in clear (said once at start); an empty or blank string is none too (since
   * 2026-12-02; it threw before). Env `PLANTGATE_KEY_ENCRYPTION_KEY`.
   */
  keyEncryptionKeys?: string | readonly string[];
  /**
   * The longest a request waits (ms) for the signing keys to be read from storage (at the first
   * use, and at each reload a minute apart). Past it, the keys loaded before serve, or, with none
   * loaded yet, the request is answered 503 (storage unavailable); the load is given up on and the
   * next request starts another. `0` or unset: no bound (`createWorker` sets 10 000, see its README
   * section). On Node a SQL store's statement deadline (`queryTimeoutMs`) bounds a load anyway.
   */
  signingKeyLoadTimeoutMs?: number;
  /** Access-token lifetime in seconds (default 7200); a client's own setting wins. */
  accessTokenTtl?: number;
  /** Sliding refresh-token lifetime in seconds (default 7 days); a client's own setting wins. */
  refreshTokenTtl?: number;
  /** Absolute refresh-token family lifetime in seconds (default 30 days); a client's own setting wins. */
  refreshTokenAbsoluteTtl?: number;
  /**
   * The refresh-token grace window in seconds, 0-300 (default 30; env
   * `PLANTGATE_REFRESH_GRACE_SECONDS` in the examples). For this long after a refresh token was
   * rotated, presenting it again (by the same client) is answered 200 with the very same answer
   * the rotation gave (a replay), so concurrent and retried refreshes do not sign the user out.
   * After the window, or past {@link refreshGraceMaxUses}, presenting it again is reuse: the whole
   * family is revoked (RFC 9700 §4.14.2). `0` restores strict one-time use.
   */
  refreshGraceSeconds?: number;
  /** Most grace uses (replays) of one rotated refresh token, 1-1000 (default 10); the next presentation is reuse. */
  refreshGraceMaxUses?: number;
  /** Per-client grace windows in seconds by client id (0-300 each), overriding {@link refreshGraceSeconds}. */
  refreshGraceSecondsPerClient?: Record<string, number>;
  /**
   * Scopes a route needs: a token must carry at least one of them; `[]` = any valid token.
   * Default: `listAccounts` needs either API scope; `createPlant` any valid token.
   */
  requiredScopes?: Partial<Record<ProtectedRoute, string[]>>;
  /** Largest request body in bytes (default 65536). */
  maxBodyBytes?: number;
  /** Most parameters in a form body (token, revocation, introspection); more -> 400 `invalid_request`. Default 32. */
  maxFormParameters?: number;
  /** Most bytes of any one form parameter name or value (after decoding); longer -> 400 `invalid_request`. Default 4096. */
  maxFormFieldBytes?: number;
  /** Most scope tokens in a `scope` parameter; more -> 400 `invalid_scope`. Default 16. */
  maxScopes?: number;
  /** Most characters of one scope token; longer -> 400 `invalid_scope`. Default 128. */
  maxScopeLength?: number;
  /** Largest `pageSize` (default 100). */
  maxPageSize?: number;
  /** `pageSize` when omitted (default 20). */
  defaultPageSize?: number;
  /** PBKDF2 iterations for new password hashes (default 600 000; workerd allows at most 100 000). */
  passwordHashIterations?: number;
  /**
   * Most password checks (PBKDF2 verifications, the password grant and console sign-in together)
   * running at once in this app instance; a further attempt is refused at once with 429 and
   * `Retry-After: 1` instead of queueing CPU work. 1-1000 (as `PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS`),
   * else a `TypeError` naming it. Default 4.
   */
  maxConcurrentPasswordChecks?: number;
  /** Current time in epoch milliseconds (a fraction is cut: stores keep whole milliseconds); injectable for tests. */
  clock?: () => number;
  /** Random bytes source; injectable for tests. */
  randomBytes?: RandomBytes;
  /**
   * Synchronous SHA-256 and JWS signing lent by the host (e.g. `nodeCrypto()` from
   * `@plantgate/node`), used for client-secret and token hashing and for signing access tokens.
   * Same results as the default, at a fraction of the cost. Default: Web Crypto only.
   */
  crypto?: CryptoProvider;
  /**
   * How many verified access tokens the API bearer check remembers (oldest dropped first), so a
   * token used again is not signature-checked again. Expiry, key trust and revocation are still
   * checked on every request. `0` turns it off. Default 10 000.
   */
  verifiedTokenCacheSize?: number;
  /** Receives unexpected errors (never secrets); a throw from it is ignored, never turned into a failed request. Default: `console`. */
  logger?: Logger;
  /**
   * Receives every security event (see the README's events table): tokens issued and refreshed,
   * refresh-token reuse, failed client authentication and logins, lock-outs, revocations and
   * administrative changes. Called after the fact and never awaited on the request path: a hook
   * that throws, rejects or is slow never changes an answer (failures go to `logger.error`).
   * Default: none.
   */
  onEvent?: EventHook;
  /**
   * Most deliveries of security events to one receiver still unfinished at once in this app
   * instance: calls of `onEvent` whose promise has not settled (each part of a composed hook on its
   * own), and, apart from them, appends of the audit store. Past it an event is not handed to that
   * receiver (counted in the `observer.eventLost` hook, `plantgate_events_lost_total`, with one
   * `logger.warn` line when such a run starts and one when it ends) until half of them have
   * finished; the other receivers still get it. A delivery still unfinished after 60 s is let go
   * (counted lost then, no longer counted against this nor waited for by `flushEvents`).
   * A receiver that answers at once is never held back. 1-1000000 (as
   * `PLANTGATE_MAX_PENDING_EVENT_DELIVERIES`), else a `TypeError` naming it. Default 10 000.
   */
  maxPendingEventDeliveries?: number;
  /**
   * Days the audit store (`storage.audit`, when the storage has one) keeps events; `prune` deletes
   * older ones, also those kept before the trail was turned off (`storage.auditPrune`). Default 90
   * (env `PLANTGATE_AUDIT_RETENTION_DAYS`).
   */
  auditRetentionDays?: number;
  /**
   * Addresses (exact, or CIDR such as `10.0.0.0/8`) of reverse proxies whose `X-Forwarded-For`
   * is believed. When the socket peer is one of them, the client IP is the rightmost
   * `X-Forwarded-For` entry that is not a trusted proxy; otherwise the socket address is used and
   * forwarded headers are ignored. `"unix"` trusts a peer on a Unix domain socket (which has no
   * address; the adapter says `unixSocket`). Or a hop count, a whole number from 1 to 16: exactly
   * that many proxies stand in front of the server, whatever their addresses (a cloud load
   * balancer's), the socket peer (a Unix-socket one too) being the first; the client IP is then the
   * Nth `X-Forwarded-For` entry from the right (Express's `trust proxy: N`), the leftmost when
   * there are fewer. Default: none (env `PLANTGATE_TRUSTED_PROXIES`, comma-separated, or one number).
   */
  trustedProxies?: string[] | number;
  /**
   * Brute-force defence of the password grant and console sign-in (per username + client IP at
   * `maxFailures`, per username at 5 × `maxFailures`; every attempt counts, a success resets them;
   * budgets across usernames, to which a success gives back only its own count) and of
   * client authentication (per client id + client IP, failures count): past the limit within
   * `windowSeconds` of the first count, attempts are refused with 429 and `Retry-After` until the
   * window ends. Client authentication's budget per client IP across client ids (10 ×
   * `maxFailures`) counts in windows of the clock instead (`windowSeconds` long, from the epoch).
   * Counters live in storage, so they hold across instances. Default
   * `{ maxFailures: 10, windowSeconds: 900 }`; `false` turns it off.
   */
  bruteForce?: { maxFailures?: number; windowSeconds?: number } | false;
  /** The management console at `{basePath}/console` (admin API, plus the page you give it). Default: off. */
  console?: ConsoleOptions;
  /**
   * The API reference page at `{basePath}/docs` (with its files under `/docs/assets/`), e.g.
   * `swaggerUi()` from `@plantgate/docs`. Default: none (`/docs` is 404 and not in openapi.json;
   * `/openapi.json` is always served).
   */
  docs?: StaticPage;
}

/**
 * Options of the management console. Only accounts with `adminRole` can sign in.
 *
 * @example
 * import { consolePage } from "@plantgate/console";
 * createPlantgate({ console: { enabled: true, page: consolePage(), sessionTtlSeconds: 3600 } });
 */
export interface ConsoleOptions {
  /** Serve the console's admin API under `/console/api` (and the page, when given). */
  enabled: boolean;
  /**
   * The web page at `/console` and its files under `/console/assets/`: `consolePage()` from
   * `@plantgate/console`. Without it the admin API still works and `/console` is 404.
   */
  page?: StaticPage;
  /** Lifetime of a console session in seconds (absolute, from sign-in). Default 28 800 (8 hours). */
  sessionTtlSeconds?: number;
  /**
   * Idle timeout of a console session in seconds: a session with no authenticated request for
   * this long ends, and each request moves its end to this long from now (never past
   * `sessionTtlSeconds` after sign-in). `0` turns it off. Default 1800 (30 minutes) when the
   * storage has `sessions.touch`; off (with a `warn` at start) when it has not. Set with a storage
   * lacking `sessions.touch`, the app refuses to start (`ConfigError`).
   */
  idleTimeoutSeconds?: number;
  /**
   * The role an account needs to use the console. Default `admin`. A role an account can be given:
   * 1-100 characters, without control or invisible characters (none at either end), else a
   * `TypeError` naming `console.adminRole` when the app is made.
   */
  adminRole?: string;
}
