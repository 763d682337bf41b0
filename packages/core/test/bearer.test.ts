/**
 * Bearer-token checks of the API routes (RFC 6750 §2.1, §3, §3.1; RFC 9068 §4 for the JWT profile).
 * Every test goes through `app.fetch` and asserts the status, the exact WWW-Authenticate challenge
 * and the whole `{error, message}` body.
 */
import { describe, expect, it } from "vitest";
import { base64url, exportJWK, exportSPKI, generateKeyPair, importJWK, SignJWT, UnsecuredJWT, type JWTPayload } from "jose";
import { createPlantgate, type Plantgate } from "../src/index.js";
import { BASE, basic, clientToken, harness, passwordTokens, type Harness } from "./helpers.js";
import { b64url, getAccounts, postPlant, read, signWithOurKey, splitJwt } from "./api-helpers.js";

const CHALLENGE = 'Bearer realm="plantgate"';
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="plantgate", error="invalid_token", error_description="The access token is invalid or expired."';
const MALFORMED_HEADER_CHALLENGE =
  `Bearer realm="plantgate", error="invalid_request", error_description="The Authorization header must be 'Bearer <token>'."`;
const LIST_SCOPES = "Platform_UserAPIs Platform_AllAppsServerCommands";

const MISSING = { error: 1201, message: "An access token is required." };
const INVALID = { error: 1202, message: "The access token is invalid or expired." };
const MALFORMED = { error: 1204, message: "The Authorization header must be 'Bearer <token>'." };

type Read = Awaited<ReturnType<typeof read>>;

interface RouteCase {
  name: string;
  /** Sends the route's request with the given Authorization header value (or none). */
  send(h: Harness, authorization: string | undefined): Promise<Read>;
  /** Asserts the response of an authorized request. */
  expectOk(h: Harness, r: Read): Promise<void>;
}

let plantId = 0;
const lastPlantId = new WeakMap<Harness, number>();

const ROUTES: RouteCase[] = [
  {
    name: "POST /plants",
    async send(h, authorization) {
      const id = ++plantId;
      lastPlantId.set(h, id);
      return read(await postPlant(h.app, JSON.stringify({ id, name: "fern" }), authorization === undefined ? {} : { authorization }));
    },
    async expectOk(h, r) {
      const id = lastPlantId.get(h)!;
      expect(r.status).toBe(200);
      expect(r.contentType).toBe("application/json");
      expect(r.text).toBe(`{"id":${id},"name":"fern"}`);
    },
  },
  {
    name: "GET /rbac/ServerCommand/GetAccountList",
    async send(h, authorization) {
      const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
      return read(await h.app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers })));
    },
    async expectOk(h, r) {
      const alice = (await h.app.storage.accounts.findByUsername("alice"))!;
      expect(r.status).toBe(200);
      expect(r.contentType).toBe("application/json");
      expect(r.body).toEqual({
        accounts: [
          { id: alice.id, username: "alice", displayName: "Alice", email: null, roles: [], enabled: true, createdAt: "2026-01-01T00:00:00.000Z" },
        ],
        page: 1,
        pageSize: 20,
        total: 1,
        totalPages: 1,
      });
    },
  },
];

function expectRejected(r: Read, challenge: string, body: { error: number; message: string }) {
  expect(r.status).toBe(401);
  expect(r.contentType).toBe("application/json");
  expect(r.wwwAuthenticate).toBe(challenge);
  expect(r.body).toEqual(body);
}

const quiet = { error() {}, warn() {} };

/** A second instance over the same storage (so the same keys and clients), differently configured. */
function sibling(h: Harness, options: Parameters<typeof createPlantgate>[0]): Harness {
  const app: Plantgate = createPlantgate({ storage: h.app.storage, clock: h.clock.now, passwordHashIterations: 1000, logger: quiet, ...options });
  return { ...h, app };
}

