/**
 * Client authentication's budget per address across client ids (from the bounded-storage review,
 * its tests adapted): the brute-force key of client authentication is (client id, address), and
 * unknown client ids are counted too, so before the budget one address sending distinct client ids
 * left one counter row per id for the window (2,000 ids, 2,000 rows; now at most two rows per id
 * that spends the budget: its pair's, and that pair's share of the budget). The budget is
 * `CLIENT_ADDRESS_FACTOR` × `maxFailures` failures per address (IPv6 per /64) and window, read
 * with the (client id, address) counter: once spent, an attempt from that address is refused with
 * 429 before its credential is looked at, and a new client id costs no counter row. Only failures
 * spend it: a success counts nothing.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, sha256, type Plantgate, type SecurityEvent, type Storage } from "../src/index.js";
import { CLIENT_ADDRESS_FACTOR } from "../src/security/credentials.js";
import { basic, formFrom as post, manualClock } from "./helpers.js";

const N = 2000;
const MAX_FAILURES = 10;
const WINDOW_S = 900;
const BUDGET = CLIENT_ADDRESS_FACTOR * MAX_FAILURES;
const ATTACKER = "198.51.100.7";
const LOCKED = { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." };
const BAD_CLIENT = { error: "invalid_client", error_description: "Client authentication failed." };

/** Counter rows in the store: deleting everything older than the far future counts them. */
/** How many times each status occurs: `[401, 429, 429]` is `{ 401: 1, 429: 2 }`. */
const tally = (statuses: number[]): Record<number, number> => {
  const t: Record<number, number> = {};
  for (const s of statuses) t[s] = (t[s] ?? 0) + 1;
  return t;
};

async function counterRows(storage: Storage): Promise<number> {
  return storage.attempts.deleteExpired(Number.MAX_SAFE_INTEGER);
}


const TOKEN = "/UserService/connect/token";
const cc = (app: Plantgate, id: string, secret: string, ip: string) => post(app, TOKEN, { grant_type: "client_credentials" }, { authorization: basic(id, secret) }, ip);

async function setup() {
  const storage = createMemoryStorage();
  const clock = manualClock();
  const events: SecurityEvent[] = [];
  const app = createPlantgate({ storage, clock: clock.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, bruteForce: { maxFailures: MAX_FAILURES, windowSeconds: WINDOW_S }, onEvent: (e) => void events.push(e) });
  const { clientSecret } = await app.admin.createClient({ clientId: "app-1", grantTypes: ["client_credentials"] });
  await app.flushEvents();
  events.splice(0);
  return { storage, clock, app, clientSecret, events };
}

async function expectAnswer(res: Response, status: number, body: unknown, retryAfter: string | null) {
  expect({ status: res.status, body: await res.json(), retryAfter: res.headers.get("retry-after"), cacheControl: res.headers.get("cache-control") }).toEqual({ status, body, retryAfter, cacheControl: "no-store" });
}

