/**
 * Deadlines and expiry against the real example server over a socket: `timeoutMs` bounds a whole
 * call (getting its token, the tokenCache hooks, the API request and its one retry), and a token
 * whose lifetime ran out before its answer arrived is never handed out. Latency is added in front
 * of the real server by a transport that waits (abortably) before it forwards a request.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createClient, NetworkError, TOKEN_PATH, type CachedToken, type ClientOptions, type FetchLike, type TokenCache } from "../src/index.js";
import { manualClock, rejectionOf, startTarget, type ServerTarget } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";
const TTL = 7200;

let target: ServerTarget | null = null;
afterEach(async () => {
  await target?.close();
  expect(target?.errors).toEqual([]);
  target = null;
});

/** What reached the server: "POST /UserService/connect/token password", "GET /rbac/...". */
type Forwarded = string[];

/**
 * The global fetch to the real server, after `delayOf(path)` ms; a request whose signal is aborted
 * while it waits is not forwarded (as a request aborted on the wire never reaches the handler).
 */
function slowTransport(delayOf: (path: string) => number, forwarded: Forwarded, after?: (path: string) => void): FetchLike {
  return async (url, init) => {
    const path = new URL(url).pathname;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, delayOf(path));
      init.signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(init.signal!.reason);
      });
    });
    const grant = init.body === undefined ? "" : ` ${new URLSearchParams(init.body).get("grant_type")}`;
    forwarded.push(`${init.method} ${path}${grant}`);
    const response = await globalThis.fetch(url, init);
    after?.(path);
    return response;
  };
}

function clientFor(t: NonNullable<typeof target>, options: Partial<ClientOptions>) {
  return createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: "Platform_UserAPIs", ...options });
}

const TOKEN = `POST ${TOKEN_PATH}`;
const CC = `${TOKEN} client_credentials`;
const PASSWORD = `${TOKEN} password`;
const REFRESH = `${TOKEN} refresh_token`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ACCOUNTS = "GET /rbac/ServerCommand/GetAccountList";

/** Settles `promise`, or gives "still pending" after `ms` (so a hang fails the test instead of timing it out). */
function orPending<T>(promise: Promise<T>, ms: number): Promise<T | "still pending"> {
  return Promise.race([promise, new Promise<"still pending">((resolve) => setTimeout(() => resolve("still pending"), ms))]);
}

