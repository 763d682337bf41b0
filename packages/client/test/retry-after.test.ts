/**
 * The token endpoint's Retry-After, against the real example server over a socket: a 429 (the
 * brute-force lock of a username + address) holds this client's token requests until the time it
 * names (at most 300 s), every call in between rejecting with an OAuthError like that answer's (its
 * retryAfter the seconds left, its cause the answer) and sending nothing. Before, each call sent
 * the grant again into the lock.
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

it("a 429 with Retry-After from the token endpoint: calls reject with an OAuthError like it that counts down the seconds left, sending nothing, until the wait is over (at most 300 s)", async () => {
  // Someone else's wrong guesses lock this username from this address (plantgate: 10 per window of 900 s).
  await lockOut();
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
  // Each held call gets an error of its own that says how long is left of the client's hold (300 s
  // at most, rounded up), its cause the answer. Until 2026-11-30 it was the answer itself, whose
  // retryAfter said 900 all along, though the client asked again after 300 s.
  for (let i = 0; i < 10; i++) {
    expectHeld(await rejectionOf(client.listAccounts()), locked, 300 - 10 * i);
    expectHeld(await rejectionOf(client.refresh()), locked, 300 - 10 * i);
    t.clock.advance(10);
  }
  t.clock.advance(199.999);
  expectHeld(await rejectionOf(client.getAccessToken()), locked, 1);
  expect(sent).toEqual(["password"]);
  // Held for at most 300 s: then asked again (still locked on the server, so held again).
  t.clock.advance(0.001);
  const again = await rejectionOf(client.listAccounts());
  expect(again).not.toBe(locked);
  expect(again).toMatchObject({ status: 429, error: "temporarily_unavailable", retryAfter: 600 });
  expect(sent).toEqual(["password", "password"]);
  expectHeld(await rejectionOf(client.listAccounts()), again as OAuthError, 300);
  // The lock over (900 s after it began), the right password signs in.
  t.clock.advance(600);
  expect((await client.listAccounts()).total).toBe(1);
  expect(sent).toEqual(["password", "password", "password"]);
  const events = await t.events();
  expect(events.filter((e) => e === "account.locked_out")).toHaveLength(1);
  // The ten guesses and the two locked attempts of the client.
  expect(events.filter((e) => e === "account.login_failed")).toHaveLength(12);
});

/** A call held by `answer`'s Retry-After: a new OAuthError like it, `seconds` left, `cause` the answer. */
function expectHeld(held: unknown, answer: unknown, seconds: number) {
  const a = answer as OAuthError;
  expect(held).toBeInstanceOf(OAuthError);
  expect(held).not.toBe(answer);
  expect(held).toMatchObject({ status: a.status, error: a.error, error_description: a.error_description, grantType: a.grantType, message: a.message, retryAfter: seconds });
  expect((held as Error).cause).toBe(answer);
}

/** The 10 wrong guesses that lock the target's username from this address (plantgate: 429 + Retry-After for 900 s). */
async function lockOut() {
  for (let i = 0; i < 10; i++) {
    const guess = await fetch(t.baseUrl + TOKEN_PATH, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "password", username: t.username, password: `guess-${i}`, client_id: t.clientId, client_secret: t.clientSecret, scope: OFFLINE }),
    });
    expect(guess.status).toBe(400);
  }
}

/**
 * The global fetch, with the token endpoint's `Retry-After` replaced by `retryAfter(date)` (`date`:
 * the answer's own `Date`, epoch ms), as a proxy in front might; `sent` records each token request.
 */
