/** Options of createPlantgate, and the one place they are checked and turned into a {@link Context}. */
import { MAX_CONCURRENT_PASSWORD_CHECKS } from "./security/credentials.js";
import type { JWK } from "jose";
import { defaultRandomBytes, hashPassword, type RandomBytes } from "./crypto/index.js";
import { sha256With, type CryptoProvider } from "./crypto/provider.js";
import { createClientKeys } from "./oauth/client-keys.js";
import type { Context, Logger, ProtectedRoute, RefreshGrace } from "./context.js";
import { accountListQuery } from "./schemas/accounts.js";
import { scopeNames } from "./scope-names.js";
import { createMemoryStorage } from "./storage/memory.js";
import type { Storage } from "./storage/types.js";
import { createKeyEncryption, parseKeyEncryptionKeys } from "./crypto/key-encryption.js";
import { createKeyring, MIN_ACTIVATION_DELAY_SECONDS, SUPPORTED_ALGS, type SigningAlg, type SigningKeySigner } from "./tokens/keys.js";
import { createVerifiedTokenCache } from "./tokens/verified-cache.js";
import { compileTrustedProxies } from "./security/client-ip.js";
import { createThrottle, DEFAULT_BRUTE_FORCE } from "./security/throttle.js";
import { createEventSink } from "./events/emitter.js";
import type { EventHook } from "./events/types.js";
import { servePage, type ServedPage, type StaticPage } from "./pages/static-page.js";
import { instrumentStorage } from "./telemetry/storage.js";
import { checkTelemetryOptions, type TelemetryOptions } from "./telemetry/types.js";

export type { ProtectedRoute } from "./context.js";

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
   * `private` with `Vary: Host`). Set it behind a proxy that changes the path.
   */
  baseUrl?: string;
  /** `iss` of issued tokens and of the metadata document. Default: `baseUrl`. */
  issuer?: string;
  /** `aud` of issued tokens, checked on the APIs. Default: the issuer. */
  audience?: string;
  /** Prefix of the two API scopes. Default `Platform` (env `PLANTGATE_SCOPE_PREFIX` in the examples). */
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
   * `signer`. Default: no automatic rotation (env `PLANTGATE_SIGNING_KEY_MAX_AGE`).
   */
  signingKeyMaxAgeSeconds?: number;
  /**
   * Seconds between publishing a rotated key (status `next`) and signing with it, so resource
   * servers that cached the JWKS already hold the new key when the first token carries it. At
   * least, and by default, 360: the JWKS cache lifetime (300 s) plus the key reload interval
   * (60 s). `keys rotate --now` skips it. Env `PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY`.
   */
  signingKeyActivationDelaySeconds?: number;
  /**
   * Key encryption keys: base64url-encoded 256-bit keys (a list, or one comma-separated string);
   * the first encrypts every stored private signing key with AES-256-GCM, every one decrypts, so a
   * new key is put first and the old one kept until `keys reencrypt` has run. Default: none, keys
   * are stored in clear (said once at start). Env `PLANTGATE_KEY_ENCRYPTION_KEY`.
   */
  keyEncryptionKeys?: string | readonly string[];
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
   * `Retry-After: 1` instead of queueing CPU work. Default 4.
   */
  maxConcurrentPasswordChecks?: number;
  /** Current time in epoch milliseconds; injectable for tests. */
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
  /** Receives unexpected errors (never secrets). Default: `console`. */
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
   * Days the audit store (`storage.audit`, when the storage has one) keeps events; `prune` deletes
   * older ones. Default 90 (env `PLANTGATE_AUDIT_RETENTION_DAYS`).
   */
  auditRetentionDays?: number;
  /**
   * Addresses (exact, or CIDR such as `10.0.0.0/8`) of reverse proxies whose `X-Forwarded-For`
   * is believed. When the socket peer is one of them, the client IP is the rightmost
   * `X-Forwarded-For` entry that is not a trusted proxy; otherwise the socket address is used and
   * forwarded headers are ignored. Default: none (env `PLANTGATE_TRUSTED_PROXIES`, comma-separated).
   */
  trustedProxies?: string[];
  /**
   * Brute-force defence of the password grant and console sign-in (per username + client IP at
   * `maxFailures`, per username at 5 × `maxFailures`; every attempt counts, a success resets) and of
   * client authentication (per client id + client IP, failures count): past the limit within
   * `windowSeconds` of the first count, attempts are refused with 429 and `Retry-After` until the
   * window ends. Counters live in storage, so they hold across instances. Default
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
  /** The role an account needs to use the console. Default `admin`. */
  adminRole?: string;
}

