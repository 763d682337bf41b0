/**
 * A refused password attempt counts on the key that refused it only (SECURITY.md, "What a lock
 * does": a lock lasts at most one window), and the lock-out event's `locked_until` is that key's
 * window end. Each test failed before 2026-12-01: a user retrying the right password while another
 * lock was on locked their own (username + address) key, refused a window longer.
 */
import { describe, expect, it } from "vitest";
import type { Plantgate, SecurityEvent } from "../src/index.js";
import { BASE, harness, type Harness } from "./helpers.js";
import { auth, expectTokenError, expectTokenSuccess, FORM } from "./token-helpers.js";

const quiet = { error() {}, warn() {} };
const BAD_PASSWORD = { error: "invalid_grant", error_description: "The username or password is incorrect." };
const LOCKED = { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." };

const grant = (app: Plantgate, h: Harness, username: string, ip: string, password = "wrong-password", headers = auth(h)) =>
  app.fetch(
    new Request(`${BASE}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": FORM, ...headers },
      body: new URLSearchParams({ grant_type: "password", username, password }).toString(),
    }),
    { clientIp: ip },
  );

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