describe("timeoutMs bounds the whole call, not each request", () => {
  it("a slow token request and a slow API request: the call fails at timeoutMs, and the API request is aborted before it reaches the server", async () => {
    target = await startTarget();
    const forwarded: Forwarded = [];
    // Margins of 1.5 s each (a busy 2-core host fires timers late): the token is back 1.5 s before
    // the deadline, and the API request would be sent 1.5 s after it. Each request alone is well
    // within timeoutMs, so a per-request timeout would let the call succeed after 6 s.
    let delay = 3000;
    const client = clientFor(target, { timeoutMs: 4500, fetch: slowTransport(() => delay, forwarded) });
    const started = performance.now();
    const error = await rejectionOf(client.listAccounts());
    const took = performance.now() - started;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ reason: "timeout", status: null, message: `${ACCOUNTS} got no complete answer within 4500 ms` });
    expect(took).toBeGreaterThanOrEqual(4450);
    expect(took).toBeLessThan(6000);
    expect(forwarded).toEqual([CC]);
    // The token it got on the way is kept: the next call (quick now) needs no token request.
    delay = 0;
    expect((await client.listAccounts()).total).toBe(1);
    expect(forwarded).toEqual([CC, ACCOUNTS]);
  });

  it("a call that joins a token request already in flight waits only for what is left of its own deadline", async () => {
    target = await startTarget();
    const forwarded: Forwarded = [];
    const client = clientFor(target, { timeoutMs: 6000, fetch: slowTransport((path) => (path.endsWith(TOKEN_PATH) ? 4500 : 3000), forwarded) });
    const first = client.getAccessToken();
    await sleep(3000);
    // Joins at 3000 ms (its deadline 9000 ms); the token arrives at about 4500 ms (1.5 s before the
    // first caller's deadline) and the API request takes 3000 ms more: done at about 7500 ms, 1.5 s
    // past the first caller's deadline and 1.5 s before its own.
    const second = client.listAccounts();
    expect(typeof (await first)).toBe("string");
    expect((await second).total).toBe(1);
    expect(forwarded).toEqual([CC, ACCOUNTS]);
  });

  it("a tokenCache.get that never answers: the call fails at timeoutMs, and the next call is not stuck behind it", async () => {
    target = await startTarget();
    let hang = true;
    const store = new Map<string, CachedToken>();
    const tokenCache: TokenCache = {
      get: (key) => (hang ? new Promise<never>(() => {}) : Promise.resolve(store.get(key) ?? null)),
      set: async (key, token) => void store.set(key, token),
    };
    const forwarded: Forwarded = [];
    const client = clientFor(target, { timeoutMs: 2000, tokenCache, fetch: slowTransport(() => 0, forwarded) });
    const first = orPending(client.getAccessToken().catch((e: unknown) => e), 4000);
    await sleep(300);
    // Joins the renewal stuck in the hook (1.7 s before the hook's deadline): it fails with the
    // hook's own timeout, 300 ms before its own deadline.
    const late = await orPending(client.getAccessToken().catch((e: unknown) => e), 4000);
    expect(late).toBeInstanceOf(NetworkError);
    expect(late).toMatchObject({ reason: "timeout", status: null, message: "tokenCache.get gave no answer within 2000 ms" });
    // The first caller's own deadline and the hook's passed together: either message.
    expect(await first).toMatchObject({ reason: "timeout", status: null });
    expect((await first as Error).message).toMatch(/^(POST \/UserService\/connect\/token got no complete answer|tokenCache\.get gave no answer) within 2000 ms$/);
    hang = false;
    expect(await orPending(client.listAccounts(), 4000)).toMatchObject({ total: 1 });
    expect(forwarded).toEqual([CC, ACCOUNTS]);
  });

  it("a tokenCache.set that never answers after a token arrived: the call fails at timeoutMs, and the token is still used", async () => {
    target = await startTarget();
    const tokenCache: TokenCache = { get: async () => null, set: () => new Promise<never>(() => {}) };
    const forwarded: Forwarded = [];
    const client = clientFor(target, { timeoutMs: 300, tokenCache, fetch: slowTransport(() => 0, forwarded) });
    const error = await orPending(client.listAccounts().catch((e: unknown) => e), 2000);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ reason: "timeout", status: null });
    expect((error as Error).message).toMatch(/^(GET \/rbac\/ServerCommand\/GetAccountList got no complete answer within 300 ms \(no access token yet\)|tokenCache\.set gave no answer within 300 ms)$/);
    expect(forwarded).toEqual([CC]);
    // The token arrived before the hook hung: it is used, without asking again.
    expect(await orPending(client.listAccounts(), 2000)).toMatchObject({ total: 1 });
    expect(forwarded).toEqual([CC, ACCOUNTS]);
  });
});

