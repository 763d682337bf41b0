/**
 * Security events: what `createPlantgate({ onEvent })` receives and the audit store keeps.
 *
 * Every event has `id` (a random UUID), `type` (dotted, e.g. `token.issued`) and `time` (epoch
 * ms), plus the fields of its type. Field names are the OAuth wire names (snake_case), so a JSON
 * line of an event reads like the protocol. No event ever carries a secret, password, token,
 * assertion or hash: tokens are named by `jti` (access tokens) or `family_id` (refresh tokens).
 * `client_ip` is the address as resolved through `trustedProxies`, null when the adapter gave none.
 * `actor` of an administrative event is the console administrator's username, null when the
 * operation came from code (the CLI, start-up provisioning, `app.admin`).
 */

/** Fields every event has. */
export interface EventBase {
  /** Random UUID v4. */
  id: string;
  /** Epoch milliseconds. */
  time: number;
}

/** Why client authentication failed. */
export type ClientAuthFailure =
  /** No client with this id. */
  | "unknown_client"
  /** The secret matches none of the client's unexpired secrets. */
  | "invalid_secret"
  /** A `private_key_jwt` client assertion that does not verify (signature, claims, algorithm, replayed jti, keys). */
  | "invalid_assertion"
  /** A secret for a `private_key_jwt` client, or an assertion for a client with secrets. */
  | "wrong_auth_method"
  /** The Basic header or the body credentials are malformed (an assertion's `sub` with an unpaired surrogate too), or none were sent (`client_id` may then be null). */
  | "malformed"
  /** Refused by the brute-force throttle before the secret was looked at. */
  | "throttled";

/** Why a password check failed (password grant or console sign-in). */
export type LoginFailure =
  | "unknown_username"
  | "invalid_password"
  | "account_disabled"
  /** Refused by the brute-force throttle before the password was looked at. */
  | "throttled"
  /** Refused because `maxConcurrentPasswordChecks` checks were already running (nothing counted; 1st, 2nd, 4th, ... of each minute an event). */
  | "busy"
  /** Console only: the password is right but the account lacks the console's admin role. */
  | "not_admin";

/** Where a username + password was presented. */
export type LoginSource = "password_grant" | "console";

/** One access token issued, by any grant (a refresh also emits `token.refreshed`). */
export interface TokenIssuedEvent extends EventBase {
  type: "token.issued";
  grant_type: "client_credentials" | "password" | "refresh_token";
  client_id: string;
  /** The token's `sub`: an account id, or `client:` + the client id. */
  subject: string;
  /** Space-separated granted scope. */
  scope: string;
  jti: string;
  /** Epoch ms of the access token's expiry. */
  expires_at: number;
  /** The refresh-token family the answer belongs to, or null when it has no refresh token. */
  family_id: string | null;
  client_ip: string | null;
}

/** A refresh token exchanged: rotated, or (`replay: true`) a grace use of a rotated one. */
export interface TokenRefreshedEvent extends EventBase {
  type: "token.refreshed";
  client_id: string;
  account_id: string;
  family_id: string;
  scope: string;
  /** True when this was a grace use answered with the rotation's answer (no new refresh token). */
  replay: boolean;
  client_ip: string | null;
}

/** A rotated refresh token presented again after its grace: the whole family is revoked. */
export interface RefreshTokenReuseDetectedEvent extends EventBase {
  type: "refresh_token.reuse_detected";
  family_id: string;
  client_id: string;
  account_id: string;
  client_ip: string | null;
}

/**
 * Which brute-force counter refused a client authentication (reason `throttled`):
 * `client_address`, this client id from this address (`maxFailures` failures); `address_budget`,
 * failed client authentications from this address across client ids (10 × `maxFailures`; an IPv6
 * address per /64). When both refuse, `client_address`.
 */
export type ClientLock = "client_address" | "address_budget";

/** Client authentication failed at the token, revocation or introspection endpoint. */
export interface ClientAuthenticationFailedEvent extends EventBase {
  type: "client.authentication_failed";
  /**
   * The client's id when such a client exists; null for an unknown or unreadable one (a client
   * that swapped id and secret would otherwise put its secret here).
   */
  client_id: string | null;
  reason: ClientAuthFailure;
  client_ip: string | null;
  /** With reason `throttled` only (absent otherwise; since 2026-12-03): the counter that refused. */
  lock?: ClientLock;
  /**
   * With reason `throttled` only (absent otherwise; since 2026-12-03): this refusal's count within
   * its lock, as counted by the instance that refused it (client authentication's refusals write
   * nothing to storage; a restarted instance counts from 1 again, and on Cloudflare Workers each
   * isolate, many and short-lived, is an instance of its own). Only the 1st, 2nd, 4th, 8th, ...
   * refusal makes an event, so a lock makes about log2(n) + 1 of them per instance however many
   * requests it refuses; `plantgate_token_requests_total{result="locked_out"}` counts every one.
   * Past 4 096 locks at once in one instance, a further lock's first refusal is still 1 (at most
   * 4 096 such per window) and its later ones share one count with the other further locks (see
   * `createThrottle`).
   */
  refused_count?: number;
}

