import { NetworkError, OAuthError, serverText, type GrantType, type OAuthErrorBody } from "./errors.js";
import { deadlineIn, isObject, parseJsonBody, pathOf, retryAfterOf, retryAfterOption, send, tooLargeHeads, unexpected, within, type Deadline, type FetchLike, type ReadResponse } from "./fetch.js";
import type { AssertionSigner } from "./assertion.js";
import type { CachedToken, PasswordCredentials, TokenCache, TokenInfo } from "./types.js";

/** The token endpoint's path under the base URL (the spec's `{base_url}/UserService/connect/token`). */
export const TOKEN_PATH = "/UserService/connect/token";

/** What the token manager needs; {@link createClient} builds it from the options. */
export interface TokenManagerConfig {
  baseUrl: string;
  clientId: string;
  /** Empty with `auth: "private_key_jwt"`. */
  clientSecret: string;
  auth: "basic" | "post" | "private_key_jwt";
  /** `private_key_jwt`: signs a fresh assertion for each token request. */
  assertion: AssertionSigner | null;
  /** Normalized scope, or undefined to let the server pick. */
  scope: string | undefined;
  credentials: PasswordCredentials | null;
  keepCredentials: boolean;
  fetch: FetchLike;
  /** Each token request's deadline, and each tokenCache hook call's (see `send`); 0: none. */
  timeoutMs: number;
  /** The most bytes of a response body read (see `send`). */
  maxResponseBytes: number;
  clock: () => number;
  refreshSkewMs: number;
  /** With a tokenCache: the widest spread of the renewal point into the skew window (see `fresh`). */
  refreshJitterMs: number;
  tokenCache: TokenCache | null;
  cacheKey: string;
  /** Registers background work with the runtime (see `ClientOptions.waitUntil`), or null. */
  waitUntil: ((promise: Promise<void>) => void) | null;
}

/** Hands out access tokens: cached, renewed before expiry, one request at a time. */
export interface TokenManager {
  /**
   * A fresh token: the cached one, or a new one (one token request however many callers wait); no
   * request within a Retry-After hold or the backoff; a due token still valid when its renewal
   * failed without an answer or was held, or its token request has waited too long for one.
   * `deadline`: the calling call's, which bounds the wait of a renewal it starts for a token an API
   * refused (see {@link refusedWaitMs}); none given: `timeoutMs` from now.
   */
  getToken(deadline?: Deadline | null): Promise<CachedToken>;
  /**
   * Marks `accessToken` as rejected (an API answered 401): the next {@link getToken} renews it,
   * unless another caller already has. Several callers reporting the same token cause one renewal.
   */
  invalidate(accessToken: string): void;
  /**
   * A new token now (with the refresh token when there is one), single-flight too; given a refused
   * access token, only if that one is still the current one, and as the renewal after an API's 401
   * (spread, see {@link refusedWaitMs}). Held as getToken is; never falls back to the token it
   * refuses, nor to one older than it (see stillValid).
   */
  refresh(rejectedAccessToken?: string, deadline?: Deadline | null): Promise<CachedToken>;
  /** Public view of a token (no refresh token). */
  info(token: CachedToken): TokenInfo;
}

/**
 * RFC 6749 App. B: for HTTP Basic, id and secret are form-urlencoded before they are joined with
 * ':' and base64-encoded, so a ':' or non-ASCII character in either survives. The encoded text is
 * ASCII, so `btoa` is safe.
 *
 * @example
 * basicAuthorization("my:client", "s3cret é"); // "Basic bXklM0FjbGllbnQ6czNjcmV0KyVDMyVBOQ=="
 */
export function basicAuthorization(clientId: string, clientSecret: string): string {
  return `Basic ${btoa(`${formEncode(clientId)}:${formEncode(clientSecret)}`)}`;
}

/** application/x-www-form-urlencoded serialization of one value (space -> '+'). */
function formEncode(value: string): string {
  return new URLSearchParams([["", value]]).toString().slice(1);
}

