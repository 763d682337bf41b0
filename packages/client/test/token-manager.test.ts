/**
 * The token manager through the public client, with fetch-mock as the platform: caching until
 * shortly before expiry (injected clock), single-flight renewal, refresh-token use and rotation,
 * the 401 retry, and the fallback when a refresh is rejected.
 */
import { describe, expect, it } from "vitest";
import { ApiError, NetworkError, OAuthError } from "../src/index.js";
import {
  bearerOf,
  clientOn,
  fakeAccounts,
  fakeTokenEndpoint,
  formOf,
  manualClock,
  newMock,
  rejectionOf,
  T0,
  USER,
} from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

describe("caching and expiry (injected clock)", () => {
  it("requests a token lazily, once, and reuses it for later calls", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    fakeAccounts(fm);
    const client = clientOn(fm, { clock: manualClock().now });
    expect(fm.callHistory.calls()).toHaveLength(0); // nothing happens at construction
    await client.listAccounts();
    await client.listAccounts();
    await client.listAccounts();
    expect(tokens.requests).toEqual([{ grant_type: "client_credentials", scope: "Platform_UserAPIs" }]);
    expect(fm.callHistory.calls("accounts").map(bearerOf)).toEqual(["at-1", "at-1", "at-1"]);
  });

  it("renews exactly refreshSkewSeconds (default 30) before expires_in runs out", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 3600 });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now });
    const first = await client.getToken();
    expect(first).toEqual({
      accessToken: "at-1",
      tokenType: "Bearer",
      expiresAt: T0 + 3_600_000,
      scope: "Platform_UserAPIs",
      grantType: "client_credentials",
      hasRefreshToken: false,
    });
    clock.advance(3569);
    expect(await client.getAccessToken()).toBe("at-1");
    clock.advance(0.999);
    expect(await client.getAccessToken()).toBe("at-1"); // 3569.999 s: still 30.001 s left
    clock.advance(0.001);
    expect(await client.getAccessToken()).toBe("at-2"); // 3570 s: 30 s left, renewed
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["client_credentials", "client_credentials"]);
  });

  it("honours refreshSkewSeconds, and caps the skew at half of a short token's lifetime", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm, { expiresIn: 20 });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, refreshSkewSeconds: 30 });
    expect(await client.getAccessToken()).toBe("at-1");
    clock.advance(9.999); // skew capped at 10 s, so the 20 s token is reused for 10 s
    expect(await client.getAccessToken()).toBe("at-1");
    clock.advance(0.001);
    expect(await client.getAccessToken()).toBe("at-2");

    const fm2 = newMock();
    fakeTokenEndpoint(fm2, { expiresIn: 3600 });
    const clock2 = manualClock();
    const noSkew = clientOn(fm2, { clock: clock2.now, refreshSkewSeconds: 0 });
    expect(await noSkew.getAccessToken()).toBe("at-1");
    clock2.advance(3599.999);
    expect(await noSkew.getAccessToken()).toBe("at-1");
    clock2.advance(0.001);
    expect(await noSkew.getAccessToken()).toBe("at-2");
  });

  it("with a tokenCache, each client renews at its own random point from refreshSkewSeconds to refreshJitterSeconds later (at most two thirds of the skew); 0 turns it off", async () => {
    /** The whole second (after issue) at which each of `n` clients, each on a cache of its own, renewed its 3600 s token. */
    const renewedAt = async (n: number, options: { refreshSkewSeconds?: number; refreshJitterSeconds?: number }) => {
      const fm = newMock();
      fakeTokenEndpoint(fm, { expiresIn: 3600 });
      const clock = manualClock();
      const clients = Array.from({ length: n }, () => {
        const map = new Map<string, unknown>();
        return clientOn(fm, { clock: clock.now, tokenCache: { get: async (k) => (map.get(k) ?? null) as never, set: async (k, v) => void map.set(k, v) }, ...options });
      });
      const first = await Promise.all(clients.map((c) => c.getAccessToken()));
      const at: number[] = clients.map(() => -1);
      for (let second = 3500; second <= 3600; second++) {
        clock.advance(second === 3500 ? 3500 : 1);
        const now = await Promise.all(clients.map((c) => c.getAccessToken()));
        now.forEach((token, i) => {
          if (at[i] === -1 && token !== first[i]) at[i] = second;
        });
      }
      return at;
    };
    // Default skew 30 s, jitter 20 s: from 30 to 10 s before expiry.
    const spread = await renewedAt(40, {});
    expect(spread.filter((s) => s < 3570 || s > 3590)).toEqual([]);
    expect(new Set(spread).size).toBeGreaterThan(5);
    // refreshJitterSeconds 60 is capped at two thirds of the 30 s skew: still 10 s kept.
    expect((await renewedAt(40, { refreshJitterSeconds: 60 })).filter((s) => s < 3570 || s > 3590)).toEqual([]);
    // refreshJitterSeconds 0, or a skew of 0: all at once, at the skew.
    expect(new Set(await renewedAt(10, { refreshJitterSeconds: 0 }))).toEqual(new Set([3570]));
    expect(new Set(await renewedAt(10, { refreshSkewSeconds: 0 }))).toEqual(new Set([3600]));
  });

  it("counts the lifetime from before the request, so a slow token response cannot make it overstay", async () => {
    const fm = newMock();
    const clock = manualClock();
    fm.post(
      "path:/UserService/connect/token",
      () => {
        clock.advance(10); // the response takes 10 s
        return { access_token: "slow", token_type: "bearer", expires_in: 100 };
      },
      { name: "token" },
    );
    const client = clientOn(fm, { clock: clock.now });
    const token = await client.getToken();
    expect(token.expiresAt).toBe(T0 + 100_000);
    expect(token.tokenType).toBe("Bearer"); // token_type is case-insensitive (RFC 6749 §5.1)
  });

  it("without expires_in, keeps the token until an API rejects it", async () => {
    const fm = newMock();
    let n = 0;
    fm.post("path:/UserService/connect/token", () => ({ access_token: `at-${++n}`, token_type: "Bearer" }), { name: "token" });
    fakeAccounts(fm, (t) => t === "at-2");
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now });
    expect(await client.getAccessToken()).toBe("at-1");
    clock.advance(365 * 86_400);
    expect(await client.getAccessToken()).toBe("at-1");
    await client.listAccounts(); // 401 with at-1, renewed, retried with at-2
    expect(fm.callHistory.calls("accounts").map(bearerOf)).toEqual(["at-1", "at-2"]);
  });
});

