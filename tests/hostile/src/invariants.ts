/**
 * The invariants every generated request is held to, whatever it was: never a 5xx, the documented
 * error shape of its surface, documented 2xx shapes, and, for a rejected request, an unchanged store.
 * Each check throws an `Error` naming what broke; fast-check reports it with the counterexample.
 */
import { ApiErrorCode, sha256 } from "@plantgate/core";
import { describeDiff, stringify, type StoreSnapshot } from "./snapshot.js";
import type { World } from "./world.js";

/** What a request got, read once. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body, or undefined when it is not JSON. */
  json: unknown;
}

export async function read(response: Response): Promise<Answer> {
  const text = await response.text();
  let json: unknown;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export class Violation extends Error {
  override readonly name = "Violation";
}

export function fail(what: string, answer?: Answer): never {
  throw new Violation(answer ? `${what}\n  got ${answer.status} ${answer.text.slice(0, 600)}` : what);
}

/** RFC 6749 §5.2 codes, plus RFC 7009 §2.2.1 `unsupported_token_type`; 5xx codes are never acceptable here. */
export const OAUTH_CODES = new Set([
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope",
  "unsupported_token_type",
]);

/** RFC 6749 §5.2: error_description is limited to %x20-21 / %x23-5B / %x5D-7E. */
const DESCRIPTION = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/;

const codes = (...names: (keyof typeof ApiErrorCode)[]) => new Set<number>(names.map((n) => ApiErrorCode[n]));

/** Which API error numbers may come with which status. */
export const API_CODES_BY_STATUS: Record<number, Set<number>> = {
  400: codes("invalidJson", "notAnObject", "missingField", "wrongType", "outOfRange", "duplicateId", "bodyTooLarge", "unsupportedMediaType", "invalidValue", "invalidPage", "invalidPageSize", "repeatedParameter"),
  401: codes("missingToken", "invalidToken", "invalidAuthorizationHeader"),
  403: codes("insufficientScope"),
  404: codes("notFound"),
  405: codes("methodNotAllowed"),
  // Unsupported media type may also be answered 415 by a stricter version; both carry 1008.
  415: codes("unsupportedMediaType"),
  413: codes("bodyTooLarge"),
  429: codes("tooManyAttempts"),
};

function keysOf(value: unknown): string[] | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  return Object.keys(value).sort();
}

/** Never a 5xx, whatever the request. */
export function noServerError(a: Answer): void {
  if (a.status >= 500) fail(`a 5xx for a generated request`, a);
}

/**
 * The token/revocation/introspection error shape: `{error, error_description?}` with an RFC code,
 * the status RFC 6749 §5.2 gives it, `Cache-Control: no-store` (§5.1), and `WWW-Authenticate` on 401.
 */
export function oauthError(a: Answer, opts: { head?: boolean } = {}): string {
  noServerError(a);
  if (a.status < 400) fail("expected an OAuth error", a);
  if (a.headers.get("cache-control") !== "no-store") fail("an OAuth error without Cache-Control: no-store", a);
  if (opts.head) return "";
  const body = a.json as Record<string, unknown>;
  const keys = keysOf(body);
  if (!keys || !keys.includes("error") || keys.some((k) => k !== "error" && k !== "error_description")) fail("not {error, error_description?}", a);
  // RFC 6749 has no lock-out code; temporarily_unavailable (§4.1.2.1) is the registered "retry later".
  const lockout = a.status === 429 && body.error === "temporarily_unavailable";
  if (typeof body.error !== "string" || (!OAUTH_CODES.has(body.error) && !lockout)) fail(`error is not an RFC code`, a);
  if (body.error_description !== undefined && (typeof body.error_description !== "string" || !DESCRIPTION.test(body.error_description))) {
    fail("error_description has characters RFC 6749 §5.2 forbids", a);
  }
  const code = body.error;
  if (a.status === 429) {
    if (!/^[1-9]\d*$/.test(a.headers.get("retry-after") ?? "")) fail("429 without a Retry-After in seconds", a);
  } else if (a.status === 405) {
    if (!a.headers.get("allow")) fail("405 without Allow", a);
  } else if (code === "invalid_client") {
    if (a.status !== 401) fail("invalid_client must be 401 (RFC 6749 §5.2 with HTTP authentication)", a);
    if (!/^Basic\b/.test(a.headers.get("www-authenticate") ?? "")) fail("401 invalid_client without WWW-Authenticate: Basic", a);
  } else if (a.status !== 400) {
    fail(`${code} with status ${a.status}`, a);
  }
  return code;
}

