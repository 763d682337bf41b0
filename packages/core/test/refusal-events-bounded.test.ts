/**
 * Refusals while a brute-force lock holds make a bounded number of security events (from the
 * bounded-storage review, its audit test adapted): before, each refused request made one event
 * (`client.authentication_failed` / `account.login_failed` with reason `throttled`), and the audit
 * trail keeps every event for 90 days, so 2 000 refused requests were 2 001 audit rows. Now a
 * refusal makes its event only when its count within the lock is a power of two (1, 2, 4, ...),
 * the event carrying that count (`refused_count`): a lock makes O(log n) events, while the
 * metrics (see the observability package's test) still count every request.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type Plantgate, type SecurityEvent, type Storage } from "../src/index.js";
import { TooManyAttemptsError } from "../src/errors/index.js";
import { createThrottle, REFUSAL_TALLY_LIMIT, reportsRefusal, SEEN_BITS } from "../src/security/throttle.js";
import { BASE, basic, formFrom as post, manualClock } from "./helpers.js";

const N = 2000;
const MAX_FAILURES = 10;
const WINDOW_S = 900;
const IP = "198.51.100.7";
/** 1, 2, 4, ..., 1024: the powers of two up to the refusals of one lock in these runs. */
const POWERS = (refusals: number) => Array.from({ length: Math.floor(Math.log2(refusals)) + 1 }, (_, i) => 2 ** i);


function consoleSignIn(app: Plantgate, username: string, password: string, ip: string) {
  return app.fetch(
    new Request(`${BASE}/console/api/session`, {
      method: "POST",
      headers: { origin: BASE, "sec-fetch-site": "same-origin", "content-type": "application/json" },
      body: JSON.stringify({ username, password }),
    }),
    { clientIp: ip },
  );
}

async function setup(storage: Storage = createMemoryStorage({ audit: true })) {
  const clock = manualClock();
  const events: SecurityEvent[] = [];
  const app = createPlantgate({
    storage,
    clock: clock.now,
    passwordHashIterations: 1000,
    logger: { error() {}, warn() {} },
    bruteForce: { maxFailures: MAX_FAILURES, windowSeconds: WINDOW_S },
    console: { enabled: true },
    onEvent: (e) => void events.push(e),
  });
  const { clientSecret } = await app.admin.createClient({ clientId: "app-1", grantTypes: ["client_credentials", "password"] });
  await app.admin.createAccount({ username: "alice", password: "wonderland-42", roles: ["admin"] });
  await app.flushEvents();
  events.splice(0);
  await storage.audit!.deleteExpired(Number.MAX_SAFE_INTEGER);
  return { storage, clock, app, clientSecret, events };
}

const strip = (events: SecurityEvent[]): Record<string, unknown>[] => events.map(({ id, time, ...rest }) => rest);