describe("single flight", () => {
  it("a renewal starting long after the last one ended is joined, not taken for stalled (its first step's deadline not yet set)", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 100 });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE, timeoutMs: 50 });
    await client.getAccessToken();
    // More than twice timeoutMs later (the last token request's deadline long past), the token due:
    // two calls at once share one refresh.
    await new Promise((r) => setTimeout(r, 150));
    clock.advance(100);
    const [one, two] = await Promise.all([client.getAccessToken(), client.getAccessToken()]);
    expect([one, two]).toEqual(["at-2", "at-2"]);
    expect(tokens.requests.map((r) => r.refresh_token ?? r.grant_type)).toEqual(["password", "rt-1"]);
  });

  it("100 concurrent calls on a cold client cause exactly one token request", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { delayMs: 20 });
    fakeAccounts(fm);
    const client = clientOn(fm, { clock: manualClock().now });
    const pages = await Promise.all(Array.from({ length: 100 }, () => client.listAccounts()));
    expect(pages).toHaveLength(100);
    expect(tokens.requests).toHaveLength(1);
    expect(new Set(fm.callHistory.calls("accounts").map(bearerOf))).toEqual(new Set(["at-1"]));
  });

  it("100 concurrent calls during expiry cause exactly one token request (a refresh)", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { delayMs: 20, expiresIn: 3600 });
    fakeAccounts(fm);
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE });
    await client.listAccounts();
    expect(tokens.requests).toHaveLength(1);
    clock.advance(3600);
    await Promise.all(Array.from({ length: 100 }, () => client.listAccounts()));
    expect(tokens.requests).toHaveLength(2);
    expect(tokens.requests[1]).toEqual({ grant_type: "refresh_token", refresh_token: "rt-1" });
    const bearers = fm.callHistory.calls("accounts").map(bearerOf);
    expect(bearers.slice(1)).toEqual(Array(100).fill("at-2"));
  });

  it("a failed renewal rejects every waiter with the same error, and the next call tries again", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, {
      delayMs: 10,
      override: (_form, n) =>
        n === 1 ? { status: 503, headers: { "retry-after": "5" }, body: { error: "temporarily_unavailable", error_description: "Retry later." } } : undefined,
    });
    fakeAccounts(fm);
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now });
    const results = await Promise.allSettled(Array.from({ length: 100 }, () => client.listAccounts()));
    expect(tokens.requests).toHaveLength(1);
    const reasons = new Set(results.map((r) => (r.status === "rejected" ? r.reason : "fulfilled")));
    expect(reasons.size).toBe(1);
    const [reason] = reasons;
    expect(reason).toBeInstanceOf(OAuthError);
    expect(reason).toMatchObject({ status: 503, error: "temporarily_unavailable", retryAfter: 5 });
    // Its Retry-After (5 s) holds the next token request: until then calls get an error like it,
    // with the seconds left (rounded up), the answer as its cause.
    clock.advance(4.999);
    const held = await rejectionOf(client.listAccounts());
    expect(held).toBeInstanceOf(OAuthError);
    expect(held).toMatchObject({ status: 503, error: "temporarily_unavailable", retryAfter: 1, cause: reason });
    expect(tokens.requests).toHaveLength(1);
    clock.advance(0.001);
    await client.listAccounts();
    expect(tokens.requests).toHaveLength(2);
  });

  it("100 concurrent 401s for the same token cause one renewal", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { delayMs: 10 });
    fakeAccounts(fm, (t) => t !== "at-1"); // the first token is revoked on the server
    const client = clientOn(fm, { clock: manualClock().now });
    await client.getAccessToken();
    await Promise.all(Array.from({ length: 100 }, () => client.listAccounts()));
    expect(tokens.requests).toHaveLength(2);
    const bearers = fm.callHistory.calls("accounts").map(bearerOf);
    expect(bearers.filter((b) => b === "at-1")).toHaveLength(100);
    expect(bearers.filter((b) => b === "at-2")).toHaveLength(100);
  });
});

