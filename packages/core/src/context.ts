/**
 * The shape every handler receives: options after defaults, plus what is derived from them once
 * per app. Types only, and only of lower layers (storage, tokens, crypto, security), so any module
 * may import it without pulling in the HTTP layer or the option resolver (`options.ts` builds it).
 */
import type { RandomBytes } from "./crypto/index.js";
import type { EventSink } from "./events/emitter.js";
import type { KeyEncryption } from "./crypto/key-encryption.js";
import type { HkdfAesGcm, JwsSigner } from "./crypto/provider.js";
import type { ServedPage } from "./pages/static-page.js";
import type { AccountListQuery } from "./schemas/accounts.js";
import type { ScopeNames } from "./scope-names.js";
import type { Throttle } from "./security/throttle.js";
import type { Storage } from "./storage/types.js";
import type { Keyring, SigningAlg } from "./tokens/keys.js";
import type { ClientKeys } from "./oauth/client-keys.js";
import type { TokenVerifier } from "./tokens/verified-cache.js";
import type { Observer, Tracer } from "./telemetry/types.js";

/** Routes whose required scopes can be configured. */
export type ProtectedRoute = "createPlant" | "listAccounts";

/** Where plantgate reports unexpected failures. Receives errors, never request bodies or secrets. */
export interface Logger {
  error(message: string, context?: Record<string, unknown>): void;
  warn(message: string, context?: Record<string, unknown>): void;
}

/** The public URLs for one request: from options when set, else from the request's origin. */
export interface Urls {
  baseUrl: string;
  issuer: string;
  audience: string;
}

/** Caps on form bodies and `scope` parameters (see `maxFormParameters` and the three options after it). */
export interface Limits {
  /** Most name=value pairs in a form body, repeated ones included. */
  maxParameters: number;
  /** Most bytes (UTF-8, after decoding) of any one form parameter name or value. */
  maxFieldBytes: number;
  /** Most space-separated scope tokens. */
  maxScopes: number;
  /** Most characters of one scope token. */
  maxScopeLength: number;
}

/** Options after defaults; shared by every handler. */
export interface Context {
  storage: Storage;
  basePath: string;
  baseUrl: string | undefined;
  issuer: string | undefined;
  /**
   * RFC 8414 §3.1: `/.well-known/oauth-authorization-server` followed by the issuer URL's path
   * (without a trailing `/`) when that path is not empty and is not the base path; else null.
   */
  issuerMetadataPath: string | null;
  audience: string | undefined;
  scopes: ScopeNames;
  keyring: Keyring;
  /** Encryption of stored private keys (see `keyEncryptionKeys`). */
  keyEncryption: KeyEncryption;
  /** See `signingKeyActivationDelaySeconds`, in ms. */
  signingKeyActivationDelayMs: number;
  /** The API bearer check's verifier (see `verifiedTokenCacheSize`). */
  verifyToken: TokenVerifier;
  signingAlg: SigningAlg;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  refreshTokenAbsoluteTtl: number;
  /** The refresh-token grace window (see `refreshGraceSeconds`). */
  refreshGrace: RefreshGrace;
  requiredScopes: Record<ProtectedRoute, string[]>;
  maxBodyBytes: number;
  maxPageSize: number;
  defaultPageSize: number;
  passwordHashIterations: number;
  /** See `PlantgateOptions.maxConcurrentPasswordChecks`. */
  maxConcurrentPasswordChecks: number;
  /**
   * Password checks running now in this instance (the cap above counts them), and the highest
   * iteration count a stored hash was checked at here (refusals are padded to at least that: see
   * checkPasswordNow).
   */
  /**
   * Password checks running now, the highest iteration count seen, and the busy refusals of the
   * current minute of the clock (`busyMinute`, its start in ms; `busyCount`), for their events.
   */
  passwordChecks: { inFlight: number; highestIterations: number; busyMinute: number; busyCount: number };
  clock: () => number;
  random: RandomBytes;
  /** SHA-256 of a UTF-8 string, base64url (see the `crypto` option). */
  sha256: (text: string) => Promise<string>;
  /** The host's JWS signer, if it lent one (see the `crypto` option). */
  sign: JwsSigner | undefined;
  /** The host's HKDF + AES-GCM, if it lent one (see the `crypto` option); Web Crypto otherwise. */
  hkdfAesGcm: HkdfAesGcm | undefined;
  logger: Logger;
  /** The OpenTelemetry tracer (see the `tracer` option); undefined = no spans. */
  tracer: Tracer | undefined;
  /** The request and storage hooks (see the `observer` option). */
  observer: Observer | undefined;
  /** Security events (the `onEvent` hook and the audit store); `emit` never blocks or throws. */
  events: EventSink;
  /** How long the audit store keeps events, in ms (see `auditRetentionDays`). */
  auditRetentionMs: number;
  /** Finds `private_key_jwt` clients' public keys (inline JWK Sets, cached `jwks_uri` fetches). */
  clientKeys: ClientKeys;
  /** The longest access-token lifetime in force (server default or any client's), in ms; reads the clients. */
  maxAccessTokenTtlMs: () => Promise<number>;
  /** Form and scope caps. */
  limits: Limits;
  /** Brute-force counters (see `bruteForce`). */
  throttle: Throttle;
  /** Whether an address, `hop` hops from the server (0: the peer), is a trusted proxy (see `trustedProxies`). */
  trustedProxy: (ip: string, hop?: number) => boolean;
  /** The management console; null when disabled. `page` is null when no page was given. */
  console: {
    sessionTtlSeconds: number;
    /** The idle timeout in ms (`console.idleTimeoutSeconds`), or null when off. */
    idleTimeoutMs: number | null;
    adminRole: string;
    page: ServedPage | null;
  } | null;
  /** The API reference page at `/docs`; null when none was given. */
  docs: ServedPage | null;
  /** The GetAccountList query schema for this app's page-size settings. */
  accountListQuery: AccountListQuery;
  /** The OpenAPI document of this app, filled on first request (see `api/openapi.ts`). */
  openApi: OpenApiMemo;
}

/** The resolved refresh-token grace settings. */
export interface RefreshGrace {
  /** Window in ms for a client (its own setting, else the server's); 0 = strict one-time use. */
  windowMs(clientId: string): number;
  maxUses: number;
}

/** What `GET /openapi.json` keeps per app: the document without base URLs, and its bytes and ETag per base URL. */
export interface OpenApiMemo {
  base: Record<string, unknown> | undefined;
  byUrl: Map<string, Promise<OpenApiText>>;
}

/** The OpenAPI document for one base URL: its JSON as UTF-8 and its strong ETag. */
export interface OpenApiText {
  bytes: Uint8Array;
  etag: string;
}
