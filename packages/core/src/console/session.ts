import { randomToken, sha256, timingSafeEqual } from "../crypto/index.js";
import { ApiError, ApiErrorCode } from "../errors/index.js";
import type { Context } from "../context.js";
import type { AccountRecord, SessionRecord } from "../storage/types.js";
import type { ConsoleRequest } from "./request.js";
import { SWEEP_LIMIT } from "../security/throttle.js";
import { describeError } from "../http/respond.js";

/**
 * Name of the console's session cookie (HttpOnly; only the console's own path receives it). Not
 * `__Host-` prefixed: that prefix requires `Path=/`, and scoping the cookie to `{base}/console`
 * (so no other route of the host ever receives it) is worth more here.
 */
const SESSION_COOKIE = "plantgate_console";
/**
 * Header that carries the session's CSRF token on every state-changing console call.
 *
 * @example
 * await fetch("/console/api/signing-keys", { method: "POST", headers: { [CONSOLE_CSRF_HEADER]: session.csrfToken } });
 */
export const CSRF_HEADER = "x-csrf-token";

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** True for the methods that must carry the CSRF token and pass the origin check. */
export function isStateChanging(method: string): boolean {
  return STATE_CHANGING.has(method);
}

/** A signed-in administrator, as every console API handler receives it. */
export interface ConsoleSession {
  record: SessionRecord;
  account: AccountRecord;
  /** The session's CSRF token (derived from the session id, so it is never stored in clear). */
  csrfToken: string;
}

/**
 * The CSRF token is derived from the session id: the page can fetch it again after a reload (the
 * id itself stays in the HttpOnly cookie), and storage keeps only its hash. Knowing the token does
 * not reveal the id (SHA-256 is one-way), and without the id no one can compute it.
 */
async function csrfTokenFor(sessionId: string): Promise<string> {
  return sha256(`plantgate-console-csrf:${sessionId}`);
}

/**
 * Whether the request reached us over https, or the deployment says its public origin is https
 * (`baseUrl` or `issuer`; finding 4 of the security review: an https issuer alone once left the
 * cookie without `Secure`).
 */
export function isHttps(ctx: Context, url: URL): boolean {
  return url.protocol === "https:" || (ctx.baseUrl?.startsWith("https:") ?? false) || (ctx.issuer?.startsWith("https:") ?? false);
}

/** The `Path` attribute of the cookie: only the console ever receives it. */
export function cookiePath(ctx: Context): string {
  return `${ctx.basePath}/console`;
}

/** `Set-Cookie` for a new session. */
export function sessionCookie(ctx: Context, url: URL, sessionId: string): string {
  const ttl = ctx.console!.sessionTtlSeconds;
  return `${SESSION_COOKIE}=${sessionId}; Path=${cookiePath(ctx)}; Max-Age=${ttl}; HttpOnly; SameSite=Strict${isHttps(ctx, url) ? "; Secure" : ""}`;
}

/** `Set-Cookie` that removes the session cookie (sign-out, or a session that is no longer valid). */
export function clearedCookie(ctx: Context, url: URL): string {
  return `${SESSION_COOKIE}=; Path=${cookiePath(ctx)}; Max-Age=0; HttpOnly; SameSite=Strict${isHttps(ctx, url) ? "; Secure" : ""}`;
}

/** The session id from the Cookie header, or null. Only a well-formed 256-bit base64url id counts. */
function sessionIdFrom(header: string | null): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    if (/^[A-Za-z0-9_-]{43}$/.test(value)) return value;
  }
  return null;
}

/**
 * When a stored session ends: its own `expiresAt`, or sooner when the configured lifetime is now
 * shorter than when it was made (`createdAt` plus `sessionTtlSeconds`), so shortening the lifetime
 * reaches sessions already signed in at the next request (before 2026-11-30 they kept the lifetime
 * they were made with). A longer lifetime does not lengthen them.
 */
export function sessionExpiry(ctx: Context, record: SessionRecord): number {
  return Math.min(record.expiresAt, record.createdAt + ctx.console!.sessionTtlSeconds * 1000);
}

