/**
 * The token endpoint's grants and the tokens they issue: the spec's rules 1-3, RFC 6749 §4.3, §4.4,
 * §5.1 and §3.3, and the RFC 9068 access-token profile. Everything goes through `app.fetch`.
 */
import { describe, expect, it } from "vitest";
import { createPlantgate, hashPassword, verifyPassword } from "../src/index.js";
import { basic, BASE, harness, tokenRequest } from "./helpers.js";
import {
  auth,
  expectTokenError,
  expectTokenSuccess,
  FORM,
  passwordRequest,
  rawTokenRequest,
  verifyAt,
} from "./token-helpers.js";

const ALL_API_SCOPES = "Platform_UserAPIs Platform_AllAppsServerCommands";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("client_credentials grant (RFC 6749 §4.4)", () => {
  it("RFC 6749 §4.4.3 / spec rule 1: returns a Bearer token response without refresh_token", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials", scope: "Platform_UserAPIs" }, auth(h)));
    expect(body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs" });
  });

  it("RFC 6749 §3.3: an omitted scope defaults to the client's allowed scopes minus offline_access", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h)));
    expect(body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: ALL_API_SCOPES });
    const { payload } = await verifyAt(h, body.access_token);
    expect(payload.scope).toBe(ALL_API_SCOPES);
  });

  it("RFC 6749 §3.3: the default for a client limited to one scope is that scope", async () => {
    const h = await harness();
    const { clientSecret } = await h.app.admin.createClient({ clientId: "narrow", scopes: ["Platform_UserAPIs", "offline_access"] });
    const body = await expectTokenSuccess(
      await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic("narrow", clientSecret) }),
    );
    expect(body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs" });
  });

  it("RFC 6749 §3.1: an empty scope value is treated as omitted (default scope)", async () => {
    const h = await harness();
    const res = await rawTokenRequest(h.app, "grant_type=client_credentials&scope=", { "content-type": FORM, ...auth(h) });
    const body = await expectTokenSuccess(res);
    expect(body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: ALL_API_SCOPES });
  });

  it("RFC 6749 §3.3: a duplicated scope token is granted once", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(
      await tokenRequest(h.app, { grant_type: "client_credentials", scope: "Platform_UserAPIs Platform_UserAPIs" }, auth(h)),
    );
    expect(body.scope).toBe("Platform_UserAPIs");
  });
});

