/**
 * The forms of a token endpoint's Retry-After that plantgate itself never sends, with fetch-mock as
 * the server (a proxy or another authorization server in front): an HTTP date, counted from the
 * answer's own Date (both the server's clock, whatever this host's says), on a 429 and on a 503; an
 * HTTP date without a Date, or one already past, holds nothing. retry-after.test.ts has plantgate's
 * delta-seconds 429 against the real server.
 */
import { describe, expect, it } from "vitest";
import { OAuthError } from "../src/index.js";
import { clientOn, fakeAccounts, fakeTokenEndpoint, manualClock, newMock, rejectionOf, T0, USER } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";
/** The server's clock: an hour ahead of the client's, so a date read against the client's clock would be off by 3600 s. */
const SERVER_NOW = T0 + 3_600_000;
const httpDate = (ms: number) => new Date(ms).toUTCString();

describe("Retry-After as an HTTP date", () => {
  it("a 429 whose Retry-After is 120 s after its Date holds token requests for 120 s on the client's clock", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, {
      override: (_form, n) =>
        n === 1
          ? {
              status: 429,
              headers: { date: httpDate(SERVER_NOW), "retry-after": httpDate(SERVER_NOW + 120_000) },
              body: { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." },
            }
          : undefined,
    });
    fakeAccounts(fm);
    const clock = manualClock(T0);
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE });
    const locked = await rejectionOf(client.listAccounts());
    expect(locked).toBeInstanceOf(OAuthError);
    expect(locked).toMatchObject({ status: 429, error: "temporarily_unavailable", grantType: "password", retryAfter: 120 });
    // A held call's error: like the answer's, with the seconds left (rounded up), the answer its cause.
    expect(await rejectionOf(client.listAccounts())).toMatchObject({ status: 429, error: "temporarily_unavailable", retryAfter: 120, cause: locked });
    clock.advance(60.5);
    expect(await rejectionOf(client.refresh())).toMatchObject({ status: 429, error: "temporarily_unavailable", retryAfter: 60, cause: locked });
    clock.advance(59.499);
    const held = await rejectionOf(client.listAccounts());
    expect(held).toBeInstanceOf(OAuthError);
    expect(held).toMatchObject({ status: 429, error: "temporarily_unavailable", grantType: "password", retryAfter: 1, cause: locked });
    expect(tokens.requests).toHaveLength(1);
    clock.advance(0.001);
    expect((await client.listAccounts()).total).toBe(1);
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["password", "password"]);
  });

  it("a 503 (storage outage) with an HTTP date holds a refresh the same way, then the same refresh token is presented", async () => {
    const fm = newMock();
    let down = false;
    const tokens = fakeTokenEndpoint(fm, {
      override: (form) =>
        down && form.grant_type === "refresh_token"
          ? {
              status: 503,
              headers: { date: httpDate(SERVER_NOW), "retry-after": httpDate(SERVER_NOW + 30_000), "cache-control": "no-store" },
              body: { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." },
            }
          : undefined,
    });
    fakeAccounts(fm);
    const clock = manualClock(T0);
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE });
    expect((await client.listAccounts()).total).toBe(1);
    down = true;
    const unavailable = await rejectionOf(client.refresh());
    expect(unavailable).toBeInstanceOf(OAuthError);
    expect(unavailable).toMatchObject({ status: 503, error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later.", grantType: "refresh_token", retryAfter: 30 });
    clock.advance(29.999);
    expect(await rejectionOf(client.getAccessToken())).toMatchObject({ status: 503, error: "temporarily_unavailable", grantType: "refresh_token", retryAfter: 1, cause: unavailable });
    expect(tokens.requests).toHaveLength(2);
    down = false;
    clock.advance(0.001);
    expect((await client.refresh()).hasRefreshToken).toBe(true);
    expect(tokens.requests.map((r) => [r.grant_type, r.refresh_token])).toEqual([
      ["password", undefined],
      ["refresh_token", "rt-1"],
      ["refresh_token", "rt-1"],
    ]);
  });

  it("without a Date header, or with a date already past, it holds nothing: retryAfter null / 0 and the next call asks again", async () => {
    for (const [headers, retryAfter] of [
      [{ "retry-after": httpDate(SERVER_NOW + 120_000) }, null],
      [{ date: httpDate(SERVER_NOW), "retry-after": httpDate(SERVER_NOW - 1000) }, 0],
      [{ date: "not a date", "retry-after": httpDate(SERVER_NOW + 120_000) }, null],
    ] as const) {
      const fm = newMock();
      const tokens = fakeTokenEndpoint(fm, {
        override: (_form, n) => (n === 1 ? { status: 503, headers, body: { error: "temporarily_unavailable" } } : undefined),
      });
      fakeAccounts(fm);
      const client = clientOn(fm, { clock: manualClock(T0).now });
      expect(await rejectionOf(client.listAccounts())).toMatchObject({ status: 503, error: "temporarily_unavailable", retryAfter });
      expect((await client.listAccounts()).total).toBe(1);
      expect(tokens.requests).toHaveLength(2);
    }
  });
});