describe("password grant and refresh tokens", () => {
  it("sends username, password and scope, and keeps the refresh token only with offline_access", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    const withOffline = clientOn(fm, { credentials: USER, scope: OFFLINE });
    expect(await withOffline.getToken()).toMatchObject({ grantType: "password", hasRefreshToken: true, scope: OFFLINE });
    const without = clientOn(fm, { credentials: USER, scope: "Platform_UserAPIs" });
    expect(await without.getToken()).toMatchObject({ grantType: "password", hasRefreshToken: false });
    expect(tokens.requests).toEqual([
      { grant_type: "password", username: "alice", password: "wonderland-42", scope: OFFLINE },
      { grant_type: "password", username: "alice", password: "wonderland-42", scope: "Platform_UserAPIs" },
    ]);
  });

  it("renews with the refresh token (no password on the wire) and always keeps the newest one", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 100 });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE });
    await client.getAccessToken(); // password -> at-1 / rt-1
    for (let i = 0; i < 3; i++) {
      clock.advance(100);
      await client.getAccessToken();
    }
    expect(tokens.requests).toEqual([
      { grant_type: "password", username: "alice", password: "wonderland-42", scope: OFFLINE },
      { grant_type: "refresh_token", refresh_token: "rt-1" },
      { grant_type: "refresh_token", refresh_token: "rt-2" },
      { grant_type: "refresh_token", refresh_token: "rt-3" },
    ]);
    expect(await client.getToken()).toMatchObject({ accessToken: "at-4", grantType: "refresh_token", scope: OFFLINE });
  });

  it("keeps the previous refresh token when a refresh response carries none (RFC 6749 §6)", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, {
      expiresIn: 100,
      override: (form, n) => (n === 2 ? { access_token: "at-no-rotation", token_type: "Bearer", expires_in: 100 } : undefined),
    });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE });
    await client.getAccessToken();
    clock.advance(100);
    expect(await client.getToken()).toMatchObject({ accessToken: "at-no-rotation", hasRefreshToken: true, scope: OFFLINE });
    clock.advance(100);
    await client.getAccessToken();
    expect(tokens.requests.slice(1)).toEqual([
      { grant_type: "refresh_token", refresh_token: "rt-1" },
      { grant_type: "refresh_token", refresh_token: "rt-1" },
    ]);
  });

  it("client credentials: renews by running the grant again (there is no refresh token)", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 100 });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now });
    await client.getAccessToken();
    clock.advance(100);
    await client.getAccessToken();
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["client_credentials", "client_credentials"]);
  });

  it("refresh() gets a new token now, through the refresh token", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    const client = clientOn(fm, { clock: manualClock().now, credentials: USER, scope: OFFLINE });
    await client.getAccessToken();
    const refreshed = await client.refresh();
    expect(refreshed).toMatchObject({ accessToken: "at-2", grantType: "refresh_token", hasRefreshToken: true });
    expect(await client.getAccessToken()).toBe("at-2");
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["password", "refresh_token"]);
    // Concurrent refresh() calls share one request.
    await Promise.all([client.refresh(), client.refresh(), client.refresh()]);
    expect(tokens.requests).toHaveLength(3);
  });
});