describe.each(ROUTES)("$name", (route) => {
  it("RFC 6750 §2.1: a valid token in the Authorization header is accepted (control for every rejection below)", async () => {
    const h = await harness();
    const token = await clientToken(h);
    await route.expectOk(h, await route.send(h, `Bearer ${token}`));
  });

  it("RFC 6750 §3.1: no Authorization header -> 401 with a bare challenge and no error code", async () => {
    const h = await harness();
    expectRejected(await route.send(h, undefined), CHALLENGE, MISSING);
  });

  it("RFC 6750 §3.1: another scheme (Basic) counts as no bearer credentials -> 401 bare challenge", async () => {
    const h = await harness();
    expectRejected(await route.send(h, basic(h.clientId, h.clientSecret)), CHALLENGE, MISSING);
    expectRejected(await route.send(h, "Token abc.def.ghi"), CHALLENGE, MISSING);
    // "Bearerxyz" is a different scheme name, not Bearer followed by a token.
    expectRejected(await route.send(h, `Bearer${await clientToken(h)}`), CHALLENGE, MISSING);
  });

  it('RFC 6750 §2.1: "Bearer" with no token -> 401 invalid_token', async () => {
    const h = await harness();
    expectRejected(await route.send(h, "Bearer"), MALFORMED_HEADER_CHALLENGE, MALFORMED);
    expectRejected(await route.send(h, "Bearer    "), MALFORMED_HEADER_CHALLENGE, MALFORMED);
  });

  it("RFC 6750 §2.1: two tokens in one header, or two Authorization headers -> 401 invalid_token", async () => {
    const h = await harness();
    const token = await clientToken(h);
    expectRejected(await route.send(h, `Bearer ${token} ${token}`), MALFORMED_HEADER_CHALLENGE, MALFORMED);
    // Headers.append joins repeated fields with ", " (RFC 9110 §5.3), which is what the app sees.
    const joined = new Headers();
    joined.append("authorization", `Bearer ${token}`);
    joined.append("authorization", `Bearer ${token}`);
    expectRejected(await route.send(h, joined.get("authorization")!), MALFORMED_HEADER_CHALLENGE, MALFORMED);
  });

  it("RFC 7235 §2.1 / RFC 6750 §2.1: the scheme name is case-insensitive and 1*SP may separate it", async () => {
    const h = await harness();
    const token = await clientToken(h);
    await route.expectOk(h, await route.send(h, `bearer ${token}`));
    await route.expectOk(h, await route.send(h, `BEARER   ${token}`));
  });

  it("RFC 6750 §3.1: a garbage token -> 401 invalid_token", async () => {
    const h = await harness();
    expectRejected(await route.send(h, "Bearer not-a-jwt"), INVALID_TOKEN_CHALLENGE, INVALID);
    expectRejected(await route.send(h, "Bearer a.b.c"), INVALID_TOKEN_CHALLENGE, INVALID);
    // Outside the b64token alphabet of §2.1.
    expectRejected(await route.send(h, "Bearer abc$def"), INVALID_TOKEN_CHALLENGE, INVALID);
    // Far longer than any token we issue.
    expectRejected(await route.send(h, `Bearer ${"A".repeat(9000)}`), INVALID_TOKEN_CHALLENGE, INVALID);
  });

  it("RFC 6750 §3.1: a token with a tampered signature -> 401 invalid_token", async () => {
    const h = await harness();
    const token = await clientToken(h);
    const { encodedHeader, encodedPayload, signature } = splitJwt(token);
    const mid = Math.floor(signature.length / 2);
    const flipped = signature.slice(0, mid) + (signature[mid] === "A" ? "B" : "A") + signature.slice(mid + 1);
    expectRejected(await route.send(h, `Bearer ${encodedHeader}.${encodedPayload}.${flipped}`), INVALID_TOKEN_CHALLENGE, INVALID);
    // No signature at all.
    expectRejected(await route.send(h, `Bearer ${encodedHeader}.${encodedPayload}.`), INVALID_TOKEN_CHALLENGE, INVALID);
  });

  it("RFC 6750 §3.1: a token whose payload was changed (scope widened) but signature kept -> 401 invalid_token", async () => {
    const h = await harness();
    const { access_token } = await passwordTokens(h, "offline_access");
    const { encodedHeader, payload, signature } = splitJwt(access_token);
    const widened = b64url({ ...payload, scope: LIST_SCOPES });
    expectRejected(await route.send(h, `Bearer ${encodedHeader}.${widened}.${signature}`), INVALID_TOKEN_CHALLENGE, INVALID);
  });

  it('RFC 6750 §3.1 / RFC 8725 §3.1: an unsecured token (alg "none") carrying our kid -> 401 invalid_token', async () => {
    const h = await harness();
    const { header, payload } = splitJwt(await clientToken(h));
    const unsecured = `${b64url({ alg: "none", kid: header.kid, typ: "at+jwt" })}.${b64url(payload)}.`;
    expectRejected(await route.send(h, `Bearer ${unsecured}`), INVALID_TOKEN_CHALLENGE, INVALID);
    // jose's own unsecured encoding (no kid at all).
    const plain = new UnsecuredJWT(payload).encode();
    expectRejected(await route.send(h, `Bearer ${plain}`), INVALID_TOKEN_CHALLENGE, INVALID);
  });

  it("RFC 6750 §3.1 / RFC 8725 §2.1: HS256 signed with our public key bytes (algorithm confusion) -> 401 invalid_token", async () => {
    const h = await harness();
    const { header, payload } = splitJwt(await clientToken(h));
    const jwks = (await read(await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`)))).body as { keys: Array<Record<string, string>> };
    const publicJwk = jwks.keys.find((k) => k.kid === header.kid)!;
    const pem = await exportSPKI((await importJWK(publicJwk, "ES256", { extractable: true })) as CryptoKey);
    const secrets = [new TextEncoder().encode(JSON.stringify(publicJwk)), new TextEncoder().encode(pem), base64url.decode(publicJwk.x!)];
    for (const secret of secrets) {
      const forged = await new SignJWT(payload).setProtectedHeader({ alg: "HS256", kid: header.kid as string, typ: "at+jwt" }).sign(secret);
      expectRejected(await route.send(h, `Bearer ${forged}`), INVALID_TOKEN_CHALLENGE, INVALID);
    }
  });

  it("RFC 6750 §3.1: a token signed by a foreign ES256 key that carries our kid -> 401 invalid_token", async () => {
    const h = await harness();
    const { header, payload } = splitJwt(await clientToken(h));
    const attacker = await generateKeyPair("ES256", { extractable: true });
    const forged = await new SignJWT(payload).setProtectedHeader({ alg: "ES256", kid: header.kid as string, typ: "at+jwt" }).sign(attacker.privateKey);
    expectRejected(await route.send(h, `Bearer ${forged}`), INVALID_TOKEN_CHALLENGE, INVALID);
    // The same, with the attacker's public key embedded in the header (RFC 7515 §4.1.3 "jwk"): never trusted.
    const embedded = await new SignJWT(payload)
      .setProtectedHeader({ alg: "ES256", kid: header.kid as string, typ: "at+jwt", jwk: await exportJWK(attacker.publicKey) })
      .sign(attacker.privateKey);
    expectRejected(await route.send(h, `Bearer ${embedded}`), INVALID_TOKEN_CHALLENGE, INVALID);
    // And with a kid we do not know.
    const unknownKid = await new SignJWT(payload).setProtectedHeader({ alg: "ES256", kid: "attacker", typ: "at+jwt" }).sign(attacker.privateKey);
    expectRejected(await route.send(h, `Bearer ${unknownKid}`), INVALID_TOKEN_CHALLENGE, INVALID);
  });

  it('RFC 9068 §4: a JWT signed by our own key but with typ other than "at+jwt" -> 401 invalid_token', async () => {
    const h = await harness();
    const { payload } = splitJwt(await clientToken(h));
    // Control: re-signing the same claims with typ at+jwt is accepted, so only typ differs below.
    await route.expectOk(h, await route.send(h, `Bearer ${await signWithOurKey(h.app, payload, { typ: "at+jwt" })}`));
    // RFC 9068 §4 also allows the full media type "application/at+jwt".
    await route.expectOk(h, await route.send(h, `Bearer ${await signWithOurKey(h.app, payload, { typ: "application/at+jwt" })}`));
    expectRejected(await route.send(h, `Bearer ${await signWithOurKey(h.app, payload, { typ: "JWT" })}`), INVALID_TOKEN_CHALLENGE, INVALID);
    expectRejected(await route.send(h, `Bearer ${await signWithOurKey(h.app, payload, {})}`), INVALID_TOKEN_CHALLENGE, INVALID);
  });

  it("RFC 9068 §2.2: a token signed by our key but missing a required claim -> 401 invalid_token", async () => {
    const h = await harness();
    const { payload } = splitJwt(await clientToken(h));
    for (const claim of ["sub", "exp", "iat", "jti", "client_id", "scope", "iss", "aud"]) {
      const { [claim]: _dropped, ...rest } = payload;
      const token = await signWithOurKey(h.app, rest);
      expectRejected(await route.send(h, `Bearer ${token}`), INVALID_TOKEN_CHALLENGE, INVALID);
    }
  });

  it("RFC 9068 §2.2: claims of the wrong type (scope as an array, client_id as a number) -> 401 invalid_token", async () => {
    const h = await harness();
    const { payload } = splitJwt(await clientToken(h));
    const changes: Array<Record<string, unknown>> = [{ scope: ["Platform_UserAPIs"] }, { client_id: 1 }, { sub: 1 }, { jti: 1 }, { exp: String(payload.exp) }];
    for (const changed of changes) {
      const token = await signWithOurKey(h.app, { ...payload, ...changed } as JWTPayload);
      expectRejected(await route.send(h, `Bearer ${token}`), INVALID_TOKEN_CHALLENGE, INVALID);
    }
  });

  it("RFC 7515 §4.1.4 kid: a signing key added by another instance (shared storage) is accepted once the key cache reloads", async () => {
    const h = await harness();
    await route.expectOk(h, await route.send(h, `Bearer ${await clientToken(h)}`)); // our keys are now cached
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const rotated = sibling(h, { signingKey: { ...(await exportJWK(privateKey)), kid: "rotated-2" } });
    const token = await clientToken(rotated);
    expect(splitJwt(token).header.kid).toBe("rotated-2");
    h.clock.advance(10_000);
    await route.expectOk(h, await route.send(h, `Bearer ${token}`));
  });

  it("RFC 9068 §4: a token from an instance with another issuer (same keys) -> 401 invalid_token", async () => {
    const h = await harness();
    // Control: a sibling configured like us mints tokens we accept (shared storage = shared keys).
    await route.expectOk(h, await route.send(h, `Bearer ${await clientToken(sibling(h, {}))}`));
    const other = sibling(h, { issuer: "https://other-issuer.example.test", audience: BASE });
    const token = await clientToken(other);
    expect(splitJwt(token).payload).toMatchObject({ iss: "https://other-issuer.example.test", aud: BASE });
    expectRejected(await route.send(h, `Bearer ${token}`), INVALID_TOKEN_CHALLENGE, INVALID);
  });

  it("RFC 9068 §4: a token for another audience (same issuer, same keys) -> 401 invalid_token", async () => {
    const h = await harness();
    const other = sibling(h, { audience: "https://other-api.example.test" });
    const token = await clientToken(other);
    expect(splitJwt(token).payload).toMatchObject({ iss: BASE, aud: "https://other-api.example.test" });
    expectRejected(await route.send(h, `Bearer ${token}`), INVALID_TOKEN_CHALLENGE, INVALID);
  });

  it("RFC 6750 §3.1 / RFC 7519 §4.1.4: an expired token -> 401 invalid_token (valid until, not at, exp)", async () => {
    const h = await harness();
    const token = await clientToken(h);
    h.clock.advance(7199_999);
    await route.expectOk(h, await route.send(h, `Bearer ${token}`));
    h.clock.advance(1); // now == exp
    expectRejected(await route.send(h, `Bearer ${token}`), INVALID_TOKEN_CHALLENGE, INVALID);
    h.clock.advance(1_000);
    expectRejected(await route.send(h, `Bearer ${token}`), INVALID_TOKEN_CHALLENGE, INVALID);
  });

  it("RFC 6750 §2.3: a token in the query string is not accepted (header only)", async () => {
    const h = await harness();
    const token = await clientToken(h);
    const r = await read(
      route.name.startsWith("POST")
        ? await h.app.fetch(
            new Request(`${BASE}/plants?access_token=${token}`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"id":1,"name":"x"}' }),
          )
        : await h.app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList?access_token=${token}`)),
    );
    expectRejected(r, CHALLENGE, MISSING);
  });
});

