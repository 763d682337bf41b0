/**
 * expiresAt of a token without expires_in is 8.64e15, the last time a Date holds (README). A token
 * cache (Redis, a database, a file) written by an SDK from before 2026-12-01 still holds
 * Number.MAX_SAFE_INTEGER, and such a token lives until an API rejects it: read back, it is capped
 * as the SDK's own are (examples/client-script's `new Date(token.expiresAt).toISOString()` threw).
 */
import { expect, it } from "vitest";
import type { CachedToken, TokenCache } from "../src/index.js";
import { clientOn, manualClock, newMock, T0 } from "./support.js";

it("a cached token from an earlier SDK (expiresAt Number.MAX_SAFE_INTEGER) comes back with an expiresAt a Date can hold", async () => {
  const fm = newMock();
  const stored: CachedToken = {
    accessToken: "at-old-sdk",
    tokenType: "Bearer",
    // What toCachedToken wrote for an answer without expires_in until 2026-12-01.
    expiresAt: Number.MAX_SAFE_INTEGER,
    obtainedAt: T0 - 60_000,
    scope: "Platform_UserAPIs",
    refreshToken: null,
    grantType: "client_credentials",
  };
  const cache: TokenCache = {
    async get() {
      return stored;
    },
    async set() {},
  };
  const client = clientOn(fm, { tokenCache: cache, clock: manualClock().now });
  const info = await client.getToken();
  expect(info.accessToken).toBe("at-old-sdk");
  expect(info.expiresAt).toBe(8.64e15);
  expect(new Date(info.expiresAt).toISOString()).toBe("+275760-09-13T00:00:00.000Z");
});