/** Builds the token manager. */
export function createTokenManager(options: TokenManagerConfig): TokenManager {
  // Split off the credentials so that this variable holds the only reference to the password:
  // with keepCredentials false it is dropped, and nothing else keeps it alive.
  let { credentials, ...config } = options;
  const { clock, tokenCache: cache } = config;
  const grant: GrantType = credentials ? "password" : "client_credentials";
  let current: CachedToken | null = null;
  let inflight: Promise<CachedToken> | null = null;
  /** Access tokens an API rejected: never handed out again, even if a cache still holds them. */
  const rejected = new Set<string>();
  /** Set when the session cannot go on (refresh token rejected, no credentials to log in again). */
  let ended: OAuthError | null = null;
  /**
   * The client's clock as it should read now for something measured from `mark`: never earlier than
   * it last read for that mark, and at least as far on from then as the monotonic clock
   * (`performance.now()`) went since; the mark moves on to this reading. `clock` is a wall clock
   * (Date.now), and a wall clock steps: NTP, a VM or laptop resumed from suspend, an operator setting
   * it. Stepped back, it does not turn back what is measured from `mark` (a window, a token's
   * lifetime: a token once due stays due); stepped forward (or with the monotonic clock standing
   * still through a suspend), the clock is taken. A test's manual clock moves everything as before
   * (it is the larger unless real time passed further). Until 2026-11-30 the windows and token
   * lifetimes were measured on `clock` alone: a step back added itself to a backoff window or a
   * Retry-After hold (by up to the time already waited; one before the window's start ended it at
   * once instead), and kept a token fresh past its expiry for as long as the step.
   */
  const nowSince = (mark: Mark): number => {
    const mono = performance.now();
    const now = Math.max(clock(), mark.at + (mono - mark.mono));
    mark.at = now;
    mark.mono = mono;
    return now;
  };
  /** Both clocks now, for {@link nowSince}. */
  const mark = (): Mark => ({ at: clock(), mono: performance.now() });
  /**
   * Where each recent access token's lifetime is measured from (see {@link nowSince}): the start of
   * the token request that brought it, or when this client first read it from the shared cache.
   * Bounded as {@link rejected}: a token without one (long replaced) is judged by `clock` alone.
   */
  const marks = new Map<string, Mark>();
  const markToken = (accessToken: string, mark: Mark): void => {
    if (marks.has(accessToken)) return;
    marks.set(accessToken, mark);
    if (marks.size > 16) marks.delete(marks.keys().next().value!);
  };
  /** The clock as it should read now for `t`'s expiry (see {@link nowSince}). */
  const nowFor = (t: CachedToken): number => {
    const mark = marks.get(t.accessToken);
    return mark === undefined ? clock() : nowSince(mark);
  };
  /**
   * A 429 or 503 of the token endpoint with a `Retry-After`, whatever its body (an OAuthError, or a
   * proxy's page: a NetworkError, see throwUnavailable): no token request is sent before
   * `until`, on the clock as {@link nowSince} reads it from `from` (so no longer in real time than
   * the hold, whatever steps the clock takes), calls reject with a new error like `error` that
   * counts down (see {@link waiting}).
   */
  let hold: { from: Mark; until: number; error: NetworkError | OAuthError } | null = null;
  /**
   * Token requests in a row that got no usable answer ({@link unanswered}); any token in hand, or
   * any other answer of the server, sets it back to 0.
   */
  let failures = 0;
  /**
   * The backoff after the second and each later such failure in a row ({@link backoffMs}): no token
   * request is sent before `until` (as `hold`), calls that need a new token reject with a new error
   * like `error` (the last failure) that says the seconds left. Before 2026-11-30 every call sent a
   * token request into an outage (a reset connection, a 500 answers at once): a service's hundreds
   * of calls a second, hundreds of token requests a second at a server trying to recover. The
   * background retries of a refresh without an answer are not held by it (their own schedule).
   */
  let pause: { from: Mark; until: number; error: NetworkError | OAuthError } | null = null;
  /**
   * The errors of token requests that failed without settling anything ({@link unanswered}, or
   * held by a Retry-After), and those of calls held: a call that can still use a valid token gets
   * that token instead (see getToken). Not a hook's error.
   */
  const transient = new WeakSet<object>();
  /** The errors of calls the backoff held ({@link pause}): a background retry is not held by it. */
  const backedOff = new WeakSet<object>();
  /**
   * How long a token request may keep the calls that have a token still valid waiting (ms; see
   * getToken): {@link PATIENCE_MS}, at most half of timeoutMs, so such a call has at least half of
   * its deadline left for its API request.
   */
  const patience = config.timeoutMs > 0 ? Math.min(PATIENCE_MS, config.timeoutMs / 2) : PATIENCE_MS;
  /**
   * The renewal in flight's: resolved once one of its token requests has waited {@link patience} ms
   * for an answer (by a timer set beside the request's own timeout, so it runs wherever that one
   * does). Not while the renewal waits for a tokenCache hook: a hook's error reaches the caller.
   */
  let lagging: { promise: Promise<void>; resolve: () => void } | null = null;
  /** The shared cache's token as the renewal in flight (or the last one) read it. */
  let lastRead: CachedToken | null = null;
  /**
   * Access tokens a newer one of this process replaced: each former current token, and the cache's
   * token a renewal read but did not take. Never the still-valid fallback (see stillValid); bounded,
   * as {@link rejected}.
   */
  const superseded = new Set<string>();
  /**
   * The server refused this client's secret (`invalid_client`): no token request is sent again,
   * calls reject with this error (a fresh token in the shared cache is still taken). See tokenRequest.
   */
  let refusedSecret: OAuthError | null = null;
  /**
   * The server refused this client's client_credentials grant for good (`unauthorized_client`,
   * `unsupported_grant_type`, `invalid_scope`): not sent again, calls reject with this error (a
   * fresh token in the shared cache is still taken). See runGrant.
   */
  let refusedGrant: OAuthError | null = null;

  /**
   * Where in the skew window this client renews, from 0 (its start, refreshSkewMs before expiry)
   * to 1 (refreshJitterMs later): drawn once per client, and only with a shared cache. Processes
   * sharing one cache entry hold the same token and found it due at the same moment, so each
   * presented the same refresh token: past the server's grace replays (refreshGraceMaxUses, 10)
   * that is reuse, and the family is revoked. Spread out, the first to renew caches the new token
   * and the others, reading the cache when their own point comes, find it fresh and send nothing.
   */
  const spread = cache ? Math.random() * config.refreshJitterMs : 0;

  const fresh = (t: CachedToken): boolean => {
    if (rejected.has(t.accessToken)) return false;
    const skew = Math.min(config.refreshSkewMs, (t.expiresAt - t.obtainedAt) / 2);
    // At most two thirds of the (capped) skew: at least a third of it is kept before expiry.
    return nowFor(t) < t.expiresAt - skew + Math.min(spread, (skew * 2) / 3);
  };

  /**
   * How long a renewal of a token an API refused (a 401) waits, with a shared cache, before it reads
   * the cache again and, finding only the refused token there, presents the refresh token (ms): a
   * random point of [0, min(refreshJitterMs, {@link REFUSED_SPREAD_MAX_MS}, half of what is left
   * of the deadline of the call that starts it, half of timeoutMs)), drawn anew for each renewal,
   * and ended sooner for a call that joins it with less time left ({@link spreadLimit}): each call
   * keeps time for the token request and its API request, and the renewal is never taken for
   * {@link stalled}. When every token is refused at once (a signing key revoked after a leak, a
   * resource server dropping a key), every process sharing the entry renews at once: until
   * 2026-12-02 each presented the same refresh token within milliseconds (the jitter of `spread`
   * took only due renewals), past the server's grace replays (refreshGraceMaxUses, 10) that was
   * reuse, and the family was revoked (14 processes signed the user out). Spread out, the first to
   * wake renews and caches the new token, and the others find it there and send nothing. No wait
   * without a cache (nothing to find there), without a refresh token to present (a grant is not
   * reuse), for a background retry, or for refresh() without a refused token (asked for now).
   */
  const refusedWaitMs = (deadline: Deadline | null): number => {
    if (!cache) return 0;
    let most = Math.min(config.refreshJitterMs, REFUSED_SPREAD_MAX_MS);
    if (config.timeoutMs > 0) most = Math.min(most, config.timeoutMs / 2);
    if (deadline !== null) most = Math.min(most, (deadline.at - performance.now()) / 2);
    return most > 0 ? Math.random() * most : 0;
  };
  /**
   * The latest moment (`performance.now()`) the wait of {@link refusedWaitMs} of the renewal in
   * flight may end: halfway through what was left of the deadline of each call that joined the
   * renewal, as the starting call's bounds its draw, so a joiner keeps the other half for the token
   * request and its API request. Until 2026-12-02 only the starting call's deadline bounded it: a
   * call joining with less time left than the wait still had to run (its API request answered 401
   * late, or it came later with a token an API had refused) failed with `timeout` `(no access token
   * yet)` where without the wait it got the token. Infinity: no joiner bounds it.
   */
  let spreadLimit = Infinity;
  /** Sets the running wait's timer again after {@link spreadLimit} moved; null while none runs. */
  let spreadRearm: (() => void) | null = null;
  /** A call joining the renewal in flight with `deadline`: the wait ends halfway to it at the latest. */
  const boundSpread = (deadline: Deadline): void => {
    const now = performance.now();
    const limit = now + (deadline.at - now) / 2;
    if (limit >= spreadLimit) return;
    spreadLimit = limit;
    spreadRearm?.();
  };
  /** The wait of {@link refusedWaitMs}: `ms`, ended sooner by {@link spreadLimit}. */
  const spreadWait = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const end = performance.now() + ms;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = (): void => {
        clearTimeout(timer);
        if (spreadRearm === arm) spreadRearm = null;
        resolve();
      };
      const arm = (): void => {
        clearTimeout(timer);
        timer = setTimeout(done, Math.max(0, Math.min(end, spreadLimit) - performance.now()));
      };
      spreadRearm = arm;
      arm();
    });

  const canRunGrant = () => grant === "client_credentials" || credentials !== null;

  /**
   * Hands background work to the runtime's `waitUntil` (see `ClientOptions.waitUntil`): in a Worker,
   * a timer set while a request is served never fires once its response is sent unless registered.
   */
  const keepAlive = (work: Promise<void>): void => {
    try {
      const returned: unknown = config.waitUntil?.(work);
      // An async waitUntil (a wrapper that looks something up first) is a function too: its
      // rejection was an unhandled one, which ends a Node process (until 2026-11-30).
      if (typeof (returned as { then?: unknown } | null)?.then === "function") (returned as PromiseLike<unknown>).then(undefined, () => {});
    } catch {
      // A runtime refusing the registration leaves the work as it is without one.
    }
  };

  /**
   * Calls a cache hook, bounded by timeoutMs: a hook that never answers (a lost Redis reply) would
   * otherwise hold the shared renewal, and with it every later call of this client, for good. The
   * hook gets a signal of its own, aborted (a `TimeoutError` DOMException as its reason) when the
   * client gives up on it, so it can cancel what it is waiting for.
   */
  function hook<T>(name: "get" | "set", call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ms = config.timeoutMs;
    const controller = new AbortController();
    return within(step(), Promise.resolve().then(() => call(controller.signal)), () => {
      const message = `tokenCache.${name} gave no answer within ${ms} ms`;
      controller.abort(new DOMException(message, "TimeoutError"));
      return new NetworkError("timeout", message);
    });
  }
  /**
   * The deadline of the token request or hook call the renewal (or a catch-up write) is waiting
   * for, each one's own timeoutMs, remembered as it starts: see {@link stalled}.
   */
  let stepEnd = Infinity;
  const step = (): ReturnType<typeof deadlineIn> => {
    const deadline = deadlineIn(config.timeoutMs);
    stepEnd = deadline?.at ?? Infinity;
    return deadline;
  };
  /**
   * Whether the work in flight has gone a whole timeoutMs past its current step's deadline: that
   * step's timer was never run. Seen in workerd: a timer set while serving a request never fires
   * once that request's response is sent (unless the work was handed to waitUntil), nor does a
   * subrequest it made answer, so a renewal started by a call that gave up (its signal aborted,
   * its deadline passed) and left with its response never settled, and every later call of the
   * client in that isolate joined it and failed at its own deadline, for good. Elsewhere a step's
   * timer ends it at its deadline (with timeoutMs 0 there is no deadline: never stalled).
   */
  const stalled = (): boolean => performance.now() > stepEnd + config.timeoutMs;

  const cacheSet = (token: CachedToken) => hook("set", (signal) => cache!.set(config.cacheKey, token, signal));

  /**
   * A token the shared cache should hold but whose write failed (the `set` hook threw or timed
   * out). Until it lands the cache holds the refresh token this one replaced, and another process
   * renewing from the cache presents that one: within the server's grace window it is answered
   * with this very token, after it it is reuse and the whole family is revoked (users signed out).
   * So the write is tried again ({@link catchUp}) until it lands or a newer token supersedes it.
   */
  let behind: CachedToken | null = null;
  /** The catch-up write in flight; a renewal waits for it, so an older token never lands after a newer one. */
  let catching: Promise<void> | null = null;
  /** The timed retries of the current {@link behind}'s write. */
  const catchUpRetry = backoff(CATCH_UP_RETRY_MS, () => catchUp(true), keepAlive);
  /** When the last catch-up started (monotonic ms): calls start one at most once a second. */
  let lastCatchUp = -Infinity;

  /** Writes a renewal's token to the cache; a failed write leaves the cache behind (retried later). */
  async function store(token: CachedToken): Promise<void> {
    try {
      await cacheSet(token);
    } catch (error) {
      if (token.refreshToken !== null) {
        behind = token;
        // A timer still pending for an older failure (up to 32 s away) would otherwise be this
        // token's first retry: the schedule starts again from its first step (0.5 to 1 s) after this failure.
        catchUpRetry.reset();
        catchUpRetry.schedule();
      }
      throw error;
    }
    // The newest token is in: an older one still to be written is superseded.
    behind = null;
  }

  /**
   * Writes {@link behind} to the cache unless the cache already holds it or something it did not
   * replace (another process cached this token, e.g. from a grace replay, or rotated it further, or
   * began a new session): by lineage, only a token ours replaced, or nothing, is written over. Runs
   * in the background (its failure fails no call; it is tried again) and never beside a renewal.
   */
  function catchUp(timed = false): Promise<void> | undefined {
    const token = behind;
    if (token === null || catching !== null) return;
    if (inflight !== null) {
      // The renewal writes a newer token; if that write fails, it is the one retried.
      if (timed) catchUpRetry.schedule();
      return;
    }
    if (!timed && performance.now() - lastCatchUp < 1000) return;
    lastCatchUp = performance.now();
    step();
    const run = (async () => {
      try {
        const theirs = await readCache();
        if (await cacheIsBehind(theirs, token)) await cacheSet(token);
        if (behind === token) behind = null;
      } catch {
        if (behind === token) catchUpRetry.schedule();
      }
    })();
    const write: Promise<void> = run.finally(() => {
      if (catching === write) catching = null;
    });
    catching = write;
    keepAlive(write);
    return write;
  }

  /**
   * A refresh that got no usable answer (the request failed or timed out, or something other than
   * the server answered) may still have been carried out: the server rotated, and the answer that
   * held the new refresh token is lost. The server answers the same refresh token with that very
   * answer again within its grace window, and takes it for reuse after it (the family revoked, the
   * user signed out): so it is presented again in the background ({@link REFRESH_RETRY_MS} after
   * each such failure) rather than only at the next call, which may come after the window. A retry
   * is an ordinary renewal (single flight, the shared cache read first); an answer that settles
   * the token (a token, a refusal) ends the retries. An answer that does not ({@link undecided}: a
   * storage outage's 503, or a call held by its Retry-After) leaves them going: until 2026-11-30 it
   * ended them, and a call after the grace window presented the replaced token (reuse, the user
   * signed out). A call's own refresh lost once the steps are used up (an outage that swallowed a
   * loss and its four retries, no answer since) starts them again: until 2026-11-30 it got no retry
   * at all until some answer reset them, and a call after its grace window signed the user out.
   * A retry's own loss never does (at most four retries per loss of a call's request).
   */
  // Its failure fails no call; a failure without an answer, or with an undecided one, schedules the
  // next retry (while the delays last; a failure without an answer schedules it in obtain(); past
  // them, one more when a Retry-After hold ends, see retryAfterHold). A
  // retry that joined a call's renewal the backoff held (it sent nothing, and the backoff does not
  // hold a retry) runs once more on its own at once: until 2026-11-30 that step was spent, and with
  // calls coming all the time and a tokenCache (a held renewal is in flight while it reads the
  // cache) every step could be, the refresh then presented only after the backoff's window.
  const refreshRetry = backoff(
    REFRESH_RETRY_MS,
    async () => {
      for (let tries = 0; ; tries++) {
        try {
          await renewed(true);
          return;
        } catch (error) {
          if (backedOff.has(error as object) && tries < 3) continue;
          // The answer that set the hold counts whatever it was: a 503 without an OAuth error body
          // (a proxy's page) is no answer, not undecided, and with the steps used up its retry at
          // the hold's end was never made (until 2026-11-30; the user was signed out).
          if (saysNothing(error) && !refreshRetry.schedule()) retryAfterHold(error);
          return;
        }
      }
    },
    keepAlive,
  );

  /**
   * {@link undecided}, or the answer that set the Retry-After {@link hold} whatever its body (a
   * proxy's 503 page, one past maxResponseBytes): a 429 or 503 says nothing of the token.
   */
  const saysNothing = (error: unknown): boolean => undecided(error) || (hold !== null && hold.error === error);

  /** Whether the one retry at a hold's end ({@link retryAfterHold}) was set since the retries began. */
  let afterHold = false;
  /** The errors of calls (and retries) held by the Retry-After ({@link hold}): they sent nothing. */
  const heldByHold = new WeakSet<object>();
  /**
   * A retry of a lost refresh that failed with no step of {@link REFRESH_RETRY_MS} left while a
   * Retry-After holds the token requests (it was held, or its answer set the hold): one more retry
   * when the hold ends. Until 2026-11-30 a hold longer than the steps left (a Retry-After over about
   * 15 s) ended the retries with the refresh never presented again, and the next call, after the
   * server's grace window, was reuse (the user signed out). Once per loss (refreshAnswered clears
   * it with the timer); set again only when that retry was held itself, sending nothing (its timer
   * fired a moment before the hold's end, or a call's answer moved the hold on).
   */
  function retryAfterHold(error: unknown): void {
    const left = hold === null ? 0 : hold.until - nowSince(hold.from);
    if (left <= 0 || (afterHold && !heldByHold.has(error as object))) return;
    if (refreshRetry.after(Math.ceil(left))) afterHold = true;
  }

  /**
   * A refresh got an answer (a token or a refusal), or a renewal found a token otherwise (the
   * shared cache's, which another process may have recovered by the server's replay): nothing is
   * left to recover, and the next lost answer is retried from the first step (0.5 to 1 s after it)
   * again. Also how a call's loss after the steps were used up starts them again (see obtain).
   */
  function refreshAnswered(): void {
    refreshRetry.reset();
    afterHold = false;
  }

  async function cacheIsBehind(theirs: CachedToken | null, ours: CachedToken): Promise<boolean> {
    if (theirs === null) return true;
    if (theirs.refreshToken === null || theirs.refreshToken === ours.refreshToken) return false;
    const hash = await tokenHash(theirs.refreshToken);
    return hash !== null && (ours.lineage ?? []).includes(hash);
  }

  async function readCache(): Promise<CachedToken | null> {
    if (!cache) return null;
    const t = await hook("get", (signal) => cache.get(config.cacheKey, signal));
    if (!isCachedToken(t)) return null;
    // Its lifetime is measured from here on in this client (its expiresAt is the writer's clock).
    markToken(t.accessToken, mark());
    // An SDK from before 2026-12-01 wrote Number.MAX_SAFE_INTEGER for a token without expires_in
    // (no time a Date holds), and such a token lives until an API rejects it: capped as ours are.
    const read = t.expiresAt > LATEST_TIME ? { ...t, expiresAt: LATEST_TIME } : t;
    // A refresh token the server refused (invalid_grant, unauthorized_client, ...: see
    // REFUSED_FOR_GOOD) is never presented again, whoever cached
    // it: before 2026-11-29 every call in every process sharing the cache sent it once more.
    return read.refreshToken !== null && deadRefresh.has(read.refreshToken) ? { ...read, refreshToken: null } : read;
  }
  /** Refresh tokens refused for good ({@link REFUSED_FOR_GOOD}; bounded: only recent ones can still be in a cache). */
  const deadRefresh = new Set<string>();

  /**
   * The refresh token to present, ours or the cache's, by lineage: each token lists the hashes of
   * the refresh tokens it replaced ({@link CachedToken.lineage}), so when ours replaced the cache's
   * (a slow process wrote an older token over a newer one) ours is presented, and otherwise the
   * cache's (another process rotated ours, or no link is known: the shared state wins). Presenting
   * the older one after the server's grace window is reuse and revokes the family. Not decided by
   * comparing `obtainedAt`: each host's own clock, and a host running a minute ahead took its own
   * rotated token for the newer one.
   */
  async function newestRefreshToken(cached: CachedToken | null): Promise<string | null> {
    if (await replaced(current, cached)) return current!.refreshToken;
    return cached?.refreshToken ?? current?.refreshToken ?? null;
  }

  /** Whether `ours`'s refresh token replaced `theirs`'s (by lineage): theirs is the older one. */
  async function replaced(ours: CachedToken | null, theirs: CachedToken | null): Promise<boolean> {
    const mine = ours?.refreshToken ?? null;
    const other = theirs?.refreshToken ?? null;
    if (mine === null || other === null || mine === other) return false;
    const hash = await tokenHash(other);
    return hash !== null && (ours!.lineage ?? []).includes(hash);
  }

  /**
   * Counts a failed token request toward the backoff ({@link unanswered}), or, when the server
   * answered (a refusal, or a Retry-After it set a hold with), starts the count again.
   */
  function failed(error: unknown): void {
    if (!unanswered(error)) {
      failures = 0;
      pause = null;
      return;
    }
    transient.add(error);
    failures++;
    const ms = backoffMs(failures);
    if (ms > 0) {
      const from = mark();
      pause = { from, until: from.at + ms, error };
    }
  }

  /**
   * Whether a token request failed without a usable answer: a {@link NetworkError} of any reason
   * (no answer, not the protocol: a proxy's page, a malformed token answer, a redirect, a body too
   * large), or an OAuthError with a 429 or 5xx status; either only when it set no {@link hold} (no
   * usable Retry-After).
   */
  function unanswered(error: unknown): error is NetworkError | OAuthError {
    if (hold !== null && hold.error === error) return false;
    if (error instanceof NetworkError) return true;
    return error instanceof OAuthError && (error.status === 429 || error.status >= 500);
  }

  /**
   * The error of a call that sends nothing while the client waits until `until` after `original`
   * (a hold or the backoff): a new one of its class, each time, whose `retryAfter` is the seconds
   * left (rounded up, at least 1) and `cause` the original. Until 2026-11-30 a held call rejected
   * with the answer's own error, whose retryAfter stayed the answer's (up to 900 s and more while
   * the client asked again after 300 s).
   */
  function waiting(original: NetworkError | OAuthError, until: number, now: number, what: string): NetworkError | OAuthError {
    const seconds = Math.max(1, Math.ceil((until - now) / 1000));
    const error =
      original instanceof OAuthError
        ? new OAuthError(original.status, oauthBody(original), original.grantType, seconds, { cause: original })
        : new NetworkError(
            original.reason,
            `POST ${pathOf(config.baseUrl + TOKEN_PATH)} not sent: ${what}; the next one is sent in ${seconds} s at the earliest (last: ${original.message})`,
            original.status,
            { cause: original, retryAfter: seconds },
          );
    transient.add(error);
    notSent.add(error);
    return error;
  }

  /** Sets the {@link hold} of a 429's or 503's `Retry-After` (`ms`, from {@link holdMs}; 0: none) on the error of its answer. */
  function holdBy(error: NetworkError | OAuthError, ms: number): void {
    if (ms <= 0) return;
    const from = mark();
    hold = { from, until: from.at + ms, error };
    transient.add(error);
  }

  async function tokenRequest(
    grantType: GrantType,
    params: Record<string, string>,
    previous: Previous,
  ): Promise<CachedToken> {
    const form = new URLSearchParams({ grant_type: grantType, ...params });
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
    };
    if (config.assertion !== null) {
      // RFC 7523 §2.2; aud is the token endpoint URL (OIDC Core §9), a fresh jti each time.
      form.set("client_id", config.clientId);
      form.set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
      form.set("client_assertion", await config.assertion(config.baseUrl + TOKEN_PATH, clock()));
    } else if (config.auth === "basic") {
      headers.authorization = basicAuthorization(config.clientId, config.clientSecret);
    } else {
      form.set("client_id", config.clientId);
      form.set("client_secret", config.clientSecret);
    }
    // Expiry counts from before the request, so network time is on the safe side.
    const started = mark();
    const startedAt = started.at;
    let response: ReadResponse;
    const late = lagging;
    const patient = late === null ? undefined : setTimeout(late.resolve, patience);
    try {
      response = await send(config.fetch, config.baseUrl + TOKEN_PATH, { method: "POST", headers, body: form.toString(), redirect: "manual" }, step(), config.maxResponseBytes, clock);
    } catch (error) {
      // A 429's or 503's body past maxResponseBytes (a proxy's large page): its Retry-After, in
      // the head that was read, holds as a smaller body's does (until 2026-11-30 it was not read,
      // and the answer counted toward the backoff).
      const head = error instanceof NetworkError && (error.status === 429 || error.status === 503) ? tooLargeHeads.get(error) : undefined;
      if (head !== undefined) holdBy(error as NetworkError, holdMs(retryAfterOf({ headers: head }, clock())));
      failed(error);
      throw error;
    } finally {
      clearTimeout(patient);
    }
    let token: CachedToken;
    // The client's clock as the answer arrived: an RFC 850 Date's two-digit year is read against it.
    const arrived = clock();
    try {
      token = toCachedToken(response, grantType, startedAt, previous, arrived);
    } catch (error) {
      // The server said when to come back (a brute-force lock's 429, a storage outage's 503): until
      // then every call sent the request again into the refusal (until 2026-11-30). So did a
      // proxy's or load balancer's 429 or 503 without an OAuth error body (a NetworkError), whose
      // Retry-After was not read either (until 2026-11-30): whatever the body, it holds the same.
      const held = (response.status === 429 || response.status === 503) && (error instanceof OAuthError || error instanceof NetworkError) ? holdMs(retryAfterOf(response, arrived)) : 0;
      holdBy(error as NetworkError | OAuthError, held);
      // After the hold (set first): an answer with a Retry-After is not counted toward the backoff.
      failed(error);
      // A refused client secret is never presented again (until 2026-11-30 every call sent it):
      // this client's secret is a fixed string, and a secret is added to an existing client only by
      // the server making it, so one it refuses (revoked, expired, rotated away, mistyped) is never
      // accepted later (unless the client did not exist yet and is created with it). Sending it
      // again only counted toward the server's lock of this client id + address (plantgate: 10
      // failures), which then refuses every process on the host using the client id, the ones
      // already given the new secret during a rotation too. A private_key_jwt assertion is signed
      // anew each time and may pass later (a key the server fetches from jwks_uri, a clock put
      // right): not stopped.
      // Only a refusal's status (a 4xx but 429, see refusal): a 429 or 5xx is transient whatever its body.
      if (refusal(error) && error.error === "invalid_client" && config.assertion === null) {
        refusedSecret = error;
        credentials = null;
      }
      throw error;
    }
    // The backoff's count ends in renew: a token that arrived expired is no usable answer.
    markToken(token.accessToken, started);
    // A rotation: the new refresh token's lineage starts with the one it replaced.
    if (previous.refreshToken !== null && token.refreshToken !== previous.refreshToken) {
      const hash = await tokenHash(previous.refreshToken);
      if (hash !== null) return { ...token, lineage: [hash, ...previous.lineage].slice(0, LINEAGE) };
    }
    return previous.lineage.length > 0 ? { ...token, lineage: previous.lineage } : token;
  }

  async function runGrant(): Promise<CachedToken> {
    const scope: Record<string, string> = config.scope === undefined ? {} : { scope: config.scope };
    const previous: Previous = { refreshToken: null, scope: config.scope ?? "", lineage: [] };
    if (grant === "client_credentials") {
      try {
        return await tokenRequest("client_credentials", scope, previous);
      } catch (error) {
        // A client_credentials grant refused for good (see REFUSED_FOR_GOOD) is never sent again:
        // the client id, its secret and the scope option are fixed, so the same request gets the
        // same refusal whenever it is sent (the client may not use the grant, the server has none,
        // the scope is not granted). Every later call rejects with this error, sending nothing,
        // unless a shared cache holds a token another process obtained; a new client is the way on.
        // Until 2026-12-02 every call sent it again (a 4xx is not counted by the backoff). Not
        // invalid_grant: §5.2 gives it no meaning here (no grant is presented but the client's
        // authentication, whose refusal is invalid_client, see tokenRequest): sent again.
        if (refusedForGood(error) && error.error !== "invalid_grant") refusedGrant = error;
        throw error;
      }
    }
    const { username, password } = credentials!;
    try {
      return await tokenRequest("password", { username, password, ...scope }, previous);
    } catch (error) {
      // A refused password (wrong, changed since, account disabled) is never presented again: the
      // server counts each refusal toward its brute-force lock (plantgate: 10 per username and
      // address, 50 per username from anywhere), so presenting it at every call locked the real
      // user out (until 2026-11-30). Every later call rejects with this error, sending nothing,
      // unless a shared cache holds a token another process obtained. So for the other refusals
      // that hold whenever this request is sent (see REFUSED_FOR_GOOD: this client may not use the
      // password grant, the server has none, the scope it asks for, a fixed option, is not
      // granted): until 2026-12-02 only invalid_grant stopped it, and every call sent the password
      // again into the same refusal.
      if (refusedForGood(error)) {
        credentials = null;
        ended = error;
      }
      throw error;
    }
  }

  /** The shared cache's token when it is fresh (as {@link obtain} takes it), else null. */
  async function fromCache(cached: CachedToken | null): Promise<{ token: CachedToken; cached: boolean } | null> {
    if (!cached || !fresh(cached)) return null;
    // Never back to an older refresh token: when ours replaced the cache's (its write was lost,
    // or the cache holds a grace replay of a token we rotated since, with a new access token),
    // the cache's access token is used with our refresh token, and that pair is written (the
    // cache is behind). Taking the cache's pair whole lost ours: once the grace window had
    // passed, the next refresh presented the replaced token, which is reuse (family revoked,
    // user signed out). Seen until 2026-11-29 with a best-effort hook whose writes failed.
    if (await replaced(current, cached)) return { token: { ...cached, refreshToken: current!.refreshToken, lineage: current!.lineage! }, cached: false };
    return { token: cached, cached: true };
  }

  /**
   * Finds or fetches a fresh token; `cached` when it came from the shared cache. `waitMs`: before
   * presenting a refresh token, wait this long and read the cache again (see {@link refusedWaitMs}).
   */
  async function obtain(background: boolean, waitMs = 0): Promise<{ token: CachedToken; cached: boolean }> {
    let cached = await readCache();
    lastRead = cached;
    const found = await fromCache(cached);
    if (found !== null) return found;
    if (refusedSecret !== null) throw refusedSecret;
    if (refusedGrant !== null) throw refusedGrant;
    if (hold !== null) {
      const now = nowSince(hold.from);
      if (now < hold.until) {
        const error = waiting(hold.error, hold.until, now, "held by the Retry-After");
        heldByHold.add(error);
        throw error;
      }
      hold = null;
    }
    if (pause !== null) {
      const now = nowSince(pause.from);
      if (now < pause.until) {
        if (!background) {
          const error = waiting(pause.error, pause.until, now, `${failures} token requests in a row got no usable answer`);
          backedOff.add(error);
          throw error;
        }
      } else pause = null;
    }
    let refreshToken = await newestRefreshToken(cached);
    if (refreshToken !== null && waitMs > 0) {
      // A token an API refused (see refusedWaitMs): another process sharing the entry may renew
      // it meanwhile, and its token is taken instead of presenting the same refresh token again.
      await spreadWait(waitMs);
      cached = await readCache();
      lastRead = cached;
      const theirs = await fromCache(cached);
      if (theirs !== null) return theirs;
      refreshToken = await newestRefreshToken(cached);
    }
    if (refreshToken !== null) {
      const source = cached?.refreshToken === refreshToken ? cached : current;
      const scope = source?.scope ?? config.scope ?? "";
      try {
        const token = await tokenRequest("refresh_token", { refresh_token: refreshToken }, { refreshToken, scope, lineage: source?.lineage ?? [] });
        refreshAnswered();
        return { token, cached: false };
      } catch (error) {
        // An OAuth 5xx to a refresh counts as a lost answer too: plantgate answers 503 when the
        // rotation's one write failed, and a write that failed on the wire (a timeout, a connection
        // lost at COMMIT) may have landed. Until 2026-12-02 it started no retry, and a call after
        // the grace window presented the rotated token: reuse, the user signed out.
        if (noAnswer(error) || (error instanceof OAuthError && error.status >= 500)) {
          // A call's own refresh lost once the steps are used up (none pending): a separate loss,
          // which gets steps of its own (see refreshRetry). A retry's own loss never starts them again.
          if (!background && refreshRetry.spent()) refreshAnswered();
          refreshRetry.schedule();
        } else if (!saysNothing(error)) refreshAnswered();
        // A refusal that holds for this refresh token whenever it is presented (see
        // REFUSED_FOR_GOOD): dropped, never presented again. Until 2026-12-02 only invalid_grant
        // was: a client that lost the refresh_token grant (unauthorized_client) presented its
        // refresh token again at every call, never fell back to a password it kept, and left the
        // token in the shared cache for every other process to present.
        if (!refusedForGood(error)) throw error;
        if (current?.refreshToken === refreshToken) current = { ...current, refreshToken: null };
        deadRefresh.add(refreshToken);
        if (deadRefresh.size > 16) deadRefresh.delete(deadRefresh.values().next().value!);
        // Remembered before the cache is looked at: a hook failing below ends this call with its
        // error, and every later call must still end with this one, not an untyped Error.
        if (!canRunGrant()) ended = error;
        // Another process may have won a race for the same refresh token and cached its result.
        const theirs = await readCache();
        if (theirs && theirs.refreshToken !== refreshToken && fresh(theirs)) return { token: theirs, cached: true };
        // Still the refused one in the shared cache: it goes, so other processes do not present it.
        if (cache && cached?.refreshToken === refreshToken && theirs !== null && theirs.accessToken === cached.accessToken) {
          await cacheSet({ ...cached, refreshToken: null });
        }
        if (!canRunGrant()) throw error;
        return { token: await runGrant(), cached: false };
      }
    }
    if (!canRunGrant()) {
      // No refresh token and no password: the token in hand came from the shared cache, where a
      // process whose refresh the server refused wrote it without its refresh token, and this
      // client dropped the password (keepCredentials: false). The session is over here too: the
      // same invalid_grant as that process got, for this call and every later one (until
      // 2026-12-01 an untyped Error, outside PlantgateClientError).
      ended ??= new OAuthError(
        400,
        {
          error: "invalid_grant",
          error_description: "the session's refresh token was refused (as found in the shared token cache) and the password is not kept (keepCredentials: false): sign in again",
        },
        "refresh_token",
      );
      throw ended;
    }
    return { token: await runGrant(), cached: false };
  }

  async function renew(background: boolean, waitMs: number): Promise<CachedToken> {
    // A catch-up write in flight lands first: it must not land after this renewal's newer token.
    if (catching !== null) await catching;
    const { token, cached } = await obtain(background, waitMs);
    // A token in hand by any way (the cache's included): the retries of a lost answer end, and
    // their count starts again. Until 2026-11-29 only an answer to a refresh of this process's own
    // reset it, so each loss recovered from the cache pushed the next loss's first retry further
    // (2, 4, 8 s), and after four such the next lost answer was never presented again.
    refreshAnswered();
    // An answer slower than the token's lifetime (or expires_in 0) brings a token already expired:
    // kept below for its refresh token, never handed out (every API would answer 401, and the
    // retry would fetch another one just as late).
    const expiredAt = (): number | null => {
      const now = nowFor(token);
      return now >= token.expiresAt ? now : null;
    };
    let late = expiredAt();
    if (late === null) {
      failures = 0;
      pause = null;
    }
    for (const older of [current, lastRead]) {
      if (older === null || older.accessToken === token.accessToken) continue;
      superseded.delete(older.accessToken);
      superseded.add(older.accessToken);
      if (superseded.size > 16) superseded.delete(superseded.values().next().value!);
    }
    current = token;
    // The password is dropped only once a refresh token can continue the session without it.
    if (!config.keepCredentials && token.refreshToken !== null) credentials = null;
    if (cache && !cached) await store(token);
    // Or expired while the cache write took its time.
    late ??= expiredAt();
    if (late !== null) {
      const error = new NetworkError(
        "timeout",
        `POST ${pathOf(config.baseUrl + TOKEN_PATH)} answered after ${Math.round(late - token.obtainedAt)} ms with a token that expired after ${(token.expiresAt - token.obtainedAt) / 1000} s (expires_in): it arrived unusable`,
      );
      // A token request without a usable answer, counted toward the backoff as a malformed token
      // answer is. Until 2026-12-02 it ended the count instead (a token had arrived): against a
      // server answering expires_in 0 every call sent a token request (each rotating the refresh
      // token), however many calls a second the app made.
      if (!cached) failed(error);
      throw error;
    }
    return token;
  }

  /**
   * A fresh token, or the renewal's (single flight); `background`: a retry of a refresh without an
   * answer, which the backoff does not hold. A renewal started for a current token an API refused
   * (`spreadRefused`, not a background retry) waits first, with a cache (see {@link refusedWaitMs},
   * bounded by `deadline`, the starting call's, and by each joining call's: see {@link spreadLimit}).
   */
  const renewed = (background = false, deadline: Deadline | null = deadlineIn(config.timeoutMs), spreadRefused = true): Promise<CachedToken> => {
    if ((inflight !== null || catching !== null) && stalled()) {
      // Never settles (see stalled): left behind, and a new renewal (or catch-up) starts. Should it
      // settle after all, its end clears nothing of the new one's.
      inflight = null;
      catching = null;
    }
    if (behind !== null) catchUp();
    if (current && fresh(current)) return Promise.resolve(current);
    // A call joining the renewal: its wait after a 401, if it has one, ends in time for this call too.
    if (inflight !== null && !background && deadline !== null) boundSpread(deadline);
    if (inflight === null) {
      spreadLimit = Infinity;
      spreadRearm = null;
      // Until its first request or hook call sets its own, a deadline from now: the last one's,
      // long past, would make a call joining it at once take it for stalled.
      step();
      const refused = !background && spreadRefused && current !== null && rejected.has(current.accessToken);
      const renewal: Promise<CachedToken> = renew(background, refused ? refusedWaitMs(deadline) : 0).finally(() => {
        if (inflight === renewal) inflight = null;
      });
      inflight = renewal;
      lagging = deferred();
      // Registered with the runtime (see ClientOptions.waitUntil): in a Worker the request that
      // started it may send its response first (its call gave up), and the renewal, shared with
      // the calls of later requests, would be cut off there and never settle.
      keepAlive(renewal.then(noop, noop));
    }
    return inflight;
  };

  /**
   * A token that may still be handed out while its renewal waits or failed without an answer, not
   * refused by an API and not yet expired (it is only due), and never one older than the current
   * token: the current one, unless the cache's as the renewal read it ({@link lastRead}) is newer.
   * The cache's is newer when its refresh token replaced ours (by lineage), or, when the current
   * token cannot be used (refused, expired), when it is another token that the current one did not
   * replace (not {@link superseded}, not by lineage): one written to the cache after ours was taken.
   * With no current token, the cache's. Until 2026-11-30 the cache's was taken whenever the current
   * one could not be used: after a lost cache write it still held the token ours replaced, and
   * refresh(current), or the retry after an API's 401, in an outage got that older token.
   */
  const stillValid = async (): Promise<CachedToken | null> => {
    const usable = (t: CachedToken | null): t is CachedToken => t !== null && !rejected.has(t.accessToken) && nowFor(t) < t.expiresAt;
    const ours = current;
    const theirs = lastRead;
    if (usable(theirs)) {
      if (ours === null) return theirs;
      const other = theirs.accessToken !== ours.accessToken && !superseded.has(theirs.accessToken) && !(await replaced(ours, theirs));
      if (other && (!usable(ours) || (await replaced(theirs, ours)))) return theirs;
    }
    return usable(ours) ? ours : null;
  };

  /**
   * As {@link renewed}, but a renewal of a token still valid that failed without settling anything
   * (no usable answer, a Retry-After, the backoff) gives that token: until 2026-11-30 the call
   * failed, though its token had up to refreshSkewSeconds to go. Likewise once its token request
   * has waited {@link patience} ms for an answer ({@link lagging}): the call gets the token still
   * valid, and the renewal goes on (single flight, its own timeout). Until 2026-11-30 the call
   * waited for it: with a token endpoint that hangs, the call that started the renewal reached its
   * own deadline (timeoutMs from the call) a few ms before the request timed out, and failed with
   * "(no access token yet)", and every call joining it waited up to timeoutMs, its API request then
   * without time left.
   */
  const getToken = (deadline?: Deadline | null, spreadRefused = true): Promise<CachedToken> => {
    const renewal = renewed(false, deadline === undefined ? deadlineIn(config.timeoutMs) : deadline, spreadRefused);
    const settled = renewal.catch(async (error: unknown) => {
      const usable = transient.has(error as object) ? await stillValid() : null;
      if (usable === null) throw error;
      return usable;
    });
    const late = renewal === inflight ? lagging : null;
    if (late === null) return settled;
    return Promise.race([settled, late.promise.then(async () => (await stillValid()) ?? settled)]);
  };

  const invalidate = (accessToken: string): void => {
    rejected.add(accessToken);
    // Bounded: only recent tokens can still be in use or in a cache.
    if (rejected.size > 16) rejected.delete(rejected.values().next().value!);
  };

  return {
    getToken,
    invalidate,
    refresh(rejectedAccessToken, deadline) {
      // Only that token is refused: a newer current one (renewed after another caller's 401) stays.
      if (rejectedAccessToken !== undefined) invalidate(rejectedAccessToken);
      else if (current) invalidate(current.accessToken);
      // Without a refused token, a renewal asked for now: not spread (see refusedWaitMs).
      return getToken(deadline, rejectedAccessToken !== undefined);
    },
    info(t) {
      return { accessToken: t.accessToken, tokenType: t.tokenType, expiresAt: t.expiresAt, scope: t.scope, grantType: t.grantType, hasRefreshToken: t.refreshToken !== null };
    },
  };
}