/**
 * The idle timeout's sliding end: after an authenticated request at `now`, the session ends at
 * `now` plus the idle window, never past its sign-in plus `sessionTtlSeconds`. Written (with
 * `sessions.touch`, which only moves an end forward) only when that moves the stored end by more
 * than a step, a tenth of the window and at most 60 s, so a busy console writes about once a
 * minute per session, not on every request; the session may therefore end up to one step before
 * a full idle window after its last request. A move to the end of the lifetime is written however
 * short (until 2026-11-30 an active session could end up to a step before its lifetime). Called once a request has passed every check (its
 * session, and its CSRF token when it changes state), so a refused one does not keep a session
 * alive; not at sign-out. Updates the session's record when the end moved (`GET /session` tells it).
 */
export async function slideExpiry(ctx: Context, session: ConsoleSession): Promise<void> {
  const idleMs = ctx.console!.idleTimeoutMs;
  if (idleMs === null) return;
  const record = session.record;
  const now = ctx.clock();
  const lifetimeEnd = record.createdAt + ctx.console!.sessionTtlSeconds * 1000;
  const end = Math.min(now + idleMs, lifetimeEnd);
  // A move to the lifetime's end is written however short: the step would otherwise leave an
  // active session ending up to a step before its lifetime (at most one such write a session).
  if (end <= record.expiresAt || (end < lifetimeEnd && end - record.expiresAt <= Math.min(60_000, idleMs / 10))) return;
  // `touch` is there: the app does not start with an idle timeout over a store without it.
  if (await ctx.storage.sessions.touch!(record.idHash, end)) record.expiresAt = end;
}

/** Creates and stores a session for the account; returns the id (for the cookie only), its stored hash and the CSRF token. */
export async function createSession(ctx: Context, account: AccountRecord): Promise<{ sessionId: string; idHash: string; csrfToken: string; expiresAt: number }> {
  const now = ctx.clock();
  // Housekeeping on sign-in keeps the table small without a scheduler (a bounded batch: `prune`
  // clears any backlog). Its failure is reported and does not refuse the sign-in.
  try {
    await ctx.storage.sessions.deleteExpired(now, SWEEP_LIMIT);
  } catch (error) {
    ctx.logger.warn("console-session sweep failed at a sign-in (the sign-in goes on; the next sweep or prune clears the backlog)", describeError(error));
  }
  for (;;) {
    const sessionId = randomToken(ctx.random, 32);
    const csrfToken = await csrfTokenFor(sessionId);
    const record: SessionRecord = {
      idHash: await sha256(sessionId),
      accountId: account.id,
      csrfHash: await sha256(csrfToken),
      createdAt: now,
      // The first idle window, or the whole lifetime when that is shorter (or the idle timeout off).
      expiresAt: now + Math.min(ctx.console!.sessionTtlSeconds * 1000, ctx.console!.idleTimeoutMs ?? Infinity),
    };
    // A collision of 256-bit random ids does not happen; the loop only keeps `create`'s contract honest.
    if (await ctx.storage.sessions.create(record)) return { sessionId, idHash: record.idHash, csrfToken, expiresAt: record.expiresAt };
  }
}

const notSignedIn = () => new ApiError(401, ApiErrorCode.consoleNotSignedIn, "Sign in to the console first.");

/**
 * Rejects state-changing requests that come from another site. Browsers send `Origin` on every
 * cross-origin POST and `Sec-Fetch-Site` on every request; either one is enough to refuse.
 * SameSite=Strict already keeps the cookie off cross-site requests; this also covers sign-in
 * (login CSRF), which has no session yet. When `baseUrl` or an issuer URL is configured, the
 * request's Host must be that origin's host and its Origin (if sent) that origin.
 */
export function checkOrigin(ctx: Context, request: ConsoleRequest): void {
  const site = request.fetchSite;
  if (site !== null && site !== "same-origin") {
    throw new ApiError(403, ApiErrorCode.consoleCrossOrigin, "Cross-site requests to the console are refused.");
  }
  const configured = configuredOrigins(ctx);
  if (configured.length > 0) {
    // With a configured public origin, only it is the console's: a request for another Host (a DNS
    // rebinding name pointed at this server) or from another Origin is refused, even when the two
    // agree with each other (finding 7 of the security review).
    if (!configured.some((o) => new URL(o).host === request.url.host)) throw crossOrigin();
    if (request.origin !== null && !configured.includes(request.origin)) throw crossOrigin();
    return;
  }
  if (request.origin !== null && request.origin !== request.url.origin) throw crossOrigin();
}