describe("RFC 6750 §3.1 insufficient_scope", () => {
  const INSUFFICIENT = {
    error: 1203,
    message: `This operation needs one of the scopes: ${LIST_SCOPES}.`,
  };
  const challenge = (scope: string) => `Bearer realm="plantgate", error="insufficient_scope", scope="${scope}"`;

  function expectForbidden(r: Read, scope: string, body: { error: number; message: string }) {
    expect(r.status).toBe(403);
    expect(r.contentType).toBe("application/json");
    expect(r.wwwAuthenticate).toBe(challenge(scope));
    expect(r.body).toEqual(body);
  }

  it("RFC 6750 §3.1: GetAccountList with a password token scoped only offline_access -> 403 insufficient_scope naming the scopes", async () => {
    const h = await harness();
    const { access_token, scope } = await passwordTokens(h, "offline_access");
    expect(scope).toBe("offline_access");
    expectForbidden(await read(await getAccounts(h.app, access_token)), LIST_SCOPES, INSUFFICIENT);
  });

  it("RFC 6750 §3.1: GetAccountList with a token of empty scope -> 403 insufficient_scope", async () => {
    const h = await harness();
    const { payload } = splitJwt(await clientToken(h));
    const token = await signWithOurKey(h.app, { ...payload, scope: "" });
    expectForbidden(await read(await getAccounts(h.app, token)), LIST_SCOPES, INSUFFICIENT);
  });

  it("RFC 6749 §3.3 / RFC 6750 §3.1: scopes match as whole tokens, not by prefix, case or substring -> 403", async () => {
    const h = await harness();
    const { payload } = splitJwt(await clientToken(h));
    for (const scope of ["Platform_UserAPIsX", "XPlatform_UserAPIs", "platform_userapis", "Platform_UserAPIs,Platform_AllAppsServerCommands"]) {
      const token = await signWithOurKey(h.app, { ...payload, scope });
      expectForbidden(await read(await getAccounts(h.app, token)), LIST_SCOPES, INSUFFICIENT);
    }
  });

  it("RFC 6750 §3.1: either API scope alone is enough for GetAccountList", async () => {
    const h = await harness();
    for (const scope of ["Platform_UserAPIs", "Platform_AllAppsServerCommands"]) {
      const r = await read(await getAccounts(h.app, await clientToken(h, scope)));
      expect(r.status).toBe(200);
      expect((r.body as { total: number }).total).toBe(1);
    }
  });

  it("RFC 6750 §3.1: POST /plants needs any valid token by default, even one scoped only offline_access", async () => {
    const h = await harness();
    const { access_token } = await passwordTokens(h, "offline_access");
    const r = await read(await postPlant(h.app, '{"id":7,"name":"fern"}', { token: access_token }));
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"id":7,"name":"fern"}');
  });

  it("RFC 6750 §3.1: requiredScopes option: POST /plants lacking the configured scope -> 403 insufficient_scope and nothing stored", async () => {
    const h = await harness({ requiredScopes: { createPlant: ["Platform_AllAppsServerCommands"] } });
    const weak = await clientToken(h, "Platform_UserAPIs");
    expectForbidden(await read(await postPlant(h.app, '{"id":7,"name":"fern"}', { token: weak })), "Platform_AllAppsServerCommands", {
      error: 1203,
      message: "This operation needs one of the scopes: Platform_AllAppsServerCommands.",
    });
    expect(await h.app.storage.plants.get(7n)).toBeNull();
    const strong = await clientToken(h, "Platform_AllAppsServerCommands");
    const r = await read(await postPlant(h.app, '{"id":7,"name":"fern"}', { token: strong }));
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"id":7,"name":"fern"}');
  });

  it("requiredScopes is checked when the app is made: a list of scopes the server issues, or []", async () => {
    const message = (name: string) =>
      new TypeError(`requiredScopes.${name} must be a list of scopes this server issues (Platform_UserAPIs, Platform_AllAppsServerCommands, offline_access), or [] for any valid token`);
    for (const listAccounts of ["Platform_UserAPIs", ["Platform_UserAPI"], [""], ['Platform_UserAPIs"'], [7], ["Acme_UserAPIs"]] as unknown as string[][]) {
      await expect(harness({ requiredScopes: { listAccounts } }), JSON.stringify(listAccounts)).rejects.toThrow(message("listAccounts"));
    }
    await expect(harness({ requiredScopes: { createPlant: ["offline_access", "nope"] } })).rejects.toThrow(message("createPlant"));
    // A misspelled route, or no object at all, left the defaults in place without a word.
    await expect(harness({ requiredScopes: { listAccount: [] } as never })).rejects.toThrow(new TypeError('requiredScopes has no "listAccount": its members are listAccounts and createPlant'));
    for (const requiredScopes of [["Platform_UserAPIs"], "Platform_UserAPIs", null]) {
      await expect(harness({ requiredScopes: requiredScopes as never }), JSON.stringify(requiredScopes)).rejects.toThrow(new TypeError("requiredScopes must be an object: { listAccounts?, createPlant? }"));
    }
    // Another prefix's names are the server's own.
    const acme = await harness({ scopePrefix: "Acme", requiredScopes: { listAccounts: ["Acme_UserAPIs"] } });
    expect((await getAccounts(acme.app, await clientToken(acme, "Acme_UserAPIs"))).status).toBe(200);
  });

  it("RFC 6750 §3.1: requiredScopes option: listAccounts [] accepts any valid token", async () => {
    const h = await harness({ requiredScopes: { listAccounts: [] } });
    const { access_token } = await passwordTokens(h, "offline_access");
    expect((await getAccounts(h.app, access_token)).status).toBe(200);
  });
});