const WHAT = "token endpoint";

/**
 * The OAuth error codes (RFC 6749 §5.2) of a refresh that say this refresh token, presented as the
 * client presents it, is refused for good: `invalid_grant` (the token is invalid, expired, revoked
 * or was issued to another client), `unauthorized_client` (this client may not use the
 * refresh_token grant), `unsupported_grant_type` (the server has no refresh_token grant) and
 * `invalid_scope` (a refresh carries no `scope`, so what is refused is the scope the token was
 * granted, RFC 6749 §6: plantgate's "no longer allowed for this client"). Such a token is dropped
 * (from the shared cache too) and never presented again; the client runs its original grant or
 * ends the session. Likewise for a password grant (see runGrant), whose username, password and
 * scope are fixed: `invalid_grant` (the password), `unauthorized_client`, `unsupported_grant_type`
 * (the password grant), `invalid_scope` (the `scope` option): the password is dropped and the
 * session ends. And for a client_credentials grant (see runGrant), whose scope is fixed too, but
 * for `invalid_grant`, which §5.2 gives no meaning there: the request is not sent again. Not
 * `invalid_client` (the client's own authentication: a refused secret ends the client, a refused `private_key_jwt` assertion may pass later, see tokenRequest) nor
 * `invalid_request` (the request was malformed, by a proxy in between or a server's bug: nothing is
 * said of the token), nor a code outside §5.2, whose meaning the client cannot know.
 */
