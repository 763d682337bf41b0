/**
 * The backoff after token requests that got no usable answer, against a real HTTP server on a
 * socket (node:http, through the global fetch) that plays a token endpoint in an outage: it resets
 * the connection, answers 500 with a proxy's HTML page, or 503 `temporarily_unavailable` without a
 * Retry-After, or takes the request and never answers; or it issues tokens. It counts the token
 * requests that reach it, with the time each arrived on the client's (manual) clock. Before the
 * backoff every call sent one token request into the outage (a service's hundreds of calls a
 * second, hundreds of token requests a second).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createClient, NetworkError, OAuthError, TOKEN_PATH, type CachedToken, type PlantgateClient, type TokenCache } from "../src/index.js";
import { accountPage, manualClock, rejectionOf } from "./support.js";

type Mode = "reset" | "html500" | "oauth503" | "hang" | "ok";

/** The token endpoint (and GetAccountList, which takes the tokens it issued): `mode` says how it answers token requests. */
async function outageServer(clock: ReturnType<typeof manualClock>) {
  const state = { mode: "ok" as Mode, expiresIn: 3600, issued: [] as string[], arrivals: [] as number[], abandoned: 0 };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === TOKEN_PATH) {
      state.arrivals.push(clock.now());
      req.resume();
      req.on("end", () => {
        if (state.mode === "hang") {
          // Never answers: the client's deadline ends the request (afterEach closes the socket).
          res.on("close", () => state.abandoned++);
        } else if (state.mode === "reset") {
          req.socket.destroy();
        } else if (state.mode === "html500") {
          res.writeHead(500, { "content-type": "text/html" }).end("<html><body>Internal Server Error</body></html>");
        } else if (state.mode === "oauth503") {
          res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." }));
        } else {
          const token = `at-${state.arrivals.length}`;
          state.issued.push(token);
          res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify({ access_token: token, token_type: "Bearer", expires_in: state.expiresIn, scope: "Platform_UserAPIs" }));
        }
      });
      return;
    }
    if (path === "/rbac/ServerCommand/GetAccountList") {
      const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      if (!state.issued.includes(token)) {
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: 1202, message: "The access token is invalid or expired." }));
      } else {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(accountPage(1, 20, 1)));
      }
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  servers.push(server);
  return { state, baseUrl: `http://127.0.0.1:${port}` };
}