function rewritingRetryAfter(retryAfter: (date: number) => string) {
  const sent: string[] = [];
  const fetch: FetchLike = async (url, init) => {
    const response = await globalThis.fetch(url, init);
    if (new URL(url).pathname !== TOKEN_PATH) return response;
    sent.push(new URLSearchParams(init.body).get("grant_type") ?? "");
    const headers = new Headers(response.headers);
    if (headers.has("retry-after")) headers.set("retry-after", retryAfter(Date.parse(headers.get("date")!)));
    return new Response(await response.text(), { status: response.status, headers });
  };
  return { fetch, sent };
}

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
/** RFC 9110 §5.6.7's obsolete forms of an HTTP-date. */
const rfc850 = (ms: number) => {
  const [, day, month, year, time] = /^\w+, (\d\d) (\w+) \d\d(\d\d) (\S+) GMT$/.exec(new Date(ms).toUTCString())!;
  return `${WEEKDAYS[new Date(ms).getUTCDay()]}, ${day}-${month}-${year} ${time} GMT`;
};
const asctime = (ms: number) => {
  const [, name, day, month, year, time] = /^(\w+), (\d\d) (\w+) (\d{4}) (\S+) GMT$/.exec(new Date(ms).toUTCString())!;
  return `${name} ${month} ${day!.replace(/^0/, " ")} ${time} ${year}`;
};

it("RFC 9110 §10.2.3: a Retry-After that is neither delta-seconds nor an HTTP-date is ignored (retryAfter null, no hold), never read as a date by Date.parse's lenient rules; the three HTTP-date forms are read", async () => {
  await lockOut();
  const cases: [string, (date: number) => string][] = [
    // Date.parse read these as dates in 2001: retryAfter 0 until 2026-12-02.
    ["1.5", () => "1.5"],
    ["-1", () => "-1"],
    ["+5", () => "+5"],
    // Date.parse read these as dates to wait for: a hold (300 s) until 2026-12-02.
    ["12/25/2030", () => "12/25/2030"],
    ["ISO 8601, 120 s on", (date) => new Date(date + 120_000).toISOString()],
    ["a numeric zone, 120 s on", (date) => new Date(date + 120_000).toUTCString().replace("GMT", "+0000")],
    ["lower case, 120 s on", (date) => new Date(date + 120_000).toUTCString().toLowerCase()],
    ["31 Feb", () => "Mon, 31 Feb 2031 00:00:00 GMT"],
  ];
  const results: Record<string, unknown> = {};
  for (const [what, value] of cases) {
    const { fetch, sent } = rewritingRetryAfter(value);
    const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, clock: t.clock.now, fetch });
    const first = (await rejectionOf(client.listAccounts())) as OAuthError;
    // Not held: the next call asks again (the first failure in a row costs nothing).
    const second = (await rejectionOf(client.getAccessToken())) as OAuthError;
    results[what] = { first: [first.name, first.status, first.error, first.retryAfter], second: [second.name, second.status, second.retryAfter, second.cause === undefined], sent };
  }
  const ignored = { first: ["OAuthError", 429, "temporarily_unavailable", null], second: ["OAuthError", 429, null, true], sent: ["password", "password"] };
  expect(results).toEqual(Object.fromEntries(cases.map(([what]) => [what, ignored])));

  // The HTTP-date forms, 120 s after the answer's Date: a hold of 120 s, the next call held (nothing sent).
  const forms: Record<string, unknown> = {};
  for (const [what, value] of [
    ["IMF-fixdate", (date: number) => new Date(date + 120_000).toUTCString()],
    ["RFC 850", (date: number) => rfc850(date + 120_000)],
    ["asctime", (date: number) => asctime(date + 120_000)],
  ] as const) {
    const { fetch, sent } = rewritingRetryAfter(value);
    const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, clock: t.clock.now, fetch });
    const first = (await rejectionOf(client.listAccounts())) as OAuthError;
    const held = (await rejectionOf(client.getAccessToken())) as OAuthError;
    forms[what] = { first: first.retryAfter, held: [held.retryAfter, held.cause === first], sent };
  }
  const read = { first: 120, held: [120, true], sent: ["password"] };
  expect(forms).toEqual({ "IMF-fixdate": read, "RFC 850": read, asctime: read });
});