/** A username + password refused. */
export interface AccountLoginFailedEvent extends EventBase {
  type: "account.login_failed";
  /** The username when such an account exists; null for an unknown one (it may be a password typed into the wrong field). */
  username: string | null;
  reason: LoginFailure;
  source: LoginSource;
  /** The authenticated client of a password grant; null for the console. */
  client_id: string | null;
  client_ip: string | null;
  /**
   * With reason `throttled` only (absent otherwise; since 2026-12-03): this refusal's count within
   * its lock (the refusing counter's count past its limit, kept in storage, so shared by every
   * instance). Only the 1st, 2nd, 4th, 8th, ... refusal makes an event (the 1st beside the
   * `account.locked_out`), so a lock makes about log2(n) + 1 of them however many requests it
   * refuses; the metrics count every one. With reason `busy` (since later on 2026-12-03): this
   * refusal's count within the current minute of the clock, in the instance that refused it (busy
   * refusals write nothing to storage; one count for every address, client and source, so the
   * events' addresses are a sample); likewise only the 1st, 2nd, 4th, ... of each minute makes an
   * event.
   */
  refused_count?: number;
}

/** A username's brute-force counter reached its limit: attempts are refused until `locked_until`. */
export interface AccountLockedOutEvent extends EventBase {
  type: "account.locked_out";
  /** As in `account.login_failed`: null for a username no account has. */
  username: string | null;
  /**
   * `username_address`: this username from this address (`maxFailures`); `username`: from every
   * address (5 × `maxFailures`); `address_budget`: console sign-ins from this address across
   * usernames (3 × `maxFailures`); `client_budget`: this client's password grants across usernames
   * (10 × `maxFailures`). The event names the username of the attempt that hit the limit.
   */
  lock: "username_address" | "username" | "address_budget" | "client_budget";
  source: LoginSource;
  /**
   * As in `account.login_failed`: the authenticated client of a password grant (the one whose
   * budget a `client_budget` lock is); null for the console. Absent until 2026-12-01, when the
   * audit trail's client filter never showed a client's lock-outs.
   */
  client_id: string | null;
  /** Epoch ms when the window ends. */
  locked_until: number;
  client_ip: string | null;
}

/** A token revoked at the revocation endpoint (RFC 7009). */
export interface TokenRevokedEvent extends EventBase {
  type: "token.revoked";
  client_id: string;
  /**
   * The account the token was issued for; null for a client's own token (client credentials).
   * The audit trail's account filter finds an account's sign-outs by it (absent until 2026-12-01).
   */
  account_id: string | null;
  token_type: "access_token" | "refresh_token";
  /** The access token's `jti`; null for a refresh token. */
  jti: string | null;
  /** The refresh token's family (all of it is revoked); null for an access token. */
  family_id: string | null;
  client_ip: string | null;
}

/** Administrative events: who did it (`actor`) and to what. */
interface AdminEventBase extends EventBase {
  /** The console administrator's username; null for the CLI, provisioning and `app.admin` calls. */
  actor: string | null;
}

export interface ClientCreatedEvent extends AdminEventBase {
  type: "client.created";
  client_id: string;
  name: string;
  grant_types: string[];
  scopes: string[];
}

export interface ClientDeletedEvent extends AdminEventBase {
  type: "client.deleted";
  client_id: string;
}

export interface ClientSecretRotatedEvent extends AdminEventBase {
  type: "client.secret_rotated";
  client_id: string;
}

/** A further secret added to a client (overlapping secrets). */
export interface ClientSecretAddedEvent extends AdminEventBase {
  type: "client.secret_added";
  client_id: string;
  /** The secret's id (never the secret or its hash). */
  secret_id: string;
}

/** One of a client's secrets revoked. */
export interface ClientSecretRevokedEvent extends AdminEventBase {
  type: "client.secret_revoked";
  client_id: string;
  secret_id: string;
}

/** A new signing key stored (by an administrator, or by automatic rotation: `actor` null, `automatic` true). */
export interface SigningKeyRotatedEvent extends AdminEventBase {
  type: "signing_key.rotated";
  kid: string;
  alg: string;
  /** Epoch ms from which it signs. */
  activates_at: number;
  /** True for `keys rotate --now` (no activation delay). */
  immediate: boolean;
  automatic: boolean;
  /** Kids of old keys deleted by this rotation. */
  deleted: string[];
  /**
   * Kids of `next` keys deleted by this rotation before they ever signed: with `immediate`
   * (`keys rotate --now`), those stored before it, which would have taken over from it at their
   * later activation time. Empty otherwise (always for `automatic`).
   */
  cancelled: string[];
}

