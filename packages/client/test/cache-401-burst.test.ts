/**
 * Processes sharing one tokenCache entry when an API refuses their still-fresh access token
 * together (here the operator's answer to a leaked signing key, as the README advises: rotate now,
 * then revoke the old key; every token it signed is refused). Until 2026-12-02 the renewal a 401
 * started presented the refresh token at once: the jitter (refreshJitterSeconds) spread only
 * renewals of tokens that came due, so every process presented the same refresh token within
 * milliseconds, and past the server's refreshGraceMaxUses (10) replays that was reuse: the family
 * was revoked and the user signed out (14 of 14 calls refused, a review helper's finding). Now such
 * a renewal, with a cache, waits a random moment first (up to 3 s, bounded by the call's deadline),
 * reads the cache again and takes a token another process cached there.
 * Against the real app in-process (memory storage, default grace: 30 s, 10 replays).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { CachedToken, ClientOptions, TokenCache } from "../src/index.js";
import { inProcessTarget, userProcess } from "./support.js";

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * The app, `count` processes (clients of their own, each with its own clock) on one shared store,
 * every one holding the token the first one signed in for, and `leak()`: the leaked-key steps.
 * `presentations` counts the refresh tokens sent to the token endpoint.
 */
async function fleet(count: number, options: (i: number) => Partial<ClientOptions> = () => ({})) {
  const t = await inProcessTarget();
  const { app, events, clock: serverClock } = t;
  const presentations = () => t.grants.filter((g) => g === "refresh_token").length;
  // A shared cache with a round trip (as Redis has one).
  const store = new Map<string, string>();
  const tick = () => new Promise((r) => setTimeout(r, 1));
  const tokenCache: TokenCache = {
    async get(key) {
      await tick();
      const v = store.get(key);
      return v === undefined ? null : (JSON.parse(v) as CachedToken);
    },
    async set(key, token) {
      await tick();
      store.set(key, JSON.stringify(token));
    },
  };
  const processes = Array.from({ length: count }, (_, i) => userProcess(t, { tokenCache, ...options(i) }));
  // One process signs in; the others take its token from the cache.
  for (const p of processes) expect((await p.client.listAccounts()).total).toBe(1);
  expect(events.filter((e) => e.type === "token.issued")).toHaveLength(1);
  return {
    processes,
    events,
    presentations,
    /** The next API request reaches the app `ms` later (a slow network or upstream). */
    delayNextApiRequest: t.delayNextApiRequest,
    reuse: () => events.some((e) => e.type === "refresh_token.reuse_detected"),
    /** A leaked signing key: rotate now, and a minute later revoke the old key. */
    async leak() {
      const [old] = await app.admin.listSigningKeys();
      await app.admin.rotateSigningKey({ now: true });
      serverClock.advance(61);
      for (const p of processes) p.clock.advance(61);
      await app.admin.revokeSigningKey(old!.kid);
    },
  };
}

const total = (p: Promise<{ total: number }>) => p.then((r) => r.total, (e: unknown) => e);

