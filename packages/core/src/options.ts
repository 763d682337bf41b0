/** Options of createPlantgate, and the one place they are checked and turned into a {@link Context}. */
import type { JWK } from "jose";
import { MAX_TTL_SECONDS } from "./admin/clients.js";
import { isRole, ROLE_RULE } from "./admin/roles.js";
import { MAX_CONCURRENT_PASSWORD_CHECKS, MAX_CONCURRENT_PASSWORD_CHECKS_LIMIT } from "./security/credentials.js";
import { defaultRandomBytes, PBKDF2_MAX_ITERATIONS } from "./crypto/index.js";
import { sha256With } from "./crypto/provider.js";
import { createClientKeys } from "./oauth/client-keys.js";
import type { Context, Logger, RefreshGrace } from "./context.js";
import { accountListQuery } from "./schemas/accounts.js";
import { scopeNames } from "./scope-names.js";
import { createMemoryStorage } from "./storage/memory.js";
import type { SessionStore } from "./storage/types.js";
import { ConfigError } from "./env.js";
import { counterKeyHash, createKeyEncryption, parseKeyEncryptionKeys } from "./crypto/key-encryption.js";
import { checkOwnKey, createKeyring, MIN_ACTIVATION_DELAY_SECONDS, parseSigningKeyText, SIGNING_RELOAD_MS, SUPPORTED_ALGS, type SigningKeySigner } from "./tokens/keys.js";
import { createVerifiedTokenCache } from "./tokens/verified-cache.js";
import { compileTrustedProxies } from "./security/client-ip.js";
import { createThrottle, DEFAULT_BRUTE_FORCE } from "./security/throttle.js";
import { createEventSink, MAX_PENDING_EVENT_DELIVERIES, MAX_PENDING_EVENT_DELIVERIES_LIMIT } from "./events/emitter.js";
import { isThenable } from "./util/thenable.js";
import { servePage, type ServedPage, type StaticPage } from "./pages/static-page.js";
import { instrumentStorage } from "./telemetry/storage.js";
import { checkTelemetryOptions } from "./telemetry/types.js";
import { describeError } from "./http/respond.js";

export type { ProtectedRoute } from "./context.js";
export type { ConsoleOptions, PlantgateOptions } from "./option-types.js";
import type { PlantgateOptions } from "./option-types.js";

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

/** The longest `auditRetentionDays` (and `PLANTGATE_AUDIT_RETENTION_DAYS`): 100 years. */
export const MAX_AUDIT_RETENTION_DAYS = 36_500;

function positiveInt(name: string, value: number | undefined, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`${name} must be a positive integer`);
  if (value > max) throw new TypeError(`${name} must be at most ${max}`);
  return value;
}

/**
 * One list of `requiredScopes`: an array of scopes this server issues, or the default. Until
 * 2026-12-01 it was taken as given: a string instead of a list answered every request of the route
 * (and /openapi.json) 500, and a scope no token can have (a typo, another prefix) 403 for good.
 */
function requiredScopeList(name: string, value: unknown, fallback: string[], known: readonly string[]): string[] {
  if (value === undefined) return fallback;
  if (!Array.isArray(value) || value.some((s) => typeof s !== "string" || !known.includes(s))) {
    throw new TypeError(`requiredScopes.${name} must be a list of scopes this server issues (${known.join(", ")}), or [] for any valid token`);
  }
  return [...(value as string[])];
}

/** `requiredScopes` is an object of the two routes' lists, nothing else (a misspelled key left the default in place without a word). */
function checkRequiredScopesKeys(value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError("requiredScopes must be an object: { listAccounts?, createPlant? }");
  const unknown = Object.keys(value).filter((k) => k !== "listAccounts" && k !== "createPlant");
  if (unknown.length > 0) throw new TypeError(`requiredScopes has no ${JSON.stringify(unknown[0])}: its members are listAccounts and createPlant`);
}

/** The console's idle timeout when none is set: 30 minutes (README, Decisions where the spec is silent). */
const DEFAULT_CONSOLE_IDLE_TIMEOUT_SECONDS = 1800;

/**
 * `console.idleTimeoutSeconds` in ms, or null when off: `0`, or left unset over a session store
 * without `touch` (a backend written before 2026-11-30; said once, in a `warn`). Set over such a
 * store it stops the start: the idle timeout asked for would not be kept.
 */