const MAX_GRACE_SECONDS = 300;

function graceSeconds(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0 || value > MAX_GRACE_SECONDS) {
    throw new TypeError(`${name} must be an integer from 0 to ${MAX_GRACE_SECONDS}`);
  }
  return value;
}

function resolveGrace(options: PlantgateOptions): RefreshGrace {
  const seconds = graceSeconds("refreshGraceSeconds", options.refreshGraceSeconds ?? 30);
  const maxUses = positiveInt("refreshGraceMaxUses", options.refreshGraceMaxUses, 10);
  if (maxUses > 1000) throw new TypeError("refreshGraceMaxUses must be an integer from 1 to 1000");
  const perClient = new Map<string, number>();
  for (const [clientId, value] of Object.entries(options.refreshGraceSecondsPerClient ?? {})) {
    perClient.set(clientId, graceSeconds(`refreshGraceSecondsPerClient.${clientId}`, value) * 1000);
  }
  const fallback = seconds * 1000;
  return { windowMs: perClient.size === 0 ? () => fallback : (clientId) => perClient.get(clientId) ?? fallback, maxUses };
}

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`${name} must be a positive integer`);
  return value;
}

function nonEmpty(name: string, value: string | undefined, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== "string" || value.length < 1 || value.length > 100) throw new TypeError(`${name} must be 1-100 characters`);
  return value;
}

