/**
 * Brute-force defence (RFC 9700 §2.4 asks the password grant to be guarded; RFC 6749 §10.10 asks
 * for protection against guessing): failure counters in storage, per username on the password
 * grant and per client id + client IP on client authentication; 429 + Retry-After while locked;
 * a success resets. Two app instances share one store, so the lock holds across instances.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, createMemoryStorage, createPlantgate, optionsFromEnv, sha256, type AttemptStore, type Plantgate, type PlantgateOptions, type SecurityEvent } from "../src/index.js";
import { errorResponse, toResponse } from "../src/http/respond.js";
import { StorageError, TooManyAttemptsError } from "../src/errors/index.js";
import { BASE, basic, harness, type Harness } from "./helpers.js";
import { auth, expectTokenError, expectTokenSuccess, FORM, passwordGrantFrom, passwordRequest } from "./token-helpers.js";

const BAD_PASSWORD = { error: "invalid_grant", error_description: "The username or password is incorrect." };
const BAD_CLIENT = { error: "invalid_client", error_description: "Client authentication failed." };
const LOCKED = { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." };
const quiet = { error() {}, warn() {} };

/** A second instance over the harness's store and clock, as another server process would be. */
function sibling(h: Harness, options: PlantgateOptions = {}): Plantgate {
  return createPlantgate({ storage: h.app.storage, clock: h.clock.now, passwordHashIterations: 1000, logger: quiet, ...options });
}

function passwordOn(app: Plantgate, h: Harness, password: string, ip?: string) {
  const body = new URLSearchParams({ grant_type: "password", username: h.username, password }).toString();
  return app.fetch(
    new Request(`${BASE}/UserService/connect/token`, { method: "POST", headers: { "content-type": FORM, ...auth(h) }, body }),
    ip === undefined ? undefined : { clientIp: ip },
  );
}

