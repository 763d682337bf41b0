/**
 * Password-hash budgets (security review finding 2). The class of bug: a caller buys unlimited
 * PBKDF2 work by trying a new username each time, since the lock-out keys name the username.
 * Generated campaigns of sign-in attempts with distinct random usernames and passwords (any Unicode),
 * sent in bursts of concurrent requests, against a fresh app with a strict limit and the clock
 * stopped, on a fresh store of the run's kind (HOSTILE_STORE, HOSTILE_REDIS: the attempt counters in
 * Redis then):
 * - console sign-in from one address (an IPv4 address, or an IPv6 host rotating through its /64)
 *   gets at most 3 × maxFailures password checks; past that, a new username leaves no counter row
 *   (until 2026-12-02 it added none at all: the address's budget was counted before the username's
 *   keys, and concurrent guesses at one username spent it; now it is read first and counted after
 *   them, and an attempt already under way when it fills counts the username's keys and gives
 *   them back);
 * - the password grant of one client, from addresses that change every time, gets at most
 *   10 × maxFailures checks;
 * - a burst beyond `maxConcurrentPasswordChecks` is refused at once (429, `Retry-After: 1`) and not
 *   counted, so exactly min(attempts - refused at once, budget) checks run.
 * - guesses interleaved with the guesser's own successful sign-ins (one password it holds) through
 *   the same client still get exactly min(guesses, 10 × maxFailures) checks: a success gives back
 *   only its own count of the budget, never the guesses counted at other usernames.
 * A password check is observed as the account lookup that comes right before each hash
 * (`accounts.findByUsername`). Every answer is a documented one, and afterwards the budget turns
 * out to be that caller's alone: the admin signs in from another address, another client's grant
 * succeeds.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { createPlantgate, type Plantgate, type Storage } from "@plantgate/core";
import { fail, read, type Answer } from "../src/invariants.js";
import { RUNS, SEED } from "../src/settings.js";
import { basicHeader, formBody, ISSUER, NOW, openStore, TOKEN_PATH } from "../src/world.js";

const CAMPAIGNS = Math.max(10, Math.ceil(RUNS / 250));
const ADMIN = { username: "root", password: "root-password-0123" };
const CLIENT = { id: "proxy-app", secret: "proxy-secret-0123456789abcdef" };
const OTHER = { id: "other-app", secret: "other-secret-0123456789abcdef" };
const LOCKED = "Too many failed attempts; retry after the time in Retry-After.";
const BUSY = "Too many sign-in attempts at once; retry after the time in Retry-After.";

interface Observed {
  app: Plantgate;
  /** Password checks so far (account lookups, each followed by a hash). */
  checks: number;
  /** The attempt counters counted since the campaign began that are still in the store. */
  rowsLeft(): Promise<number>;
  /** Forgets the counters counted so far (the set-up's). */
  forget(): void;
  /** Closes the campaign's store (drops its schema or database, deletes its Redis keys). */
  close(): Promise<void>;
}

/** A campaign on a fresh app over a fresh store; `use` gets it, and the store is closed after. */
async function campaign(maxFailures: number, windowSeconds: number, use: (o: Observed) => Promise<void>): Promise<void> {
  const o = await campaignApp(maxFailures, windowSeconds);
  try {
    await use(o);
  } finally {
    await o.close();
  }
}

async function campaignApp(maxFailures: number, windowSeconds: number): Promise<Observed> {
  const store = await openStore(SEED, () => NOW);
  // Without its audit store, so no security event is made (no onEvent either), as on the memory store
  // this file used until 2026-11-30: with events on, a throttled attempt looks its username up as well
  // (to name it in the lock-out event, off the request path), which the count below would take for a
  // password check.
  const { audit: _audit, ...base } = store.storage;
  const counters = new Set<string>();
  const observed = {
    checks: 0,
    rowsLeft: async () => (await Promise.all([...counters].map((key) => base.attempts.get(key)))).filter((r) => r !== null).length,
    close: () => store.close(),
    forget: () => counters.clear(),
  } as Observed;
  const storage: Storage = {
    ...base,
    accounts: { ...base.accounts, findByUsername: (username) => (observed.checks++, base.accounts.findByUsername(username)) },
    attempts: {
      ...base.attempts,
      increment: async (key, now, windowMs) => {
        const r = await base.attempts.increment(key, now, windowMs);
        counters.add(key);
        return r;
      },
    },
  };
  try {
    await setUp(observed, storage, maxFailures, windowSeconds);
  } catch (e) {
    await store.close();
    throw e;
  }
  return observed;
}