const REFUSED_FOR_GOOD = new Set(["invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope"]);

/**
 * Whether a token request's error is the server's refusal: an {@link OAuthError} with a 4xx status
 * other than 429 (RFC 6749 §5.2 answers 400, or 401 for invalid_client). A 429 or 5xx is a
 * transient answer whatever its body says (a throttle, a storage outage, a server mapping its own
 * failure to `invalid_grant`): it settles nothing (see {@link undecided}). Until 2026-12-02 the code
 * alone decided: a 503 `invalid_grant` to a refresh both started the retries of a lost answer and
 * dropped the refresh token (the session ended without a kept password), a 503 `invalid_grant` to
 * a password grant dropped the password, and a 503 `invalid_client` ended the client.
 */
function refusal(error: unknown): error is OAuthError {
  return error instanceof OAuthError && error.status >= 400 && error.status <= 499 && error.status !== 429;
}

/** A {@link refusal} with a code of {@link REFUSED_FOR_GOOD}: what it refuses is refused whenever it is presented. */
function refusedForGood(error: unknown): error is OAuthError {
  return refusal(error) && REFUSED_FOR_GOOD.has(error.error);
}

const noop = (): void => {};

/** A promise and the function that resolves it. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A reading of the client's clock (`at`, epoch ms) and of the monotonic one (`mono`, performance.now()) at one moment; moved on by each reading through it (`nowSince`). */
interface Mark {
  at: number;
  mono: number;
}

