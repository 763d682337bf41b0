/**
 * The token endpoint's Retry-After, against the real example server over a socket: a 429 (the
 * brute-force lock of a username + address) holds this client's token requests until the time it
 * names (at most 300 s), every call in between rejecting with that answer's OAuthError and sending
 * nothing. Before, each call sent the grant again into the lock.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { createClient, OAuthError, TOKEN_PATH, type FetchLike } from "../src/index.js";
import { manualClock, rejectionOf, startTarget, type ServerTarget } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

let t: ServerTarget;
beforeEach(async () => {
  t = await startTarget({ clock: manualClock(Date.now()) });
});
afterEach(async () => {
  await t.close();
});

it("a 429 with Retry-After from the token endpoint: calls reject with its OAuthError, sending nothing, until the wait is over (at most 300 s)", async () => {
  // Someone else's wrong guesses lock this username from this address (plantgate: 10 per window of 900 s).
  for (let i = 0; i < 10; i++) {
    const guess = await fetch(t.baseUrl + TOKEN_PATH, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "password", username: t.username, password: `guess-${i}`, client_id: t.clientId, client_secret: t.clientSecret, scope: OFFLINE }),
    });
    expect(guess.status).toBe(400);
  }
  const sent: string[] = [];
  const fetchCounting: FetchLike = (url, init) => {
    if (new URL(url).pathname === TOKEN_PATH) sent.push(new URLSearchParams(init.body).get("grant_type") ?? "");
    return globalThis.fetch(url, init);
  };
  const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, clock: t.clock.now, fetch: fetchCounting });
  const locked = await rejectionOf(client.listAccounts());
  expect(locked).toBeInstanceOf(OAuthError);
  expect(locked).toMatchObject({ status: 429, error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After.", grantType: "password", retryAfter: 900 });
  expect(sent).toEqual(["password"]);
  for (let i = 0; i < 10; i++) {
    expect(await rejectionOf(client.listAccounts())).toBe(locked);
    expect(await rejectionOf(client.refresh())).toBe(locked);
  }
  t.clock.advance(299.999);
  expect(await rejectionOf(client.getAccessToken())).toBe(locked);
  expect(sent).toEqual(["password"]);
  // Held for at most 300 s: then asked again (still locked on the server, so held again).
  t.clock.advance(0.001);
  const again = await rejectionOf(client.listAccounts());
  expect(again).not.toBe(locked);
  expect(again).toMatchObject({ status: 429, error: "temporarily_unavailable", retryAfter: 600 });
  expect(sent).toEqual(["password", "password"]);
  // The lock over (900 s after it began), the right password signs in.
  t.clock.advance(600);
  expect((await client.listAccounts()).total).toBe(1);
  expect(sent).toEqual(["password", "password", "password"]);
  const events = await t.events();
  expect(events.filter((e) => e === "account.locked_out")).toHaveLength(1);
  // The ten guesses and the two locked attempts of the client.
  expect(events.filter((e) => e === "account.login_failed")).toHaveLength(12);
});
