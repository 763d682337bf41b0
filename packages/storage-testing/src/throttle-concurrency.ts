/**
 * The brute-force throttle under concurrent guesses over two instances of one store: two apps
 * (`createPlantgate`), one on each instance, the guesses split between them. Counts how many
 * password checks ran (PBKDF2 at the configured cost, observed as the `deriveBits` calls at that
 * cost; the calls themselves run unchanged) and which locks were reported.
 *
 * The second case failed on PostgreSQL, MariaDB and SQLite + Redis until 2026-12-02 (locks
 * ["client_budget", "username"], bob 429): the client's budget across usernames was counted before
 * the username's own key, so concurrent guesses at one username each held a budget count while
 * that key refused them, and the budget stayed past its limit (see core's
 * brute-force-budget-races.test.ts).
 */
import { createPlantgate, sha256, type Storage } from "@plantgate/core";
import { afterEach, expect, it, vi } from "vitest";

const BASE = "https://as.example.test";
const quiet = { error() {}, warn() {} };
/** A cost no other hash in these tests uses, so each `deriveBits` at it is one password check. */
const ITER = 1_234;

/** How many times each status occurs: `[400, 429, 429]` is `{ 400: 1, 429: 2 }`. */
const tally = (statuses: number[]): Record<number, number> => {
  const t: Record<number, number> = {};
  for (const s of statuses) t[s] = (t[s] ?? 0) + 1;
  return t;
};

/**
 * Opens two instances over one fresh, empty store (each with its own connection or pool, as two
 * server processes have). `defer(step)` registers a clean-up step; after each case the steps run
 * in reverse order, each whether or not an earlier one failed.
 */
export type OpenTwoInstances = (defer: (step: () => Promise<void>) => void) => Promise<readonly [Storage, Storage]>;

/**
 * Registers six cases (and an `afterEach`) in the enclosing `describe`: 40 concurrent wrong
 * guesses at one username from one address, the same from 40 addresses, and 60 guesses at 60
 * usernames through one client, each with the exact number of password checks, the answers and
 * the one lock reported; 30 concurrent client authentications of one client with a wrong secret,
 * 60 of one client whose right and wrong secrets take turns over both instances, and one client's
 * failures straddling the start of a budget window, each with what they spend of their address's
 * budget. Every case opens its own two instances with `openTwo`.
 */