/** What a token request continues: the refresh token it presents (null: a new session), its scope and lineage. */
interface Previous {
  refreshToken: string | null;
  scope: string;
  lineage: string[];
}

/**
 * When a failed cache write is tried again, after the failure (ms, one after the other), each
 * jittered by {@link backoff} (a random point from half of it to all of it): the first ones well
 * within the server's 30 s grace window, the last from about half a minute to a minute after the
 * rotation (31.5 to 63 s when every write fails at once).
 */
const CATCH_UP_RETRY_MS = [1000, 2000, 4000, 8000, 16000, 32000];

/**
 * When a refresh that got no usable answer is tried again in the background, after each such
 * failure (ms), each jittered by {@link backoff} (a random point from half of it to all of it, so
 * each wait is at most the nominal one: 7.5 to 15 s from the loss to the fourth retry when each
 * fails at once): well within the server's 30 s grace window when the failure came quickly (a
 * reset connection, a proxy's error page); a timed-out one has used up `timeoutMs` of the window
 * already. Until 2026-11-30 the delays were exact, and a fleet of clients that lost their refreshes
 * together (a server or proxy outage) presented them again in lockstep, 1, 3, 7 and 15 s after it.
 */
const REFRESH_RETRY_MS = [1000, 2000, 4000, 8000];

