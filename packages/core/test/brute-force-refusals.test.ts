/**
 * A refused password attempt counts on the key that refused it only (SECURITY.md, "What a lock
 * does": a lock lasts at most one window), and the lock-out event's `locked_until` is that key's
 * window end. Each test failed before 2026-12-01: a user retrying the right password while another
 * lock was on locked their own (username + address) key, refused a window longer.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, type SecurityEvent, type Storage } from "../src/index.js";
import { harness, type Harness } from "./helpers.js";
import { expectTokenError, expectTokenSuccess, passwordGrantFrom as grant } from "./token-helpers.js";

const quiet = { error() {}, warn() {} };
const BAD_PASSWORD = { error: "invalid_grant", error_description: "The username or password is incorrect." };
const LOCKED = { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." };


describe("a lock lasts at most one window (SECURITY.md, 'What a lock does')", () => {
  it("a client's spent budget does not go on locking a user who never gave a wrong password once its window has ended", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    // Someone spends the client's budget (10 x 2) on usernames that do not exist, from one address.
    for (let i = 0; i < 20; i++) await expectTokenError(await grant(h.app, h, `user-${i}`, "198.51.100.1"), 400, BAD_PASSWORD);
    // alice, from her own address, with her right password, is refused by the budget: three tries.
    h.clock.advance(10_000);
    for (let i = 0; i < 3; i++) {
      const res = await grant(h.app, h, h.username, "203.0.113.9", h.password);
      expect(res.status).toBe(429);
      await res.text();
    }
    // The budget's window ends 60 s after its first count: SECURITY.md, "lock all its users out of
    // the password grant until the window ends". alice has never given a wrong password.
    h.clock.advance(50_000);
    await expectTokenSuccess(await grant(h.app, h, h.username, "203.0.113.9", h.password));
  });

  it("a username's spent ceiling does not go on locking its owner, who never gave a wrong password, once its window has ended", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    // Guesses at alice spread over ten addresses: her ceiling (5 x 2) is spent, no address locked.
    for (let i = 0; i < 10; i++) await expectTokenError(await grant(h.app, h, h.username, `198.51.100.${i + 1}`), 400, BAD_PASSWORD);
    h.clock.advance(10_000);
    // alice, from her own address, with her right password: refused by her username's lock, three tries.
    for (let i = 0; i < 3; i++) {
      const res = await grant(h.app, h, h.username, "203.0.113.9", h.password);
      expect(res.status).toBe(429);
      await res.text();
    }
    // The username's window (60 s from the first guess) has ended.
    h.clock.advance(50_000);
    await expectTokenSuccess(await grant(h.app, h, h.username, "203.0.113.9", h.password));
  });
});

describe("account.locked_out", () => {
  it("locked_until is the end of the lock's window (README: 'Epoch ms when the window ends'), not now plus Retry-After rounded up", async () => {
    const events: SecurityEvent[] = [];
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet, onEvent: (e) => void events.push(e) });
    const start = h.clock.now();
    await expectTokenError(await grant(h.app, h, h.username, "198.51.100.7"), 400, BAD_PASSWORD);
    await expectTokenError(await grant(h.app, h, h.username, "198.51.100.7"), 400, BAD_PASSWORD);
    h.clock.advance(500);
    await expectTokenError(await grant(h.app, h, h.username, "198.51.100.7"), 429, LOCKED);
    await h.app.flushEvents();
    const locked = events.find((e) => e.type === "account.locked_out");
    expect(locked).toMatchObject({ lock: "username_address", username: "alice" });
    // The counter's window started with the first failure: it ends at start + 60 s.
    expect((locked as { locked_until: number }).locked_until).toBe(start + 60_000);
  });
});

const grantFrom = (h: Harness, ip: string, password = "wrong-password") => grant(h.app, h, h.username, ip, password);

/**
 * The memory store with one `attempts.increment` held: `holdAfter(n)` holds the n-th increment from
 * now until `release()`, and resolves once that increment is reached (an attempt stalled mid-count).
 */
function heldIncrements() {
  const inner = createMemoryStorage();
  let calls = 0;
  let holdAt = -1;
  let reached = (): void => {};
  let release = (): void => {};
  const releaseP = new Promise<void>((r) => (release = r));
  const storage: Storage = {
    ...inner,
    attempts: {
      ...inner.attempts,
      increment: async (key, now, windowMs) => {
        if (++calls === holdAt) {
          reached();
          await releaseP;
        }
        return inner.attempts.increment(key, now, windowMs);
      },
      refund: inner.attempts.refund!.bind(inner.attempts),
    } as Storage["attempts"],
  };
  return {
    storage,
    holdAfter: (n: number) => {
      holdAt = calls + n;
      return new Promise<void>((r) => (reached = r));
    },
    release: () => release(),
  };
}