const servers: Server[] = [];
afterEach(async () => {
  // A spy left by a failing case (Math.random) must not reach the next one.
  vi.restoreAllMocks();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

function clientOf(baseUrl: string, clock: ReturnType<typeof manualClock>, timeoutMs?: number): PlantgateClient {
  return createClient({ baseUrl, clientId: "third-party", clientSecret: "client-secret-that-is-long-enough", scope: "Platform_UserAPIs", clock: clock.now, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
}

/** The first failure of each outage mode, as the call that sent the request sees it. */
const FIRST: Record<Exclude<Mode, "ok" | "hang">, (e: unknown) => void> = {
  reset: (e) => {
    expect(e).toBeInstanceOf(NetworkError);
    expect(e).toMatchObject({ reason: "fetch_failed", status: null, retryAfter: null });
  },
  html500: (e) => {
    expect(e).toBeInstanceOf(NetworkError);
    expect(e).toMatchObject({ reason: "not_json", status: 500, retryAfter: null, message: "token endpoint: HTTP 500 without an OAuth error body (text/html, not JSON)" });
  },
  oauth503: (e) => {
    expect(e).toBeInstanceOf(OAuthError);
    expect(e).toMatchObject({ status: 503, error: "temporarily_unavailable", retryAfter: null });
    expect((e as Error).cause).toBeUndefined();
  },
};

/** The backoff windows after the 2nd, 3rd, ... failure in a row (s): each drawn from half of it to all of it. */
const WINDOWS = [1, 2, 4, 8, 16, ...Array<number>(20).fill(30)];

describe.each(["reset", "html500", "oauth503"] as const)("a token endpoint in an outage (%s)", (mode) => {
  it("200 calls in a row send 2 token requests; the others reject at once with an error of the same class that names the failure (cause) and the seconds left (retryAfter), counting down", async () => {
    const clock = manualClock();
    const { state, baseUrl } = await outageServer(clock);
    state.mode = mode;
    const client = clientOf(baseUrl, clock);
    const first = await rejectionOf(client.getAccessToken());
    FIRST[mode](first);
    // The first failure costs nothing: the next call asks again (a single blip).
    const second = await rejectionOf(client.listAccounts());
    FIRST[mode](second);
    expect(second).not.toBe(first);
    expect(state.arrivals).toHaveLength(2);
    const waits: unknown[] = [];
    for (let i = 0; i < 198; i++) waits.push(await rejectionOf(i % 3 === 0 ? client.refresh() : i % 3 === 1 ? client.listAccounts() : client.getAccessToken()));
    expect(state.arrivals).toHaveLength(2);
    for (const wait of waits) {
      expect(wait).toBeInstanceOf(first instanceof OAuthError ? OAuthError : NetworkError);
      expect((wait as Error).cause).toBe(second);
      // The second window is from 0.5 to 1 s: 1 s left, rounded up.
      expect((wait as { retryAfter: unknown }).retryAfter).toBe(1);
    }
    const wait = waits[0] as NetworkError | OAuthError;
    if (wait instanceof NetworkError) {
      const last = second as NetworkError;
      expect([wait.reason, wait.status]).toEqual([last.reason, last.status]);
      expect(wait.message).toBe(`POST ${TOKEN_PATH} not sent: 2 token requests in a row got no usable answer; the next one is sent in 1 s at the earliest (last: ${last.message})`);
    } else {
      expect(wait).toMatchObject({ status: 503, error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later.", grantType: "client_credentials", message: (second as Error).message });
    }
  });

  it("a call every 100 ms for 2 minutes sends one token request per backoff window (1, 2, 4, 8, 16, 30 s, each from half to all of it), and each retryAfter said when", async () => {
    const clock = manualClock();
    const { state, baseUrl } = await outageServer(clock);
    state.mode = mode;
    const client = clientOf(baseUrl, clock);
    const start = clock.now();
    /** When the last wait's retryAfter said the next request would be sent at the latest / at the earliest. */
    let latest = Infinity;
    let earliest = -Infinity;
    for (let step = 0; step < 1200; step++) {
      const before = state.arrivals.length;
      const error = await rejectionOf(client.getAccessToken());
      const sent = state.arrivals.length > before;
      const left = (error as { retryAfter: number | null }).retryAfter;
      if (sent) {
        expect(clock.now()).toBeGreaterThan(earliest);
        expect(clock.now()).toBeLessThanOrEqual(latest);
        latest = Infinity;
        earliest = -Infinity;
      } else {
        // Whole seconds, rounded up: the request comes within (left - 1, left] s from now.
        expect(left).toBeGreaterThanOrEqual(1);
        latest = Math.min(latest, clock.now() + left! * 1000);
        earliest = Math.max(earliest, clock.now() + (left! - 1) * 1000);
      }
      clock.advance(0.1);
    }
    const at = state.arrivals.map((t) => t - start);
    // Two at once (the first failure opens no window), then one per window.
    expect(at.slice(0, 2)).toEqual([0, 100]);
    const gaps = at.slice(2).map((t, i) => t - at[i + 1]!);
    // At the longest (all of each window): 1+2+4+8+16 s, then 30 s each; at the shortest, half of that.
    expect(gaps.length).toBeGreaterThanOrEqual(7);
    expect(gaps.length).toBeLessThanOrEqual(12);
    gaps.forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual((WINDOWS[i]! * 1000) / 2);
      // The next call after the window's end: up to one step (100 ms) later.
      expect(gap).toBeLessThanOrEqual(WINDOWS[i]! * 1000 + 100);
    });
  });
});

it("a success resets it: after the outage the next token is fetched once the window is over, and the next outage's first failure opens no window again", async () => {
  const clock = manualClock();
  const { state, baseUrl } = await outageServer(clock);
  const client = clientOf(baseUrl, clock);
  state.mode = "reset";
  // Five failures in a row, each call after the last one's window (30 s is past any): the window is now 4 to 8 s.
  for (let i = 0; i < 5; i++) {
    expect(await rejectionOf(client.getAccessToken())).toMatchObject({ reason: "fetch_failed", retryAfter: null });
    clock.advance(30);
  }
  clock.advance(-30);
  expect(state.arrivals).toHaveLength(5);
  const left = (await rejectionOf(client.getAccessToken())) as NetworkError;
  expect(left.retryAfter).toBeGreaterThanOrEqual(4);
  expect(left.retryAfter).toBeLessThanOrEqual(8);
  // The server is back; the window passes; one request, a token.
  state.mode = "ok";
  clock.advance(left.retryAfter!);
  expect((await client.listAccounts()).total).toBe(1);
  expect(state.arrivals).toHaveLength(6);
  // An hour later the token is due, and the server is down again: a fresh start.
  clock.advance(3600);
  state.mode = "reset";
  expect(await rejectionOf(client.getAccessToken())).toMatchObject({ reason: "fetch_failed", retryAfter: null });
  expect(await rejectionOf(client.getAccessToken())).toMatchObject({ reason: "fetch_failed", retryAfter: null });
  expect(await rejectionOf(client.getAccessToken())).toMatchObject({ reason: "fetch_failed", retryAfter: 1 });
  expect(state.arrivals).toHaveLength(8);
});

it("a token still valid (due for renewal, not expired) is handed out while its renewal fails or waits, until it expires", async () => {
  const clock = manualClock();
  const { state, baseUrl } = await outageServer(clock);
  const client = clientOf(baseUrl, clock);
  const token = await client.getAccessToken();
  // Due: within refreshSkewSeconds (30) of its expiry; the token endpoint goes down.
  clock.advance(3590);
  state.mode = "html500";
  // The backoff's window is real time (the client's monotonic clock, not `clock`): its longest
  // draw (1 s after the second failure) and 30 rounds, which take a few tens of ms. Until
  // 2026-11-30 100 rounds against a random draw down to 0.5 s, which a busy machine (load 7-9)
  // outlasted, and a third renewal went out.
  const random = vi.spyOn(Math, "random").mockReturnValue(0.999_999);
  const started = performance.now();
  for (let i = 0; i < 30; i++) {
    expect((await client.listAccounts()).total).toBe(1);
    expect(await client.getAccessToken()).toBe(token);
  }
  expect(random).toHaveBeenCalled();
  random.mockRestore();
  expect(performance.now() - started).toBeLessThan(1000);
  // The first two renewals were tried (and failed), the rest waited out their window.
  expect(state.arrivals).toHaveLength(3);
  // Expired: now the calls fail.
  clock.advance(10);
  expect(await rejectionOf(client.listAccounts())).toMatchObject({ reason: "not_json", status: 500 });
  // An explicit refresh() throws the token away, so it is never a way back to it.
  expect(await rejectionOf(client.refresh())).toMatchObject({ reason: "not_json", retryAfter: expect.any(Number) });
});

describe("a token endpoint that hangs while the token is due (still valid)", () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("the calls get the token still valid without waiting for the renewal's timeout, which goes on (one request); a call's own signal still rejects", async () => {
    const clock = manualClock();
    const { state, baseUrl } = await outageServer(clock);
    // timeoutMs 2000: a call waits for a renewal at most min(1 s, timeoutMs / 2) from its start.
    const client = clientOf(baseUrl, clock, 2000);
    const token = await client.getAccessToken();
    // Due (10 s left); the token endpoint takes requests and never answers.
    clock.advance(3590);
    state.mode = "hang";
    let started = performance.now();
    // The first call starts the renewal; until 2026-11-30 its deadline (2000 ms from the call)
    // came a few ms before the renewal request's own, and it failed with "(no access token yet)".
    const [page, again] = await Promise.all([client.listAccounts(), client.getAccessToken()]);
    expect(page.total).toBe(1);
    expect(again).toBe(token);
    let took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(950);
    expect(took).toBeLessThan(1900);
    // One renewal request, still in flight; a call joining it now gets the token at once.
    expect(state.arrivals).toHaveLength(2);
    started = performance.now();
    expect(await client.getAccessToken()).toBe(token);
    expect((await client.listAccounts()).total).toBe(1);
    took = performance.now() - started;
    expect(took).toBeLessThan(500);
    expect(state.arrivals).toHaveLength(2);
    // The renewal ends at its own timeout (2000 ms from its request); the next call starts another.
    await sleep(1500);
    const controller = new AbortController();
    const cancelled = client.getAccessToken({ signal: controller.signal });
    controller.abort();
    expect(await rejectionOf(cancelled)).toMatchObject({ name: "AbortError" });
    // It started a renewal all the same (the signal was not aborted yet): its request arrives.
    await sleep(200);
    expect(state.arrivals).toHaveLength(3);
    // That one times out too: a second failure in a row, whose backoff window (0.5 to 1 s, on the
    // client's clock and at most that in real time) holds the next call, which gets the token still
    // valid. Waited for as the server sees the client let go of the request, not a fixed sleep: a
    // call a few hundred ms late would come after the window in real time.
    while (state.abandoned < 2) await sleep(10);
    state.mode = "ok";
    expect(await client.getAccessToken()).toBe(token);
    expect(state.arrivals).toHaveLength(3);
    // After the window the endpoint, back, brings a new token.
    clock.advance(1);
    expect(await client.getAccessToken()).toBe("at-4");
  });

  it("an expired token, or one an API refused, is never handed out: the call waits for the renewal until its deadline, as before", async () => {
    const clock = manualClock();
    const { state, baseUrl } = await outageServer(clock);
    const client = clientOf(baseUrl, clock, 1500);
    const token = await client.getAccessToken();
    clock.advance(3590);
    state.mode = "hang";
    // refresh() throws the token away: never a way back to it.
    expect(await rejectionOf(client.refresh(token))).toMatchObject({ reason: "timeout", message: `POST ${TOKEN_PATH} got no complete answer within 1500 ms` });
    const other = clientOf(baseUrl, clock, 1500);
    state.mode = "ok";
    const second = await other.getAccessToken();
    clock.advance(3599);
    state.mode = "hang";
    expect(await other.getAccessToken()).toBe(second);
    // Expired: the call waits for the renewal (still in flight) and fails with its timeout.
    clock.advance(2);
    expect(await rejectionOf(other.listAccounts())).toMatchObject({ reason: "timeout", message: `POST ${TOKEN_PATH} got no complete answer within 1500 ms` });
    expect(state.arrivals).toHaveLength(4);
  });
});

describe("the token still valid handed out while a renewal fails is never older than the current one", () => {
  /**
   * A shared cache as Redis holds it (JSON text); `dropSets`: a best-effort hook whose writes fail
   * and which swallows the error (a Redis gone read-only in a failover), so the cache stays behind.
   */
  function sharedCache() {
    const store = new Map<string, string>();
    const link = () => {
      const state = { dropSets: false };
      const hook: TokenCache = {
        async get(key) {
          const v = store.get(key);
          return v === undefined ? null : (JSON.parse(v) as CachedToken);
        },
        async set(key, token) {
          if (!state.dropSets) store.set(key, JSON.stringify(token));
        },
      };
      return { hook, state };
    };
    return { store, link };
  }
  function cachedClient(baseUrl: string, clock: ReturnType<typeof manualClock>, tokenCache: TokenCache): PlantgateClient {
    return createClient({ baseUrl, clientId: "third-party", clientSecret: "client-secret-that-is-long-enough", scope: "Platform_UserAPIs", clock: clock.now, tokenCache, refreshJitterSeconds: 0 });
  }
  /** at-1 in the cache; then at-2 (the renewal's, 10 s before at-1 expires) while the cache keeps at-1: the write is lost. */
  async function cacheBehind() {
    const clock = manualClock();
    const server = await outageServer(clock);
    const cache = sharedCache();
    const { hook, state } = cache.link();
    const client = cachedClient(server.baseUrl, clock, hook);
    expect(await client.getAccessToken()).toBe("at-1");
    clock.advance(3590);
    state.dropSets = true;
    expect(await client.getAccessToken()).toBe("at-2");
    expect((JSON.parse(cache.store.values().next().value!) as CachedToken).accessToken).toBe("at-1");
    return { clock, client, ...server };
  }

  it("refresh(current) in an outage rejects: the older token the cache still holds (not expired, not refused) is not a way back", async () => {
    const { client, state } = await cacheBehind();
    state.mode = "reset";
    // The renewal reads at-1 from the cache (due, 10 s left), and its request fails without an
    // answer. Until 2026-11-30 the call got at-1, though at-2 replaced it.
    expect(await rejectionOf(client.refresh("at-2"))).toMatchObject({ reason: "fetch_failed", retryAfter: null });
    expect(state.arrivals).toHaveLength(3);
  });

  it("an API's 401 for the current token in an outage: the call fails rather than retry with the older token from the cache", async () => {
    const { client, state } = await cacheBehind();
    // The server no longer takes at-2 (revoked), and its token endpoint is down.
    state.issued.splice(state.issued.indexOf("at-2"), 1);
    state.mode = "reset";
    expect(await rejectionOf(client.listAccounts())).toMatchObject({ reason: "fetch_failed", retryAfter: null });
    expect(state.arrivals).toHaveLength(3);
  });

  it("a different token in the cache, newer than the refused one (another process's), is handed out", async () => {
    const clock = manualClock();
    const { state, baseUrl } = await outageServer(clock);
    const cache = sharedCache();
    const a = cache.link();
    const b = cache.link();
    const clientA = cachedClient(baseUrl, clock, a.hook);
    const clientB = cachedClient(baseUrl, clock, b.hook);
    a.state.dropSets = true;
    expect(await clientA.getAccessToken()).toBe("at-1");
    clock.advance(5);
    expect(await clientB.getAccessToken()).toBe("at-2");
    // at-2 is due for A too (25 s left), at-1 has 20 s left and an API refused it.
    clock.advance(3580);
    state.mode = "reset";
    expect(await clientA.refresh("at-1")).toMatchObject({ accessToken: "at-2", hasRefreshToken: false });
    expect(state.arrivals).toHaveLength(3);
  });
});