/**
 * The {@link NetworkError} reasons of a request the server may have carried out without its answer
 * reaching the client. Not `redirect_refused`; `unexpected_response` and `response_too_large` only
 * with a 2xx or 5xx status (see {@link noAnswer}).
 */
const NO_ANSWER = new Set(["fetch_failed", "timeout", "not_json"]);

/**
 * Whether a failed token request got no answer from the authorization server: {@link NO_ANSWER},
 * or a 5xx whose JSON is not an OAuth error, which is a gateway's own (AWS API Gateway's 504
 * `{"message":"Endpoint request timed out"}` after it forwarded the request; plantgate's token
 * endpoint answers every error with an OAuth `error` code). Until 2026-11-29 such a 5xx was taken
 * for an answer and the refresh was not presented again within the grace window.
 * Or a 2xx whose body passed maxResponseBytes: the server carried the refresh out (and rotated the
 * refresh token), and the new one is in a body the client did not read, as lost as in a reset
 * connection. Presented again within the grace window, it is answered with the rotation's own
 * answer, which arrives whole unless the same cause makes it too large again (then nothing is lost
 * that was not already). Until 2026-12-02 it was taken for an answer: nothing was retried, the
 * client kept the spent refresh token, and its next renewal after the grace window presented it
 * (reuse: the family revoked, the user signed out).
 * Likewise a 2xx of the wrong shape (no access_token, token_type not Bearer, a token of characters
 * a header cannot hold: a middlebox rewriting the body), whose refresh the server carried out as
 * well, and a 5xx whose body passed maxResponseBytes (a proxy's large error page), which is no
 * answer as a smaller one is: until 2026-12-02 neither was retried, with the same reuse after the
 * grace window. A 4xx of either kind is not: it holds no token, and a retry gets it again.
 */