describe("account.locked_out once per lock (a refund took a lock back under its limit, and it was reported twice, until the review mend)", () => {
  it("a (username + address) lock is reported once, when an attempt refused by the username's ceiling gives that key its count back", async () => {
    const held = heldIncrements();
    const storage = held.storage;
    const events: SecurityEvent[] = [];
    const h = await harness({ storage, bruteForce: { maxFailures: 2, windowSeconds: 60 }, onEvent: (e) => void events.push(e) });
    const E = "198.51.100.66";
    // One guess from E (its pair key at 1), then 9 from other addresses: alice's ceiling (5 x 2) spent.
    expect((await grantFrom(h, E)).status).toBe(400);
    for (let i = 0; i < 9; i++) expect((await grantFrom(h, `203.0.113.${i + 1}`)).status).toBe(400);
    // X from E: pair -> 2 (allowed), then its username increment (the second; the client's budget
    // comes after it) is held.
    const reached = held.holdAfter(2);
    const x = grantFrom(h, E);
    await reached;
    // Y from E: pair -> 3, refused by the pair key: the first refusal of that lock, reported.
    expect((await grantFrom(h, E)).status).toBe(429);
    // X goes on: refused by the ceiling, it gives the pair key its count back (-> 2).
    held.release();
    expect((await x).status).toBe(429);
    // Z from E: pair -> 3 again: the same lock, reported a second time.
    expect((await grantFrom(h, E)).status).toBe(429);
    await h.app.flushEvents();
    const locks = events.filter((e) => e.type === "account.locked_out").map((e) => (e as { lock: string }).lock);
    expect(locks.filter((l) => l === "username_address"), `lock-outs reported: ${JSON.stringify(locks)}`).toHaveLength(1);
  });
});

describe("a refund of a refused attempt that fails in storage", () => {
  it("leaves the 429 as it is, and says so in a warn line of its own (not the sweep's)", async () => {
    const inner = createMemoryStorage();
    const storage: Storage = {
      ...inner,
      attempts: { ...inner.attempts, refund: async () => Promise.reject(new Error("refund refused")) } as Storage["attempts"],
    };
    const warnings: string[] = [];
    const h = await harness({ storage, bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: { error() {}, warn: (message: string) => void warnings.push(message) } });
    // alice's ceiling (5 x 2) spent from ten addresses; then her right password from her own: the
    // ceiling refuses it, and the refund of the key counted before it (her username + address)
    // fails. (Until 2026-12-02 the client's budget was counted between the two, and refunded too.)
    for (let i = 0; i < 10; i++) await expectTokenError(await grant(h.app, h, h.username, `198.51.100.${i + 1}`), 400, BAD_PASSWORD);
    await expectTokenError(await grant(h.app, h, h.username, "203.0.113.9", h.password), 429, LOCKED);
    expect(warnings.filter((w) => w.startsWith("attempt-counter"))).toEqual([
      "attempt-counter refund of a refused attempt failed (the 429 stands; that count stays until its window ends)",
    ]);
  });
});

describe("attempts refused by the spent ceiling, one held mid-count (the second review's interleaving)", () => {
  it("attempts from one address that the spent ceiling refuses, one held mid-count while others pass it, never lock that address's own key: no username_address lock-out", async () => {
    const held = heldIncrements();
    const storage = held.storage;
    const events: SecurityEvent[] = [];
    const h = await harness({ storage, bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet, onEvent: (e) => void events.push(e) });
    const E = "198.51.100.66";
    // alice's ceiling (5 x 2) spent from ten other addresses; E has guessed nothing.
    for (let i = 0; i < 10; i++) expect((await grantFrom(h, `203.0.113.${i + 1}`)).status).toBe(400);
    // X from E: pair -> 1 (under its limit), then its username increment (the second) is held.
    const reached = held.holdAfter(2);
    const x = grantFrom(h, E);
    await reached;
    // Y and W from E: each refused by the ceiling, each count on the pair key given back.
    expect((await grantFrom(h, E)).status).toBe(429);
    expect((await grantFrom(h, E)).status).toBe(429);
    // X goes on: refused by the ceiling, its count given back too.
    held.release();
    expect((await x).status).toBe(429);
    expect((await grantFrom(h, E)).status).toBe(429);
    await h.app.flushEvents();
    const locks = events.filter((e) => e.type === "account.locked_out").map((e) => (e as { lock: string }).lock);
    // Only the ceiling's lock: no password was checked from E, so its own key never locked.
    expect(locks).toEqual(["username"]);
  });
});

describe("a user refused by the spent ceiling is not locked on their own key, one wrong password before included (the first mend of this session locked them)", () => {
  it("a user with one wrong password (maxFailures 2) who retries the right one during the ceiling's lock signs in once that lock's window ends", async () => {
    const h = await harness({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, logger: quiet });
    // t0: a guess at alice from elsewhere: the username's window starts.
    await expectTokenError(await grantFrom(h, "198.51.100.1"), 400, BAD_PASSWORD);
    h.clock.advance(10_000);
    // t0 + 10 s: alice mistypes once from her own address (her pair key: 1 of 2).
    await expectTokenError(await grantFrom(h, "203.0.113.9"), 400, BAD_PASSWORD);
    // The guesses go on from other addresses: her ceiling (5 x 2) is spent.
    for (let i = 0; i < 8; i++) await expectTokenError(await grantFrom(h, `198.51.100.${i + 2}`), 400, BAD_PASSWORD);
    // alice, with her right password: refused by the ceiling (no password checked).
    const refused = await grantFrom(h, "203.0.113.9", h.password);
    expect(refused.status).toBe(429);
    await refused.text();
    // t0 + 61 s: the ceiling's window has ended; her own key's (t0 + 10 s .. t0 + 70 s) has not,
    // and she has used one password check of its two.
    h.clock.advance(51_000);
    await expectTokenSuccess(await grantFrom(h, "203.0.113.9", h.password));
  });
});