describe("client authentication: a budget per address across client ids", () => {
  it("the factor is 10 (10 × maxFailures failures per address and window)", () => {
    expect(CLIENT_ADDRESS_FACTOR).toBe(10);
  });

  it("2000 distinct unknown client ids from one address leave at most the budget's counter rows; past the budget each is 429 with Retry-After", async () => {
    const { storage, clock, app } = await setup();
    const statuses: number[] = [];
    for (let i = 0; i < N; i++) {
      const res = await cc(app, `nope-${i}`, "secret", ATTACKER);
      if (i < BUDGET) await expectAnswer(res, 401, BAD_CLIENT, null);
      else if (i === BUDGET) await expectAnswer(res, 429, LOCKED, String(WINDOW_S - BUDGET / 10));
      else statuses.push(res.status);
      clock.advance(100); // 200 s in all: well inside one 900 s window
    }
    expect(statuses).toEqual(Array(N - BUDGET - 1).fill(429));
    // A prune as the server's hourly timer would run it, within the window: nothing may go.
    expect((await app.admin.prune()).attempts).toBe(0);
    // Two rows per counted failure (its client id + address, and that pair's share of the budget), and the budget's own.
    expect(await counterRows(storage), "counter rows left by one address guessing distinct client ids").toBe(2 * BUDGET + 1);
  }, 120_000);

  it("IPv6 addresses share the budget per /64", async () => {
    const { storage, app } = await setup();
    for (let i = 0; i < BUDGET; i++) await expectAnswer(await cc(app, `nope-${i}`, "secret", `2001:db8:0:1::${(i + 1).toString(16)}`), 401, BAD_CLIENT, null);
    await expectAnswer(await cc(app, "nope-x", "secret", "2001:db8:0:1:ffff:ffff:ffff:ffff"), 429, LOCKED, String(WINDOW_S));
    expect(await counterRows(storage)).toBe(2 * BUDGET + 1);
  });

  it("a legitimate client at another address is unaffected; at the same address it is refused only once the budget is spent, until the window ends", async () => {
    const { clock, app, clientSecret, events } = await setup();
    // Successes at the attacker's address spend nothing: before, between and after the failures.
    for (let i = 0; i < 5; i++) expect((await cc(app, "app-1", clientSecret, ATTACKER)).status).toBe(200);
    for (let i = 0; i < BUDGET - 1; i++) {
      await expectAnswer(await cc(app, `nope-${i}`, "secret", ATTACKER), 401, BAD_CLIENT, null);
      expect((await cc(app, "app-1", clientSecret, ATTACKER)).status).toBe(200);
    }
    clock.advance(10_000);
    // The last failure the budget allows: from now on the address is refused, whatever the client.
    await expectAnswer(await cc(app, "nope-last", "secret", ATTACKER), 401, BAD_CLIENT, null);
    await app.flushEvents();
    events.splice(0);
    await expectAnswer(await cc(app, "app-1", clientSecret, ATTACKER), 429, LOCKED, String(WINDOW_S - 10));
    await expectAnswer(await cc(app, "nope-new", "secret", ATTACKER), 429, LOCKED, String(WINDOW_S - 10));
    // Another address: the client's own key there is clean, and it has a budget of its own.
    expect((await cc(app, "app-1", clientSecret, "203.0.113.5")).status).toBe(200);
    await app.flushEvents();
    expect(events.map(({ id, time, ...rest }) => rest)).toEqual([
      { type: "client.authentication_failed", client_id: "app-1", reason: "throttled", client_ip: ATTACKER, lock: "address_budget", refused_count: 1 },
      { type: "client.authentication_failed", client_id: null, reason: "throttled", client_ip: ATTACKER, lock: "address_budget", refused_count: 2 },
      expect.objectContaining({ type: "token.issued", client_id: "app-1", client_ip: "203.0.113.5" }),
    ]);
    // The budget's window (of the clock; the first failure came at its start) ends: the address is served again.
    clock.advance((WINDOW_S - 10) * 1000);
    expect((await cc(app, "app-1", clientSecret, ATTACKER)).status).toBe(200);
  });

  it("one misconfigured client retrying a wrong secret spends at most maxFailures of its address's budget (its own lock refuses it uncounted)", async () => {
    const { storage, app, clientSecret } = await setup();
    await app.admin.createClient({ clientId: "stale", grantTypes: ["client_credentials"] });
    for (let i = 0; i < 500; i++) expect((await cc(app, "stale", "an-old-secret", ATTACKER)).status).toBe(i < MAX_FAILURES ? 401 : 429);
    // The budget holds the stale client's 10 failures: 90 more from other ids before it is spent.
    for (let i = 0; i < BUDGET - MAX_FAILURES; i++) await expectAnswer(await cc(app, `nope-${i}`, "secret", ATTACKER), 401, BAD_CLIENT, null);
    expect((await cc(app, "app-1", clientSecret, ATTACKER)).status).toBe(429);
    // The budget's row, and the (client id + address) row and share of the stale client and of each other id.
    expect(await counterRows(storage)).toBe(1 + 2 * (1 + BUDGET - MAX_FAILURES));
  });

  it("one stale client's 100 requests in flight at once (a worker pool after a secret rotation) spend exactly maxFailures of its address's budget; the address's other clients still authenticate", async () => {
    const { storage, app, clientSecret } = await setup();
    await app.admin.createClient({ clientId: "stale", grantTypes: ["client_credentials"] });
    // Every request is read before any failure is counted (check, then fail), so all may be
    // evaluated; only those within the client's share of the budget (maxFailures) spend it. Until
    // 2026-12-03 each of them did: 100 failures, the budget spent, and every client at the address locked out.
    const answers = await Promise.all(Array.from({ length: 100 }, () => cc(app, "stale", "an-old-secret", ATTACKER)));
    const budget = await storage.attempts.get(`t:${await sha256(JSON.stringify(["client-budget", "iw", ATTACKER]))}`);
    const pair = await storage.attempts.get(`t:${await sha256(JSON.stringify(["client", "c", "stale", ATTACKER]))}`);
    const other = await cc(app, "app-1", clientSecret, ATTACKER);
    const evaluated = answers.filter((r) => r.status === 401).length;
    expect({ answered: answers.filter((r) => r.status === 401 || r.status === 429).length, budget: budget?.count, pair: pair?.count, other: other.status }).toEqual({ answered: 100, budget: MAX_FAILURES, pair: evaluated, other: 200 });
    // The rest of the budget is there for the others: 90 failures of other ids, then 429.
    for (let i = 0; i < BUDGET - MAX_FAILURES; i++) await expectAnswer(await cc(app, `nope-${i}`, "secret", ATTACKER), 401, BAD_CLIENT, null);
    await expectAnswer(await cc(app, "app-1", clientSecret, ATTACKER), 429, LOCKED, String(WINDOW_S));
  });

  it("a client half of whose pods have a stale secret (its successes and failures interleaved, as in a rolling redeploy) spends at most maxFailures of its address's budget; the address's other clients still authenticate", async () => {
    const { storage, clock, app, clientSecret } = await setup();
    const { clientSecret: rolling } = await app.admin.createClient({ clientId: "rolling", grantTypes: ["client_credentials"] });
    // Each success resets the client's own counter, so it never reaches its own limit: every
    // request is evaluated. Until later on 2026-12-03 each of its failures then spent the budget (100
    // failures, the budget spent, every client at the address locked out for the window); its
    // share of the budget (per client id + address, which a success does not reset) stops that.
    const statuses: number[] = [];
    for (let i = 0; i < 2 * BUDGET; i++) {
      statuses.push((await cc(app, "rolling", i % 2 ? rolling : "an-old-secret", ATTACKER)).status);
      clock.advance(1000);
    }
    const stored = async (key: unknown[]) => (await storage.attempts.get(`t:${await sha256(JSON.stringify(key))}`))?.count;
    const budget = await stored(["client-budget", "iw", ATTACKER]);
    const pair = await stored(["client", "c", "rolling", ATTACKER]);
    const other = await cc(app, "app-1", clientSecret, ATTACKER);
    expect({ statuses: tally(statuses), budget, pair, other: other.status }).toEqual({ statuses: { 200: BUDGET, 401: BUDGET }, budget: MAX_FAILURES, pair: undefined, other: 200 });
    // The rest of the budget is there for the others: 90 failures of other ids, then 429.
    for (let i = 0; i < BUDGET - MAX_FAILURES; i++) await expectAnswer(await cc(app, `nope-${i}`, "secret", ATTACKER), 401, BAD_CLIENT, null);
    await expectAnswer(await cc(app, "app-1", clientSecret, ATTACKER), 429, LOCKED, String(WINDOW_S - 2 * BUDGET));
    // The budget's row, and the client's share and each other id's (client id + address) and share (the
    // rolling client's own row went with its last success).
    expect(await counterRows(storage)).toBe(1 + 1 + 2 * (BUDGET - MAX_FAILURES));
  });

  it("a client whose failures straddle the start of a budget window spends at most maxFailures of that window; the address's other clients still authenticate", async () => {
    const { storage, clock, app, clientSecret } = await setup();
    await app.admin.createClient({ clientId: "stale", grantTypes: ["client_credentials"] });
    const stored = async (key: unknown[]) => (await storage.attempts.get(`t:${await sha256(JSON.stringify(key))}`))?.count;
    const budget = () => stored(["client-budget", "iw", ATTACKER]);
    const W = WINDOW_S * 1000;
    // Another id opens the budget's window; the stale client fails once half-way through it.
    await expectAnswer(await cc(app, "nope-first", "secret", ATTACKER), 401, BAD_CLIENT, null);
    clock.advance(W / 2);
    await expectAnswer(await cc(app, "stale", "an-old-secret", ATTACKER), 401, BAD_CLIENT, null);
    // The budget's next window: the stale client fails again, and once more after its own
    // (client id + address) window has ended. Until 2026-12-03 its share of the budget had a
    // window of its own, from its first failure: the share opened half-way through the budget's
    // previous window let 9 failures through into this one, and a new share 10 more: 19 of this
    // window's 100 spent by one client.
    clock.advance(W / 2 + 1000);
    const statuses: number[] = [];
    for (let i = 0; i < MAX_FAILURES - 1; i++) statuses.push((await cc(app, "stale", "an-old-secret", ATTACKER)).status);
    clock.advance(W / 2);
    for (let i = 0; i < MAX_FAILURES; i++) statuses.push((await cc(app, "stale", "an-old-secret", ATTACKER)).status);
    expect({ statuses: tally(statuses), budget: await budget() }).toEqual({ statuses: { 401: 2 * MAX_FAILURES - 1 }, budget: MAX_FAILURES });
    // The rest of this window's budget is there for the others: 90 failures of other ids, then 429.
    for (let i = 0; i < BUDGET - MAX_FAILURES; i++) await expectAnswer(await cc(app, `nope-${i}`, "secret", ATTACKER), 401, BAD_CLIENT, null);
    await expectAnswer(await cc(app, "app-1", clientSecret, ATTACKER), 429, LOCKED, String(WINDOW_S / 2 - 1));
  });

  it("after an upgrade from a release before 2026-12-03, a budget that release left open is not counted on: the new budget refuses past its 100 at once", async () => {
    // The old release's budget record (key "i", its window from its first failure) was spent 600 s
    // into a clock window. Had this release counted on that record as of the clock's window, the
    // stores would have kept adding to it while check() saw it over: 164 of 500 let through here
    // (until the sweep after 64 failures removed it; a review of 2026-12-03). The budget's key of
    // its own ("iw") starts it afresh instead.
    const { storage, clock, app } = await setup();
    const W = WINDOW_S * 1000;
    const legacy = `t:${await sha256(JSON.stringify(["client-budget", "i", ATTACKER]))}`;
    for (let i = 0; i < BUDGET; i++) await storage.attempts.increment(legacy, clock.now() + 600_000, W);
    clock.advance(W + 601_000);
    const statuses: number[] = [];
    for (let i = 0; i < 500; i++) statuses.push((await cc(app, `nope-${i}`, "secret", ATTACKER)).status);
    expect(tally(statuses)).toEqual({ 401: BUDGET, 429: 500 - BUDGET });
  });

  it("the revocation and introspection endpoints count into the same budget and refuse past it", async () => {
    const { storage, app, clientSecret } = await setup();
    const paths = [TOKEN, "/UserService/connect/revocation", "/UserService/connect/introspect"];
    for (let i = 0; i < BUDGET; i++) {
      const path = paths[i % 3]!;
      const res = await post(app, path, path === TOKEN ? { grant_type: "client_credentials" } : { token: "x" }, { authorization: basic(`nope-${i}`, "secret") }, ATTACKER);
      expect(res.status).toBe(401);
    }
    for (const path of paths.slice(1)) {
      const res = await post(app, path, { token: "x" }, { authorization: basic("app-1", clientSecret) }, ATTACKER);
      expect({ status: res.status, body: await res.json(), retryAfter: res.headers.get("retry-after") }).toEqual({ status: 429, body: LOCKED, retryAfter: String(WINDOW_S) });
    }
    expect(await counterRows(storage)).toBe(2 * BUDGET + 1);
  });
});