describe("a tokenCache hook the client gives up on is told, through the signal it was given", () => {
  /** A hook call as the cache saw it: its signal, whether it was aborted when the call began, and when it was. */
  interface HookCall {
    signal: AbortSignal;
    abortedAtStart: boolean;
    aborted: Promise<unknown>;
  }
  function watch(calls: HookCall[], signal: AbortSignal): Promise<never> {
    let onAbort!: (reason: unknown) => void;
    const aborted = new Promise<unknown>((resolve) => (onAbort = resolve));
    calls.push({ signal, abortedAtStart: signal.aborted, aborted });
    // A cache that heeds the signal: its pending request ends (rejects) when the signal is aborted.
    return new Promise<never>((_, reject) => {
      signal.addEventListener("abort", () => {
        onAbort(signal.reason);
        reject(signal.reason);
      });
    });
  }

  it("a get that hangs: its signal is aborted with a TimeoutError when timeoutMs passes, and the call fails with NetworkError timeout", async () => {
    target = await startTarget();
    const gets: HookCall[] = [];
    const tokenCache: TokenCache = { get: (_key, signal) => watch(gets, signal), set: async () => {} };
    const forwarded: Forwarded = [];
    const client = clientFor(target, { timeoutMs: 500, tokenCache, fetch: slowTransport(() => 0, forwarded) });
    const error = await orPending(client.getAccessToken().catch((e: unknown) => e), 4000);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ reason: "timeout", status: null });
    expect(gets).toHaveLength(1);
    expect(gets[0]!.signal).toBeInstanceOf(AbortSignal);
    expect(gets[0]!.abortedAtStart).toBe(false);
    const reason = await orPending(gets[0]!.aborted, 4000);
    expect(reason).toBeInstanceOf(DOMException);
    expect(reason).toMatchObject({ name: "TimeoutError", message: "tokenCache.get gave no answer within 500 ms" });
    expect(forwarded).toEqual([]);
  });

  it("a set that hangs after a token arrived: its signal is aborted too; a get that answered in time keeps an unaborted signal", async () => {
    target = await startTarget();
    const gets: HookCall[] = [];
    const sets: HookCall[] = [];
    const tokenCache: TokenCache = {
      get: async (_key, signal) => {
        void watch(gets, signal).catch(() => undefined);
        return null;
      },
      set: (_key, _token, signal) => watch(sets, signal),
    };
    const forwarded: Forwarded = [];
    const client = clientFor(target, { timeoutMs: 500, tokenCache, fetch: slowTransport(() => 0, forwarded) });
    const error = await orPending(client.getAccessToken().catch((e: unknown) => e), 4000);
    expect(error).toMatchObject({ name: "NetworkError", reason: "timeout", status: null });
    expect(sets).toHaveLength(1);
    expect(sets[0]!.abortedAtStart).toBe(false);
    expect(await orPending(sets[0]!.aborted, 4000)).toMatchObject({ name: "TimeoutError", message: "tokenCache.set gave no answer within 500 ms" });
    // Well past the get's own deadline: the get answered, so it was never given up on.
    await sleep(1000);
    expect(gets).toHaveLength(1);
    expect(gets[0]!.signal.aborted).toBe(false);
    expect(forwarded).toEqual([CC]);
  });
});

describe("a token whose lifetime ran out before its answer arrived", () => {
  it("is never handed out: the call fails with NetworkError timeout and no API request carries it", async () => {
    target = await startTarget();
    const t = target;
    const clientClock = manualClock(t.clock.now());
    const forwarded: Forwarded = [];
    // The token endpoint's answer takes longer than the token's lifetime (both clocks move on).
    let slow = true;
    const fetch = slowTransport(() => 0, forwarded, (path) => {
      if (!slow || !path.endsWith(TOKEN_PATH)) return;
      t.clock.advance(TTL + 1);
      clientClock.advance(TTL + 1);
    });
    const client = clientFor(t, { clock: clientClock.now, fetch, credentials: { username: t.username, password: t.password }, scope: OFFLINE });
    const error = await rejectionOf(client.getAccessToken());
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({
      reason: "timeout",
      status: null,
      message: `${TOKEN} answered after ${(TTL + 1) * 1000} ms with a token that expired after ${TTL} s (expires_in): it arrived unusable`,
    });
    const again = await rejectionOf(client.listAccounts());
    expect(again).toMatchObject({ reason: "timeout", message: `${TOKEN} answered after ${(TTL + 1) * 1000} ms with a token that expired after ${TTL} s (expires_in): it arrived unusable` });
    // The second renewal presented the refresh token of the first answer (kept, though its access token was not).
    expect(forwarded).toEqual([PASSWORD, REFRESH]);
    // Two token requests in a row without a usable token: the backoff holds the next call (at most 1 s).
    expect(await rejectionOf(client.listAccounts())).toMatchObject({ reason: "timeout", retryAfter: 1, cause: again });
    expect(forwarded).toEqual([PASSWORD, REFRESH]);
    // Once answers are quick again (and the window has passed), the session goes on from the newest refresh token.
    slow = false;
    clientClock.advance(1);
    expect((await client.listAccounts()).total).toBe(1);
    expect(forwarded).toEqual([PASSWORD, REFRESH, REFRESH, ACCOUNTS]);
  });
});