async function setUp(observed: Observed, storage: Storage, maxFailures: number, windowSeconds: number): Promise<void> {
  observed.app = createPlantgate({
    storage,
    issuer: ISSUER,
    baseUrl: ISSUER,
    clock: () => NOW,
    passwordHashIterations: 1000,
    bruteForce: { maxFailures, windowSeconds },
    console: { enabled: true },
    logger: { error() {}, warn() {} },
  });
  for (const c of [CLIENT, OTHER]) await observed.app.admin.createClient({ clientId: c.id, clientSecret: c.secret, grantTypes: ["password"], scopes: ["Platform_UserAPIs"] });
  await observed.app.admin.createAccount({ username: ADMIN.username, password: ADMIN.password, roles: ["admin"] });
  observed.checks = 0;
  observed.forget();
}

const consoleSignIn = async (app: Plantgate, username: string, password: string, ip: string) =>
  read(
    await app.fetch(
      new Request(`${ISSUER}/console/api/session`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: ISSUER, "sec-fetch-site": "same-origin" },
        body: JSON.stringify({ username, password }),
      }),
      { clientIp: ip },
    ),
  );

const passwordGrant = async (app: Plantgate, client: { id: string; secret: string }, username: string, password: string, ip: string) =>
  read(
    await app.fetch(
      new Request(ISSUER + TOKEN_PATH, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basicHeader(client.id, client.secret) },
        body: formBody([
          ["grant_type", "password"],
          ["username", username],
          ["password", password],
        ]),
      }),
      { clientIp: ip },
    ),
  );

/** The 429s: a lock until the end of the (stopped) window, or an immediate "busy" with Retry-After: 1. */
function refusal(a: Answer, windowSeconds: number, message: (text: string) => unknown): "locked" | "busy" {
  const retryAfter = a.headers.get("retry-after");
  if (a.headers.get("cache-control") !== "no-store") fail("a 429 without Cache-Control: no-store", a);
  if (JSON.stringify(a.json) === JSON.stringify(message(BUSY)) && retryAfter === "1") return "busy";
  if (JSON.stringify(a.json) === JSON.stringify(message(LOCKED)) && retryAfter === String(windowSeconds)) return "locked";
  return fail(`an undocumented 429 (Retry-After ${retryAfter})`, a);
}

/** Distinct non-empty usernames and passwords of any Unicode (no lone surrogates: JSON and forms carry them as U+FFFD). */
const credential = fc.string({ unit: "binary", minLength: 1, maxLength: 24 });
const campaignArb = fc.record({
  maxFailures: fc.integer({ min: 1, max: 4 }),
  windowSeconds: fc.integer({ min: 1, max: 3600 }),
  usernames: fc.uniqueArray(credential, { minLength: 1, maxLength: 50 }),
  password: credential,
  bursts: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 50 }),
});

/**
 * A campaign past every budget and the concurrency cap, run first in each property whatever the
 * seed (fast-check's `examples`, which count among `numRuns`: one fixed, the rest generated): with
 * some seeds none of the generated campaigns went past the password grant's 10 × maxFailures
 * (HOSTILE_SEED=151515), and the checks below that the budget was reached had nothing to see.
 */
const pastTheBudget = { maxFailures: 1, windowSeconds: 60, usernames: Array.from({ length: 30 }, (_, i) => `user-${i}`), password: "wrong", bursts: [1, 8] };

/** Sends `count` attempts in bursts of concurrent requests, sizes cycling through `bursts`. */
async function inBursts(count: number, bursts: number[], send: (i: number) => Promise<Answer>): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0, b = 0; i < count; b++) {
    const size = Math.min(bursts[b % bursts.length]!, count - i);
    answers.push(...(await Promise.all(Array.from({ length: size }, (_, j) => send(i + j)))));
    i += size;
  }
  return answers;
}

it(`console sign-in, random usernames from one address: ${CAMPAIGNS} campaigns (one fixed past the budget, ${CAMPAIGNS - 1} generated) get at most 3 × maxFailures password checks and leave no counter rows past them`, async () => {
  let spent = 0;
  let refusedAtOnce = 0;
  await fc.assert(
    fc.asyncProperty(campaignArb, fc.boolean(), fc.nat(0xffff), async ({ maxFailures, windowSeconds, usernames, password, bursts }, v6, host) => {
      await campaign(maxFailures, windowSeconds, async (o) => {
        // An IPv6 attacker rotates through its /64, which counts as one address.
        const address = (i: number) => (v6 ? `2001:db8:7:${host.toString(16)}::${(i + 1).toString(16)}` : "198.51.100.7");
        const answers = await inBursts(usernames.length, bursts, (i) => consoleSignIn(o.app, usernames[i]!, password, address(i)));
        let busy = 0;
        for (const a of answers) {
          if (a.status === 401) {
            if (JSON.stringify(a.json) !== JSON.stringify({ error: 1305, message: "The username or password is incorrect." })) fail("an undocumented 401", a);
          } else if (a.status === 429) {
            if (refusal(a, windowSeconds, (message) => ({ error: 1429, message })) === "busy") busy++;
          } else fail("neither 401 nor 429 for a wrong password", a);
        }
        const budget = 3 * maxFailures;
        expect(o.checks).toBe(Math.min(usernames.length - busy, budget));
        // Each checked attempt adds its two username counters, plus the address's one budget counter.
        expect(await o.rowsLeft()).toBeLessThanOrEqual(1 + 2 * o.checks);
        if (usernames.length - busy > budget) spent++;
        refusedAtOnce += busy;
        // The budget is that address's alone.
        const admin = await consoleSignIn(o.app, ADMIN.username, ADMIN.password, "203.0.113.200");
        if (admin.status !== 200) fail("the admin could not sign in from another address", admin);
      });
    }),
    { seed: SEED, numRuns: CAMPAIGNS, examples: [[pastTheBudget, false, 0]] },
  );
  // The campaigns reached past the budget, and past the concurrency cap.
  expect([spent > 0, refusedAtOnce > 0]).toEqual([true, true]);
});