/** The API error shape `{error: int32, message: string}` with a documented number for its status. */
export function apiError(a: Answer, opts: { head?: boolean } = {}): number {
  noServerError(a);
  const allowed = API_CODES_BY_STATUS[a.status];
  if (!allowed) fail(`an API error with an undocumented status`, a);
  if (a.status === 405 && !a.headers.get("allow")) fail("405 without Allow", a);
  if (a.status === 401 && !/^Bearer\b/.test(a.headers.get("www-authenticate") ?? "")) fail("401 without WWW-Authenticate: Bearer", a);
  if (a.status === 429 && !/^[1-9]\d*$/.test(a.headers.get("retry-after") ?? "")) fail("429 without Retry-After", a);
  if (opts.head) {
    if (a.text !== "") fail("a body on a HEAD response", a);
    return 0;
  }
  if (!(a.headers.get("content-type") ?? "").startsWith("application/json")) fail("an API error that is not application/json", a);
  const body = a.json as Record<string, unknown>;
  const keys = keysOf(body);
  if (!keys || keys.join() !== "error,message") fail("not exactly {error, message}", a);
  if (!Number.isInteger(body.error) || (body.error as number) < -(2 ** 31) || (body.error as number) >= 2 ** 31) fail("error is not an int32", a);
  if (!allowed.has(body.error as number)) fail(`error ${String(body.error)} is not documented for status ${a.status}`, a);
  if (typeof body.message !== "string" || body.message === "") fail("message is not a non-empty string", a);
  return body.error as number;
}

/**
 * Nothing secret in any log line or security event: no client secret or password of the world,
 * even inside a longer value.
 */
export function logsAreClean(world: World): void {
  for (const line of world.events) {
    for (const secret of world.secrets) {
      if (line.includes(secret) || line.includes(encodeURIComponent(secret))) fail(`a secret appeared in a security event: ${line.slice(0, 60)}`);
    }
  }
  world.events.length = 0;
  for (const entry of world.logs) {
    const line = entry.message + entry.context;
    for (const secret of world.secrets) {
      if (line.includes(secret) || line.includes(encodeURIComponent(secret))) fail(`a secret appeared in a log line: ${entry.message}`);
    }
  }
  // Unexpected errors would have been 5xx already; only the expected warnings may be logged.
  const unexpected = world.logs.filter((e) => e.level === "error");
  if (unexpected.length > 0) fail(`error logged: ${unexpected.map((e) => `${e.message} ${e.context}`).join("; ").slice(0, 500)}`);
  world.logs.length = 0;
}

/**
 * The whole run's output check: nothing a request carried or an answer issued (secrets, passwords,
 * access and refresh tokens, also percent-encoded) and no SHA-256 of a secret appears in what the
 * server logged (its JSON lines: events and errors) or in its metrics.
 */
export async function outputIsClean(world: World): Promise<void> {
  const output = await world.output();
  // A value with a lone surrogate has no percent-encoding; then only its other forms are looked for.
  const encodeURIComponent = (v: string) => {
    try {
      return globalThis.encodeURIComponent(v);
    } catch {
      return v;
    }
  };
  for (const value of world.carried) {
    if (output.includes(value) || output.includes(encodeURIComponent(value)) || output.includes(JSON.stringify(value).slice(1, -1))) {
      const line = output.split("\n").find((l) => l.includes(value) || l.includes(encodeURIComponent(value)) || l.includes(JSON.stringify(value).slice(1, -1))) ?? "";
      const fields = Object.entries((line.startsWith("{") ? JSON.parse(line) : {}) as Record<string, unknown>)
        .filter(([, v]) => typeof v === "string" && (v.includes(value) || v.includes(encodeURIComponent(value))))
        .map(([k]) => k);
      fail(`something a request carried (${value.slice(0, 12)}...) appeared in the server's output, in ${fields.join(", ") || "a line"} of: ${line.replace(value, "<carried>").slice(0, 300)}`);
    }
  }
  for (const secret of world.secrets) if (output.includes(await sha256(secret))) fail("the hash of a secret appeared in the server's output");
}

