/**
 * The bearer check remembers verified access tokens; none of what can change after verification
 * may be remembered with them: revocation, expiry and the trust in the signing key are checked on
 * every request, cached or not.
 */
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT, type JWK } from "jose";
import { describe, expect, it } from "vitest";
import { REVOCATION_PATH } from "../src/index.js";
import { getAccounts } from "./api-helpers.js";
import { BASE, basic, clientToken, harness, type Harness } from "./helpers.js";

const INVALID_TOKEN_CHALLENGE =
  'Bearer realm="plantgate", error="invalid_token", error_description="The access token is invalid or expired."';

async function expectRefused(h: Harness, token: string): Promise<void> {
  const res = await getAccounts(h.app, token);
  expect(res.status).toBe(401);
  expect(res.headers.get("www-authenticate")).toBe(INVALID_TOKEN_CHALLENGE);
}

async function revoke(h: Harness, token: string): Promise<void> {
  const res = await h.app.fetch(
    new Request(`${BASE}${REVOCATION_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) },
      body: new URLSearchParams({ token, token_type_hint: "access_token" }).toString(),
    }),
  );
  expect(res.status).toBe(200);
}

describe.each([
  ["with the default cache", {}],
  ["with a one-entry cache", { verifiedTokenCacheSize: 1 }],
  ["with the cache off", { verifiedTokenCacheSize: 0 }],
])("verified-token cache (%s)", (_name, options) => {
  it("refuses a revoked token on the very next request, although it was accepted (and cached) before", async () => {
    const h = await harness(options);
    const token = await clientToken(h);
    expect((await getAccounts(h.app, token)).status).toBe(200);
    expect((await getAccounts(h.app, token)).status).toBe(200);
    await revoke(h, token);
    expect(await h.app.storage.revokedTokens.has(decodeJwt(token).jti!)).toBe(true);
    await expectRefused(h, token);
  });

  it("refuses a cached token from the second it expires", async () => {
    const h = await harness(options);
    const token = await clientToken(h);
    const { exp } = decodeJwt(token);
    expect((await getAccounts(h.app, token)).status).toBe(200);
    // One millisecond before `exp` it is still valid; at `exp` it is not (jose's rule: exp <= now).
    h.clock.advance(exp! * 1000 - h.clock.now() - 1);
    expect((await getAccounts(h.app, token)).status).toBe(200);
    h.clock.advance(1);
    await expectRefused(h, token);
  });

  it("refuses a cached token once its signing key is no longer trusted (pruned), though the token has not expired", async () => {
    const h = await harness(options);
    const honest = await clientToken(h);
    const { kid } = decodeProtectedHeader(honest);
    // Signed with our own stored key but valid for 30 days: only the key's distrust can end it.
    const record = (await h.app.storage.signingKeys.list()).find((k) => k.kid === kid)!;
    const iat = Math.floor(h.clock.now() / 1000);
    const longLived = await new SignJWT({ client_id: h.clientId, scope: "Platform_UserAPIs" })
      .setProtectedHeader({ alg: record.alg, kid: kid!, typ: "at+jwt" })
      .setIssuer(BASE)
      .setAudience(BASE)
      .setSubject(`client:${h.clientId}`)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 30 * 86_400)
      .setJti("long-lived")
      .sign(await importJWK(JSON.parse(record.privateJwk) as JWK, record.alg));
    expect((await getAccounts(h.app, longLived)).status).toBe(200);
    h.clock.advance(1000);
    await h.app.admin.rotateSigningKey({ now: true });
    expect((await getAccounts(h.app, longLived)).status).toBe(200); // retired keys still verify
    // 7200 s (longest lifetime) + 60 s (signing reload) after the rotation the key is prunable.
    h.clock.advance(7260 * 1000 - 1);
    expect((await getAccounts(h.app, longLived)).status).toBe(200);
    h.clock.advance(1);
    await expectRefused(h, longLived);
    // Deleting it (the next rotation prunes it) changes nothing: still refused.
    expect((await h.app.admin.rotateSigningKey({ now: true })).deleted).toEqual([kid]);
    await expectRefused(h, longLived);
  });

  it("keeps tokens apart: another token, or the same one for another audience, is verified afresh", async () => {
    const h = await harness(options);
    const first = await clientToken(h);
    const second = await clientToken(h);
    for (let i = 0; i < 3; i++) {
      expect((await getAccounts(h.app, first)).status).toBe(200);
      expect((await getAccounts(h.app, second)).status).toBe(200);
    }
    // Same token presented to an app with another issuer/audience in front of the same store.
    const other = await getAccounts(h.app, first, "", "https://elsewhere.example.test/rbac/ServerCommand/GetAccountList");
    expect(other.status).toBe(401);
    // A tampered copy is not the cached string and fails its own verification.
    await expectRefused(h, first.slice(0, -2) + (first.endsWith("AA") ? "BB" : "AA"));
  });
});

it("rejects a negative or fractional verifiedTokenCacheSize at construction", async () => {
  await expect(harness({ verifiedTokenCacheSize: -1 })).rejects.toThrow(TypeError);
  await expect(harness({ verifiedTokenCacheSize: 1.5 })).rejects.toThrow(TypeError);
});