describe("RFC 9068 JWT access tokens", () => {
  it("RFC 9068 §2.1/§2.2: a client_credentials token is an ES256 at+jwt with kid, iss, aud, sub=client:<id>, client_id, scope, iat, exp, jti", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials", scope: "Platform_UserAPIs" }, auth(h)));
    const { header, payload, jwks } = await verifyAt(h, body.access_token);
    expect(header).toEqual({ alg: "ES256", typ: "at+jwt", kid: expect.any(String) });
    expect(jwks.keys.map((k) => k.kid)).toContain(header.kid);
    expect(jwks.keys.find((k) => k.kid === header.kid)).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    // The JWKS must not leak the private part.
    expect(jwks.keys.every((k) => !("d" in k))).toBe(true);
    const iat = Math.floor(h.clock.now() / 1000);
    expect(payload).toEqual({
      iss: "https://as.example.test",
      aud: "https://as.example.test",
      sub: "client:app-1",
      client_id: "app-1",
      scope: "Platform_UserAPIs",
      // The client's generation (2026-12-02).
      cgen: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/),
      iat,
      exp: iat + 7200,
      jti: expect.any(String),
    });
  });

  it("RFC 9068 §2.2: iss is derived from the request's origin when no issuer is configured", async () => {
    const h = await harness();
    const res = await h.app.fetch(
      new Request("https://other.example.test/UserService/connect/token", {
        method: "POST",
        headers: { "content-type": FORM, ...auth(h) },
        body: "grant_type=client_credentials",
      }),
    );
    const body = await expectTokenSuccess(res);
    const { payload } = await verifyAt(h, body.access_token, { issuer: "https://other.example.test", audience: "https://other.example.test" });
    expect(payload.iss).toBe("https://other.example.test");
  });

  it("RFC 9068 §2.2: a password-grant token's sub is the account id, never the client's sub", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await passwordRequest(h, { scope: "Platform_UserAPIs" }));
    expect(body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs" });
    const { header, payload } = await verifyAt(h, body.access_token);
    expect(header).toEqual({ alg: "ES256", typ: "at+jwt", kid: expect.any(String) });
    const iat = Math.floor(h.clock.now() / 1000);
    expect(payload).toEqual({
      iss: BASE,
      aud: BASE,
      sub: expect.stringMatching(UUID),
      client_id: "app-1",
      scope: "Platform_UserAPIs",
      // The client's generation (2026-12-02).
      cgen: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/),
      iat,
      exp: iat + 7200,
      jti: expect.any(String),
    });
    const cc = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h)));
    const ccClaims = (await verifyAt(h, cc.access_token)).payload;
    expect(ccClaims.sub).toBe("client:app-1");
    expect(payload.sub).not.toBe(ccClaims.sub);
  });

  it("RFC 9068 §2.2 / RFC 7519 §4.1.7: jti is unique across two tokens issued at the same instant", async () => {
    const h = await harness();
    const a = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h)));
    const b = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h)));
    const ja = (await verifyAt(h, a.access_token)).payload;
    const jb = (await verifyAt(h, b.access_token)).payload;
    expect(ja.iat).toBe(jb.iat);
    expect(ja.jti).toEqual(expect.any(String));
    expect(ja.jti).not.toBe(jb.jti);
    expect(a.access_token).not.toBe(b.access_token);
  });

  it("RFC 6749 §5.1: expires_in honours a per-client accessTokenTtl and matches exp - iat", async () => {
    const h = await harness();
    const { clientSecret } = await h.app.admin.createClient({ clientId: "short-lived", accessTokenTtl: 300 });
    const body = await expectTokenSuccess(
      await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic("short-lived", clientSecret) }),
    );
    expect(body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 300, scope: ALL_API_SCOPES });
    const { payload } = await verifyAt(h, body.access_token);
    expect(payload.exp! - payload.iat!).toBe(300);
    expect(payload.sub).toBe("client:short-lived");
    expect(payload.client_id).toBe("short-lived");
  });

  it("RFC 6749 §5.1: the per-client accessTokenTtl also applies to the password grant; the server default stays 7200 for others", async () => {
    const h = await harness();
    const { clientSecret } = await h.app.admin.createClient({ clientId: "short-lived", accessTokenTtl: 60 });
    const short = await expectTokenSuccess(await passwordRequest(h, {}, { authorization: basic("short-lived", clientSecret) }));
    expect(short.expires_in).toBe(60);
    const normal = await expectTokenSuccess(await passwordRequest(h));
    expect(normal.expires_in).toBe(7200);
  });

  it("RFC 6749 §5.1: the accessTokenTtl option changes the server default", async () => {
    const h = await harness({ accessTokenTtl: 900 });
    const body = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h)));
    expect(body.expires_in).toBe(900);
    const { payload } = await verifyAt(h, body.access_token);
    expect(payload.exp! - payload.iat!).toBe(900);
  });
});

