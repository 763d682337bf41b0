/**
 * The refresh token's form and storage key: issue time (11 hex digits of epoch ms) then 256 random
 * bits; stored under the time and the token's SHA-256, so ordered stores add each new token at the
 * end of the key index. Tokens issued before the time prefix keep their plain SHA-256 key.
 */
import { describe, expect, it } from "vitest";
import { refreshTokenKey, sha256 } from "../src/index.js";
import { newRefreshToken } from "../src/oauth/refresh-key.js";
import { harness } from "./helpers.js";
import { expectTokenError, expectTokenSuccess, freshRefreshToken, INVALID_REFRESH, refreshRequest } from "./token-helpers.js";

const T = Date.UTC(2026, 0, 1);

describe("refresh token form and key", () => {
  it("an issued refresh token is its issue time in 11 hex digits and 43 base64url characters, stored under the time and its SHA-256", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    expect(rt).toMatch(/^[0-9a-f]{11}[A-Za-z0-9_-]{43}$/);
    expect(parseInt(rt.slice(0, 11), 16)).toBe(T);
    const key = await refreshTokenKey(sha256, rt);
    expect(key).toBe(T.toString(16).padStart(11, "0") + (await sha256(rt)));
    const record = await h.app.storage.refreshTokens.findByHash(key);
    expect(record).toMatchObject({ tokenHash: key, createdAt: T, consumedAt: null });
    // Nothing else is a key of it: not the SHA-256 alone, not the token.
    expect(await h.app.storage.refreshTokens.findByHash(await sha256(rt))).toBeNull();
    expect(await h.app.storage.refreshTokens.findByHash(rt)).toBeNull();
  });

  it("keys sort by issue time, so a B-tree adds each new token at its end", async () => {
    const random = (n: number) => new Uint8Array(n).fill(0xff);
    const zeros = (n: number) => new Uint8Array(n);
    const keys = await Promise.all([T, T + 1, T + 15, T + 16, T + 3_600_000, T + 86_400_000 * 365].map((t, i) => refreshTokenKey(sha256, newRefreshToken(i % 2 ? random : zeros, t))));
    expect([...keys].sort()).toEqual(keys);
    expect(new Set(keys.map((k) => k.length))).toEqual(new Set([54]));
  });

  it("times out of range are clamped into the 11 digits (a clock before 1970 or after 2527 still gives a token of the one form)", () => {
    expect(newRefreshToken((n) => new Uint8Array(n), -5).slice(0, 11)).toBe("00000000000");
    expect(newRefreshToken((n) => new Uint8Array(n), 16 ** 11 + 5).slice(0, 11)).toBe("fffffffffff");
    expect(newRefreshToken((n) => new Uint8Array(n), 1.9).slice(0, 11)).toBe("00000000001");
  });

  it("text not of the current form is keyed by its SHA-256 alone (tokens issued before the time prefix)", async () => {
    for (const text of ["", "x", "A".repeat(43), "0".repeat(11) + "A".repeat(42), "0".repeat(11) + "A".repeat(44), "0000000000G" + "A".repeat(43), "0000000000A" + "A".repeat(43), "0".repeat(11) + "A".repeat(42) + "="]) {
      expect(await refreshTokenKey(sha256, text), JSON.stringify(text)).toBe(await sha256(text));
    }
  });

  it("upgrade: a token issued before the time prefix (stored under its SHA-256) still refreshes once, into a token of the new form, and its reuse revokes the family", async () => {
    const h = await harness();
    // The token a release before the prefix issued: 43 base64url characters, keyed by SHA-256.
    const rt = await freshRefreshToken(h);
    const current = (await h.app.storage.refreshTokens.findByHash(await refreshTokenKey(sha256, rt)))!;
    const legacy = "L".repeat(43);
    await h.app.storage.refreshTokens.create({ ...current, tokenHash: await sha256(legacy), familyId: "legacy-family" });
    h.clock.advance(60_000);
    const next = await expectTokenSuccess(await refreshRequest(h, legacy));
    expect(next.refresh_token).toMatch(/^[0-9a-f]{11}[A-Za-z0-9_-]{43}$/);
    expect(await h.app.storage.refreshTokens.findByHash(await refreshTokenKey(sha256, next.refresh_token!))).toMatchObject({ familyId: "legacy-family", consumedAt: null });
    expect((await h.app.storage.refreshTokens.findByHash(await sha256(legacy)))!.consumedAt).toBe(T + 60_000);
    // Past the grace window, the legacy token again is reuse: the family (with the new token) is revoked.
    h.clock.advance(60_000);
    await expectTokenError(await refreshRequest(h, legacy), 400, INVALID_REFRESH);
    await expectTokenError(await refreshRequest(h, next.refresh_token!), 400, INVALID_REFRESH);
    // The other family is untouched.
    expect((await expectTokenSuccess(await refreshRequest(h, rt))).refresh_token).toMatch(/^[0-9a-f]{11}/);
  });
});