describe("a refresh rejected with invalid_grant", () => {
  const invalidGrant = { status: 400, body: { error: "invalid_grant", error_description: "The refresh token is invalid, expired or revoked." } };

  it("falls back to the password grant while the credentials are kept, then uses the new refresh token", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 100, override: (form) => (form.refresh_token === "rt-1" ? invalidGrant : undefined) });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE });
    await client.getAccessToken();
    clock.advance(100);
    expect(await client.getToken()).toMatchObject({ accessToken: "at-3", grantType: "password", hasRefreshToken: true });
    clock.advance(100);
    await client.getAccessToken();
    expect(tokens.requests).toEqual([
      { grant_type: "password", username: "alice", password: "wonderland-42", scope: OFFLINE },
      { grant_type: "refresh_token", refresh_token: "rt-1" },
      { grant_type: "password", username: "alice", password: "wonderland-42", scope: OFFLINE },
      { grant_type: "refresh_token", refresh_token: "rt-3" },
    ]);
  });

  it("surfaces the typed OAuthError when the password was not kept (keepCredentials: false)", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 100, override: (form) => (form.refresh_token === "rt-2" ? invalidGrant : undefined) });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE, keepCredentials: false });
    await client.getAccessToken(); // password -> rt-1
    clock.advance(100);
    await client.getAccessToken(); // refresh rt-1 -> rt-2
    clock.advance(100);
    const error = await rejectionOf(client.listAccounts()); // refresh rt-2 -> invalid_grant, no password to fall back on
    expect(error).toBeInstanceOf(OAuthError);
    expect(error).toMatchObject({ status: 400, error: "invalid_grant", grantType: "refresh_token" });
    // Later calls fail the same way without another request: there is nothing left to try.
    expect(await rejectionOf(client.getAccessToken())).toBe(error);
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["password", "refresh_token", "refresh_token"]);
    expect(JSON.stringify(tokens.requests.slice(1))).not.toContain(USER.password);
  });

  it("keepCredentials: false keeps the password while no refresh token was granted", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 100 });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: "Platform_UserAPIs", keepCredentials: false });
    await client.getAccessToken();
    clock.advance(100);
    await client.getAccessToken();
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["password", "password"]);
  });

  it("does not fall back on other refresh failures, and keeps the refresh token for the next try", async () => {
    const fm = newMock();
    let down = true;
    const tokens = fakeTokenEndpoint(fm, {
      expiresIn: 100,
      override: (form) => (form.grant_type === "refresh_token" && down ? { status: 503, body: { error: "temporarily_unavailable" } } : undefined),
    });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE });
    await client.getAccessToken();
    clock.advance(100);
    expect(await rejectionOf(client.getAccessToken())).toMatchObject({ name: "OAuthError", status: 503, error: "temporarily_unavailable" });
    down = false;
    expect(await client.getAccessToken()).toBe("at-3");
    expect(tokens.requests.map((r) => r.refresh_token ?? r.grant_type)).toEqual(["password", "rt-1", "rt-1"]);
  });

  it("does not fall back when the refresh fails on the network", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 100 });
    const clock = manualClock();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE });
    await client.getAccessToken();
    clock.advance(100);
    fm.removeRoute("token");
    fm.post("path:/UserService/connect/token", { throws: new TypeError("fetch failed") }, { name: "down" });
    expect(await rejectionOf(client.getAccessToken())).toMatchObject({ name: "NetworkError", reason: "fetch_failed" });
    expect(tokens.requests).toHaveLength(1);
    expect(fm.callHistory.calls("down")).toHaveLength(1);
    expect(formOf(fm.callHistory.calls("down")[0]!)).toEqual({ grant_type: "refresh_token", refresh_token: "rt-1" });
  });
});

