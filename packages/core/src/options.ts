/** Options of createPlantgate, and the one place they are checked and turned into a {@link Context}. */
import { MAX_CONCURRENT_PASSWORD_CHECKS } from "./security/credentials.js";
import type { JWK } from "jose";
import { defaultRandomBytes, hashPassword, type RandomBytes } from "./crypto/index.js";
import { sha256With, type CryptoProvider } from "./crypto/provider.js";
import type { Context, Logger, ProtectedRoute } from "./context.js";
import { accountListQuery } from "./schemas/accounts.js";
import { scopeNames } from "./scope-names.js";
import { createMemoryStorage } from "./storage/memory.js";
import type { Storage } from "./storage/types.js";
import { createKeyring, SUPPORTED_ALGS, type SigningAlg } from "./tokens/keys.js";
import { createVerifiedTokenCache } from "./tokens/verified-cache.js";
import { compileTrustedProxies } from "./security/client-ip.js";
import { createThrottle, DEFAULT_BRUTE_FORCE } from "./security/throttle.js";
import { servePage, type ServedPage, type StaticPage } from "./pages/static-page.js";

export type { ProtectedRoute } from "./context.js";

/**
 * Options of {@link createPlantgate}. Every field is optional.
 *
 * @example
 * createPlantgate({ issuer: "https://auth.example.com", scopePrefix: "Acme", storage: myStorage });
 */
export interface PlantgateOptions {
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
  /** Algorithm for generated keys. Default `ES256`. */
  signingAlg?: SigningAlg;
  /**
   * Rotate the signing key automatically once it is this many seconds old (any instance may do
   * it; all converge on the newest key within a minute). Replaced keys stay in the JWKS until the
   * longest access-token lifetime has passed, then are deleted. Ignored with `signingKey`.
   * Default: no automatic rotation (env `PLANTGATE_SIGNING_KEY_MAX_AGE`).
   */
  signingKeyMaxAgeSeconds?: number;
  /** Access-token lifetime in seconds (default 7200); a client's own setting wins. */
  accessTokenTtl?: number;
  /** Sliding refresh-token lifetime in seconds (default 7 days); a client's own setting wins. */
  refreshTokenTtl?: number;
  /** Absolute refresh-token family lifetime in seconds (default 30 days); a client's own setting wins. */
  refreshTokenAbsoluteTtl?: number;
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

const SCOPE_PREFIX = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Applies defaults and checks options once, at construction, so misconfiguration fails fast. */
export function resolveOptions(options: PlantgateOptions = {}): Context {
  const clock = options.clock ?? Date.now;
  const scopePrefix = options.scopePrefix ?? "Platform";
  if (!SCOPE_PREFIX.test(scopePrefix)) throw new TypeError("scopePrefix must be a non-empty scope token");
  const scopes = scopeNames(scopePrefix);
  const alg = options.signingAlg ?? "ES256";
  if (!SUPPORTED_ALGS.includes(alg)) throw new TypeError(`signingAlg must be one of ${SUPPORTED_ALGS.join(", ")}`);
  const storage = options.storage ?? createMemoryStorage();
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
  const keyring = createKeyring(storage.signingKeys, {
    alg,
    clock,
    ...(options.signingKey !== undefined ? { configured: options.signingKey } : {}),
    ...(options.signingKeyMaxAgeSeconds !== undefined
      ? { maxAgeMs: positiveInt("signingKeyMaxAgeSeconds", options.signingKeyMaxAgeSeconds, 1) * 1000 }
      : {}),
    minTokenTtlMs: accessTokenTtl * 1000,
    maxTokenTtlMs: maxAccessTokenTtlMs,
  });
  const cacheSize = options.verifiedTokenCacheSize ?? 10_000;
  if (!Number.isSafeInteger(cacheSize) || cacheSize < 0) throw new TypeError("verifiedTokenCacheSize must be a non-negative integer");
  const maxPageSize = positiveInt("maxPageSize", options.maxPageSize, 100);
  const defaultPageSize = positiveInt("defaultPageSize", options.defaultPageSize, 20);
  if (defaultPageSize > maxPageSize) throw new TypeError("defaultPageSize must not exceed maxPageSize");
  const basePath = normalizeBasePath(options.basePath);
  const random = options.randomBytes ?? defaultRandomBytes;
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
    verifyToken: createVerifiedTokenCache(keyring, cacheSize),
    maxAccessTokenTtlMs,
    signingAlg: alg,
    accessTokenTtl,
    refreshTokenTtl: positiveInt("refreshTokenTtl", options.refreshTokenTtl, 7 * 24 * 3600),
    refreshTokenAbsoluteTtl: positiveInt("refreshTokenAbsoluteTtl", options.refreshTokenAbsoluteTtl, 30 * 24 * 3600),
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
    logger: options.logger ?? console,
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