/**
 * A signing key deleted before its time (`keys revoke`, `app.admin.revokeSigningKey`): it leaves the
 * JWKS, and tokens it signed are refused, on every instance within a minute.
 */
export interface SigningKeyRevokedEvent extends AdminEventBase {
  type: "signing_key.revoked";
  kid: string;
  /** What the key was: `next` (published, not signing yet), `retired` or `prunable`. */
  status: "next" | "retired" | "prunable";
  /** Kids of `prunable` keys older than it, deleted with it (they would be trusted again without it). */
  deleted: string[];
}

/**
 * Signing keys moved under the first key encryption key (`keys reencrypt`, the console's
 * "Re-encrypt keys", `app.admin.reencryptSigningKeys`): the step of a KEK rotation after which the
 * older KEKs can be removed. Emitted when at least one key moved, also when a later key could not
 * be opened and the call failed (the keys moved before it stay moved).
 */
export interface SigningKeyReencryptedEvent extends AdminEventBase {
  type: "signing_key.reencrypted";
  /** Kids of the keys moved (a signer's marker an earlier version sealed: stored unsealed). */
  reencrypted: string[];
  /** The id of the key encryption key they are now under, the first configured (an id only: it reveals nothing of the KEK). */
  kek: string;
}

export interface AccountCreatedEvent extends AdminEventBase {
  type: "account.created";
  account_id: string;
  username: string;
  roles: string[];
  enabled: boolean;
}

export interface AccountDisabledEvent extends AdminEventBase {
  type: "account.disabled";
  account_id: string;
  username: string;
}

export interface AccountEnabledEvent extends AdminEventBase {
  type: "account.enabled";
  account_id: string;
  username: string;
}

export interface ConsoleSignedInEvent extends EventBase {
  type: "console.signed_in";
  account_id: string;
  username: string;
  client_ip: string | null;
}

export interface ConsoleSignedOutEvent extends EventBase {
  type: "console.signed_out";
  account_id: string;
  username: string;
  /**
   * `false`: the request's own session was signed out (`POST /console/api/session/sign-out`);
   * `true`: every session of the account (`POST /console/api/session/sign-out-everywhere`).
   */
  everywhere: boolean;
  /**
   * How many sessions ended: 1 for a sign-out (0 when a concurrent request ended it first); for
   * sign-out everywhere, every session of the account the store deleted, the request's own included,
   * and ended ones not yet pruned (`deleteByAccount` deletes them alike).
   */
  sessions_ended: number;
  client_ip: string | null;
}

/** Every security event. Narrow on `type`. */
export type SecurityEvent =
  | TokenIssuedEvent
  | TokenRefreshedEvent
  | RefreshTokenReuseDetectedEvent
  | ClientAuthenticationFailedEvent
  | AccountLoginFailedEvent
  | AccountLockedOutEvent
  | TokenRevokedEvent
  | ClientCreatedEvent
  | ClientDeletedEvent
  | ClientSecretRotatedEvent
  | ClientSecretAddedEvent
  | ClientSecretRevokedEvent
  | SigningKeyRotatedEvent
  | SigningKeyRevokedEvent
  | SigningKeyReencryptedEvent
  | AccountCreatedEvent
  | AccountDisabledEvent
  | AccountEnabledEvent
  | ConsoleSignedInEvent
  | ConsoleSignedOutEvent;

/** Every event type name. */
export type SecurityEventType = SecurityEvent["type"];

/** Every event type name, in the README's order. */
export const SECURITY_EVENT_TYPES: readonly SecurityEventType[] = [
  "token.issued",
  "token.refreshed",
  "refresh_token.reuse_detected",
  "client.authentication_failed",
  "account.login_failed",
  "account.locked_out",
  "token.revoked",
  "client.created",
  "client.deleted",
  "client.secret_rotated",
  "client.secret_added",
  "client.secret_revoked",
  "signing_key.rotated",
  "signing_key.revoked",
  "signing_key.reencrypted",
  "account.created",
  "account.disabled",
  "account.enabled",
  "console.signed_in",
  "console.signed_out",
];

/** An event as an emitter site writes it: the emitter adds `id` and `time`. */
export type EventInput = SecurityEvent extends infer E ? (E extends SecurityEvent ? Omit<E, "id" | "time"> : never) : never;

/** The `onEvent` hook. Its result is not awaited on the request path; a throw or rejection is logged and ignored. */
export type EventHook = (event: SecurityEvent) => void | Promise<void>;
