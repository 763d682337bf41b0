/**
 * A budget across usernames (the password grant's per client, the console's per address) is spent
 * only by attempts that pass both of a username's own keys: guesses stopped by a username's lock
 * never spend it, whether they come one after another or all at once (SECURITY.md, "What a lock
 * does": a refused attempt counts on the key that refused it only). Until 2026-12-02 the budget was
 * counted before the username's own key (the grant's [username + IP, budget, username], the
 * console's [budget, username + IP, username]): 40 guesses at one username sent at once each held a
 * budget count while the username's key refused most of them, the budget went past its limit,
 * refused others, and kept those counts, so every other user of the client (of the address) was
 * locked out for the window and a `client_budget` (`address_budget`) lock-out was reported. The
 * same 40 guesses one after another left the budget under its limit. The concurrent cases failed
 * before that change (bob and the admin 429, locks ["client_budget", "username"]).
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type SecurityEvent, type Storage } from "../src/index.js";
import { ADMIN, call, consoleHarness } from "./console-helpers.js";
import { BASE, basic, lookupGate } from "./helpers.js";
import { FORM } from "./token-helpers.js";

const quiet = { error() {}, warn() {} };
// maxFailures 3: 3 per username + IP, 15 per username, 30 per client, 9 per console address.
const bruteForce = { maxFailures: 3, windowSeconds: 600 };

async function grantWorld() {
  const events: SecurityEvent[] = [];
  const app = createPlantgate({ passwordHashIterations: 1000, logger: quiet, bruteForce, maxConcurrentPasswordChecks: 1000, onEvent: (e) => void events.push(e) });
  await app.admin.createAccount({ username: "alice", password: "alice-password-1" });
  await app.admin.createAccount({ username: "bob", password: "bob-password-1" });
  const { clientSecret } = await app.admin.createClient({ clientId: "app-1", grantTypes: ["password"] });
  const grant = (username: string, password: string, ip: string) =>
    app.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": FORM, authorization: basic("app-1", clientSecret) },
        body: new URLSearchParams({ grant_type: "password", username, password }).toString(),
      }),
      { clientIp: ip },
    );
  const locks = async () => {
    await app.flushEvents();
    return events.filter((e) => e.type === "account.locked_out").map((e) => (e as { lock: string }).lock);
  };
  return { grant, locks };
}

const tally = (statuses: number[]) => {
  const t: Record<number, number> = {};
  for (const s of statuses) t[s] = (t[s] ?? 0) + 1;
  return t;
};

describe("password grant: guesses at one username do not spend the client's budget across usernames", () => {
  it("40 guesses at alice from 40 addresses, one after another: 15 checked, bob then signs in; one lock, the username's", async () => {
    const { grant, locks } = await grantWorld();
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await grant("alice", `wrong-${i}`, `198.51.100.${i + 1}`)).status);
    const bob = await grant("bob", "bob-password-1", "203.0.113.9");
    expect({ statuses: tally(statuses), bob: bob.status, locks: await locks() }).toEqual({ statuses: { 400: 15, 429: 25 }, bob: 200, locks: ["username"] });
  });

  it("the same 40 guesses sent at once: the same answers, bob then signs in; one lock, the username's", async () => {
    const { grant, locks } = await grantWorld();
    const statuses = (await Promise.all(Array.from({ length: 40 }, (_, i) => grant("alice", `wrong-${i}`, `198.51.100.${i + 1}`)))).map((r) => r.status);
    const bob = await grant("bob", "bob-password-1", "203.0.113.9");
    expect({ statuses: tally(statuses), bob: bob.status, locks: await locks() }).toEqual({ statuses: { 400: 15, 429: 25 }, bob: 200, locks: ["username"] });
  });
});

describe("console: guesses at one username from one address do not spend the address's budget across usernames", () => {
  const options = { bruteForce, maxConcurrentPasswordChecks: 1000, logger: quiet };
  const ADDRESS = "198.51.100.77";
  const signIn = (h: Awaited<ReturnType<typeof consoleHarness>>, username: string, password: string) => call(h.app, "POST", "/api/session", { body: { username, password }, clientIp: ADDRESS });
  const world = async () => {
    const events: SecurityEvent[] = [];
    const h = await consoleHarness({ ...options, onEvent: (e) => void events.push(e) });
    const locks = async () => {
      await h.app.flushEvents();
      return events.filter((e) => e.type === "account.locked_out").map((e) => (e as { lock: string }).lock);
    };
    return { h, locks };
  };

  it("40 guesses at alice one after another: 3 checked; the admin at the same address then signs in; one lock, the username + address's", async () => {
    const { h, locks } = await world();
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await signIn(h, "alice", `wrong-${i}`)).status);
    const admin = await signIn(h, ADMIN.username, ADMIN.password);
    expect({ statuses: tally(statuses), admin: admin.status, locks: await locks() }).toEqual({ statuses: { 401: 3, 429: 37 }, admin: 200, locks: ["username_address"] });
  });

  it("the same 40 guesses sent at once: the same answers; the admin at the same address then signs in; one lock, the username + address's", async () => {
    const { h, locks } = await world();
    const statuses = (await Promise.all(Array.from({ length: 40 }, (_, i) => signIn(h, "alice", `wrong-${i}`)))).map((r) => r.status);
    const admin = await signIn(h, ADMIN.username, ADMIN.password);
    expect({ statuses: tally(statuses), admin: admin.status, locks: await locks() }).toEqual({ statuses: { 401: 3, 429: 37 }, admin: 200, locks: ["username_address"] });
  });
});

describe("past a spent budget, an attempt touches the budget alone", () => {
  it("console: a new username from an address whose budget is spent costs a read and a count of the budget (beside reads of the username's keys, whether one refuses first, and again for Retry-After), and leaves no counter row of its own", async () => {
    const memory = createMemoryStorage();
    const calls: string[] = [];
    const keys = new Set<string>();
    const attempts = memory.attempts;
    const storage: Storage = {
      ...memory,
      attempts: {
        ...attempts,
        get: (key) => (calls.push("get"), attempts.get(key)),
        increment: (key, now, windowMs) => (calls.push("increment"), keys.add(key), attempts.increment(key, now, windowMs)),
        refund: (key, windowStart, count) => (calls.push("refund"), attempts.refund!(key, windowStart, count)),
        reset: (key) => (calls.push("reset"), attempts.reset(key)),
      },
    };
    const h = await consoleHarness({ storage, bruteForce, logger: quiet });
    const signIn = (username: string) => call(h.app, "POST", "/api/session", { body: { username, password: "wrong" }, clientIp: "198.51.100.78" });
    // The address's budget (3 x 3) spent at nine usernames.
    for (let i = 0; i < 9; i++) expect((await signIn(`user-${i}`)).status).toBe(401);
    const rowsBefore = [...keys].length;
    calls.length = 0;
    const refused = await signIn("user-new");
    const live = (await Promise.all([...keys].map((k) => attempts.get(k)))).filter((r) => r !== null).length;
    expect({ status: refused.status, calls, newCounters: keys.size - rowsBefore, live }).toEqual({ status: 429, calls: ["get", "get", "get", "increment", "get", "get"], newCounters: 0, live: 1 + 2 * 9 });
  });
});

describe("a budget read as spent, then given a count back before the attempt counts it", () => {
  it("console: an attempt that read the budget at its limit while a success was in flight, and counted it after that success's refund, is checked (401), not refused; the next one is refused, one address_budget lock", async () => {
    const memory = createMemoryStorage();
    let holdIncrement: (() => Promise<void>) | null = null;
    const lookups = lookupGate(memory.accounts);
    const storage: Storage = {
      ...memory,
      attempts: {
        ...memory.attempts,
        increment: async (key, now, windowMs) => {
          const hold = holdIncrement;
          holdIncrement = null;
          if (hold) await hold();
          return memory.attempts.increment(key, now, windowMs);
        },
        refund: memory.attempts.refund!.bind(memory.attempts),
      },
      accounts: lookups.accounts,
    };
    const events: SecurityEvent[] = [];
    // maxFailures 1: the address's budget is 3.
    const h = await consoleHarness({ storage, bruteForce: { maxFailures: 1, windowSeconds: 600 }, logger: quiet, onEvent: (e) => void events.push(e) });
    const signIn = (username: string, password: string) => call(h.app, "POST", "/api/session", { body: { username, password }, clientIp: "198.51.100.79" });
    for (let i = 0; i < 2; i++) expect((await signIn(`user-${i}`, "wrong")).status).toBe(401);
    // S, the admin's right password, counts the budget's third and is held at its password check.
    const heldS = lookups.hold(ADMIN.username);
    const s = signIn(ADMIN.username, ADMIN.password);
    await heldS.reached;
    // X reads the budget at its limit; its count of it is held.
    let releaseX = (): void => {};
    let reachedX = (): void => {};
    const xReached = new Promise<void>((r) => (reachedX = r));
    holdIncrement = () => (reachedX(), new Promise<void>((r) => (releaseX = r)));
    const x = signIn("user-x", "wrong");
    await xReached;
    // S succeeds and gives the budget its count back (2); then X counts it (3, at its limit: allowed).
    heldS.release();
    const sStatus = (await s).status;
    releaseX();
    const xStatus = (await x).status;
    const yStatus = (await signIn("user-y", "wrong")).status;
    await h.app.flushEvents();
    const locks = events.filter((e) => e.type === "account.locked_out").map((e) => (e as { lock: string }).lock);
    expect({ sStatus, xStatus, yStatus, locks }).toEqual({ sStatus: 200, xStatus: 401, yStatus: 429, locks: ["address_budget"] });
  });
});
