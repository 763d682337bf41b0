/**
 * The refresh_token grant: RFC 6749 §6 (binding to the client, scope rules), RFC 9700 §4.14.2
 * (rotation, reuse detection revoking the family) and the design's sliding/absolute lifetimes.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, type Storage } from "../src/index.js";
import { basic, harness, tokenRequest } from "./helpers.js";
import {
  auth,
  DAY,
  expectTokenError,
  expectTokenSuccess,
  freshRefreshToken,
  INVALID_REFRESH,
  passwordRequest,
  refreshRequest,
  verifyAt,
} from "./token-helpers.js";

const FULL = "Platform_UserAPIs Platform_AllAppsServerCommands offline_access";

describe("refresh_token grant (RFC 6749 §6)", () => {
  it("spec rule 3 / RFC 6749 §6: returns a new access token and a new (rotated) refresh token", async () => {
    const h = await harness();
    const first = await expectTokenSuccess(await passwordRequest(h, { scope: "Platform_UserAPIs offline_access" }));
    h.clock.advance(60_000);
    const body = await expectTokenSuccess(await refreshRequest(h, first.refresh_token!));
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 7200,
      scope: "Platform_UserAPIs offline_access",
      refresh_token: expect.any(String),
    });
    expect(body.access_token).not.toBe(first.access_token);
    expect(body.refresh_token).not.toBe(first.refresh_token);
    const before = (await verifyAt(h, first.access_token)).payload;
    const after = (await verifyAt(h, body.access_token)).payload;
    expect(after).toEqual({ ...before, iat: before.iat! + 60, exp: before.exp! + 60, jti: expect.any(String) });
    expect(after.jti).not.toBe(before.jti);
    // The rotated token works in turn.
    await expectTokenSuccess(await refreshRequest(h, body.refresh_token!));
  });

  it("RFC 6749 §6: client_secret_post authenticates a refresh", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const body = await expectTokenSuccess(await refreshRequest(h, rt, { client_id: h.clientId, client_secret: h.clientSecret }, {}));
    expect(body.refresh_token).toEqual(expect.any(String));
  });

  it("RFC 6749 §6: the per-client accessTokenTtl applies to refreshed access tokens", async () => {
    const h = await harness();
    const { clientSecret } = await h.app.admin.createClient({ clientId: "short-lived", accessTokenTtl: 120 });
    const authz = { authorization: basic("short-lived", clientSecret) };
    const first = await expectTokenSuccess(await passwordRequest(h, { scope: "offline_access" }, authz));
    const body = await expectTokenSuccess(await refreshRequest(h, first.refresh_token!, {}, authz));
    expect(body.expires_in).toBe(120);
    const { payload } = await verifyAt(h, body.access_token);
    expect(payload.exp! - payload.iat!).toBe(120);
  });

  it("RFC 6749 §5.2 invalid_grant: a bogus refresh token", async () => {
    const h = await harness();
    await expectTokenError(await refreshRequest(h, "bm90LWEtcmVhbC10b2tlbi1ub3QtYS1yZWFsLXRva2Vu"), 400, INVALID_REFRESH);
    await expectTokenError(await refreshRequest(h, "x".repeat(4000)), 400, INVALID_REFRESH);
  });

  it("RFC 6749 §5.2 invalid_grant: an access token presented as a refresh token", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await passwordRequest(h, { scope: "Platform_UserAPIs offline_access" }));
    await expectTokenError(await refreshRequest(h, body.access_token), 400, INVALID_REFRESH);
    // ... and that attempt did not touch the real refresh token.
    await expectTokenSuccess(await refreshRequest(h, body.refresh_token!));
  });

  it("RFC 6749 §6: a refresh token issued to another client is invalid_grant and is not consumed", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const { clientSecret } = await h.app.admin.createClient({ clientId: "app-2" });
    await expectTokenError(await refreshRequest(h, rt, {}, { authorization: basic("app-2", clientSecret) }), 400, INVALID_REFRESH);
    // The rightful client still can use it: a foreign client's attempt neither consumed nor revoked it.
    await expectTokenSuccess(await refreshRequest(h, rt));
  });

  it("RFC 6749 §6: a narrower scope is allowed, reflected in the access token, and the refresh token keeps the original scope", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h, FULL);
    const narrow = await expectTokenSuccess(await refreshRequest(h, rt, { scope: "Platform_UserAPIs" }));
    expect(narrow).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 7200,
      scope: "Platform_UserAPIs",
      refresh_token: expect.any(String),
    });
    expect((await verifyAt(h, narrow.access_token)).payload.scope).toBe("Platform_UserAPIs");
    // Omitting scope on the next refresh gives back the original grant (RFC 6749 §6: "treated as equal").
    const again = await expectTokenSuccess(await refreshRequest(h, narrow.refresh_token!));
    expect(again.scope).toBe(FULL);
    expect((await verifyAt(h, again.access_token)).payload.scope).toBe(FULL);
  });

  it("RFC 6749 §6: a broader scope is invalid_scope and leaves the refresh token usable", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h, "Platform_UserAPIs offline_access");
    await expectTokenError(await refreshRequest(h, rt, { scope: "Platform_UserAPIs Platform_AllAppsServerCommands" }), 400, {
      error: "invalid_scope",
      error_description: "The scope 'Platform_AllAppsServerCommands' was not granted to this refresh token.",
    });
    await expectTokenError(await refreshRequest(h, rt, { scope: "Platform_Unknown" }), 400, {
      error: "invalid_scope",
      error_description: "A requested scope is unknown (the server's scopes are in scopes_supported of its metadata).",
    });
    await expectTokenError(await refreshRequest(h, rt, { scope: "Platform_UserAPIs  offline_access" }), 400, {
      error: "invalid_scope",
      error_description: "The scope parameter is malformed.",
    });
    // Nothing half-written: the token was not consumed by the rejected requests.
    const body = await expectTokenSuccess(await refreshRequest(h, rt));
    expect(body.scope).toBe("Platform_UserAPIs offline_access");
  });

  it("RFC 6749 §6 / design: a refresh for a since-disabled account is invalid_grant and does not consume the token", async () => {
    // The admin cannot disable an account yet, so the storage reports it disabled on demand.
    const memory = createMemoryStorage();
    const disabled = new Set<string>();
    const storage: Storage = {
      ...memory,
      accounts: {
        ...memory.accounts,
        async get(id) {
          const r = await memory.accounts.get(id);
          return r && disabled.has(id) ? { ...r, enabled: false } : r;
        },
      },
    };
    const h = await harness({ storage });
    const body = await expectTokenSuccess(await passwordRequest(h, { scope: "offline_access" }));
    const account = (await memory.accounts.findByUsername(h.username))!;
    disabled.add(account.id);
    await expectTokenError(await refreshRequest(h, body.refresh_token!), 400, INVALID_REFRESH);
    disabled.delete(account.id);
    await expectTokenSuccess(await refreshRequest(h, body.refresh_token!));
  });
});

describe("refresh-token lifetimes (RFC 9700 §4.14.2; design: sliding 7 days, absolute 30 days)", () => {
  it("RFC 9700 §4.14.2 (expiry on inactivity): a refresh token expires 7 days after it was issued if unused (sliding TTL)", async () => {
    const h = await harness();
    const early = await freshRefreshToken(h);
    const late = await freshRefreshToken(h);
    h.clock.advance(7 * DAY - 1000);
    await expectTokenSuccess(await refreshRequest(h, early));
    h.clock.advance(1000);
    await expectTokenError(await refreshRequest(h, late), 400, INVALID_REFRESH);
  });

  it("RFC 9700 §4.14.2: each rotation restarts the 7-day sliding window", async () => {
    const h = await harness();
    let rt = await freshRefreshToken(h);
    h.clock.advance(5 * DAY);
    rt = (await expectTokenSuccess(await refreshRequest(h, rt))).refresh_token!;
    h.clock.advance(5 * DAY); // 10 days after the password grant, 5 after the rotation
    rt = (await expectTokenSuccess(await refreshRequest(h, rt))).refresh_token!;
    h.clock.advance(7 * DAY + 1);
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
  });

  it("RFC 9700 §4.14.2: the family dies 30 days after the password grant however often it is rotated (absolute TTL)", async () => {
    const h = await harness();
    let rt = await freshRefreshToken(h);
    let day = 0;
    for (const next of [6, 12, 18, 24, 29]) {
      h.clock.advance((next - day) * DAY);
      day = next;
      rt = (await expectTokenSuccess(await refreshRequest(h, rt))).refresh_token!;
    }
    // Day 30: only one day since the last rotation, but the family's absolute lifetime is over.
    h.clock.advance(DAY);
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
  });

  it("RFC 9700 §4.14.2: per-client refreshTokenTtl and refreshTokenAbsoluteTtl are honoured", async () => {
    const h = await harness();
    const { clientSecret } = await h.app.admin.createClient({ clientId: "brief", refreshTokenTtl: 60, refreshTokenAbsoluteTtl: 150 });
    const authz = { authorization: basic("brief", clientSecret) };
    const issue = async () => (await expectTokenSuccess(await passwordRequest(h, { scope: "offline_access" }, authz))).refresh_token!;
    const unused = await issue();
    h.clock.advance(60_000);
    await expectTokenError(await refreshRequest(h, unused, {}, authz), 400, INVALID_REFRESH);
    let rt = await issue();
    h.clock.advance(59_000);
    rt = (await expectTokenSuccess(await refreshRequest(h, rt, {}, authz))).refresh_token!;
    h.clock.advance(59_000);
    rt = (await expectTokenSuccess(await refreshRequest(h, rt, {}, authz))).refresh_token!;
    h.clock.advance(32_000); // 150 s after the family began
    await expectTokenError(await refreshRequest(h, rt, {}, authz), 400, INVALID_REFRESH);
  });
});

describe("rotation and reuse detection (RFC 9700 §4.14.2)", () => {
  it("RFC 9700 §4.14.2 (strict, refreshGraceSeconds: 0): a consumed token presented again is invalid_grant and revokes its whole family; other families live on", async () => {
    const h = await harness({ refreshGraceSeconds: 0 });
    const rt1 = await freshRefreshToken(h);
    const other = await freshRefreshToken(h); // a second session of the same user
    const rt2 = (await expectTokenSuccess(await refreshRequest(h, rt1))).refresh_token!;
    const rt3 = (await expectTokenSuccess(await refreshRequest(h, rt2))).refresh_token!;
    await expectTokenError(await refreshRequest(h, rt1), 400, INVALID_REFRESH);
    // The newest token of the family is dead too.
    await expectTokenError(await refreshRequest(h, rt3), 400, INVALID_REFRESH);
    await expectTokenError(await refreshRequest(h, rt2), 400, INVALID_REFRESH);
    // The other family of the same user is untouched.
    const next = await expectTokenSuccess(await refreshRequest(h, other));
    await expectTokenSuccess(await refreshRequest(h, next.refresh_token!));
  });

  it("RFC 9700 §4.14.2 (strict, refreshGraceSeconds: 0): two concurrent refreshes with the same token: exactly one succeeds", async () => {
    const h = await harness({ refreshGraceSeconds: 0 });
    const rt = await freshRefreshToken(h);
    const responses = await Promise.all([refreshRequest(h, rt), refreshRequest(h, rt)]);
    expect(responses.map((r) => r.status).sort()).toEqual([200, 400]);
    const winner = responses.find((r) => r.status === 200)!;
    const loser = responses.find((r) => r.status === 400)!;
    const won = await expectTokenSuccess(winner);
    await expectTokenError(loser, 400, INVALID_REFRESH);
    // The second presentation is reuse: the family, including the winner's new token, is revoked.
    await expectTokenError(await refreshRequest(h, won.refresh_token!), 400, INVALID_REFRESH);
  });

  it("RFC 9700 §4.14.2 (strict, refreshGraceSeconds: 0): many concurrent refreshes with the same token: exactly one 200", async () => {
    const h = await harness({ refreshGraceSeconds: 0 });
    const rt = await freshRefreshToken(h);
    const responses = await Promise.all(Array.from({ length: 8 }, () => refreshRequest(h, rt)));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of responses.filter((x) => x.status !== 200)) await expectTokenError(r, 400, INVALID_REFRESH);
  });

  it("RFC 6749 §1.5 / spec: refresh tokens come only from the password grant: client_credentials never issues one", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h)));
    expect(body.refresh_token).toBeUndefined();
    expect(Object.keys(body).sort()).toEqual(["access_token", "expires_in", "scope", "token_type"]);
  });
});