export function throttleConcurrencyCases(openTwo: OpenTwoInstances): void {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });

  const setup = async () => {
    const [s1, s2] = await openTwo((step) => cleanups.push(step));
    const locks: string[] = [];
    const options = {
      onEvent: (e: { type: string; lock?: string }) => void (e.type === "account.locked_out" && locks.push(e.lock!)),
      passwordHashIterations: ITER,
      logger: quiet,
      // 3 per username + IP, 15 per username, 30 per client.
      bruteForce: { maxFailures: 3, windowSeconds: 600 },
      maxConcurrentPasswordChecks: 200,
    };
    const a = createPlantgate({ ...options, storage: s1 });
    const b = createPlantgate({ ...options, storage: s2 });
    await a.admin.createAccount({ username: "alice", password: "alice-password-1" });
    await a.admin.createAccount({ username: "bob", password: "bob-password-1" });
    const { clientSecret } = await a.admin.createClient({ clientId: "app-1", grantTypes: ["password"] });
    const authorization = "Basic " + btoa(`app-1:${clientSecret}`);
    let checks = 0;
    const derive = crypto.subtle.deriveBits.bind(crypto.subtle);
    const spy = vi.spyOn(crypto.subtle, "deriveBits").mockImplementation((params, key, length) => {
      if ((params as Pbkdf2Params).iterations === ITER) checks++;
      return derive(params, key, length);
    });
    cleanups.push(async () => spy.mockRestore());
    const grant = (i: number, username: string, ip: string, password = `wrong-${i}`) =>
      (i % 2 ? b : a).fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization },
          body: new URLSearchParams({ grant_type: "password", username, password }).toString(),
        }),
        { clientIp: ip },
      );
    const burst = async (n: number, username: (i: number) => string, ip: (i: number) => string) => {
      const statuses = (await Promise.all(Array.from({ length: n }, (_, i) => grant(i, username(i), ip(i))))).map((r) => r.status);
      return { checks, statuses: tally(statuses) };
    };
    const settled = async () => {
      await Promise.all([a.flushEvents(), b.flushEvents()]);
      return locks;
    };
    return { grant, burst, settled };
  };

  it("40 concurrent wrong guesses at alice from one address: exactly 3 password checks; one lock, the username + address's", async () => {
    const { burst, settled } = await setup();
    const seen = await burst(40, () => "alice", () => "198.51.100.20");
    expect({ ...seen, locks: await settled() }).toEqual({ checks: 3, statuses: { 400: 3, 429: 37 }, locks: ["username_address"] });
  });

  it("40 concurrent wrong guesses at alice from 40 addresses: exactly 5 x 3 = 15 checks, one lock (the username's), and bob then signs in", async () => {
    const { grant, burst, settled } = await setup();
    const seen = await burst(40, () => "alice", (i) => `198.51.100.${i + 1}`);
    const bob = await grant(0, "bob", "203.0.113.9", "bob-password-1");
    expect({ ...seen, bob: bob.status, locks: await settled() }).toEqual({ checks: 15, statuses: { 400: 15, 429: 25 }, bob: 200, locks: ["username"] });
  });

  it("60 concurrent guesses at 60 usernames from 60 addresses through one client: exactly 10 x 3 = 30 checks; one lock, the client's budget", async () => {
    const { burst, settled } = await setup();
    // One of them (the first) an account's, the rest unknown.
    const seen = await burst(60, (i) => (i === 0 ? "alice" : `user-${i}`), (i) => `203.0.113.${i + 1}`);
    expect({ ...seen, locks: await settled() }).toEqual({ checks: 30, statuses: { 400: 30, 429: 30 }, locks: ["client_budget"] });
  });

  /** Two apps over the two instances, clients "stale" and "app-1", and client credentials from one address. */
  /**
   * Both apps on one clock, moved by hand (`advance`), from a second into a 10-minute window near
   * the real time: the address's budget and a client's share of it are counted per window of the
   * clock (from the epoch), so on the real clock a case that ran across a window's start would
   * count part of its failures in the next window.
   */
  const clientSetup = async () => {
    const [s1, s2] = await openTwo((step) => cleanups.push(step));
    let now = Math.floor(Date.now() / 600_000) * 600_000 + 1000;
    const advance = (ms: number) => void (now += ms);
    const options = { passwordHashIterations: ITER, logger: quiet, bruteForce: { maxFailures: 3, windowSeconds: 600 }, clock: () => now };
    const a = createPlantgate({ ...options, storage: s1 });
    const b = createPlantgate({ ...options, storage: s2 });
    const { clientSecret: staleSecret } = await a.admin.createClient({ clientId: "stale", grantTypes: ["client_credentials"] });
    const { clientSecret } = await a.admin.createClient({ clientId: "app-1", grantTypes: ["client_credentials"] });
    const ip = "198.51.100.30";
    const cc = (app: typeof a, id: string, secret: string) =>
      app.fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`${id}:${secret}`) },
          body: "grant_type=client_credentials",
        }),
        { clientIp: ip },
      );
    /** The stored count of a throttle key (null without a counter). */
    const count = async (key: string) => (await s1.attempts.get(key))?.count ?? null;
    const pairKey = `t:${await sha256(JSON.stringify(["client", "c", "stale", ip]))}`;
    const keys = { budget: `t:${await sha256(JSON.stringify(["client-budget", "iw", ip]))}`, pair: pairKey, share: `t:${await sha256(JSON.stringify(["budget-share-w", pairKey]))}` };
    return { a, b, cc, count, keys, staleSecret, clientSecret, advance };
  };

  it("30 concurrent client authentications of one client with a wrong secret from one address: they spend exactly maxFailures (3) of the address's budget, and another client there still authenticates", async () => {
    // Until 2026-12-03 every failure in flight spent the budget (read, then counted), so one stale
    // client's workers after a secret rotation locked every client at their address out (the
    // budget is 10 x 3 here: 30 failures at once spent all of it).
    const { a, b, cc, count, keys, clientSecret } = await clientSetup();
    const statuses = (await Promise.all(Array.from({ length: 30 }, (_, i) => cc(i % 2 ? b : a, "stale", "an-old-secret")))).map((r) => r.status);
    const [budget, pair, share] = [await count(keys.budget), await count(keys.pair), await count(keys.share)];
    const other = await cc(b, "app-1", clientSecret);
    // All of them may have been evaluated (each read the counters before any failure was counted):
    // the client's own counter, and its share of the budget, hold every 401.
    const evaluated = tally(statuses)[401] ?? 0;
    expect({ answered: (tally(statuses)[401] ?? 0) + (tally(statuses)[429] ?? 0), budget, pair, share, other: other.status }).toEqual({ answered: 30, budget: 3, pair: evaluated, share: evaluated, other: 200 });
  });

  it("60 client authentications of one client whose right and wrong secrets take turns (a rolling redeploy), over both instances: they spend exactly maxFailures (3) of the address's budget, and another client there still authenticates", async () => {
    // Each success resets the client's own counter, so it never locks: until later on 2026-12-03
    // each of its 30 failures spent the budget (10 x 3 here: all of it), and every client at the
    // address was then refused. Its share of the budget, which a success leaves, stops at 3.
    const { a, b, cc, count, keys, staleSecret, clientSecret } = await clientSetup();
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) statuses.push((await cc(i % 2 ? b : a, "stale", i % 4 < 2 ? "an-old-secret" : staleSecret)).status);
    const [budget, pair, share] = [await count(keys.budget), await count(keys.pair), await count(keys.share)];
    const other = await cc(b, "app-1", clientSecret);
    expect({ statuses: tally(statuses), budget, pair, share, other: other.status }).toEqual({ statuses: { 200: 30, 401: 30 }, budget: 3, pair: null, share: 30, other: 200 });
  });

  it("a client whose failures straddle the start of a budget window, over both instances, spends exactly maxFailures (3) of that window, and another client there still authenticates", async () => {
    const W = 600_000;
    const { a, b, cc, count, keys, clientSecret, advance } = await clientSetup();
    // The stale client fails once half-way through a budget window; then twice at the next
    // window's start, and three times more after its own (client id + address) window ended.
    // Until later on 2026-12-03 its share of the budget had a window of its own, opened by the
    // first failure: 2 failures passed into the next budget window with it, and 3 more with a new
    // share, 5 of that window's 30.
    advance(W / 2);
    expect((await cc(a, "stale", "an-old-secret")).status).toBe(401);
    advance(W / 2);
    const statuses: number[] = [];
    for (let i = 0; i < 2; i++) statuses.push((await cc(i % 2 ? a : b, "stale", "an-old-secret")).status);
    advance(W / 2);
    for (let i = 0; i < 3; i++) statuses.push((await cc(i % 2 ? a : b, "stale", "an-old-secret")).status);
    const [budget, share] = [await count(keys.budget), await count(keys.share)];
    const other = await cc(b, "app-1", clientSecret);
    expect({ statuses: tally(statuses), budget, share, other: other.status }).toEqual({ statuses: { 401: 5 }, budget: 3, share: 5, other: 200 });
  });
}