function noAnswer(error: unknown): boolean {
  if (!(error instanceof NetworkError)) return false;
  if (error.reason === "response_too_large" || error.reason === "unexpected_response") return error.status !== null && ((error.status >= 200 && error.status <= 299) || error.status >= 500);
  return NO_ANSWER.has(error.reason);
}

/**
 * Whether a failed token request got an answer that says nothing of the refresh token it presented:
 * a 429 (whatever its body), or an OAuth error with a 5xx status (plantgate's `temporarily_unavailable` while its storage
 * is down; a throttle's 429), as is the error a call held by such an answer's Retry-After rejects
 * with. (A 5xx to a refresh may also follow a rotation whose write landed: `obtain` retries it as a
 * lost answer.) A rotation whose answer was lost earlier may still have
 * happened: its background retries go on.
 */
function undecided(error: unknown): boolean {
  // A backed-off call's NetworkError (a retry that joined a call's renewal) sent nothing either; a
  // throttle's 429 without an OAuth body (a gateway's `{"message":...}`, unexpected_response) says
  // nothing of the token either (until 2026-11-30 it ended the retries; a 5xx one is noAnswer).
  return (error instanceof OAuthError && (error.status === 429 || error.status >= 500)) || (error instanceof NetworkError && (notSent.has(error) || error.status === 429));
}

/**
 * The errors of calls that sent nothing (held by a Retry-After or the backoff: see `waiting`). Until
 * 2026-12-02 a NetworkError's retryAfter told them; an answer's now carries its Retry-After too.
 */
const notSent = new WeakSet<object>();

/** An OAuthError's body again (for the error of a held call). */
function oauthBody(error: OAuthError): OAuthErrorBody {
  const body: OAuthErrorBody = { error: error.error };
  if (error.error_description !== undefined) body.error_description = error.error_description;
  if (error.error_uri !== undefined) body.error_uri = error.error_uri;
  return body;
}

/**
 * The longest a token request keeps the calls that have a token still valid waiting (ms): one
 * normally answers well within it.
 */
const PATIENCE_MS = 1000;

/** The backoff after token requests without a usable answer: the windows after the 2nd, 3rd, ... failure in a row (ms), the last one repeated. */
const BACKOFF_MS = [1000, 2000, 4000, 8000, 16000, 30000];

/**
 * How long no token request is sent after the `failures`-th failure in a row: none after the first
 * (a single blip costs nothing), then {@link jittered} {@link BACKOFF_MS}'s next window.
 */
function backoffMs(failures: number): number {
  if (failures < 2) return 0;
  return jittered(BACKOFF_MS[Math.min(failures - 2, BACKOFF_MS.length - 1)]!);
}

/**
 * A random point from half of `ms` to all of it (`Math.random()`; 0 gives the half). The jitter
 * spreads the processes of a fleet that failed together (a server or proxy outage), which would
 * otherwise all ask again at the same moment, and never waits longer than `ms`: a wait that must
 * end within a window (the refresh retries, within the server's grace window) still does. Half
 * of it at the least keeps the schedule's growth (each wait at least the one before's, for the
 * doubling schedules here) and a floor under the first wait: a wait drawn from all of [0, ms]
 * could come at once, before the failure that caused it (a reset connection, a restarting server)
 * had passed.
 */
function jittered(ms: number): number {
  return ms / 2 + Math.random() * (ms / 2);
}

/**
 * A timer that runs `run` after a {@link jittered} `delays[0]` ms (`delays` are the nominal waits,
 * each one's random point from its half to all of it drawn when its timer is set), then (each
 * `schedule()` after it has fired) after the next one, until the delays are used up; `schedule()`
 * while one is pending does nothing, and `reset()` clears the pending one and starts the delays
 * again (`spent()`: whether they are used up, nothing pending). `after(ms)` is not jittered. Never
 * what keeps a Node process alive.
 * Each timer set is handed to `keepAlive` as a promise that settles when the run it started has
 * ended (a promise `run` returns is waited for), or when `reset()` clears it.
 */
function backoff(
  delays: readonly number[],
  run: () => Promise<void> | void,
  keepAlive: (work: Promise<void>) => void,
): { schedule(): boolean; after(ms: number): boolean; spent(): boolean; reset(): void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  /** Settles the pending timer's promise. */
  let settle: (() => void) | null = null;
  let used = 0;
  const arm = (ms: number): void => {
    let done!: () => void;
    const work = new Promise<void>((resolve) => (done = resolve));
    settle = done;
    timer = setTimeout(() => {
      timer = null;
      settle = null;
      // Settled after the run's own work: a retry it schedules is registered while this one still is.
      Promise.resolve().then(run).then(done, done);
    }, ms);
    (timer as { unref?: () => void }).unref?.();
    keepAlive(work);
  };
  return {
    /** Sets the next delay's timer (jittered now); false when one is pending or the delays are used up. */
    schedule() {
      if (timer !== null || used >= delays.length) return false;
      arm(jittered(delays[used++]!));
      return true;
    },
    /**
     * One more run `ms` from now, exactly (not jittered: a hold's end, before which a run would
     * send nothing), once the delays are used up (false, and nothing set, before that or while a
     * timer is pending); `reset()` clears it as any other. How often is the caller's.
     */
    after(ms) {
      if (timer !== null || used < delays.length) return false;
      arm(ms);
      return true;
    },
    /** Whether the delays are used up and no timer is pending (not even one of `after`). */
    spent() {
      return timer === null && used >= delays.length;
    },
    reset() {
      if (timer !== null) clearTimeout(timer);
      timer = null;
      settle?.();
      settle = null;
      used = 0;
    },
  };
}

/**
 * The longest a renewal after an API's 401 waits before presenting the refresh token, with a
 * shared cache (ms; see `refusedWaitMs`): the call that got the 401 waits for it, so it is a few
 * seconds, not the whole `refreshJitterSeconds` of a due renewal.
 */
const REFUSED_SPREAD_MAX_MS = 3000;

/** How many replaced refresh tokens a token remembers ({@link CachedToken.lineage}). */
const LINEAGE = 8;

/** The last time (epoch ms) a `Date` can hold: the `expiresAt` of a token without `expires_in`. */
const LATEST_TIME = 8.64e15;