/**
 * Stands, in an expected snapshot of a real-time world, for the time the server stamped a change
 * with: it matches any time read between the start and the end of the request.
 */
const STAMPED = -0.5;

/** Whether `after` is `expected`, a {@link STAMPED} leaf of `expected` matching any number within `window`. */
function sameWithin(expected: unknown, after: unknown, window: [number, number]): boolean {
  if (expected === STAMPED) return typeof after === "number" && after >= window[0] && after <= window[1];
  if (typeof expected !== "object" || expected === null || typeof after !== "object" || after === null) return expected === after;
  if (Array.isArray(expected) !== Array.isArray(after)) return false;
  const [ek, ak] = [Object.keys(expected), Object.keys(after)];
  if (ek.length !== ak.length || ek.some((k, i) => k !== ak[i])) return false;
  return ek.every((k) => sameWithin((expected as Record<string, unknown>)[k], (after as Record<string, unknown>)[k], window));
}

/**
 * A successful client authentication records the secret's use (`lastUsedAt`, at most once a minute,
 * whatever the grant's outcome: core's client-secrets.ts). In process the clock stands still and
 * setup recorded every use already, so it never moves; on the real clock of workerd it moves to the
 * request's time on a refused grant with a good client too. Copies that one move (a secret's
 * `lastUsedAt` last recorded a minute or more before the request, now within `window`) from
 * `after` into `before`; any other change stays for the comparison to find.
 */
function allowSecretUse(before: StoreSnapshot, after: StoreSnapshot, window: [number, number]): void {
  type Secret = { id: string; lastUsedAt: number | null };
  type Client = { clientId: string; secrets?: Secret[] };
  for (const b of before.clients as Client[]) {
    const a = (after.clients as Client[]).find((c) => c.clientId === b.clientId);
    for (const s of b.secrets ?? []) {
      const t = a?.secrets?.find((x) => x.id === s.id)?.lastUsedAt;
      if (typeof t !== "number" || t === s.lastUsedAt || t < window[0] || t > window[1]) continue;
      if (s.lastUsedAt === null || s.lastUsedAt <= window[0] - 60_000) s.lastUsedAt = t;
    }
  }
}

/** The console's idle timeout and session lifetime the workerd worlds run with (the defaults). */
const CONSOLE_IDLE_MS = 1800_000;
const CONSOLE_SESSION_TTL_MS = 28_800_000;

/**
 * A console request that passes the session and CSRF checks moves its session's idle end
 * (`sessions.touch`), whatever the handler answers next (a 400 for a bad body included): README,
 * Management console. The end is written only once it moves by more than a step (60 s), so it
 * never happens where the clock stands still, and on workerd's moving clock only once a world has
 * lived a minute (a chunk of 1000 console requests takes about that). Copies that one move (a
 * session whose only change is an `expiresAt` moved forward to the request's time plus the idle
 * window, or to its sign-in plus the lifetime) from `after` into `before`; any other change stays
 * for the comparison to find.
 */
function allowSessionSlide(before: StoreSnapshot, after: StoreSnapshot, window: [number, number]): void {
  type Session = { idHash: string; accountId: string; csrfHash: string; createdAt: number; expiresAt: number } | null;
  for (const b of before.sessions as Session[]) {
    if (b === null) continue;
    const a = (after.sessions as Session[]).find((x) => x?.idHash === b.idHash);
    if (!a || a.accountId !== b.accountId || a.csrfHash !== b.csrfHash || a.createdAt !== b.createdAt || a.expiresAt <= b.expiresAt) continue;
    const lifetimeEnd = b.createdAt + CONSOLE_SESSION_TTL_MS;
    const slid = a.expiresAt >= window[0] + CONSOLE_IDLE_MS && a.expiresAt <= window[1] + CONSOLE_IDLE_MS;
    if ((slid && a.expiresAt <= lifetimeEnd) || a.expiresAt === lifetimeEnd) b.expiresAt = a.expiresAt;
  }
}

