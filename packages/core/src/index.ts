export { createPlantgate, type Plantgate } from "./app.js";
export { compileTrustedProxies, isIpAddress, isTrustedProxyHops, MAX_TRUSTED_PROXY_HOPS, resolveClientIp, throttleAddress, UNIX_SOCKET_PEER, type ProxyMatcher } from "./security/client-ip.js";
export type { HandleInfo } from "./http/handle-info.js";
export type { PlantgateOptions, ProtectedRoute, ConsoleOptions } from "./options.js";
export type { StaticPage, PageFile, PageMount } from "./pages/static-page.js";
export { CSRF_HEADER as CONSOLE_CSRF_HEADER } from "./console/session.js";
export type { ConsoleClient, SessionBody as ConsoleSessionBody } from "./console/api.js";
export { checkAccountInput, createAdmin, AdminConflictError, AdminError, AdminNotFoundError, DEFAULT_CLIENT_PAGE, MAX_CLIENT_PAGE, MAX_CLIENT_SECRETS, MAX_TTL_SECONDS, REENCRYPT_MOVES, type Admin, type AdminField, type ClientPage, type ClientPageQuery, type ClientSecretView, type ClientView, type CreateAccountInput, type CreateClientInput, type EventPage, type EventQuery, type NewClientSecret } from "./admin/index.js";
export { PRUNE_BATCH_SIZE, PRUNE_STORES, type PruneCounts, type PruneOptions } from "./admin/prune.js";
export { accountView, type AccountPage, type AccountView } from "./api/accounts.js";
export { ApiError, ApiErrorCode, AuditNotKeptError, HostFaultError, OAuthError, StorageError, TooManyAttemptsError, UnstorableValueError, type ApiErrorNumber, type OAuthErrorCode } from "./errors/index.js";
export { describeError, unavailableResponse, type PlainResponse } from "./http/respond.js";
export { guardedLogger, MAX_AUDIT_RETENTION_DAYS } from "./options.js";
export { dropRejection, isThenable } from "./util/thenable.js";
export { isoTimestamp } from "./util/iso-time.js";
export type { Logger } from "./context.js";
export type * from "./events/types.js";
export { SECURITY_EVENT_TYPES } from "./events/types.js";
export { composedEventHook, composedHookResult } from "./events/emitter.js";
export { isEventCursor, isEventType } from "./admin/events.js";
export type { TokenResponse } from "./oauth/issue.js";
export { scopeNames, OFFLINE_ACCESS, type ScopeNames } from "./scope-names.js";
export { TOKEN_PATH, REVOCATION_PATH, INTROSPECTION_PATH } from "./oauth/metadata.js";
export type { IntrospectionResponse } from "./oauth/introspection.js";
export { JWT_BEARER_ASSERTION, MAX_ASSERTION_LIFETIME_S } from "./oauth/client-assertion.js";
export { ASSERTION_ALGS, type AssertionAlg } from "./oauth/client-keys.js";
export { createMemoryStorage, type MemoryStorageOptions } from "./storage/memory.js";
export type * from "./storage/types.js";
export { hashPassword, verifyPassword, sha256, type RandomBytes } from "./crypto/index.js";
export { refreshTokenKey } from "./oauth/refresh-key.js";
export { AMBIGUOUS_USERINFO, redactConnectionUrl, userinfoAmbiguous } from "./util/redact-url.js";
export { LATE, waitAtMost } from "./util/wait-at-most.js";
export type { CryptoProvider } from "./crypto/provider.js";
export {
  generateKeyRecord,
  pruneKeys,
  KEYS_SEALED_PER_LOAD,
  REVOKE_KEY_DELETES,
  ROTATION_KEY_DELETES,
  MIN_ACTIVATION_DELAY_SECONDS,
  signingKeyView,
  type ListedSigningKey,
  type SigningAlg,
  type SigningKeyAtRest,
  type SigningKeyInfo,
  type SigningKeyKekStatus,
  type SigningKeySigner,
  type SigningInput,
  type SigningKeyStatus,
  type SigningKeyView,
} from "./tokens/keys.js";
export { KeyEncryptionError } from "./crypto/key-encryption.js";
export { CLIENT_SUBJECT_PREFIX } from "./tokens/access-token.js";
export {
  optionsFromEnv,
  consoleSettingsFromEnv,
  pruneIntervalFromEnv,
  auditFromEnv,
  DEFAULT_PRUNE_INTERVAL_SECONDS,
  bootstrapFromEnv,
  checkBootstrap,
  applyBootstrap,
  ConfigError,
  type EnvVars,
  type BootstrapPlan,
  type DemoCredentials,
} from "./env.js";
export type {
  EventBacklogReading,
  EventLossObservation,
  Observer,
  RequestObservation,
  StorageObservation,
  TelemetryOptions,
  Tracer,
  TraceSpan,
  TraceSpanOptions,
  SpanAttributeValue,
} from "./telemetry/types.js";