describe("a 401 that reaches every process sharing a cache entry at once", () => {
  it("14 processes: the renewals are spread, the refresh token is presented within the grace replays (mostly once), every call succeeds and the user stays signed in", async () => {
    const f = await fleet(14);
    await f.leak();
    // Every process's next call: the API refuses the token, the client renews and retries.
    const results = await Promise.all(f.processes.map((p) => total(p.client.listAccounts())));
    // Before 2026-12-02: 14 presentations, every call refused (ApiError 1202), reuse detected. Now
    // (30 runs on a busy 2-core machine) 1 in 25 runs, 2 in 4, 5 in one: the processes share one
    // event loop here, and a stall while the first refresh was answered (150 ms) let 4 wake in it.
    // The server's bound is what counts: at most refreshGraceMaxUses + 1 = 11.
    expect({ results, reuse: f.reuse(), withinGrace: f.presentations() <= 11 }).toEqual({ results: Array(14).fill(1), reuse: false, withinGrace: true });
  });

  it("the renewal waits, reads the cache again and takes the token another process renewed meanwhile: one presentation", async () => {
    // The first process does not wait (refreshJitterSeconds 0); the second waits its whole second.
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const f = await fleet(2, (i) => ({ refreshJitterSeconds: i === 0 ? 0 : 1 }));
    await f.leak();
    const started = performance.now();
    const results = await Promise.all(f.processes.map((p) => total(p.client.listAccounts())));
    const waited = performance.now() - started;
    // Before 2026-12-02: 2 presentations (the second a grace replay), no wait.
    expect({ results, presentations: f.presentations(), reuse: f.reuse(), waitedAboutASecond: waited >= 990 }).toEqual({ results: [1, 1], presentations: 1, reuse: false, waitedAboutASecond: true });
  });

  it("client.refresh(refusedToken) is spread the same way", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const f = await fleet(2, (i) => ({ refreshJitterSeconds: i === 0 ? 0 : 1 }));
    const held = await f.processes[0]!.client.getAccessToken();
    await f.leak();
    const renewed = await Promise.all(f.processes.map((p) => p.client.refresh(held)));
    expect({ same: renewed[0]!.accessToken === renewed[1]!.accessToken, refused: renewed[0]!.accessToken === held, presentations: f.presentations(), reuse: f.reuse() }).toEqual({ same: true, refused: false, presentations: 1, reuse: false });
  });

  it("the wait is bounded by the call's deadline: with timeoutMs 400 it is at most 200 ms, and the call succeeds", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const f = await fleet(1, () => ({ timeoutMs: 400 }));
    await f.leak();
    const started = performance.now();
    const result = await total(f.processes[0]!.client.listAccounts());
    const waited = performance.now() - started;
    // A wait of the whole 3 s would end the call at its 400 ms deadline (NetworkError timeout).
    expect({ result, presentations: f.presentations(), waitedUnderTheDeadline: waited >= 100 && waited < 400 }).toEqual({ result: 1, presentations: 1, waitedUnderTheDeadline: true });
  });

  it("a call that joins the renewal while it waits, with less time left than the wait, gets the token in time: the wait ends halfway through the joiner's time left", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const f = await fleet(1, () => ({ timeoutMs: 4000 }));
    const { client } = f.processes[0]!;
    const held = await client.getAccessToken();
    await f.leak();
    // The joiner: its API request (with the now refused token) is answered 401 after 3 s, 1 s
    // before its deadline.
    f.delayNextApiRequest(3000);
    const started = performance.now();
    const joiner = client.listAccounts().then(
      (page) => ({ total: page.total, inTime: performance.now() - started < 4000 }),
      (e: unknown) => ({ name: (e as Error).name, message: (e as Error).message }),
    );
    // The starter, 2.6 s on: refresh(held) waits 0.999 * 2 s (half of its timeoutMs), to 4.6 s,
    // past the joiner's deadline; the joiner, joining at 3 s, ends the wait at 3.5 s.
    await new Promise((r) => setTimeout(r, 2600));
    const starter = client.refresh(held).then(
      (t) => ({ renewed: t.accessToken !== held }),
      (e: unknown) => ({ name: (e as Error).name, message: (e as Error).message }),
    );
    // Before 2026-12-02 the joiner failed: NetworkError timeout "GET /rbac/ServerCommand/GetAccountList
    // got no complete answer within 4000 ms (no access token yet)".
    expect({ joiner: await joiner, starter: await starter, presentations: f.presentations(), reuse: f.reuse() }).toEqual({
      joiner: { total: 1, inTime: true },
      starter: { renewed: true },
      presentations: 1,
      reuse: false,
    });
  });

  it("without a tokenCache the renewal after a 401 does not wait (as before)", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const f = await fleet(1, () => ({ tokenCache: undefined }));
    await f.leak();
    const started = performance.now();
    const result = await total(f.processes[0]!.client.listAccounts());
    const waited = performance.now() - started;
    // With a cache this one would wait 0.999 * 3 s.
    expect({ result, presentations: f.presentations(), noWait: waited < 1000 }).toEqual({ result: 1, presentations: 1, noWait: true });
  });

  it("client.refresh() without a refused token renews now, with a tokenCache too", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    const f = await fleet(1);
    const before = await f.processes[0]!.client.getAccessToken();
    const started = performance.now();
    const renewed = await f.processes[0]!.client.refresh();
    const waited = performance.now() - started;
    expect({ renewed: renewed.accessToken !== before, presentations: f.presentations(), noWait: waited < 1000 }).toEqual({ renewed: true, presentations: 1, noWait: true });
  });
});