const crossOrigin = () => new ApiError(403, ApiErrorCode.consoleCrossOrigin, "Cross-site requests to the console are refused.");

/** The origins of `baseUrl` and `issuer` (when it is a URL): the deployment's public origin(s). */
function configuredOrigins(ctx: Context): string[] {
  const origins: string[] = [];
  for (const u of [ctx.baseUrl, ctx.issuer]) {
    if (!u) continue;
    try {
      const url = new URL(u);
      if ((url.protocol === "https:" || url.protocol === "http:") && !origins.includes(url.origin)) origins.push(url.origin);
    } catch {
      // issuer need not be a URL; it then adds nothing.
    }
  }
  return origins;
}

/**
 * The session of the request: present, unexpired (neither idle past its window nor past its
 * lifetime), of an enabled account that has the admin role. The account is read on every call so
 * that disabling it or removing its role takes effect at once.
 */
export async function requireSession(ctx: Context, request: ConsoleRequest): Promise<ConsoleSession> {
  const sessionId = sessionIdFrom(request.cookie);
  if (sessionId === null) throw notSignedIn();
  const idHash = await sha256(sessionId);
  const record = await ctx.storage.sessions.get(idHash);
  if (!record) throw notSignedIn();
  const now = ctx.clock();
  // Past its end, whether idle too long or at its absolute lifetime: the same 401.
  if (sessionExpiry(ctx, record) <= now) {
    await ctx.storage.sessions.delete(idHash);
    throw notSignedIn();
  }
  const account = await ctx.storage.accounts.get(record.accountId);
  if (!account || !account.enabled) {
    await ctx.storage.sessions.delete(idHash);
    throw notSignedIn();
  }
  if (!account.roles.includes(ctx.console!.adminRole)) {
    // Ended, not paused, and every session of the account with it, as a disable does: giving the
    // role back must not bring any back. Until 2026-12-01 only this request's session ended, and
    // the account's others (another browser, a copied cookie) worked again once the role was back.
    await ctx.storage.sessions.deleteByAccount(account.id);
    throw new ApiError(403, ApiErrorCode.consoleNotAdmin, "This account is not a console administrator.");
  }
  return { record, account, csrfToken: await csrfTokenFor(sessionId) };
}

/** Checks `X-CSRF-Token` against the session's token, in constant time over the hashes. */
export async function checkCsrf(session: ConsoleSession, request: ConsoleRequest): Promise<void> {
  const sent = request.csrfToken;
  if (sent === null || sent.length > 256 || !timingSafeEqual(await sha256(sent), session.record.csrfHash)) {
    throw new ApiError(403, ApiErrorCode.consoleCsrf, "The CSRF token is missing or wrong; reload the console.");
  }
}

/**
 * After a successful sign-in: ends the session whose cookie the request carried, whoever's it was,
 * since the new cookie replaces it in this browser. Left in the store (before 2026-11-30), it
 * stayed valid until its expiry for anyone who had copied its cookie, though the browser that
 * held it had signed in anew. Best effort: a store that fails here does not refuse the sign-in.
 */
export async function endReplacedSession(ctx: Context, request: ConsoleRequest): Promise<void> {
  const sessionId = sessionIdFrom(request.cookie);
  if (sessionId === null) return;
  try {
    await ctx.storage.sessions.delete(await sha256(sessionId));
  } catch (error) {
    ctx.logger.warn("the session a sign-in replaced could not be deleted (the sign-in goes on; it ends at its expiry)", describeError(error));
  }
}

/** Signs the session out: deletes it from storage; false when it was gone already (a concurrent request ended it). */
export async function deleteSession(ctx: Context, session: ConsoleSession): Promise<boolean> {
  return ctx.storage.sessions.delete(session.record.idHash);
}

/**
 * Signs the session's account out everywhere: deletes every session of the account, the request's
 * own included (`sessions.deleteByAccount`); returns how many the store deleted.
 */
export async function deleteAccountSessions(ctx: Context, session: ConsoleSession): Promise<number> {
  return ctx.storage.sessions.deleteByAccount(session.account.id);
}