function consoleIdleTimeoutMs(value: number | undefined, sessions: SessionStore, logger: Logger): number | null {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) throw new TypeError("console.idleTimeoutSeconds must be a non-negative integer (0 turns it off)");
  if (value !== undefined && value > MAX_TTL_SECONDS) throw new TypeError(`console.idleTimeoutSeconds must be at most ${MAX_TTL_SECONDS}`);
  if (value === 0) return null;
  if (typeof sessions.touch !== "function") {
    if (value !== undefined) {
      throw new ConfigError(
        "console.idleTimeoutSeconds (PLANTGATE_CONSOLE_IDLE_TIMEOUT) is set but the storage has no sessions.touch, which the idle timeout needs; add it (README, Writing a storage backend) or set it to 0",
      );
    }
    logger.warn(
      "plantgate: the storage has no sessions.touch, so console sessions have no idle timeout (only console.sessionTtlSeconds ends them); add it (README, Writing a storage backend), or set console.idleTimeoutSeconds to 0 to say so",
    );
    return null;
  }
  return (value ?? DEFAULT_CONSOLE_IDLE_TIMEOUT_SECONDS) * 1000;
}

/**
 * `console.adminRole`, held to the rule of a stored role (isRole, as checkAccountInput applies it).
 * Until 2026-12-02 any 1-100 characters were taken: a role with white space at an end, a control or
 * invisible character, U+0000 or a lone surrogate, which no account can be given, so nobody could
 * sign in to the console and nothing said why.
 */
function adminRoleOption(value: string | undefined): string {
  if (value === undefined) return "admin";
  if (!isRole(value)) throw new TypeError(`console.adminRole must be a role an account can be given: ${ROLE_RULE}`);
  return value;
}

/**
 * A base path as a request URL's pathname spells it: `/` and segments of RFC 3986 path characters
 * (`pchar`) or `%XX`, but not `;`. Until 2026-11-30 anything starting with `/` without `?`/`#` was
 * taken: a space or non-ASCII character (which a pathname carries percent-encoded) matched no
 * request, and a `;` ended the console cookie's `Path` attribute early (`/x;Domain=evil.example`
 * put its own attribute into the cookie).
 */