/**
 * Runs `request` and checks the store: when `rejected(answer)` says the request was refused, the
 * snapshot must be unchanged and no write method (but the attempt counters) may have been called.
 * `expectedChangeFor(answer)` describes a documented exception (e.g. a replayed refresh token revokes its
 * family, RFC 9700 §4.14.2): it edits the "before" snapshot into what "after" must then be (`at`:
 * the time the server stamps the change with), and names the write calls that this takes.
 *
 * On workerd (`world.realTime`) the Worker's write calls are out of sight (the recording storage
 * wraps Node's side of D1 only), so "no write method called" is not checked there; the stored state
 * is, in full: the snapshot reads every row of D1's unlistable stores, whoever wrote it. The time the
 * Worker stamps a change with is known only to lie between the clock's readings before and after
 * the request, and the change may be found made or not made (as in process, where it is applied
 * only when its write was called: a family revoked already is not revoked again). A client secret's
 * `lastUsedAt` may move to the request's time (see {@link allowSecretUse}), and a console session's
 * idle end forward to it plus the idle window (see {@link allowSessionSlide}).
 */
/**
 * What revoking a refresh family writes (revocation of a refresh token, reuse of a rotated one): its
 * tokens revoked at the request's time, and one revoked entry, `sid:<family>`, for the access
 * tokens issued with it (RFC 7009 §2.1; since 2026-12-01).
 */
export function familyRevocation(family: string): { writes: string[]; apply(before: StoreSnapshot, at: number): void } {
  return {
    writes: ["refreshTokens.revokeFamily", "revokedTokens.add"],
    apply(before, at) {
      for (const [, r] of before.refresh) if (r && r.familyId === family && r.revokedAt === null) r.revokedAt = at;
      const entry = `sid:${family}`;
      if (!before.revoked.some(([j]) => j === entry)) before.revoked.push([entry, true]);
      before.revoked.sort((x, y) => (x[0] < y[0] ? -1 : 1));
    },
  };
}

export async function withStoreCheck(
  world: World,
  run: () => Promise<Answer>,
  rejected: (a: Answer) => boolean,
  expectedChangeFor?: (answer: Answer) => { writes: string[]; apply(before: StoreSnapshot, at: number): void } | undefined,
): Promise<Answer> {
  world.rec.takeWrites();
  const before = await world.snapshot();
  const startedAt = world.clock.now;
  const answer = await run();
  const endedAt = world.clock.now;
  const writes = world.rec.takeWrites().filter((w) => w.aggregate !== "attempts" && w.aggregate !== "audit").map((w) => `${w.aggregate}.${w.method}`);
  if (rejected(answer)) {
    const expectedChange = expectedChangeFor?.(answer);
    const unexpected = writes.filter((w) => !expectedChange?.writes.includes(w));
    if (unexpected.length > 0) fail(`a checked request wrote: ${unexpected.join(", ")}`, answer);
    const after = await world.snapshot();
    const a = stringify(after);
    if (world.realTime) {
      allowSecretUse(before, after, [startedAt, endedAt]);
      allowSessionSlide(before, after, [startedAt, endedAt]);
      if (a === stringify(before)) return answer;
      if (expectedChange) {
        expectedChange.apply(before, STAMPED);
        if (sameWithin(JSON.parse(stringify(before)), JSON.parse(a), [startedAt, endedAt])) return answer;
      }
    } else if (expectedChange && writes.length > 0) expectedChange.apply(before, world.clock.now);
    const b = stringify(before);
    if (a !== b) fail(`a rejected request changed the store: ${describeDiff(b, a)}`, answer);
  }
  return answer;
}
