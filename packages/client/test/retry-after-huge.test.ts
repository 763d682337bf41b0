/**
 * A delta-seconds Retry-After of any length (RFC 9110 `1*DIGIT`) holds token requests at most the
 * 300 s cap: until 2026-12-02 one of 11 digits or more (a gateway's milliseconds written as seconds,
 * a deliberate "never") was not read at all, so a longer wait asked for gave no wait.
 */
import { describe, expect, it } from "vitest";
import { OAuthError } from "../src/index.js";
import { clientOn, fakeAccounts, fakeTokenEndpoint, manualClock, newMock, rejectionOf, T0 } from "./support.js";

describe("Retry-After as a large delta-seconds", () => {
  for (const value of ["9999999999", "99999999999", "2147483648000"]) {
    it(`a 503 with Retry-After ${value} holds token requests (at most 300 s)`, async () => {
      const fm = newMock();
      const tokens = fakeTokenEndpoint(fm, {
        override: (_form, n) =>
          n === 1 ? { status: 503, headers: { "retry-after": value }, body: { error: "temporarily_unavailable" } } : undefined,
      });
      fakeAccounts(fm);
      const client = clientOn(fm, { clock: manualClock(T0).now });
      const first = await rejectionOf(client.listAccounts());
      expect(first).toBeInstanceOf(OAuthError);
      expect((first as OAuthError).retryAfter).not.toBeNull();
      // Held: nothing sent, the seconds left at most the 300 s cap.
      expect(await rejectionOf(client.listAccounts())).toMatchObject({ status: 503, retryAfter: 300, cause: first });
      expect(tokens.requests).toHaveLength(1);
    });
  }
});

describe("Retry-After with leading zeros", () => {
  it("000000000005 is 5 seconds, not a long delay (the digits are counted after the zeros)", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm, {
      override: (_form, n) => (n === 1 ? { status: 503, headers: { "retry-after": "000000000005" }, body: { error: "temporarily_unavailable" } } : undefined),
    });
    fakeAccounts(fm);
    const client = clientOn(fm, { clock: manualClock(T0).now });
    const first = await rejectionOf(client.listAccounts());
    expect(first).toBeInstanceOf(OAuthError);
    expect((first as OAuthError).retryAfter).toBe(5);
  });
});