describe("authentication is checked before the body (design: 'Authentication is checked before the body')", () => {
  it("RFC 6750 §3.1: an unauthenticated POST /plants with a valid body stores nothing", async () => {
    const h = await harness();
    expectRejected(await read(await postPlant(h.app, '{"id":42,"name":"fern","tag":"indoor"}')), CHALLENGE, MISSING);
    expect(await h.app.storage.plants.get(42n)).toBeNull();
    const r = await read(await postPlant(h.app, '{"id":42,"name":"rose"}', { token: await clientToken(h) }));
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"id":42,"name":"rose"}');
  });

  it("RFC 6750 §3.1: a POST /plants with an invalid token and a valid body stores nothing", async () => {
    const h = await harness();
    const token = await clientToken(h);
    h.clock.advance(7200_000);
    expectRejected(await read(await postPlant(h.app, '{"id":42,"name":"fern"}', { token })), INVALID_TOKEN_CHALLENGE, INVALID);
    expect(await h.app.storage.plants.get(42n)).toBeNull();
    const r = await read(await postPlant(h.app, '{"id":42,"name":"rose"}', { token: await clientToken(h) }));
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"id":42,"name":"rose"}');
  });

  it("RFC 6750 §3.1: without a valid token, body problems are not reported: 401 rather than 400 for a bad, oversized or mistyped body", async () => {
    const h = await harness();
    expectRejected(await read(await postPlant(h.app, "{not json")), CHALLENGE, MISSING);
    expectRejected(await read(await postPlant(h.app, '{"id":1,"name":"fern"}', { contentType: "text/plain" })), CHALLENGE, MISSING);
    expectRejected(await read(await postPlant(h.app, "x".repeat(2 * 1024 * 1024))), CHALLENGE, MISSING);
    expectRejected(await read(await postPlant(h.app, "{not json", { token: "garbage" })), INVALID_TOKEN_CHALLENGE, INVALID);
  });
});
