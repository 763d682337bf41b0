/**
 * A refusal's `Retry-After` runs to the latest end among every lock the attempt would meet, not
 * only the key that refused it: a client that waits as told is not refused again by a lock that
 * was already in place. Until 2026-12-02 it named the refusing key's window alone (the attempt
 * stops counting at that key), and this test failed: Retry-After 400 (the address's own key) where
 * the username's lock ran 200 s longer, and the retry after 400 s got 429 again.
 */
import { expect, it } from "vitest";
import { type SecurityEvent } from "../src/index.js";
import { BASE, basic, harness } from "./helpers.js";
import { FORM } from "./token-helpers.js";

const LOCKED = { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." };
const BAD_PASSWORD = { error: "invalid_grant", error_description: "The username or password is incorrect." };

it("an address refused by its own (username + address) key while the username's longer lock is on is told to wait for the longer one, and is not refused again when it comes back then", async () => {
  const events: SecurityEvent[] = [];
  // 3 per username + IP, 15 per username, 600 s windows.
  const h = await harness({ bruteForce: { maxFailures: 3, windowSeconds: 600 }, maxConcurrentPasswordChecks: 100, onEvent: (e) => void events.push(e) });
  const start = h.clock.now();
  const attempt = (password: string, ip: string) =>
    h.app.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": FORM, authorization: basic(h.clientId, h.clientSecret) },
        body: new URLSearchParams({ grant_type: "password", username: h.username, password }).toString(),
      }),
      { clientIp: ip },
    );
  // t = 0: address A guesses 3 times: its (username, A) key is full (window until t = 600 s).
  for (let i = 0; i < 3; i++) expect((await attempt(`wrong-${i}`, "198.51.100.1")).status).toBe(400);
  // t = 100 s: the user signs in from her own address: the username's key is reset.
  h.clock.advance(100_000);
  expect((await attempt(h.password, "203.0.113.5")).status).toBe(200);
  // t = 200 s: 15 guesses from other addresses fill the username's key (5 x 3), window until t = 800 s.
  h.clock.advance(100_000);
  for (let i = 0; i < 15; i++) expect((await attempt(`wrong-b${i}`, `192.0.2.${i + 1}`)).status).toBe(400);
  expect((await attempt("wrong-x", "192.0.2.99")).status).toBe(429);
  // Address A is refused by its own key (until t = 600 s); the username's lock runs to t = 800 s.
  const refused = await attempt("wrong-3", "198.51.100.1");
  const retryAfter = refused.headers.get("retry-after");
  expect({ status: refused.status, retryAfter, body: await refused.json() }).toEqual({ status: 429, retryAfter: "600", body: LOCKED });
  // Coming back when told: both locks have ended, and the password is checked again (wrong).
  h.clock.advance(Number(retryAfter) * 1000);
  const again = await attempt("wrong-4", "198.51.100.1");
  expect({ status: again.status, body: await again.json() }).toEqual({ status: 400, body: BAD_PASSWORD });
  // The lock-out events still name each lock and its own window end.
  await h.app.flushEvents();
  const locks = events.filter((e) => e.type === "account.locked_out").map((e) => ({ lock: (e as { lock: string }).lock, until: (e as { locked_until: number }).locked_until - start }));
  expect(locks).toEqual([
    { lock: "username", until: 800_000 },
    { lock: "username_address", until: 600_000 },
  ]);
});