function clientCredentialsOn(app: Plantgate, h: Harness, secret: string, info?: { clientIp?: string }, headers: Record<string, string> = {}) {
  return app.fetch(
    new Request(`${BASE}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": FORM, authorization: basic(h.clientId, secret), ...headers },
      body: "grant_type=client_credentials",
    }),
    info,
  );
}

async function expectLocked(res: Response, retryAfter: number): Promise<string> {
  expect(res.headers.get("retry-after")).toBe(String(retryAfter));
  return expectTokenError(res, 429, LOCKED);
}

describe("password grant: per-username lock-out shared across instances", () => {
  it("RFC 9700 §2.4: 10 failures lock the username for the rest of the 15-minute window, then it unlocks", async () => {
    const h = await harness();
    const other = sibling(h);
    for (let i = 0; i < 10; i++) {
      // Alternate instances: the counter lives in the shared store, not in either process.
      await expectTokenError(await passwordOn(i % 2 ? other : h.app, h, `wrong-${i}`), 400, BAD_PASSWORD);
      h.clock.advance(1000);
    }
    // 10 s after the first failure: locked on both instances, even with the right password.
    const right = await expectLocked(await passwordOn(other, h, h.password), 890);
    const wrong = await expectLocked(await passwordOn(h.app, h, "wrong-again"), 890);
    // The body is byte-for-byte the same whether the password was right or not.
    expect(right).toBe(wrong);
    // Locked attempts are counted too, but the window still started at the first failure, so the lock ends with it.
    h.clock.advance(889_000);
    await expectLocked(await passwordOn(h.app, h, h.password), 1);
    h.clock.advance(1000);
    await expectTokenSuccess(await passwordOn(other, h, h.password));
  });

  it("a success resets the counter: 9 failures, a success, 9 more failures stay unlocked", async () => {
    const h = await harness();
    for (let i = 0; i < 9; i++) await expectTokenError(await passwordRequest(h, { password: "nope" }), 400, BAD_PASSWORD);
    await expectTokenSuccess(await passwordRequest(h));
    for (let i = 0; i < 9; i++) await expectTokenError(await passwordRequest(h, { password: "nope" }), 400, BAD_PASSWORD);
    await expectTokenSuccess(await passwordRequest(h));
  });

  it("unknown usernames are counted too (same work, same answers), and the lock is per username", async () => {
    const h = await harness({ bruteForce: { maxFailures: 3, windowSeconds: 60 } });
    for (let i = 0; i < 3; i++) {
      await expectTokenError(await passwordRequest(h, { username: "nobody", password: "x" }), 400, BAD_PASSWORD);
    }
    await expectLocked(await passwordRequest(h, { username: "nobody", password: "x" }), 60);
    // alice is untouched by the guesses against "nobody".
    await expectTokenSuccess(await passwordRequest(h));
  });

  it("a disabled account's failures count like any other (its answer never differs from a wrong password)", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 } });
    await h.app.admin.setAccountEnabled("alice", false);
    await expectTokenError(await passwordRequest(h), 400, BAD_PASSWORD);
    await expectTokenError(await passwordRequest(h), 400, BAD_PASSWORD);
    await expectLocked(await passwordRequest(h), 60);
  });

  it("options: maxFailures and windowSeconds are honoured; bruteForce: false never locks", async () => {
    const h = await harness({ bruteForce: { maxFailures: 1, windowSeconds: 30 } });
    await expectTokenError(await passwordRequest(h, { password: "nope" }), 400, BAD_PASSWORD);
    h.clock.advance(10_000);
    await expectLocked(await passwordRequest(h), 20);

    const off = await harness({ bruteForce: false });
    for (let i = 0; i < 25; i++) await expectTokenError(await passwordRequest(off, { password: "nope" }), 400, BAD_PASSWORD);
    await expectTokenSuccess(await passwordRequest(off));
  });

  it("rejects nonsensical settings at construction", () => {
    expect(() => createPlantgate({ bruteForce: { maxFailures: 0 } })).toThrow("bruteForce.maxFailures must be a positive integer");
    expect(() => createPlantgate({ bruteForce: { windowSeconds: 1.5 } })).toThrow("bruteForce.windowSeconds must be a positive integer");
  });
});

/** Fires `n` password-grant requests at once and returns their statuses, sorted. */
async function burst(app: Plantgate, h: Harness, n: number, password: (i: number) => string, ip?: (i: number) => string): Promise<number[]> {
  const all = await Promise.all(Array.from({ length: n }, (_, i) => passwordOn(app, h, password(i), ip?.(i))));
  return all.map((r) => r.status).sort((a, b) => a - b);
}

const counts = (statuses: number[]) => statuses.reduce<Record<number, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});

describe("password grant: every attempt is counted before the password is checked", () => {
  it("50 concurrent wrong guesses with maxFailures 3: exactly 3 are evaluated (400), 47 answered 429", async () => {
    // The per-process cap on concurrent hashes (tested below) is lifted: this is about the counters.
    const h = await harness({ bruteForce: { maxFailures: 3, windowSeconds: 60 }, maxConcurrentPasswordChecks: 100 });
    expect(counts(await burst(h.app, h, 50, (i) => `wrong-${i}`, () => "198.51.100.20"))).toEqual({ 400: 3, 429: 47 });
    // Two instances over one store share the count the same way.
    const g = await harness({ bruteForce: { maxFailures: 3, windowSeconds: 60 }, maxConcurrentPasswordChecks: 100 });
    const other = sibling(g, { bruteForce: { maxFailures: 3, windowSeconds: 60 }, maxConcurrentPasswordChecks: 100 });
    const both = await Promise.all(Array.from({ length: 40 }, (_, i) => passwordOn(i % 2 ? other : g.app, g, `wrong-${i}`, "198.51.100.21")));
    expect(counts(both.map((r) => r.status))).toEqual({ 400: 3, 429: 37 });
    // The right password from that address is locked too, with the window's remaining time.
    await expectLocked(await passwordOn(g.app, g, g.password, "198.51.100.21"), 60);
  });

  it("one address guessing locks only itself: the user still signs in from another address", async () => {
    const h = await harness({ bruteForce: { maxFailures: 3, windowSeconds: 60 } });
    for (let i = 0; i < 3; i++) await expectTokenError(await passwordOn(h.app, h, `wrong-${i}`, "203.0.113.66"), 400, BAD_PASSWORD);
    // The attacker keeps hammering: refused by its own per-(username + IP) counter, which never
    // reaches the username's counter, so the owner is not locked out however long it goes on.
    for (let i = 0; i < 30; i++) await expectLocked(await passwordOn(h.app, h, `wrong-${i}`, "203.0.113.66"), 60);
    await expectTokenSuccess(await passwordOn(h.app, h, h.password, "198.51.100.1"));
  });

  it("guesses spread over many addresses meet the per-username ceiling of 5 × maxFailures", async () => {
    const h = await harness({ bruteForce: { maxFailures: 3, windowSeconds: 60 } });
    // 15 addresses, one guess each: every per-address counter stays under 3, the username's reaches 15.
    for (let i = 0; i < 15; i++) await expectTokenError(await passwordOn(h.app, h, `wrong-${i}`, `192.0.2.${i + 1}`), 400, BAD_PASSWORD);
    await expectLocked(await passwordOn(h.app, h, h.password, "198.51.100.99"), 60);
    // Concurrently from 50 fresh addresses against a fresh user: 15 evaluated, 35 refused (the
    // per-process cap on concurrent hashes lifted: this is about the counters).
    const g = await harness({ bruteForce: { maxFailures: 3, windowSeconds: 60 }, maxConcurrentPasswordChecks: 100 });
    expect(counts(await burst(g.app, g, 50, (i) => `wrong-${i}`, (i) => `192.0.2.${i + 1}`))).toEqual({ 400: 15, 429: 35 });
  });

  it("a success resets both counters of that username and address", async () => {
    const h = await harness({ bruteForce: { maxFailures: 3, windowSeconds: 60 } });
    for (let i = 0; i < 2; i++) await expectTokenError(await passwordOn(h.app, h, "nope", "203.0.113.5"), 400, BAD_PASSWORD);
    await expectTokenSuccess(await passwordOn(h.app, h, h.password, "203.0.113.5"));
    for (let i = 0; i < 3; i++) await expectTokenError(await passwordOn(h.app, h, "nope", "203.0.113.5"), 400, BAD_PASSWORD);
    await expectLocked(await passwordOn(h.app, h, h.password, "203.0.113.5"), 60);
  });
});

describe("client authentication: per client id + client IP", () => {
  it("RFC 6749 §2.3.1 / §10.10: 10 failed secrets from one IP lock that IP for the client; another IP is unaffected", async () => {
    const h = await harness();
    const other = sibling(h);
    for (let i = 0; i < 10; i++) {
      await expectTokenError(await clientCredentialsOn(i % 2 ? other : h.app, h, `bad-${i}`, { clientIp: "203.0.113.7" }), 401, BAD_CLIENT);
    }
    await expectLocked(await clientCredentialsOn(other, h, h.clientSecret, { clientIp: "203.0.113.7" }), 900);
    // IPv4-mapped IPv6 (a dual-stack socket) is the same client.
    await expectLocked(await clientCredentialsOn(h.app, h, h.clientSecret, { clientIp: "::ffff:203.0.113.7" }), 900);
    await expectTokenSuccess(await clientCredentialsOn(h.app, h, h.clientSecret, { clientIp: "203.0.113.8" }));
    // The password grant's client authentication goes through the same lock.
    const res = await passwordOn(h.app, h, h.password, "203.0.113.7");
    await expectLocked(res, 900);
    h.clock.advance(900_000);
    await expectTokenSuccess(await clientCredentialsOn(h.app, h, h.clientSecret, { clientIp: "203.0.113.7" }));
  });

  it("X-Forwarded-For is ignored unless the socket peer is a trusted proxy", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 } });
    const spoof = (ip: string) => ({ "x-forwarded-for": ip });
    // An attacker rotating X-Forwarded-For from one socket address still hits one counter.
    await expectTokenError(await clientCredentialsOn(h.app, h, "bad", { clientIp: "198.51.100.1" }, spoof("192.0.2.1")), 401, BAD_CLIENT);
    await expectTokenError(await clientCredentialsOn(h.app, h, "bad", { clientIp: "198.51.100.1" }, spoof("192.0.2.2")), 401, BAD_CLIENT);
    await expectLocked(await clientCredentialsOn(h.app, h, h.clientSecret, { clientIp: "198.51.100.1" }, spoof("192.0.2.3")), 60);
  });

  it("behind a trusted proxy the client is the rightmost untrusted X-Forwarded-For entry", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, trustedProxies: ["10.0.0.0/8", "2001:db8::1"] });
    const viaProxy = (secret: string, xff: string, proxy = "10.1.2.3") =>
      clientCredentialsOn(h.app, h, secret, { clientIp: proxy }, { "x-forwarded-for": xff });
    // Entries left of the real client are the client's own invention and change nothing.
    await expectTokenError(await viaProxy("bad", "1.1.1.1, 192.0.2.50, 10.9.9.9"), 401, BAD_CLIENT);
    await expectTokenError(await viaProxy("bad", "2.2.2.2, 192.0.2.50", "2001:db8::1"), 401, BAD_CLIENT);
    await expectLocked(await viaProxy(h.clientSecret, "192.0.2.50"), 60);
    // The same address reaching us directly is the same client.
    await expectLocked(await clientCredentialsOn(h.app, h, h.clientSecret, { clientIp: "192.0.2.50" }), 60);
    // Another client behind the same proxy is not locked.
    await expectTokenSuccess(await viaProxy(h.clientSecret, "192.0.2.51"));
  });

  it("IPv6 clients count per /64: another address in the prefix is the same client, another prefix is not", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 } });
    await expectTokenError(await clientCredentialsOn(h.app, h, "bad", { clientIp: "2001:db8:0:1::1" }), 401, BAD_CLIENT);
    await expectTokenError(await clientCredentialsOn(h.app, h, "bad", { clientIp: "2001:db8:0:1:ffff::2" }), 401, BAD_CLIENT);
    await expectLocked(await clientCredentialsOn(h.app, h, h.clientSecret, { clientIp: "2001:db8:0:1:1234:5678:9abc:def0" }), 60);
    await expectTokenSuccess(await clientCredentialsOn(h.app, h, h.clientSecret, { clientIp: "2001:db8:0:2::1" }));
    // The password grant's per-(username + address) counter too.
    for (let i = 0; i < 2; i++) await expectTokenError(await passwordOn(h.app, h, "nope", `2001:db8:0:3::${i + 1}`), 400, BAD_PASSWORD);
    await expectLocked(await passwordOn(h.app, h, h.password, "2001:db8:0:3::99"), 60);
    await expectTokenSuccess(await passwordOn(h.app, h, h.password, "2001:db8:0:4::1"));
  });

  it("behind a trusted proxy, X-Forwarded-For entries with a port count as their address", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, trustedProxies: ["10.0.0.0/8"] });
    const viaProxy = (secret: string, xff: string) => clientCredentialsOn(h.app, h, secret, { clientIp: "10.1.2.3" }, { "x-forwarded-for": xff });
    await expectTokenError(await viaProxy("bad", "192.0.2.50:5678"), 401, BAD_CLIENT);
    await expectTokenError(await viaProxy("bad", "192.0.2.50:9999, 10.9.9.9:80"), 401, BAD_CLIENT);
    await expectLocked(await clientCredentialsOn(h.app, h, h.clientSecret, { clientIp: "192.0.2.50" }), 60);
    // The proxy's own address was never the client, so another client behind it is not locked.
    await expectTokenSuccess(await viaProxy(h.clientSecret, "192.0.2.51"));
  });

  it("rejects a trustedProxies entry that is not an address or CIDR range", () => {
    expect(() => createPlantgate({ trustedProxies: ["10.0.0.0/33"] })).toThrow('trustedProxies: "10.0.0.0/33" has a bad prefix length');
    expect(() => createPlantgate({ trustedProxies: ["proxy.internal"] })).toThrow('trustedProxies: "proxy.internal" is not an IP address or CIDR range');
  });
});

describe("what reaches storage", () => {
  it("attempt keys are fixed-length hashes: no username, client id or address is stored", async () => {
    const base = createMemoryStorage();
    const seen: string[] = [];
    // A recording decorator over the real memory store: every key the throttle writes is captured.
    const attempts: AttemptStore = {
      increment: (key, now, windowMs) => (seen.push(key), base.attempts.increment(key, now, windowMs)),
      get: (key) => base.attempts.get(key),
      reset: (key) => (seen.push(key), base.attempts.reset(key)),
      deleteExpired: (before) => base.attempts.deleteExpired(before),
    };
    const h = await harness({ storage: { ...base, attempts } });
    await expectTokenError(await passwordRequest(h, { password: "nope" }), 400, BAD_PASSWORD);
    await expectTokenError(await clientCredentialsOn(h.app, h, "bad", { clientIp: "203.0.113.7" }), 401, BAD_CLIENT);
    await expectTokenSuccess(await passwordRequest(h));
    expect(seen.length).toBeGreaterThanOrEqual(4);
    for (const key of seen) {
      expect(key).toMatch(/^t:[A-Za-z0-9_-]{43}$/);
      expect(key).not.toContain("alice");
      expect(key).not.toContain("app-1");
    }
    // The username counter and the client+IP counter are different keys.
    expect(new Set(seen).size).toBeGreaterThanOrEqual(2);
  });

  it("a correct client authentication with no counter writes nothing; after a failure it resets that counter, and leaves the client's share of the address's budget and the budget counted", async () => {
    const base = createMemoryStorage();
    const writes: string[] = [];
    const attempts: AttemptStore = {
      increment: (key, now, windowMs) => (writes.push(`increment ${key}`), base.attempts.increment(key, now, windowMs)),
      get: (key) => base.attempts.get(key),
      reset: (key) => (writes.push(`reset ${key}`), base.attempts.reset(key)),
      deleteExpired: (before) => base.attempts.deleteExpired(before),
    };
    const h = await harness({ storage: { ...base, attempts } });
    const ip = { clientIp: "203.0.113.9" };
    await expectTokenSuccess(await clientCredentialsOn(h.app, h, h.clientSecret, ip));
    await expectTokenSuccess(await clientCredentialsOn(h.app, h, h.clientSecret, ip));
    expect(writes).toEqual([]);
    await expectTokenError(await clientCredentialsOn(h.app, h, "bad", ip), 401, BAD_CLIENT);
    // Since 2026-12-03 a failure counts the address's budget across client ids as well, and (since
    // later that day) first the client's share of it: a key derived from the client's own.
    expect(writes).toHaveLength(3);
    const [key, share, budget] = writes.map((w) => w.slice("increment ".length)) as [string, string, string];
    expect(key).toBe(`t:${await sha256(JSON.stringify(["client", "c", h.clientId, "203.0.113.9"]))}`);
    expect(share).toBe(`t:${await sha256(JSON.stringify(["budget-share-w", key]))}`);
    expect(budget).toBe(`t:${await sha256(JSON.stringify(["client-budget", "iw", "203.0.113.9"]))}`);
    for (const k of [key, share, budget]) expect(await base.attempts.get(k)).toMatchObject({ count: 1 });
    await expectTokenSuccess(await clientCredentialsOn(h.app, h, h.clientSecret, ip));
    // The success resets the client's own counter; its share and the budget's failure stand (a success counted nothing of them).
    expect(writes).toEqual([`increment ${key}`, `increment ${share}`, `increment ${budget}`, `reset ${key}`]);
    expect(await base.attempts.get(key)).toBeNull();
    expect(await base.attempts.get(share)).toMatchObject({ count: 1 });
    expect(await base.attempts.get(budget)).toMatchObject({ count: 1 });
    await expectTokenSuccess(await clientCredentialsOn(h.app, h, h.clientSecret, ip));
    expect(writes).toHaveLength(4);
  });
});

describe("housekeeping", () => {
  it("every 64th failure sweeps counters whose window has ended, so guessed usernames do not pile up", async () => {
    const base = createMemoryStorage();
    const sweeps: { before: number; deleted: number }[] = [];
    const attempts: AttemptStore = {
      ...base.attempts,
      deleteExpired: async (before) => {
        const deleted = await base.attempts.deleteExpired(before);
        sweeps.push({ before, deleted });
        return deleted;
      },
    };
    const h = await harness({ storage: { ...base, attempts }, bruteForce: { maxFailures: 5, windowSeconds: 60 } });
    const start = h.clock.now();
    // Each attempt counts two keys of its own (username + address, username): 80 counters in the
    // first minute, beside the client's one budget counter (whose window restarts in the second).
    for (let i = 0; i < 40; i++) await expectTokenError(await passwordRequest(h, { username: `guess-${i}`, password: "x" }), 400, BAD_PASSWORD);
    h.clock.advance(61_000);
    for (let i = 40; i < 63; i++) await expectTokenError(await passwordRequest(h, { username: `guess-${i}`, password: "x" }), 400, BAD_PASSWORD);
    expect(sweeps).toEqual([]);
    await expectTokenError(await passwordRequest(h, { username: "guess-63", password: "x" }), 400, BAD_PASSWORD);
    // The 80 counters of the first minute are gone; the 48 of the current window stay.
    expect(sweeps).toEqual([{ before: start + 1000, deleted: 80 }]);
  });

  // A sweep is housekeeping: a MariaDB deadlock victim or a lock-wait timeout there once turned the
  // 64th failure's 400/401 into a 503, and a client's failure event was never emitted.
  for (const path of ["password grant (counted before the check)", "client authentication (counted after the check)"] as const) {
    it(`a failing sweep does not change the 64th failure's answer, ${path}: the failure is counted, the event emitted, the sweep's error logged`, async () => {
      const base = createMemoryStorage();
      const increments: string[] = [];
      const attempts: AttemptStore = {
        ...base.attempts,
        increment: (key, now, windowMs) => (increments.push(key), base.attempts.increment(key, now, windowMs)),
        deleteExpired: async () => Promise.reject(new StorageError("attempt store: deadlock found when trying to get lock")),
      };
      const warned: unknown[][] = [];
      const events: { type: string }[] = [];
      const h = await harness({
        storage: { ...base, attempts },
        bruteForce: { maxFailures: 1000, windowSeconds: 60 },
        logger: { error() {}, warn: (...args: unknown[]) => void warned.push(args) },
        onEvent: (e) => void events.push(e),
      });
      const password = path.startsWith("password");
      const fail = (i: number) =>
        password
          ? passwordRequest(h, { username: `guess-${i}`, password: "x" })
          : clientCredentialsOn(h.app, h, `bad-${i}`, { clientIp: `203.0.113.${i}` });
      for (let i = 0; i < 64; i++) {
        if (i === 63) {
          increments.length = 0;
          events.length = 0;
        }
        await (password ? expectTokenError(await fail(i), 400, BAD_PASSWORD) : expectTokenError(await fail(i), 401, BAD_CLIENT));
      }
      await new Promise((r) => setTimeout(r, 0));
      // Password: the client's budget, username + address, username; client: client id + address,
      // its share of the address's budget, and the budget (since 2026-12-03).
      expect(increments).toHaveLength(3);
      expect(events.map((e) => e.type)).toEqual([password ? "account.login_failed" : "client.authentication_failed"]);
      expect(warned.filter((w) => String(w[0]).startsWith("attempt-counter"))).toEqual([
        ["attempt-counter sweep failed (the answer stands; the next sweep or prune clears the backlog)", { name: "StorageError", message: "attempt store: deadlock found when trying to get lock" }],
      ]);
    });
  }
});

describe("API surface rendering", () => {
  it("TooManyAttemptsError on an API route is 429 {error: 1429, message} with Retry-After", async () => {
    const res = toResponse(errorResponse(new TooManyAttemptsError(42), "api", quiet));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("42");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual({ error: 1429, message: "Too many failed attempts; retry after the time in Retry-After." });
  });
});

describe("password-hash work is bounded (finding 2)", () => {
  const BUSY = { error: "temporarily_unavailable", error_description: "Too many sign-in attempts at once; retry after the time in Retry-After." };
  const grant = passwordGrantFrom;
  const consoleSignIn = (app: Plantgate, username: string, password: string, ip: string) =>
    app.fetch(
      new Request(`${BASE}/console/api/session`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: new URL(BASE).origin, "sec-fetch-site": "same-origin" },
        body: JSON.stringify({ username, password }),
      }),
      { clientIp: ip },
    );

  it("20 concurrent attempts with random usernames: 4 hashed at once (the default), the other 16 refused at once with 429 and Retry-After: 1, uncounted", async () => {
    const base = createMemoryStorage();
    let increments = 0;
    const attempts: AttemptStore = { ...base.attempts, increment: (...args) => (increments++, base.attempts.increment(...args)) };
    // Enough iterations that the four in flight are still hashing when the others arrive.
    const h = await harness({ storage: { ...base, attempts }, passwordHashIterations: 200_000, logger: quiet });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => grant(h.app, h, `nobody-${i}`, `198.51.100.${i + 1}`)));
    expect(counts(answers.map((r) => r.status))).toEqual({ 400: 4, 429: 16 });
    for (const r of answers.filter((r) => r.status === 429)) {
      expect([r.headers.get("retry-after"), r.headers.get("cache-control")]).toEqual(["1", "no-store"]);
      expect(await r.json()).toEqual(BUSY);
    }
    // Only the four that ran were counted (three keys each: username + address, the client's budget, username).
    expect(increments).toBe(12);
    // Once they are done, the real user signs in.
    await expectTokenSuccess(await passwordRequest(h));
  });

  it("the cap is per instance and shared by the password grant and console sign-in; console refusals are {error: 1429}", async () => {
    const h = await harness({ console: { enabled: true }, passwordHashIterations: 200_000, maxConcurrentPasswordChecks: 1, logger: quiet });
    const other = sibling(h, { console: { enabled: true }, passwordHashIterations: 200_000, maxConcurrentPasswordChecks: 1 });
    // Which of the three reaches the check first is up to the event loop: one is checked, two are refused.
    const [grantAnswer, ...consoleAnswers] = await Promise.all([
      grant(h.app, h, "nobody", "198.51.100.1"),
      consoleSignIn(h.app, "root", "wrong-password", "198.51.100.2"),
      consoleSignIn(h.app, "root", "wrong-password", "198.51.100.3"),
    ]);
    const elsewhere = await Promise.all([grant(other, h, "nobody", "198.51.100.4"), consoleSignIn(h.app, "root", "wrong-password", "198.51.100.5")]);
    expect([grantAnswer!, ...consoleAnswers].map((r) => r.status).sort()).toEqual(grantAnswer!.status === 400 ? [400, 429, 429] : [401, 429, 429]);
    if (grantAnswer!.status === 429) expect(await grantAnswer!.json()).toEqual(BUSY);
    for (const r of consoleAnswers.filter((r) => r.status === 429)) {
      expect([r.headers.get("retry-after"), r.headers.get("cache-control")]).toEqual(["1", "no-store"]);
      expect(await r.json()).toEqual({ error: 1429, message: "Too many sign-in attempts at once; retry after the time in Retry-After." });
    }
    // Another instance has its own cap, and the slot is free again once the check is done.
    await expectTokenError(elsewhere[0]!, 400, BAD_PASSWORD);
    expect(elsewhere[1]!.status).toBe(401);
  });

  it("maxConcurrentPasswordChecks must be a positive integer", () => {
    for (const bad of [0, -1, 1.5]) expect(() => createPlantgate({ maxConcurrentPasswordChecks: bad })).toThrow("maxConcurrentPasswordChecks");
  });

  it("PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS sets the cap (1-1000): with 1, of two password grants at once one is checked and one refused", async () => {
    expect(optionsFromEnv({ PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS: "7" })).toEqual({ maxConcurrentPasswordChecks: 7 });
    expect(optionsFromEnv({ PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS: "" })).toEqual({});
    for (const bad of ["0", "1001", "-1", "1.5", "four"]) expect(() => optionsFromEnv({ PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS: bad }), bad).toThrow(ConfigError);
    const h = await harness({ ...optionsFromEnv({ PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS: "1" }), passwordHashIterations: 200_000, logger: quiet });
    const answers = await Promise.all([grant(h.app, h, "nobody", "198.51.100.1"), grant(h.app, h, "nobody", "198.51.100.2")]);
    expect(answers.map((r) => r.status).sort()).toEqual([400, 429]);
    expect(await answers.find((r) => r.status === 429)!.json()).toEqual(BUSY);
  });

  it("the password grant has a per-client budget across usernames and addresses (10 × maxFailures per window); other clients and a new window are not affected", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    const { clientSecret } = await h.app.admin.createClient({ clientId: "app-2" });
    for (let i = 0; i < 20; i++) await expectTokenError(await grant(h.app, h, `user-${i}`, `203.0.113.${i + 1}`), 400, BAD_PASSWORD);
    // The 21st, a username and an address never seen, is refused without a hash; so is the real user.
    await expectLocked(await grant(h.app, h, "user-20", "203.0.113.99"), 60);
    await expectLocked(await grant(h.app, h, h.username, "203.0.113.98", h.password), 60);
    // Another client of the same users is not affected.
    await expectTokenSuccess(await grant(h.app, h, h.username, "203.0.113.97", h.password, { authorization: basic("app-2", clientSecret) }));
    h.clock.advance(60_000);
    await expectTokenSuccess(await grant(h.app, h, h.username, "203.0.113.98", h.password));
  });

  it("a lock-out names the password grant's client (client_id; null for the console), so the audit trail's client filter lists a client's budget lock", async () => {
    const h = await harness({ storage: createMemoryStorage({ audit: true }), console: { enabled: true }, bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    for (let i = 0; i < 20; i++) await expectTokenError(await grant(h.app, h, `user-${i}`, `203.0.113.${i + 1}`), 400, BAD_PASSWORD);
    await expectLocked(await grant(h.app, h, "user-20", "203.0.113.99"), 60);
    h.clock.advance(1000); // the trail's order is by time (then by random id)
    for (let i = 0; i < 6; i++) expect((await consoleSignIn(h.app, `user-${i}`, "wrong-password", "198.51.100.7")).status).toBe(401);
    expect((await consoleSignIn(h.app, "user-6", "wrong-password", "198.51.100.7")).status).toBe(429);
    await h.app.flushEvents();
    const locks = (await h.app.admin.listEvents({ type: "account.locked_out" })).events as Array<Extract<SecurityEvent, { type: "account.locked_out" }>>;
    expect(locks.map((e) => [e.lock, e.source, e.client_id])).toEqual([
      ["address_budget", "console", null],
      ["client_budget", "password_grant", h.clientId],
    ]);
    // Until 2026-12-01 the event had no client_id, and the client's filtered trail no lock.
    expect((await h.app.admin.listEvents({ clientId: h.clientId, type: "account.locked_out" })).events.map((e) => (e as { lock: string }).lock)).toEqual(["client_budget"]);
  });

  it("a locked (username + address) does not spend its client's budget: one user retrying behind a proxy does not lock the client's other users", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    for (let i = 0; i < 2; i++) await expectTokenError(await grant(h.app, h, "bob", "192.0.2.1"), 400, BAD_PASSWORD);
    for (let i = 0; i < 30; i++) await expectLocked(await grant(h.app, h, "bob", "192.0.2.1"), 60);
    await expectTokenSuccess(await grant(h.app, h, h.username, "192.0.2.1", h.password));
  });

  it("console sign-in has a per-address budget across usernames (3 × maxFailures per window); other addresses are not affected", async () => {
    const h = await harness({ console: { enabled: true }, bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    for (let i = 0; i < 6; i++) expect((await consoleSignIn(h.app, `user-${i}`, "wrong-password", "198.51.100.7")).status).toBe(401);
    const locked = await consoleSignIn(h.app, "user-6", "wrong-password", "198.51.100.7");
    expect([locked.status, locked.headers.get("retry-after")]).toEqual([429, "60"]);
    expect(await locked.json()).toEqual({ error: 1429, message: "Too many failed attempts; retry after the time in Retry-After." });
    // Another address is not affected.
    expect((await consoleSignIn(h.app, "user-7", "wrong-password", "198.51.100.8")).status).toBe(401);
  });

  it("a success gives back only its own count of the client's budget: signing in with one known password between guesses does not reset the guesses at other usernames", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    for (let i = 0; i < 19; i++) {
      await expectTokenError(await grant(h.app, h, `user-${i}`, `203.0.113.${i + 1}`), 400, BAD_PASSWORD);
      // The guesser's own account, between every guess: before, each success reset the budget.
      await expectTokenSuccess(await grant(h.app, h, h.username, "203.0.113.200", h.password));
    }
    await expectTokenError(await grant(h.app, h, "user-19", "203.0.113.20"), 400, BAD_PASSWORD);
    // 20 failures: the budget is spent, for the guesser's account too.
    await expectLocked(await grant(h.app, h, "user-20", "203.0.113.21"), 60);
    await expectLocked(await grant(h.app, h, h.username, "203.0.113.200", h.password), 60);
    h.clock.advance(60_000);
    await expectTokenSuccess(await grant(h.app, h, h.username, "203.0.113.200", h.password));
  });

  it("successes alone never spend the client's budget: 60 sign-ins of one client's users in a window (3 × its 20) all succeed", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    for (let i = 0; i < 3; i++) await h.app.admin.createAccount({ username: `member-${i}`, password: `member-password-${i}` });
    for (let i = 0; i < 60; i++) await expectTokenSuccess(await grant(h.app, h, `member-${i % 3}`, `198.51.100.${i + 1}`, `member-password-${i % 3}`));
    // And the budget still counts failures from zero: 20 more are answered, the 21st is locked.
    for (let i = 0; i < 20; i++) await expectTokenError(await grant(h.app, h, `user-${i}`, "192.0.2.9"), 400, BAD_PASSWORD);
    await expectLocked(await grant(h.app, h, "user-20", "192.0.2.10"), 60);
  });

  it("a success gives back only the same username's failures from the same address: a typo from another address still counts", async () => {
    // Budget 40 (10 × 4), the username's own ceiling 20 (5 × 4).
    const h = await harness({ bruteForce: { maxFailures: 4, windowSeconds: 60 }, logger: quiet });
    for (let i = 0; i < 10; i++) await expectTokenError(await grant(h.app, h, h.username, `203.0.113.${i + 1}`, "typo"), 400, BAD_PASSWORD);
    // The success from yet another address gives back its own count only: 10 of 40 stay spent.
    await expectTokenSuccess(await grant(h.app, h, h.username, "203.0.113.200", h.password));
    for (let i = 0; i < 30; i++) await expectTokenError(await grant(h.app, h, `user-${i}`, "192.0.2.9"), 400, BAD_PASSWORD);
    await expectLocked(await grant(h.app, h, "user-30", "192.0.2.10"), 60);
  });

  it("console sign-in: an administrator's success from an address does not reset that address's budget spent on other usernames", async () => {
    const h = await harness({ console: { enabled: true }, bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    await h.app.admin.createAccount({ username: "root", password: "root-password-1", roles: ["admin"] });
    for (let i = 0; i < 5; i++) {
      expect((await consoleSignIn(h.app, `user-${i}`, "wrong-password", "198.51.100.7")).status).toBe(401);
      expect((await consoleSignIn(h.app, "root", "root-password-1", "198.51.100.7")).status).toBe(200);
    }
    expect((await consoleSignIn(h.app, "user-5", "wrong-password", "198.51.100.7")).status).toBe(401);
    const locked = await consoleSignIn(h.app, "root", "root-password-1", "198.51.100.7");
    expect([locked.status, locked.headers.get("retry-after")]).toEqual([429, "60"]);
    expect(await locked.json()).toEqual({ error: 1429, message: "Too many failed attempts; retry after the time in Retry-After." });
  });

  it("a store without attempts.refund (written before it): a warning at start, and a success resets the budget, as before", async () => {
    const base = createMemoryStorage();
    const { refund: _refund, ...withoutRefund } = base.attempts;
    const warnings: unknown[] = [];
    const h = await harness({ storage: { ...base, attempts: withoutRefund }, bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: { error() {}, warn: (m: unknown) => warnings.push(m) } });
    // Said once, at start.
    expect(warnings.filter((w) => String(w).includes("attempts.refund"))).toHaveLength(1);
    for (let i = 0; i < 19; i++) await expectTokenError(await grant(h.app, h, `user-${i}`, `203.0.113.${i + 1}`), 400, BAD_PASSWORD);
    await expectTokenSuccess(await grant(h.app, h, h.username, "203.0.113.200", h.password));
    for (let i = 19; i < 38; i++) await expectTokenError(await grant(h.app, h, `user-${i}`, `203.0.113.${i + 1}`), 400, BAD_PASSWORD);
  });
});