describe("refusals while a lock holds: O(log n) events, each with its count", () => {
  it("2000 refused authentications of one locked client from one address: 10 failures and 11 throttled events (refused_count 1, 2, 4, ..., 1024) in the events and the audit trail", async () => {
    const { storage, clock, app, events } = await setup();
    const statuses = new Map<number, number>();
    for (let i = 0; i < N; i++) {
      const res = await post(app, "/UserService/connect/token", { grant_type: "client_credentials" }, { authorization: basic("app-1", "wrong-secret") }, IP);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      clock.advance(100);
    }
    expect([...statuses]).toEqual([[401, MAX_FAILURES], [429, N - MAX_FAILURES]]);
    await app.flushEvents();
    const failed = { type: "client.authentication_failed", client_id: "app-1", client_ip: IP };
    expect(strip(events)).toEqual([
      ...Array.from({ length: MAX_FAILURES }, () => ({ ...failed, reason: "invalid_secret" })),
      ...POWERS(N - MAX_FAILURES).map((n) => ({ ...failed, reason: "throttled", lock: "client_address", refused_count: n })),
    ]);
    expect(events.length, "events for 2000 requests").toBe(MAX_FAILURES + 11);
    expect(await storage.audit!.deleteExpired(Number.MAX_SAFE_INTEGER), "audit rows kept for 90 days").toBe(MAX_FAILURES + 11);
  }, 120_000);

  it("the count starts over with the next lock (a new window), and refusals by the address's budget are counted on their own", async () => {
    const { clock, app, clientSecret, events } = await setup();
    const wrong = () => post(app, "/UserService/connect/token", { grant_type: "client_credentials" }, { authorization: basic("app-1", "wrong-secret") }, IP);
    for (let i = 0; i < MAX_FAILURES + 3; i++) await wrong();
    clock.advance(WINDOW_S * 1000);
    for (let i = 0; i < MAX_FAILURES + 5; i++) await wrong();
    await app.flushEvents();
    expect(strip(events).filter((e) => e.reason === "throttled").map((e) => e.refused_count)).toEqual([1, 2, 1, 2, 4]);
    // The budget: 100 unknown ids from another address, then 7 refusals there (one the right secret of app-1).
    events.splice(0);
    const other = "203.0.113.50";
    for (let i = 0; i < 10 * MAX_FAILURES; i++) await post(app, "/UserService/connect/token", { grant_type: "client_credentials" }, { authorization: basic(`nope-${i}`, "x") }, other);
    for (let i = 0; i < 6; i++) expect((await post(app, "/UserService/connect/token", { grant_type: "client_credentials" }, { authorization: basic(`new-${i}`, "x") }, other)).status).toBe(429);
    expect((await post(app, "/UserService/connect/token", { grant_type: "client_credentials" }, { authorization: basic("app-1", clientSecret) }, other)).status).toBe(429);
    await app.flushEvents();
    expect(strip(events).filter((e) => e.reason === "throttled")).toEqual([
      { type: "client.authentication_failed", client_id: null, reason: "throttled", client_ip: other, lock: "address_budget", refused_count: 1 },
      { type: "client.authentication_failed", client_id: null, reason: "throttled", client_ip: other, lock: "address_budget", refused_count: 2 },
      { type: "client.authentication_failed", client_id: null, reason: "throttled", client_ip: other, lock: "address_budget", refused_count: 4 },
    ]);
  });

  it("2000 refused password grants of one locked username from one address: 10 failures, one lock-out, 11 throttled events (refused_count 1, 2, 4, ..., 1024)", async () => {
    const { storage, clock, app, clientSecret, events } = await setup();
    const statuses = new Map<number, number>();
    for (let i = 0; i < N; i++) {
      const res = await post(app, "/UserService/connect/token", { grant_type: "password", username: "alice", password: `guess-${i}` }, { authorization: basic("app-1", clientSecret) }, IP);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      clock.advance(100);
    }
    expect([...statuses]).toEqual([[400, MAX_FAILURES], [429, N - MAX_FAILURES]]);
    await app.flushEvents();
    const failed = { type: "account.login_failed", username: "alice", source: "password_grant", client_id: "app-1", client_ip: IP };
    const lockedAt = Date.UTC(2026, 0, 1) + WINDOW_S * 1000;
    expect(strip(events)).toEqual([
      ...Array.from({ length: MAX_FAILURES }, () => ({ ...failed, reason: "invalid_password" })),
      { type: "account.locked_out", username: "alice", lock: "username_address", source: "password_grant", client_id: "app-1", locked_until: lockedAt, client_ip: IP },
      ...POWERS(N - MAX_FAILURES).map((n) => ({ ...failed, reason: "throttled", refused_count: n })),
    ]);
    expect(await storage.audit!.deleteExpired(Number.MAX_SAFE_INTEGER), "audit rows kept for 90 days").toBe(MAX_FAILURES + 1 + 11);
  }, 120_000);

  it("2000 refused console sign-ins of one locked username from one address: 10 failures, one lock-out, 11 throttled events", async () => {
    const { storage, clock, app, events } = await setup();
    const statuses = new Map<number, number>();
    for (let i = 0; i < N; i++) {
      const res = await consoleSignIn(app, "alice", `guess-${i}`, IP);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 429) expect(res.headers.get("retry-after")).toBe(String(WINDOW_S - Math.floor(i / 10)));
      clock.advance(100);
    }
    expect([...statuses]).toEqual([[401, MAX_FAILURES], [429, N - MAX_FAILURES]]);
    await app.flushEvents();
    const failed = { type: "account.login_failed", username: "alice", source: "console", client_id: null, client_ip: IP };
    expect(strip(events)).toEqual([
      ...Array.from({ length: MAX_FAILURES }, () => ({ ...failed, reason: "invalid_password" })),
      { type: "account.locked_out", username: "alice", lock: "username_address", source: "console", client_id: null, locked_until: Date.UTC(2026, 0, 1) + WINDOW_S * 1000, client_ip: IP },
      ...POWERS(N - MAX_FAILURES).map((n) => ({ ...failed, reason: "throttled", refused_count: n })),
    ]);
    expect(await storage.audit!.deleteExpired(Number.MAX_SAFE_INTEGER)).toBe(MAX_FAILURES + 1 + 11);
  }, 120_000);

  it("a refusal that makes no event does not look the account up either (the flood path reads nothing more)", async () => {
    const storage = createMemoryStorage({ audit: true });
    const { app, clientSecret } = await setup(storage);
    const find = storage.accounts.findByUsername.bind(storage.accounts);
    let lookups = 0;
    storage.accounts.findByUsername = (u) => (lookups++, find(u));
    const pw = () => post(app, "/UserService/connect/token", { grant_type: "password", username: "alice", password: "nope" }, { authorization: basic("app-1", clientSecret) }, IP);
    for (let i = 0; i < MAX_FAILURES; i++) expect((await pw()).status).toBe(400);
    lookups = 0;
    for (let i = 0; i < 100; i++) expect((await pw()).status).toBe(429);
    await app.flushEvents();
    // Refusals 1, 2, 4, 8, 16, 32 and 64 name the username: one lookup each.
    expect(lookups).toBe(7);
  });

  it("reportsRefusal: the 1st, 2nd, 4th, 8th, ... refusal", () => {
    expect(Array.from({ length: 70 }, (_, i) => i).filter(reportsRefusal)).toEqual([1, 2, 4, 8, 16, 32, 64]);
    expect([2 ** 30, 2 ** 31, 2 ** 40, 2 ** 40 + 1, 2 ** 31 - 1].map(reportsRefusal)).toEqual([true, true, true, false, false]);
  });

  it("past a full tally (an attacker's 4 096 locks on this instance), a new lock's first refusal still makes its event (refused_count 1); and however many such locks, at most SEEN_BITS first refusals plus the shared tally's O(log n) are reported per window", async () => {
    const clock = manualClock();
    const throttle = createThrottle(createMemoryStorage().attempts, clock.now, { maxFailures: 1, windowSeconds: 900 });
    const refused = async (key: string) => {
      const e = await throttle.check([key]).then(() => null, (error: unknown) => error);
      expect(e).toBeInstanceOf(TooManyAttemptsError);
      return (e as TooManyAttemptsError).lock!.refused;
    };
    for (let i = 0; i < REFUSAL_TALLY_LIMIT; i++) {
      await throttle.fail([`attacker-${i}`]);
      await refused(`attacker-${i}`);
    }
    // Two more of the attacker's locks, refused twice each past the tally: first refusals, then the shared count.
    const more: number[] = [];
    for (const k of ["attacker-x", "attacker-y"]) {
      await throttle.fail([k]);
      more.push(await refused(k), await refused(k));
    }
    // A real brute force on another client: its lock's first refusal (until 2026-12-03: the shared
    // count's next value, 3, no event).
    await throttle.fail(["victim"]);
    expect({ more, victim: await refused("victim") }).toEqual({ more: [1, 1, 1, 2], victim: 1 });
    // The bound: 3 × SEEN_BITS more locks, each refused once. At most SEEN_BITS of them are first
    // refusals (refused 1); the others share the tally (and the few of those at a power of two report).
    const counts: number[] = [];
    for (let i = 0; i < 3 * SEEN_BITS; i++) {
      await throttle.fail([`flood-${i}`]);
      counts.push(await refused(`flood-${i}`));
    }
    const firsts = counts.filter((c) => c === 1).length;
    const shared = counts.filter((c) => c !== 1);
    expect(firsts + shared.length).toBe(3 * SEEN_BITS);
    expect(firsts).toBeLessThanOrEqual(SEEN_BITS - 3);
    expect(shared.filter(reportsRefusal).length).toBeLessThanOrEqual(Math.log2(3 * SEEN_BITS) + 1);
    // A window later the finished locks are dropped: a new lock is counted on its own again.
    clock.advance(900_000);
    await throttle.fail(["after"]);
    expect(await refused("after")).toBe(1);
  }, 60_000);

  it("check's per-instance tally stays bounded: past REFUSAL_TALLY_LIMIT locks at once, further locks make their first refusal's event and share one tally after it, so refusals still make O(log n) events", async () => {
    const clock = manualClock();
    const throttle = createThrottle(createMemoryStorage().attempts, clock.now, { maxFailures: 1, windowSeconds: 60 });
    const locks = REFUSAL_TALLY_LIMIT + 10;
    for (let i = 0; i < locks; i++) await throttle.fail([`k${i}`]);
    const refusals: number[] = [];
    const refuse = async (key: string) => {
      const e = await throttle.check([key]).then(() => null, (error: unknown) => error);
      expect(e).toBeInstanceOf(TooManyAttemptsError);
      refusals.push((e as TooManyAttemptsError).lock!.refused);
    };
    // Three rounds over every lock, one after another (the order that would defeat a cache that starts over when full).
    for (let round = 0; round < 3; round++) for (let i = 0; i < locks; i++) await refuse(`k${i}`);
    // The tracked locks: 1, 2, 3 each (two reported); the last 10: their first refusals 1 each (ten
    // reported), then the overflow tally's 1..20 (five reported).
    expect(refusals.filter(reportsRefusal).length).toBe(2 * REFUSAL_TALLY_LIMIT + 10 + 5);
    expect(refusals.slice(REFUSAL_TALLY_LIMIT, locks)).toEqual(Array(10).fill(1));
    // Once their windows end, finished locks are dropped and new ones counted on their own again.
    clock.advance(60_000);
    await throttle.fail(["fresh"]);
    refusals.length = 0;
    for (let i = 0; i < 3; i++) await refuse("fresh");
    expect(refusals).toEqual([1, 2, 3]);
  }, 60_000);
});
