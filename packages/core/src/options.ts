import type { JWK } from "jose";
import { defaultRandomBytes, type RandomBytes } from "./crypto/index.js";
import type { Logger } from "./http/respond.js";
import { scopeNames, type ScopeNames } from "./oauth/scopes.js";
import { createMemoryStorage } from "./storage/memory.js";
import type { Storage } from "./storage/types.js";
import { createKeyring, SUPPORTED_ALGS, type Keyring, type SigningAlg } from "./tokens/keys.js";

/** Routes whose required scopes can be configured. */
export type ProtectedRoute = "createPlant" | "listAccounts";

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
   * Default: derived from each request's URL. Set it behind a proxy.
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
  /** Largest `pageSize` (default 100). */
  maxPageSize?: number;
  /** `pageSize` when omitted (default 20). */
  defaultPageSize?: number;
  /** PBKDF2 iterations for new password hashes (default 600 000; workerd allows at most 100 000). */
  passwordHashIterations?: number;
  /** Current time in epoch milliseconds; injectable for tests. */
  clock?: () => number;
  /** Random bytes source; injectable for tests. */
  randomBytes?: RandomBytes;
  /** Receives unexpected errors (never secrets). Default: `console`. */
  logger?: Logger;
}

/** Options after defaults; shared by every handler. */
export interface Context {
  storage: Storage;
  basePath: string;
  baseUrl: string | undefined;
  issuer: string | undefined;
  audience: string | undefined;
  scopes: ScopeNames;
  keyring: Keyring;
  signingAlg: SigningAlg;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  refreshTokenAbsoluteTtl: number;
  requiredScopes: Record<ProtectedRoute, string[]>;
  maxBodyBytes: number;
  maxPageSize: number;
  defaultPageSize: number;
  passwordHashIterations: number;
  clock: () => number;
  random: RandomBytes;
  logger: Logger;
}

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`${name} must be a positive integer`);
  return value;
}

function normalizeBasePath(path: string | undefined): string {
  if (path === undefined || path === "" || path === "/") return "";
  if (!path.startsWith("/") || /[?#]/.test(path)) throw new TypeError("basePath must start with '/' and have no query");
  return path.replace(/\/+$/, "");
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
  const maxPageSize = positiveInt("maxPageSize", options.maxPageSize, 100);
  const defaultPageSize = positiveInt("defaultPageSize", options.defaultPageSize, 20);
  if (defaultPageSize > maxPageSize) throw new TypeError("defaultPageSize must not exceed maxPageSize");
  return {
    storage,
    basePath: normalizeBasePath(options.basePath),
    baseUrl: trimUrl(options.baseUrl, "baseUrl"),
    issuer: options.issuer,
    audience: options.audience,
    scopes,
    keyring: createKeyring(storage.signingKeys, {
      alg,
      clock,
      ...(options.signingKey !== undefined ? { configured: options.signingKey } : {}),
    }),
    signingAlg: alg,
    accessTokenTtl: positiveInt("accessTokenTtl", options.accessTokenTtl, 7200),
    refreshTokenTtl: positiveInt("refreshTokenTtl", options.refreshTokenTtl, 7 * 24 * 3600),
    refreshTokenAbsoluteTtl: positiveInt("refreshTokenAbsoluteTtl", options.refreshTokenAbsoluteTtl, 30 * 24 * 3600),
    requiredScopes: {
      listAccounts: options.requiredScopes?.listAccounts ?? [scopes.userApis, scopes.serverCommands],
      createPlant: options.requiredScopes?.createPlant ?? [],
    },
    maxBodyBytes: positiveInt("maxBodyBytes", options.maxBodyBytes, 65_536),
    maxPageSize,
    defaultPageSize,
    passwordHashIterations: positiveInt("passwordHashIterations", options.passwordHashIterations, 600_000),
    clock,
    random: options.randomBytes ?? defaultRandomBytes,
    logger: options.logger ?? console,
  };
}

/** The public URLs for one request: from options when set, else from the request's origin. */
export interface Urls {
  baseUrl: string;
  issuer: string;
  audience: string;
}

export function urlsFor(ctx: Context, request: Request): Urls {
  const baseUrl = ctx.baseUrl ?? `${new URL(request.url).origin}${ctx.basePath}`;
  const issuer = ctx.issuer ?? baseUrl;
  return { baseUrl, issuer, audience: ctx.audience ?? issuer };
}