const BASE_PATH = /^(?:\/(?:[A-Za-z0-9\-._~!$&'()*+,=:@]|%[0-9A-Fa-f]{2})*)+$/;

/** A `.` or `..` segment, dots written as `.` or `%2e` (WHATWG URL's single- and double-dot segments). */
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?=\/|$)/i;

function normalizeBasePath(path: string | undefined): string {
  if (path === undefined || path === "" || path === "/") return "";
  if (typeof path !== "string" || !path.startsWith("/") || /[?#]/.test(path)) throw new TypeError("basePath must start with '/' and have no query");
  if (!BASE_PATH.test(path)) {
    throw new TypeError("basePath must be a URL path as requests spell it: '/' and segments of letters, digits, - . _ ~ ! $ & ' ( ) * + , = : @ or %XX (no ';', space or other character)");
  }
  // The URL parser removes `.` and `..` segments (`%2e` too) from every request's path: such a
  // basePath matched no request (until 2026-11-30).
  if (DOT_SEGMENT.test(path)) throw new TypeError("basePath must not have '.' or '..' segments (%2e included): a request's path never has them, the URL parser removes them");
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
  checkOwnKey(jwk as JWK, signer.kid, "signer.publicJwk", "signer.kid");
}

const SCOPE_PREFIX = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** `maxScopeLength` when none is set. */
export const DEFAULT_MAX_SCOPE_LENGTH = 128;

/**
 * The scope prefix's own rules, also applied to PLANTGATE_SCOPE_PREFIX by optionsFromEnv: a scope
 * token, short enough for its longest scope to fit `maxScopeLength`. A longer prefix made scopes no
 * request may name (400 invalid_scope for each that asked for one) and, far longer, tokens the APIs
 * and introspection refused (before 2026-11-29). Until 2026-12-01 optionsFromEnv checked only the
 * characters, so the servers refused a long prefix after opening the store, naming the option.
 */
export function checkScopePrefix(scopePrefix: string, maxScopeLength: number = DEFAULT_MAX_SCOPE_LENGTH): void {
  if (!SCOPE_PREFIX.test(scopePrefix)) throw new TypeError("scopePrefix must be a non-empty scope token");
  if (scopeNames(scopePrefix).serverCommands.length > maxScopeLength) {
    throw new TypeError(
      `scopePrefix is ${scopePrefix.length} characters, so its scope <prefix>_AllAppsServerCommands is longer than maxScopeLength (${maxScopeLength}); shorten the prefix or raise maxScopeLength`,
    );
  }
}

/**
 * The least `signingKeyMaxAgeSeconds` a `signingKeyActivationDelaySeconds` lets the keyring keep:
 * a successor is published the delay before it signs, and is scheduled at most one key reload
 * (60 s) late, so no key can be replaced younger than that. Also applied, naming the variables, by
 * optionsFromEnv. Until 2026-12-01 a shorter age was taken and not kept (7 days beside a 14-day
 * delay: each key signed for 14 days), though the README says none signs longer.
 */
export function checkSigningKeyMaxAge(
  maxAgeSeconds: number,
  delaySeconds: number,
  names: { maxAge: string; delay: string } = { maxAge: "signingKeyMaxAgeSeconds", delay: "signingKeyActivationDelaySeconds" },
): void {
  const least = delaySeconds + SIGNING_RELOAD_MS / 1000;
  if (maxAgeSeconds < least) {
    throw new TypeError(
      `${names.maxAge} must be at least ${names.delay} + ${SIGNING_RELOAD_MS / 1000} (${least}): a new key is published that long before it signs, so a key cannot be replaced any younger; got ${maxAgeSeconds}`,
    );
  }
}

/**
 * The most PBKDF2 iterations a new hash may have: the most a stored hash is checked at
 * (PBKDF2_MAX_ITERATIONS, 10,000,000). Until 2026-12-01 a larger count was taken: past 2^31 - 1
 * (Web Crypto's limit) every hash failed, and between 10,000,001 and that every account created
 * then could never sign in (its hash was refused when checked; nothing logged).
 */
export const MAX_PASSWORD_HASH_ITERATIONS = PBKDF2_MAX_ITERATIONS;

/** Applies defaults and checks options once, at construction, so misconfiguration fails fast. */
export function resolveOptions(options: PlantgateOptions = {}): Context {
  // Stores keep times as whole epoch milliseconds: a clock with a fraction (`performance.timeOrigin
  // + performance.now()`) once made the SQL stores' rows unreadable (a 500 on every token request)
  // and the Redis hot stores' reads fail (503). Cut once here, for every store.
  const givenClock = options.clock;
  if (givenClock !== undefined && typeof givenClock !== "function") throw new TypeError("clock must be a function returning epoch milliseconds");
  const clock = givenClock === undefined ? Date.now : () => Math.floor(givenClock());
  checkIssuer(options.issuer);
  if (options.audience !== undefined) nonEmptyString("audience", options.audience);
  const scopePrefix = options.scopePrefix ?? "Platform";
  const maxScopeLength = positiveInt("maxScopeLength", options.maxScopeLength, DEFAULT_MAX_SCOPE_LENGTH);
  checkScopePrefix(scopePrefix, maxScopeLength);
  const scopes = scopeNames(scopePrefix);
  checkRequiredScopesKeys(options.requiredScopes);
  const alg = options.signingAlg ?? "ES256";
  if (!SUPPORTED_ALGS.includes(alg)) throw new TypeError(`signingAlg must be one of ${SUPPORTED_ALGS.join(", ")}`);
  checkTelemetryOptions(options);
  // Wrapped once here (spans, timings) when a tracer or observer is set; otherwise as given.
  const storage = instrumentStorage(options.storage ?? createMemoryStorage(), options.tracer, options.observer);
  const accessTokenTtl = positiveInt("accessTokenTtl", options.accessTokenTtl, 7200, MAX_TTL_SECONDS);
  // The longest lifetime any access token can have right now: the default or a client's own. Read
  // by the keyring (each re-read while several keys are stored), prune and the keys commands, and
  // once per revoked grant (a refresh token revoked or reused: see revokeGrantSteps), never per token
  // issued or checked: a key re-read (about once a minute) may run inside a request. A store with `maxAccessTokenTtl` answers from an index or a kept
  // value; one written before it costs a read of every client (README, Writing a storage backend).
  const maxAccessTokenTtlMs = async () => {
    const clients = storage.clients;
    let longest: number | null = null;
    if (typeof clients.maxAccessTokenTtl === "function") longest = await clients.maxAccessTokenTtl();
    else for (const c of await clients.list()) if (c.accessTokenTtl != null && (longest === null || c.accessTokenTtl > longest)) longest = c.accessTokenTtl;
    return Math.max(accessTokenTtl, longest ?? 0) * 1000;
  };
  const sha256 = sha256With(options.crypto);
  const keks = options.keyEncryptionKeys === undefined ? [] : parseKeyEncryptionKeys(options.keyEncryptionKeys);
  const keyEncryption = createKeyEncryption(keks);
  const delaySeconds = options.signingKeyActivationDelaySeconds ?? MIN_ACTIVATION_DELAY_SECONDS;
  if (!Number.isSafeInteger(delaySeconds) || delaySeconds < MIN_ACTIVATION_DELAY_SECONDS) {
    throw new TypeError(
      `signingKeyActivationDelaySeconds must be an integer of at least ${MIN_ACTIVATION_DELAY_SECONDS} (the JWKS cache lifetime plus the key reload interval)`,
    );
  }
  // At most 10 years, as the other lifetimes in seconds: until 2026-12-02 there was no bound, and
  // past about 8.6e12 s a rotated key's activatesAt was beyond what a Date holds (the keys' views,
  // the CLI's `keys list` and the console's, failed with a RangeError once it was stored).
  if (delaySeconds > MAX_TTL_SECONDS) throw new TypeError(`signingKeyActivationDelaySeconds must be at most ${MAX_TTL_SECONDS}`);
  const maxAgeSeconds = options.signingKeyMaxAgeSeconds === undefined ? undefined : positiveInt("signingKeyMaxAgeSeconds", options.signingKeyMaxAgeSeconds, 1);
  if (maxAgeSeconds !== undefined) checkSigningKeyMaxAge(maxAgeSeconds, delaySeconds);
  if (options.signer !== undefined) checkSigner(options.signer, options.signingKey !== undefined);
  // Text that is not JSON is refused here, once, rather than failing every key load (a 500 each).
  if (typeof options.signingKey === "string") parseSigningKeyText(options.signingKey);
  const logger = guardedLogger(options.logger ?? console);
  if (options.bruteForce !== false && typeof storage.attempts.refund !== "function") {
    // Said once, when the options are resolved: a store written before attempts.refund.
    logger.warn(
      "plantgate: the storage has no attempts.refund, so a successful sign-in resets the budgets across usernames (per client, per console address), and whoever holds one working password can keep guessing at others; add it (README, Writing a storage backend)",
    );
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== "function") throw new TypeError("onEvent must be a function");
  const random = options.randomBytes ?? defaultRandomBytes;
  const lost = options.observer?.eventLost;
  const maxPending = options.maxPendingEventDeliveries ?? MAX_PENDING_EVENT_DELIVERIES;
  if (!Number.isSafeInteger(maxPending) || maxPending < 1 || maxPending > MAX_PENDING_EVENT_DELIVERIES_LIMIT) {
    throw new TypeError(`maxPendingEventDeliveries must be an integer from 1 to ${MAX_PENDING_EVENT_DELIVERIES_LIMIT}`);
  }
  const watch = options.observer?.eventBacklog;
  const events = createEventSink({
    hook: options.onEvent,
    audit: storage.audit,
    logger,
    clock,
    random,
    maxPending,
    ...(lost !== undefined ? { lost: lost.bind(options.observer) } : {}),
    ...(watch !== undefined ? { watch: watch.bind(options.observer) } : {}),
  });
  const loadTimeoutMs = options.signingKeyLoadTimeoutMs ?? 0;
  // setTimeout holds at most 2^31-1 ms; a longer bound would fire at once.
  if (!Number.isSafeInteger(loadTimeoutMs) || loadTimeoutMs < 0 || loadTimeoutMs > 2_147_483_647) {
    throw new TypeError("signingKeyLoadTimeoutMs must be an integer from 0 (no bound) to 2147483647");
  }
  const keyring = createKeyring(storage.signingKeys, {
    alg,
    clock,
    loadTimeoutMs,
    encryption: keyEncryption,
    activationDelayMs: delaySeconds * 1000,
    // The default in-memory store keeps nothing at rest, so there is nothing to warn about.
    ...(options.storage !== undefined ? { logger } : {}),
    ...(options.signer !== undefined ? { signer: options.signer } : {}),
    ...(options.signingKey !== undefined ? { configured: options.signingKey } : {}),
    ...(maxAgeSeconds !== undefined ? { maxAgeMs: maxAgeSeconds * 1000 } : {}),
    minTokenTtlMs: accessTokenTtl * 1000,
    maxTokenTtlMs: maxAccessTokenTtlMs,
    onReloadFailed: (error) =>
      logger.warn("signing keys could not be re-read from storage; the keys loaded before keep serving, and a re-read is tried every 5 s", {
        error: error instanceof Error ? error.message : String(error),
      }),
    onStampFailed: (error) =>
      logger.warn(
        "the configured signing key could not be marked as in use (signingKeys.markSigning failed); it signs here as before, but instances configured with another key trust it only until the longest token lifetime + 60 s after its last mark",
        { error: error instanceof Error ? error.message : String(error) },
      ),
    onRotated: (r) =>
      events.emit({ type: "signing_key.rotated", kid: r.kid, alg: r.alg, activates_at: r.activatesAt, immediate: false, automatic: true, deleted: r.deleted, cancelled: [], actor: null }),
  });
  const cacheSize = options.verifiedTokenCacheSize ?? 10_000;
  if (!Number.isSafeInteger(cacheSize) || cacheSize < 0) throw new TypeError("verifiedTokenCacheSize must be a non-negative integer");
  // At most 2^31 - 1, the query parameters' own bound (10 digits): a larger bound was taken, and a
  // pageSize past 10 digits then refused with a message naming a range that held it.
  const maxPageSize = positiveInt("maxPageSize", options.maxPageSize, 100, 2_147_483_647);
  const defaultPageSize = positiveInt("defaultPageSize", options.defaultPageSize, 20);
  if (defaultPageSize > maxPageSize) throw new TypeError("defaultPageSize must not exceed maxPageSize");
  const basePath = normalizeBasePath(options.basePath);
  const passwordHashIterations = positiveInt("passwordHashIterations", options.passwordHashIterations, 600_000, MAX_PASSWORD_HASH_ITERATIONS);
  const givenBaseUrl = baseUrlOption(options.baseUrl);
  return {
    storage,
    basePath,
    // With an issuer URL but no baseUrl, every public URL derives from the issuer (its origin and
    // the base path), never from the request's Host (finding 1 of the security review).
    baseUrl: givenBaseUrl ?? baseUrlFromIssuer(options.issuer, basePath),
    issuer: options.issuer,
    // Of the issuer in effect: the given one, else baseUrl, which it defaults to (until 2026-12-01
    // an issuer taken from a baseUrl with a path, behind a proxy that strips it, had no RFC 8414
    // §3.1 URL: discovery of the metadata's own issuer was a 404).
    issuerMetadataPath: issuerMetadataPath(options.issuer ?? givenBaseUrl, basePath),
    audience: options.audience,
    scopes,
    keyring,
    keyEncryption,
    signingKeyActivationDelayMs: delaySeconds * 1000,
    verifyToken: createVerifiedTokenCache(keyring, cacheSize),
    maxAccessTokenTtlMs,
    signingAlg: alg,
    accessTokenTtl,
    refreshTokenTtl: positiveInt("refreshTokenTtl", options.refreshTokenTtl, 7 * 24 * 3600, MAX_TTL_SECONDS),
    refreshTokenAbsoluteTtl: positiveInt("refreshTokenAbsoluteTtl", options.refreshTokenAbsoluteTtl, 30 * 24 * 3600, MAX_TTL_SECONDS),
    refreshGrace: resolveGrace(options),
    requiredScopes: {
      listAccounts: requiredScopeList("listAccounts", options.requiredScopes?.listAccounts, [scopes.userApis, scopes.serverCommands], scopes.all),
      createPlant: requiredScopeList("createPlant", options.requiredScopes?.createPlant, [], scopes.all),
    },
    maxBodyBytes: positiveInt("maxBodyBytes", options.maxBodyBytes, 65_536),
    maxPageSize,
    defaultPageSize,
    passwordHashIterations,
    // 1-1000, as its variable (until 2026-12-02 the option had no upper bound).
    maxConcurrentPasswordChecks: positiveInt("maxConcurrentPasswordChecks", options.maxConcurrentPasswordChecks, MAX_CONCURRENT_PASSWORD_CHECKS, MAX_CONCURRENT_PASSWORD_CHECKS_LIMIT),
    clock,
    random,
    sha256,
    sign: options.crypto?.sign?.bind(options.crypto),
    hkdfAesGcm: options.crypto?.hkdfAesGcm,
    logger,
    ...{ tracer: options.tracer, observer: options.observer },
    events,
    // At most 100 years: the cutoff (now minus the retention) stays a safe integer every store
    // takes (1e12 days made PostgreSQL refuse every prune, 22003, until 2026-11-30).
    auditRetentionMs: positiveInt("auditRetentionDays", options.auditRetentionDays, 90, MAX_AUDIT_RETENTION_DAYS) * 24 * 3600 * 1000,
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
      // With a KEK the counters' keys (which hold typed usernames and client ids) are an HMAC
      // under it, not their bare SHA-256; the first KEK's, so instances sharing it share counters.
      keks[0] === undefined ? sha256 : counterKeyHash(keks[0], options.crypto?.sha256?.bind(options.crypto)),
      (error, what) =>
        logger.warn(
          what === "sweep"
            ? "attempt-counter sweep failed (the answer stands; the next sweep or prune clears the backlog)"
            : what === "read"
              ? "attempt-counter read for a refusal's Retry-After failed (the 429 stands; its Retry-After may end before another lock does)"
              : "attempt-counter refund of a refused attempt failed (the 429 stands; that count stays until its window ends)",
          describeError(error),
        ),
    ),
    trustedProxy: compileTrustedProxies(options.trustedProxies ?? []),
    limits: {
      maxParameters: positiveInt("maxFormParameters", options.maxFormParameters, 32),
      maxFieldBytes: positiveInt("maxFormFieldBytes", options.maxFormFieldBytes, 4096),
      maxScopes: positiveInt("maxScopes", options.maxScopes, 16),
      maxScopeLength,
    },
    console: options.console?.enabled
      ? {
          // Bounded as client token lifetimes are (10 years): a session's expiry past what a Date
          // holds made every sign-in a 500 after the session was stored (before 2026-11-29).
          sessionTtlSeconds: positiveInt("console.sessionTtlSeconds", options.console.sessionTtlSeconds, 8 * 3600, MAX_TTL_SECONDS),
          idleTimeoutMs: consoleIdleTimeoutMs(options.console.idleTimeoutSeconds, storage.sessions, logger),
          adminRole: adminRoleOption(options.console.adminRole),
          page: pageOption("console.page", options.console.page, basePath, "/console"),
        }
      : null,
    docs: pageOption("docs", options.docs, basePath, "/docs"),
    passwordChecks: { inFlight: 0, highestIterations: 0, busyMinute: -1, busyCount: 0 },
    accountListQuery: accountListQuery({ maxPageSize, defaultPageSize }),
    openApi: { base: undefined, byUrl: new Map() },
  };
}

/**
 * Where RFC 8414 §3.1 puts the metadata of an http(s) issuer: the well-known path with the issuer's
 * path (terminating `/` removed) appended, the root well-known path for an issuer with none. Null
 * when that is the base path's (the app already serves `{well-known}{basePath}`), or the issuer is
 * not such a URL. An issuer with no path beside a base path (the host's origin, plantgate mounted
 * under /auth) had no discovery URL until 2026-12-01: only the base path's, whose metadata named
 * another issuer than that URL implies (RFC 8414 §3.3).
 */
function issuerMetadataPath(issuer: string | undefined, basePath: string): string | null {
  checkIssuer(issuer);
  const url = httpUrl(issuer);
  if (url === undefined) return null;
  const path = url.pathname.replace(/\/+$/, "");
  return path === basePath ? null : `/.well-known/oauth-authorization-server${path}`;
}

/** The issuer's own rules, also applied to PLANTGATE_ISSUER by optionsFromEnv. */
export function checkIssuer(issuer: string | undefined): void {
  if (issuer === undefined) return;
  nonEmptyString("issuer", issuer);
  issuerRules("issuer", issuer);
}

/**
 * `issuer` and `audience` are strings, as their types say. Until 2026-12-02 anything was taken from
 * JavaScript: a number or an object made every token request a 500 (the signing refused the
 * claim), and an empty string gave tokens an empty `iss` or `aud`.
 */
function nonEmptyString(name: string, value: unknown): void {
  if (typeof value !== "string" || value === "") throw new TypeError(`${name} must be a non-empty string`);
}

/** The rules of an issuer, for the option `name` (the issuer, or baseUrl, which it defaults to). */
function issuerRules(name: string, value: string): void {
  // The URL parser drops white space around a URL, the issuer is used as given: tokens' `iss` and
  // the metadata carried it, and every client comparing them failed (until 2026-12-01).
  if (typeof value === "string" && value.trim() !== value) throw new TypeError(`${name} must not begin or end with white space`);
  // RFC 8414 §2: the issuer is a URL with no query or fragment components (clients compare it
  // with the metadata's and the tokens' as a string, and build the metadata URL from it).
  if (httpUrl(value) !== undefined && /[?#]/.test(value)) throw new TypeError(`${name} must be a URL without a query or fragment (RFC 8414 §2)`);
  // A URI as RFC 3986 writes one: the metadata's URLs are made of it by concatenation, and a space,
  // a non-ASCII character (an IDN host in Unicode), a backslash or a bad percent escape went into
  // them as typed, which strict URI parsers (java.net.URI) refuse and WHATWG ones rewrite (until
  // 2026-12-02).
  const url = httpUrl(value);
  // Brackets only around an IP-literal host (RFC 3986 §3.2.2): elsewhere they are no `pchar`.
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(value)?.[0] ?? "";
  if (url !== undefined && (!RFC3986_URI.test(value) || /[[\]]/.test(value.slice(authority.length)))) {
    // The parser's form is named unless it holds user info (never echo a password).
    const written = url.username === "" && url.password === "" ? ` ("${url.href}")` : "";
    throw new TypeError(`${name} must be a URI (RFC 3986): percent-encode spaces and other characters and write an IDN host in its xn-- form, as a URL parser writes it${written}`);
  }
}

/** An absolute URI's characters (RFC 3986 §3): a scheme, then unreserved, reserved and percent-encoded octets only. */
const RFC3986_URI = /^[A-Za-z][A-Za-z0-9+.-]*:(?:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/;

/**
 * `baseUrl` without its trailing `/`: an absolute http(s) URL held to the issuer's rules, as the
 * issuer defaults to it and the endpoints' URLs are made of it. Until 2026-12-01 only "absolute
 * URL" was checked: a query, a fragment, white space at either end or another scheme (`urn:`) was
 * taken, and showed in the metadata's issuer (and tokens' `iss`) and in every endpoint's URL.
 */
function baseUrlOption(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  issuerRules("baseUrl", value);
  try {
    if (typeof value !== "string") throw new TypeError();
    new URL(value);
  } catch {
    throw new TypeError("baseUrl must be an absolute URL");
  }
  if (httpUrl(value) === undefined) throw new TypeError("baseUrl must be an http(s) URL (the public origin and base path the endpoints' URLs are made of)");
  return value.replace(/\/+$/, "");
}

/** The issuer as a URL when it is an http(s) URL. */
function httpUrl(issuer: string | undefined): URL | undefined {
  if (issuer === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return undefined;
  }
  return url.protocol === "https:" || url.protocol === "http:" ? url : undefined;
}

/** `origin + basePath` of an http(s) issuer; undefined for an issuer that is not such a URL. */
function baseUrlFromIssuer(issuer: string | undefined, basePath: string): string | undefined {
  const url = httpUrl(issuer);
  return url && `${url.origin}${basePath}`;
}

/**
 * The logger as core calls it: a logger that throws (a full sink, a closed stream) is ignored, so
 * that an error answer, a warning or a failed hook's report never becomes a rejected request.
 */
export function guardedLogger(base: Logger): Logger {
  const call = (level: "error" | "warn", message: string, context: Record<string, unknown> | undefined) => {
    try {
      // One argument when there is no context: `console.warn(message, undefined)` prints a trailing
      // "undefined" (workerd's log read "... encrypt them at rest undefined" until 2026-11-29).
      const result: unknown = context === undefined ? base[level](message) : base[level](message, context);
      // An async logger's rejection (a closed sink) must not become an unhandled rejection.
      if (isThenable(result)) result.then(undefined, () => undefined);
    } catch {
      // Nothing to report it to.
    }
  };
  return {
    error: (message, context) => call("error", message, context),
    warn: (message, context) => call("warn", message, context),
  };
}