describe("401 from an API", () => {
  it("renews the token once and retries once", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    fakeAccounts(fm, (t) => t !== "at-1");
    const client = clientOn(fm, { clock: manualClock().now, credentials: USER, scope: OFFLINE });
    const page = await client.listAccounts();
    expect(page.total).toBe(1);
    expect(fm.callHistory.calls("accounts").map(bearerOf)).toEqual(["at-1", "at-2"]);
    expect(tokens.requests.map((r) => r.grant_type)).toEqual(["password", "refresh_token"]);
  });

  it("a second 401 surfaces as ApiError, with no third attempt", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    fakeAccounts(fm, () => false);
    const client = clientOn(fm, { clock: manualClock().now });
    const error = await rejectionOf(client.listAccounts());
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status: 401,
      error: 1202,
      message: "The access token is invalid or expired.",
      body: { error: 1202, message: "The access token is invalid or expired." },
      wwwAuthenticate: 'Bearer realm="plantgate", error="invalid_token"',
    });
    expect(fm.callHistory.calls("accounts")).toHaveLength(2);
    expect(tokens.requests).toHaveLength(2);
  });

  it("retries a POST /plants with the same body", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm);
    fm.post(
      "path:/plants",
      (call) =>
        bearerOf(call) === "at-1"
          ? { status: 401, body: { error: 1202, message: "The access token is invalid or expired." } }
          : { status: 200, body: String(call.options.body) },
      { name: "plants" },
    );
    const client = clientOn(fm);
    expect(await client.createPlant({ id: 9007199254740993n, name: "Fern" })).toEqual({ id: 9007199254740993n, name: "Fern" });
    const bodies = fm.callHistory.calls("plants").map((c) => c.options.body);
    expect(bodies).toEqual(['{"id":9007199254740993,"name":"Fern"}', '{"id":9007199254740993,"name":"Fern"}']);
  });

  it("403 is not retried", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    fm.get("begin:https://platform.example.test/rbac/", { status: 403, body: { error: 1203, message: "needs a scope" } }, { name: "accounts" });
    const client = clientOn(fm);
    expect(await rejectionOf(client.listAccounts())).toMatchObject({ name: "ApiError", status: 403, error: 1203 });
    expect(fm.callHistory.calls("accounts")).toHaveLength(1);
    expect(tokens.requests).toHaveLength(1);
  });

  it("a renewal that fails during the retry surfaces its own error", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm, { override: (_f, n) => (n === 2 ? { status: 401, body: { error: "invalid_client", error_description: "Client authentication failed." } } : undefined) });
    fakeAccounts(fm, () => false);
    const client = clientOn(fm);
    const error = await rejectionOf(client.listAccounts());
    expect(error).toBeInstanceOf(OAuthError);
    expect(error).not.toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ status: 401, error: "invalid_client" });
  });
});