function normalizeBasePath(path: string | undefined): string {
  if (path === undefined || path === "" || path === "/") return "";
  if (!path.startsWith("/") || /[?#]/.test(path)) throw new TypeError("basePath must start with '/' and have no query");
  return path.replace(/\/+$/, "");
}

function pageOption(name: string, page: StaticPage | undefined, basePath: string, path: string): ServedPage | null {
  if (page === undefined) return null;
  if (typeof page !== "object" || page === null || typeof page.page !== "function" || typeof page.assets !== "object" || page.assets === null) {
    throw new TypeError(`${name} must be a page object (e.g. from @plantgate/docs or @plantgate/console)`);
  }
  return servePage(page, { basePath, path: basePath + path });
}

function checkSigner(signer: SigningKeySigner, withSigningKey: boolean): void {
  if (withSigningKey) throw new TypeError("give either signingKey or signer, not both");
  if (typeof signer !== "object" || signer === null || typeof signer.sign !== "function") throw new TypeError("signer must have a sign(data) function");
  if (!SUPPORTED_ALGS.includes(signer.alg)) throw new TypeError(`signer.alg must be one of ${SUPPORTED_ALGS.join(", ")}`);
  const jwk = signer.publicJwk as Record<string, unknown> | null;
  if (typeof jwk !== "object" || jwk === null || typeof jwk.kty !== "string") throw new TypeError("signer.publicJwk must be a public JWK");
  // Never echo it: a JWK with "d" is a private key that was meant to stay elsewhere.
  if ("d" in jwk) throw new TypeError("signer.publicJwk must be the public key only (it has a 'd' member)");
}

const SCOPE_PREFIX = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Applies defaults and checks options once, at construction, so misconfiguration fails fast. */
export function resolveOptions(options: PlantgateOptions = {}): Context {
  const clock = options.clock ?? Date.now;
  const scopePrefix = options.scopePrefix ?? "Platform";
  if (!SCOPE_PREFIX.test(scopePrefix)) throw new TypeError("scopePrefix must be a non-empty scope token");
  const scopes = scopeNames(scopePrefix);
  const alg = options.signingAlg ?? "ES256";
  if (!SUPPORTED_ALGS.includes(alg)) throw new TypeError(`signingAlg must be one of ${SUPPORTED_ALGS.join(", ")}`);
  checkTelemetryOptions(options);
  // Wrapped once here (spans, timings) when a tracer or observer is set; otherwise as given.
  const storage = instrumentStorage(options.storage ?? createMemoryStorage(), options.tracer, options.observer);
  const trimUrl = (u: string | undefined, name: string) => {
    if (u === undefined) return undefined;
    try {
      new URL(u);
    } catch {
      throw new TypeError(`${name} must be an absolute URL`);
    }
    return u.replace(/\/+$/, "");
  };
  const accessTokenTtl = positiveInt("accessTokenTtl", options.accessTokenTtl, 7200);
  // The longest lifetime any access token can have right now: the default or a client's own.
  const maxAccessTokenTtlMs = async () => {
    const clients = await storage.clients.list();
    return Math.max(accessTokenTtl, ...clients.map((c) => c.accessTokenTtl ?? 0)) * 1000;
  };
  const sha256 = sha256With(options.crypto);
  const keyEncryption = createKeyEncryption(options.keyEncryptionKeys === undefined ? [] : parseKeyEncryptionKeys(options.keyEncryptionKeys));
  const delaySeconds = options.signingKeyActivationDelaySeconds ?? MIN_ACTIVATION_DELAY_SECONDS;
  if (!Number.isSafeInteger(delaySeconds) || delaySeconds < MIN_ACTIVATION_DELAY_SECONDS) {
    throw new TypeError(
      `signingKeyActivationDelaySeconds must be an integer of at least ${MIN_ACTIVATION_DELAY_SECONDS} (the JWKS cache lifetime plus the key reload interval)`,
    );
  }
  if (options.signer !== undefined) checkSigner(options.signer, options.signingKey !== undefined);
  const logger = options.logger ?? console;
  if (options.onEvent !== undefined && typeof options.onEvent !== "function") throw new TypeError("onEvent must be a function");
  const random = options.randomBytes ?? defaultRandomBytes;
  const events = createEventSink({ hook: options.onEvent, audit: storage.audit, logger, clock, random });
  const keyring = createKeyring(storage.signingKeys, {
    alg,
    clock,
    encryption: keyEncryption,
    activationDelayMs: delaySeconds * 1000,
    // The default in-memory store keeps nothing at rest, so there is nothing to warn about.
    ...(options.storage !== undefined ? { logger } : {}),
    ...(options.signer !== undefined ? { signer: options.signer } : {}),
    ...(options.signingKey !== undefined ? { configured: options.signingKey } : {}),
    ...(options.signingKeyMaxAgeSeconds !== undefined
      ? { maxAgeMs: positiveInt("signingKeyMaxAgeSeconds", options.signingKeyMaxAgeSeconds, 1) * 1000 }
      : {}),
    minTokenTtlMs: accessTokenTtl * 1000,
    maxTokenTtlMs: maxAccessTokenTtlMs,
    onRotated: (r) =>
      events.emit({ type: "signing_key.rotated", kid: r.kid, alg: r.alg, activates_at: r.activatesAt, immediate: false, automatic: true, deleted: r.deleted, actor: null }),
  });
  const cacheSize = options.verifiedTokenCacheSize ?? 10_000;
  if (!Number.isSafeInteger(cacheSize) || cacheSize < 0) throw new TypeError("verifiedTokenCacheSize must be a non-negative integer");
  const maxPageSize = positiveInt("maxPageSize", options.maxPageSize, 100);
  const defaultPageSize = positiveInt("defaultPageSize", options.defaultPageSize, 20);
  if (defaultPageSize > maxPageSize) throw new TypeError("defaultPageSize must not exceed maxPageSize");
  const basePath = normalizeBasePath(options.basePath);
  const passwordHashIterations = positiveInt("passwordHashIterations", options.passwordHashIterations, 600_000);
  // Lazy: hundreds of thousands of PBKDF2 rounds are not worth paying for an app that never checks a password.
  let dummyHash: Promise<string> | undefined;
  const dummyPasswordHash = () => (dummyHash ??= hashPassword("plantgate-dummy-password", random, { iterations: passwordHashIterations }));
  return {
    storage,
    basePath,
    // With an issuer URL but no baseUrl, every public URL derives from the issuer (its origin and
    // the base path), never from the request's Host (finding 1 of the security review).
    baseUrl: trimUrl(options.baseUrl, "baseUrl") ?? baseUrlFromIssuer(options.issuer, basePath),
    issuer: options.issuer,
    audience: options.audience,
    scopes,
    keyring,
    keyEncryption,
    signingKeyActivationDelayMs: delaySeconds * 1000,
    verifyToken: createVerifiedTokenCache(keyring, cacheSize),
    maxAccessTokenTtlMs,
    signingAlg: alg,
    accessTokenTtl,
    refreshTokenTtl: positiveInt("refreshTokenTtl", options.refreshTokenTtl, 7 * 24 * 3600),
    refreshTokenAbsoluteTtl: positiveInt("refreshTokenAbsoluteTtl", options.refreshTokenAbsoluteTtl, 30 * 24 * 3600),
    refreshGrace: resolveGrace(options),
    requiredScopes: {
      listAccounts: options.requiredScopes?.listAccounts ?? [scopes.userApis, scopes.serverCommands],
      createPlant: options.requiredScopes?.createPlant ?? [],
    },
    maxBodyBytes: positiveInt("maxBodyBytes", options.maxBodyBytes, 65_536),
    maxPageSize,
    defaultPageSize,
    passwordHashIterations,
    maxConcurrentPasswordChecks: positiveInt("maxConcurrentPasswordChecks", options.maxConcurrentPasswordChecks, MAX_CONCURRENT_PASSWORD_CHECKS),
    clock,
    random,
    sha256,
    sign: options.crypto?.sign?.bind(options.crypto),
    logger,
    ...{ tracer: options.tracer, observer: options.observer },
    events,
    auditRetentionMs: positiveInt("auditRetentionDays", options.auditRetentionDays, 90) * 24 * 3600 * 1000,
    clientKeys: createClientKeys(clock, logger),
    throttle: createThrottle(
      storage.attempts,
      clock,
      options.bruteForce === false
        ? false
        : {
            maxFailures: positiveInt("bruteForce.maxFailures", options.bruteForce?.maxFailures, DEFAULT_BRUTE_FORCE.maxFailures),
            windowSeconds: positiveInt("bruteForce.windowSeconds", options.bruteForce?.windowSeconds, DEFAULT_BRUTE_FORCE.windowSeconds),
          },
      sha256,
    ),
    trustedProxy: compileTrustedProxies(options.trustedProxies ?? []),
    limits: {
      maxParameters: positiveInt("maxFormParameters", options.maxFormParameters, 32),
      maxFieldBytes: positiveInt("maxFormFieldBytes", options.maxFormFieldBytes, 4096),
      maxScopes: positiveInt("maxScopes", options.maxScopes, 16),
      maxScopeLength: positiveInt("maxScopeLength", options.maxScopeLength, 128),
    },
    console: options.console?.enabled
      ? {
          sessionTtlSeconds: positiveInt("console.sessionTtlSeconds", options.console.sessionTtlSeconds, 8 * 3600),
          adminRole: nonEmpty("console.adminRole", options.console.adminRole, "admin"),
          page: pageOption("console.page", options.console.page, basePath, "/console"),
        }
      : null,
    docs: pageOption("docs", options.docs, basePath, "/docs"),
    dummyPasswordHash,
    passwordChecks: { inFlight: 0 },
    accountListQuery: accountListQuery({ maxPageSize, defaultPageSize }),
    openApi: { base: undefined, byUrl: new Map() },
  };
}

/** `origin + basePath` of an http(s) issuer; undefined for an issuer that is not such a URL. */
function baseUrlFromIssuer(issuer: string | undefined, basePath: string): string | undefined {
  if (issuer === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return undefined;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return undefined;
  return `${url.origin}${basePath}`;
}