it(`password grant, random usernames from changing addresses through one client: ${CAMPAIGNS} campaigns (one fixed past the budget, ${CAMPAIGNS - 1} generated) get at most 10 × maxFailures password checks`, async () => {
  let spent = 0;
  let refusedAtOnce = 0;
  await fc.assert(
    fc.asyncProperty(campaignArb, async ({ maxFailures, windowSeconds, usernames, password, bursts }) => {
      await campaign(maxFailures, windowSeconds, async (o) => {
        const address = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
        const budget = 10 * maxFailures;
        const answers = await inBursts(usernames.length, bursts, (i) => passwordGrant(o.app, CLIENT, usernames[i]!, password, address(i)));
        let busy = 0;
        for (const a of answers) {
          if (a.status === 400) {
            if (JSON.stringify(a.json) !== JSON.stringify({ error: "invalid_grant", error_description: "The username or password is incorrect." })) fail("an undocumented 400", a);
          } else if (a.status === 429) {
            if (refusal(a, windowSeconds, (message) => ({ error: "temporarily_unavailable", error_description: message })) === "busy") busy++;
          } else fail("neither 400 nor 429 for a wrong password", a);
        }
        expect(o.checks).toBe(Math.min(usernames.length - busy, budget));
        if (usernames.length - busy > budget) spent++;
        refusedAtOnce += busy;
        // The budget is that client's alone.
        const other = await passwordGrant(o.app, OTHER, ADMIN.username, ADMIN.password, "10.255.255.255");
        if (other.status !== 200) fail("another client's password grant failed", other);
      });
    }),
    { seed: SEED + 1, numRuns: CAMPAIGNS, examples: [[pastTheBudget]] },
  );
  expect([spent > 0, refusedAtOnce > 0]).toEqual([true, true]);
});

it(`password grant, guesses at random usernames with the guesser's own successful sign-ins between them: ${CAMPAIGNS} campaigns (one fixed past the budget, ${CAMPAIGNS - 1} generated) still get exactly min(guesses, 10 × maxFailures) wrong-password checks`, async () => {
  let spent = 0;
  let ownAfterBudget = 0;
  await fc.assert(
    fc.asyncProperty(campaignArb, fc.integer({ min: 1, max: 4 }), async ({ maxFailures, windowSeconds, usernames, password }, every) => {
      await campaign(maxFailures, windowSeconds, async (o) => {
        const guesses = usernames.filter((u) => u !== ADMIN.username);
        const budget = 10 * maxFailures;
        let wrong = 0;
        // One request at a time: the budget's count is then exact at every step.
        for (const [i, username] of guesses.entries()) {
          const a = await passwordGrant(o.app, CLIENT, username, password, `10.0.${i >> 8}.${i & 255}`);
          if (a.status === 400) {
            if (JSON.stringify(a.json) !== JSON.stringify({ error: "invalid_grant", error_description: "The username or password is incorrect." })) fail("an undocumented 400", a);
            wrong++;
          } else if (a.status === 429) {
            if (refusal(a, windowSeconds, (message) => ({ error: "temporarily_unavailable", error_description: message })) !== "locked") fail("a lone request refused as busy", a);
          } else fail("neither 400 nor 429 for a wrong password", a);
          if ((i + 1) % every !== 0) continue;
          // The guesser's own account, from its own address: a success while the budget has room,
          // then locked like everyone else of that client.
          const own = await passwordGrant(o.app, CLIENT, ADMIN.username, ADMIN.password, "192.0.2.200");
          if (wrong < budget) {
            if (own.status !== 200) fail(`the guesser's own sign-in refused with ${wrong} of ${budget} failures counted`, own);
          } else {
            if (own.status !== 429 || refusal(own, windowSeconds, (message) => ({ error: "temporarily_unavailable", error_description: message })) !== "locked") fail("the guesser's own sign-in after the budget was spent", own);
            ownAfterBudget++;
          }
        }
        expect(wrong).toBe(Math.min(guesses.length, budget));
        if (guesses.length > budget) spent++;
      });
    }),
    { seed: SEED + 2, numRuns: CAMPAIGNS, examples: [[pastTheBudget, 1]] },
  );
  expect([spent > 0, ownAfterBudget > 0]).toEqual([true, true]);
});