describe("password grant (RFC 6749 §4.3)", () => {
  it("spec rule 2 / RFC 6749 §4.3.3: with offline_access the response has a refresh_token", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await passwordRequest(h, { scope: "Platform_UserAPIs offline_access" }));
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 7200,
      scope: "Platform_UserAPIs offline_access",
      refresh_token: expect.any(String),
    });
    // Opaque and >= 256 bits: not a JWT, at least 43 base64url characters.
    expect(body.refresh_token).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    const { payload } = await verifyAt(h, body.access_token);
    expect(payload.scope).toBe("Platform_UserAPIs offline_access");
  });

  it("spec rule 2: without offline_access there is no refresh_token", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await passwordRequest(h, { scope: ALL_API_SCOPES }));
    expect(body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: ALL_API_SCOPES });
  });

  it("RFC 6749 §3.3: an omitted scope defaults to the allowed scopes minus offline_access, so no refresh_token", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await passwordRequest(h));
    expect(body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: ALL_API_SCOPES });
  });

  it("RFC 6749 §2.3.1: client_secret_post authenticates the password grant too", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(
      await passwordRequest(h, { client_id: h.clientId, client_secret: h.clientSecret, scope: "offline_access" }, {}),
    );
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 7200,
      scope: "offline_access",
      refresh_token: expect.any(String),
    });
  });

  it("RFC 6749 §5.2 invalid_grant: a wrong password and an unknown user give byte-identical bodies", async () => {
    const h = await harness();
    const expected = { error: "invalid_grant", error_description: "The username or password is incorrect." };
    const wrongPassword = await expectTokenError(await passwordRequest(h, { password: "not-the-password" }), 400, expected);
    const unknownUser = await expectTokenError(await passwordRequest(h, { username: "mallory" }), 400, expected);
    expect(unknownUser).toBe(wrongPassword);
    // The description never says which of the two was wrong.
    expect(wrongPassword).not.toMatch(/unknown|not found|no such|does not exist|wrong password/i);
  });

  it("RFC 6749 §5.2 invalid_grant: a disabled account cannot get a token, with the same body as bad credentials", async () => {
    const h = await harness();
    await h.app.admin.createAccount({ username: "bob", password: "builder-1234", enabled: false });
    await expectTokenError(await passwordRequest(h, { username: "bob", password: "builder-1234" }), 400, {
      error: "invalid_grant",
      error_description: "The username or password is incorrect.",
    });
  });

  it("RFC 6749 §5.2 invalid_grant: the password followed by U+0000 is not the password (PBKDF2-HMAC pads short keys with zero bytes)", async () => {
    const h = await harness();
    const expected = { error: "invalid_grant", error_description: "The username or password is incorrect." };
    for (const password of [`${h.password}\u0000`, `${h.password}\u0000\u0000`, `\u0000${h.password}`]) {
      await expectTokenError(await passwordRequest(h, { password }), 400, expected);
    }
    await expectTokenSuccess(await passwordRequest(h));
    // The exported helpers hold the same rule: no such hash is made, and no such password matches.
    const random = (n: number) => crypto.getRandomValues(new Uint8Array(n));
    const phc = await hashPassword(h.password, random, { iterations: 1000 });
    expect(await verifyPassword(h.password, phc)).toBe(true);
    expect(await verifyPassword(`${h.password}\u0000`, phc)).toBe(false);
    await expect(hashPassword(`${h.password}\u0000`, random, { iterations: 1000 })).rejects.toThrow(new TypeError("a password must not contain U+0000"));
  });

  it("RFC 6749 §4.3.2: the username is matched exactly (a case variant is an unknown user)", async () => {
    const h = await harness();
    await expectTokenError(await passwordRequest(h, { username: "ALICE" }), 400, {
      error: "invalid_grant",
      error_description: "The username or password is incorrect.",
    });
  });

  it("RFC 6749 App. B: a password with spaces, '+', '&', '%' and non-ASCII is form-decoded before it is checked", async () => {
    const h = await harness();
    const password = "p a+s&s%w=ö€ 🌱";
    await h.app.admin.createAccount({ username: "carol+1@example.test", password });
    const body = await expectTokenSuccess(await passwordRequest(h, { username: "carol+1@example.test", password }));
    expect(body.token_type).toBe("Bearer");
  });
});

describe("scopePrefix option", () => {
  it("RFC 6749 §3.3: scopePrefix 'Acme' names the scopes Acme_UserAPIs / Acme_AllAppsServerCommands", async () => {
    const h = await harness({ scopePrefix: "Acme" });
    const dflt = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h)));
    expect(dflt).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 7200,
      scope: "Acme_UserAPIs Acme_AllAppsServerCommands",
    });
    const pw = await expectTokenSuccess(await passwordRequest(h, { scope: "Acme_UserAPIs offline_access" }));
    expect(pw).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 7200,
      scope: "Acme_UserAPIs offline_access",
      refresh_token: expect.any(String),
    });
    expect((await verifyAt(h, pw.access_token)).payload.scope).toBe("Acme_UserAPIs offline_access");
    await expectTokenError(await tokenRequest(h.app, { grant_type: "client_credentials", scope: "Platform_UserAPIs" }, auth(h)), 400, {
      error: "invalid_scope",
      error_description: "A requested scope is unknown (the server's scopes are in scopes_supported of its metadata).",
    });
  });

  it("a prefix whose scopes would not fit maxScopeLength is refused when the app is made (its scopes were 400 invalid_scope on every request naming them)", async () => {
    const message = (length: number, max: number) =>
      `scopePrefix is ${length} characters, so its scope <prefix>_AllAppsServerCommands is longer than maxScopeLength (${max}); shorten the prefix or raise maxScopeLength`;
    expect(() => createPlantgate({ scopePrefix: "x".repeat(107) })).toThrow(new TypeError(message(107, 128)));
    expect(() => createPlantgate({ scopePrefix: "x".repeat(5000) })).toThrow(new TypeError(message(5000, 128)));
    expect(() => createPlantgate({ scopePrefix: "Acme", maxScopeLength: 25 })).toThrow(new TypeError(message(4, 25)));
    // The longest that fits: its scopes can be asked for by name.
    const prefix = "x".repeat(106);
    const h = await harness({ scopePrefix: prefix });
    const body = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials", scope: `${prefix}_AllAppsServerCommands` }, auth(h)));
    expect(body.scope).toBe(`${prefix}_AllAppsServerCommands`);
  });
});