/**
 * SHA-256 of a refresh token, base64url: what a lineage holds (never the token, which works within
 * the grace window). Null where Web Crypto's `subtle` is missing (a browser page that is not a
 * secure context, React Native): the lineage then goes without it (processes sharing a cache
 * compare by the cache's own rule), never the rotated token lost. Until 2026-12-01 the hash ran
 * after the rotated token arrived and threw there, so every rotation dropped the new refresh token.
 */
async function tokenHash(token: string): Promise<string | null> {
  const subtle = (globalThis.crypto as Crypto | undefined)?.subtle;
  if (subtle === undefined) return null;
  let digest: Uint8Array;
  try {
    digest = new Uint8Array(await subtle.digest("SHA-256", new TextEncoder().encode(token)));
  } catch {
    return null;
  }
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * The longest a token endpoint's `Retry-After` holds the client's token requests (ms): a lock-out's
 * (plantgate: up to its 900 s window) is honoured in steps, a proxy's day-long one cannot end a
 * client's session for a day.
 */
const HOLD_MAX_MS = 300_000;

/** A token as it may go into a header or a form: visible ASCII, no space. */
const TOKEN_TEXT = /^[\x21-\x7e]+$/;

/** Reads a token-endpoint response: a token on 2xx, an {@link OAuthError} or {@link NetworkError} otherwise. */
function toCachedToken(
  response: ReadResponse,
  grantType: GrantType,
  startedAt: number,
  previous: Previous,
  now: number,
): CachedToken {
  if (response.status < 200 || response.status > 299) {
    if (response.status === 429 || (response.status >= 500 && response.status <= 599)) throwUnavailable(response, grantType, now);
    const body = parseJsonBody(response, WHAT);
    if (isObject(body) && typeof body.error === "string") throw oauthError(response, body as { error: string }, grantType, now);
    throw unexpected(response, WHAT, "an error body without an OAuth 'error' code");
  }
  const body = parseJsonBody(response, WHAT);
  if (!isObject(body) || typeof body.access_token !== "string" || body.access_token === "") {
    throw unexpected(response, WHAT, "no access_token in the response");
  }
  // Visible ASCII only (RFC 6750's b64token is a subset): the token goes into an Authorization
  // header, and a fetch refusing a header value with a line break or NUL quotes the value (the
  // token) in its error, which would reach messages and logs.
  if (!TOKEN_TEXT.test(body.access_token)) throw unexpected(response, WHAT, "access_token holds characters other than visible ASCII");
  if (typeof body.token_type !== "string" || body.token_type.toLowerCase() !== "bearer") {
    throw unexpected(response, WHAT, "token_type is not Bearer");
  }
  // RFC 6749 §5.1: expires_in is RECOMMENDED, not required. Without it the token is used until an
  // API rejects it (the 401 retry renews it then).
  let expiresIn: number;
  if (body.expires_in === undefined) expiresIn = LATEST_TIME / 1000;
  else if (typeof body.expires_in === "number" && Number.isFinite(body.expires_in) && body.expires_in >= 0) expiresIn = body.expires_in;
  else if (typeof body.expires_in === "string" && /^\d{1,10}$/.test(body.expires_in)) expiresIn = Number(body.expires_in);
  else throw unexpected(response, WHAT, "expires_in is not a number of seconds");
  if (body.refresh_token !== undefined && (typeof body.refresh_token !== "string" || body.refresh_token === "")) {
    throw unexpected(response, WHAT, "refresh_token is not a string");
  }
  if (typeof body.refresh_token === "string" && !TOKEN_TEXT.test(body.refresh_token)) throw unexpected(response, WHAT, "refresh_token holds characters other than visible ASCII");
  return {
    accessToken: body.access_token,
    tokenType: "Bearer",
    obtainedAt: startedAt,
    // At most the last time a Date can hold: `new Date(expiresAt)` stays a valid date (it was
    // Number.MAX_SAFE_INTEGER until 2026-12-01, an Invalid Date whose toISOString() throws).
    expiresAt: Math.min(startedAt + expiresIn * 1000, LATEST_TIME),
    // RFC 6749 §5.1: scope may be omitted when it is the one requested.
    scope: typeof body.scope === "string" ? body.scope : previous.scope,
    // RFC 6749 §6: a refresh response may omit refresh_token; the old one then stays valid.
    refreshToken: typeof body.refresh_token === "string" ? body.refresh_token : previous.refreshToken,
    grantType,
  };
}

/** The {@link OAuthError} of an error answer with an OAuth error body; `now`: the client's clock (see retryAfterOf). */
function oauthError(response: ReadResponse, body: { error: string; error_description?: unknown; error_uri?: unknown }, grantType: GrantType, now: number): OAuthError {
  const e: OAuthErrorBody = { error: body.error };
  if (typeof body.error_description === "string") e.error_description = body.error_description;
  if (typeof body.error_uri === "string") e.error_uri = body.error_uri;
  return new OAuthError(response.status, e, grantType, retryAfterOf(response, now));
}

/**
 * A 429 or 5xx of the token endpoint: an {@link OAuthError} with an OAuth error body; without one
 * (a proxy's or load balancer's own answer: nginx's HTML page, an empty body, a gateway's
 * `{"message":...}`) a {@link NetworkError} (`not_json`, or `unexpected_response` for JSON: the
 * reasons {@link noAnswer} reads, as before) that says so and names the status, and, for a 429 or
 * 503, what its `Retry-After` holds (see {@link holdMs}; no other status holds). Until 2026-11-30
 * such a 429 or 503 was reported as a body that is not JSON, and its `Retry-After` was not read:
 * every call asked again; and such a 500, 502 or 504 (a proxy's page, its upstream down or slow)
 * read `HTTP 502 with a body that is not JSON (text/html)`, or `HTTP 504, an error body without
 * an OAuth 'error' code` for a gateway's JSON.
 */
function throwUnavailable(response: ReadResponse, grantType: GrantType, now: number): never {
  let body: unknown;
  let json = true;
  try {
    body = JSON.parse(response.text) as unknown;
  } catch {
    json = false;
  }
  if (json && isObject(body) && typeof body.error === "string") throw oauthError(response, body as { error: string }, grantType, now);
  const type = response.headers.get("content-type");
  const what = json ? "JSON without an 'error' code" : response.text === "" ? "an empty body" : `${type ? `${serverText(type, 100)}, ` : ""}not JSON`;
  const option = retryAfterOption(response, now);
  const seconds = option?.retryAfter ?? null;
  const held = holdMs(seconds);
  const hold = held > 0 ? `; Retry-After ${seconds} s: no token request is sent for ${held / 1000} s` : "";
  // retryAfter: the answer's, as an OAuthError's (null until 2026-12-02).
  throw new NetworkError(json ? "unexpected_response" : "not_json", `${WHAT}: HTTP ${response.status} without an OAuth error body (${what})${hold}`, response.status, option);
}

/**
 * How long a 429 or 503 of the token endpoint with a `Retry-After` of `seconds` holds the client's
 * token requests (ms): at most {@link HOLD_MAX_MS}; 0 (no hold) without one, or with 0.
 */
function holdMs(seconds: number | null): number {
  return seconds === null || seconds <= 0 ? 0 : Math.min(seconds * 1000, HOLD_MAX_MS);
}

function isCachedToken(value: unknown): value is CachedToken {
  return (
    isObject(value) &&
    typeof value.accessToken === "string" &&
    // As a token response's (see TOKEN_TEXT): a cached value a fetch would refuse as a header is
    // quoted in that fetch's error (an entry written by an SDK from before that check).
    TOKEN_TEXT.test(value.accessToken) &&
    (value.refreshToken === null || (typeof value.refreshToken === "string" && TOKEN_TEXT.test(value.refreshToken))) &&
    typeof value.expiresAt === "number" &&
    typeof value.obtainedAt === "number" &&
    // A lifetime that ends before it starts (a hand-written or corrupted entry) made a negative
    // skew in `fresh`, so the token passed for fresh past its end and was never renewed (until
    // 2026-12-01); such an entry is no entry, as any other junk.
    Number.isFinite(value.expiresAt) &&
    Number.isFinite(value.obtainedAt) &&
    value.obtainedAt <= value.expiresAt &&
    typeof value.scope === "string" &&
    (value.refreshToken === null || typeof value.refreshToken === "string") &&
    (value.lineage === undefined || (Array.isArray(value.lineage) && value.lineage.every((h) => typeof h === "string"))) &&
    (value.grantType === "client_credentials" || value.grantType === "password" || value.grantType === "refresh_token")
  );
}
