/**
 * Many processes sharing one tokenCache entry, against the real example server over a socket
 * (memory storage, its clock manual, the default refresh grace window: 30 s and 10 replays). Each
 * process is a client of its own (its own clock, memory and single flight) on one shared store,
 * standing in for the user's Redis. They hold the same access token, so without the jitter they all
 * found it due at the same moment and presented the same refresh token together: past the 11th
 * presentation the server took it for reuse and revoked the family (the user signed out).
 */
import { afterEach, describe, expect, it } from "vitest";
import { TOKEN_PATH, type CachedToken, type FetchLike, type TokenCache } from "../src/index.js";
import { startTarget, userProcess, type ServerTarget } from "./support.js";

const TTL = 7200;

let target: ServerTarget | null = null;
afterEach(async () => {
  await target?.close();
  expect(target?.errors).toEqual([]);
  target = null;
});

/** One shared store (JSON text, as Redis holds it); every process's hook reads and writes it. */
function sharedStore() {
  const store = new Map<string, string>();
  const hook: TokenCache = {
    async get(key) {
      const v = store.get(key);
      return v === undefined ? null : (JSON.parse(v) as CachedToken);
    },
    async set(key, token) {
      store.set(key, JSON.stringify(token));
    },
  };
  const held = () => (JSON.parse([...store.values()][0]!) as CachedToken).accessToken;
  return { hook, held };
}

describe("many processes sharing one tokenCache entry", () => {
  it("50 processes calling all through the renewal window renew at their own jittered points: the refresh token is presented far fewer than 11 times, the family lives", async () => {
    target = await startTarget();
    const t = target;
    const cache = sharedStore();
    const grants: string[] = [];
    const fetch: FetchLike = async (url, init) => {
      if (new URL(url).pathname === TOKEN_PATH) grants.push(new URLSearchParams(init.body).get("grant_type")!);
      return globalThis.fetch(url, init);
    };
    const processes = Array.from({ length: 50 }, () => userProcess(t, { tokenCache: cache.hook, fetch }));
    const clocks = [t.clock, ...processes.map((p) => p.clock)];
    // The first signs in; every other one takes that token from the cache.
    for (const p of processes) await p.client.getAccessToken();
    expect(grants).toEqual(["password"]);
    const first = cache.held();
    // 31 s before expiry, then every 250 ms until 5 s before it, every process makes a call (all
    // at once: each round waits for the slowest).
    for (const clock of clocks) clock.advance(TTL - 31);
    const outcomes = new Set<string>();
    for (let step = 0; step < 104; step++) {
      for (const clock of clocks) clock.advance(0.25);
      const got = await Promise.all(processes.map((p) => p.client.getAccessToken().catch((e: unknown) => String(e))));
      for (const g of got) if (g !== first && g !== cache.held()) outcomes.add(g);
    }
    const refreshes = grants.filter((g) => g === "refresh_token").length;
    expect({ outcomes: [...outcomes], reuse: (await t.events()).filter((e) => e === "refresh_token.reuse_detected") }).toEqual({ outcomes: [], reuse: [] });
    // Every process now holds the renewed token, the one in the cache.
    const renewed = cache.held();
    expect(renewed).not.toBe(first);
    expect(new Set(await Promise.all(processes.map((p) => p.client.getAccessToken())))).toEqual(new Set([renewed]));
    // Those that found the token due in the same round presented it together; all others found
    // the renewed token in the cache. Well below the server's 11 (one rotation and 10 replays).
    expect(refreshes).toBeGreaterThanOrEqual(1);
    expect(refreshes).toBeLessThanOrEqual(8);
    expect(grants.filter((g) => g !== "refresh_token")).toEqual(["password"]);
    // The family lives: the next renewal (the access token's lifetime later) is answered too.
    for (const clock of clocks) clock.advance(TTL);
    expect((await processes[0]!.client.listAccounts()).total).toBe(1);
  });
});
