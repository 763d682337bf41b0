/**
 * The jitter of the background retries: a lost refresh presented again, and a failed cache write
 * tried again, each wait a random point from half of its nominal delay (1, 2, 4, 8 s; 1, 2, 4, 8,
 * 16, 32 s) to all of it, so a fleet of clients that lost their refreshes together (a server or
 * proxy outage) does not come back in lockstep, while the refresh retries stay within the server's
 * 30 s grace window. `Math.random` (the client's random source) is pinned to each end of its range;
 * fake timers (and the monotonic clock) time each request to the millisecond.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createClient, NetworkError, TOKEN_PATH, type CachedToken, type FetchLike, type TokenCache } from "../src/index.js";
import { BASE, CLIENT_ID, CLIENT_SECRET, manualClock, USER } from "./support.js";

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** Just below 1: Math.random never returns 1 itself. */
const TOP = 1 - 2 ** -40;

/** A token answer of the password grant or a refresh (1 h, with a refresh token). */
function tokenAnswer(n: number): Response {
  const body = { access_token: `at-${n}`, token_type: "Bearer", expires_in: 3600, refresh_token: `rt-${n}` };
  return new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });
}

/** The waits between one request and the next (ms, by the fake monotonic clock). */
const gaps = (at: number[]) => at.slice(1).map((t, i) => t - at[i]!);

/** A client of a user that keeps no password (a refused refresh would sign it out), on `fetch`. */
function userClient(fetch: FetchLike, options: { tokenCache?: TokenCache } = {}) {
  const clock = manualClock();
  const client = createClient({
    baseUrl: BASE,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    scope: "Platform_UserAPIs offline_access",
    credentials: USER,
    keepCredentials: false,
    clock: clock.now,
    fetch,
    ...options,
  });
  return { client, clock };
}

describe("a refresh that got no answer is presented again", () => {
  /**
   * Signs in, then loses every refresh (connections refused from the moment the token is due) and
   * lets 60 s pass without a call: when (performance.now()) each refresh was sent.
   */
  async function refreshTimes(random: number): Promise<number[]> {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    vi.spyOn(Math, "random").mockReturnValue(random);
    const sent: number[] = [];
    const fetch: FetchLike = async (url, init) => {
      expect(new URL(url).pathname).toBe(TOKEN_PATH);
      const grant = new URLSearchParams(init.body ?? "").get("grant_type");
      if (grant === "password") return tokenAnswer(1);
      sent.push(performance.now());
      throw new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED") });
    };
    const { client, clock } = userClient(fetch);
    expect(await client.getAccessToken()).toBe("at-1");
    clock.advance(3600);
    const failed = await client.getAccessToken().catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(NetworkError);
    expect((failed as NetworkError).reason).toBe("fetch_failed");
    for (let s = 0; s < 60; s++) await vi.advanceTimersByTimeAsync(1000);
    return sent;
  }

  it("Math.random() 0: half of each delay, 0.5, 1, 2 and 4 s after each failure (7.5 s from the loss to the fourth), then no more", async () => {
    const sent = await refreshTimes(0);
    expect(gaps(sent)).toEqual([500, 1000, 2000, 4000]);
  });

  it("Math.random() just below 1: all of each delay, 1, 2, 4 and 8 s (the fourth 15 s after the loss, as before the jitter: within the 30 s grace window), never more", async () => {
    const sent = await refreshTimes(TOP);
    const waits = gaps(sent);
    expect(waits).toHaveLength(4);
    // Fake timers drop a delay's fraction of a millisecond (as Node's do).
    [1000, 2000, 4000, 8000].forEach((nominal, i) => {
      expect(waits[i]).toBeGreaterThanOrEqual(nominal - 1);
      expect(waits[i]).toBeLessThanOrEqual(nominal);
    });
    expect(sent[4]! - sent[0]!).toBeLessThanOrEqual(15_000);
  });
});

describe("a failed tokenCache.set of a token with a refresh token is tried again", () => {
  /** Signs in while every set fails (the cache unreachable for writes) and lets 90 s pass: when each set was tried. */
  async function setTimes(random: number): Promise<number[]> {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    vi.spyOn(Math, "random").mockReturnValue(random);
    const sets: number[] = [];
    const tokenCache: TokenCache = {
      get: async () => null,
      set: async (_key: string, _token: CachedToken) => {
        sets.push(performance.now());
        throw new Error("cache unreachable");
      },
    };
    const fetch: FetchLike = async () => tokenAnswer(1);
    const { client } = userClient(fetch, { tokenCache });
    expect(await client.getAccessToken().catch((e: unknown) => e)).toEqual(new Error("cache unreachable"));
    for (let s = 0; s < 90; s++) await vi.advanceTimersByTimeAsync(1000);
    return sets;
  }

  it("Math.random() 0: 0.5, 1, 2, 4, 8 and 16 s after each failure (31.5 s in all), then no more", async () => {
    expect(gaps(await setTimes(0))).toEqual([500, 1000, 2000, 4000, 8000, 16000]);
  });

  it("Math.random() just below 1: 1, 2, 4, 8, 16 and 32 s (63 s in all), never more", async () => {
    const waits = gaps(await setTimes(TOP));
    expect(waits).toHaveLength(6);
    [1000, 2000, 4000, 8000, 16000, 32000].forEach((nominal, i) => {
      expect(waits[i]).toBeGreaterThanOrEqual(nominal - 1);
      expect(waits[i]).toBeLessThanOrEqual(nominal);
    });
  });
});
