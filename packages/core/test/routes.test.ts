/**
 * Routing, discovery documents and mounting options, through `app.fetch` only; plus a static check
 * that the core stays free of Node built-ins (design: "no node:* import, ever").
 */
import { describe, expect, it } from "vitest";
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify } from "jose";
import { BASE, clientToken, harness, passwordTokens, tokenRequest, basic } from "./helpers.js";
import { getAccounts, postPlant, read } from "./api-helpers.js";

const get = async (h: { app: { fetch(r: Request): Promise<Response> } }, url: string, init?: RequestInit) => read(await h.app.fetch(new Request(url, init)));

const SCOPES = ["Platform_UserAPIs", "Platform_AllAppsServerCommands", "offline_access"];
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

describe("GET /.well-known/jwks.json (RFC 7517 §5)", () => {
  it("serves the public signing key only, and it verifies issued tokens", async () => {
    const h = await harness();
    const r = await get(h, `${BASE}/.well-known/jwks.json`);
    expect(r.status).toBe(200);
    expect(r.contentType).toBe("application/json");
    expect(r.body).toEqual({
      keys: [{ kty: "EC", crv: "P-256", x: expect.any(String), y: expect.any(String), kid: expect.any(String), alg: "ES256", use: "sig" }],
    });
    for (const m of PRIVATE_MEMBERS) expect(r.text).not.toContain(`"${m}":`);
    const token = await clientToken(h);
    const jwks = r.body as { keys: Array<{ kid: string }> };
    expect(decodeProtectedHeader(token)).toEqual({ alg: "ES256", kid: jwks.keys[0]!.kid, typ: "at+jwt" });
    // A third party can verify our tokens from the published set alone.
    const { payload } = await jwtVerify(token, createLocalJWKSet(r.body as { keys: [] }), {
      issuer: BASE,
      audience: BASE,
      typ: "at+jwt",
      currentDate: new Date(h.clock.now()),
    });
    expect(payload).toMatchObject({ iss: BASE, aud: BASE, sub: "client:app-1", client_id: "app-1" });
  });

  it.each([
    ["RS256", { kty: "RSA", n: expect.any(String), e: "AQAB" }],
    ["PS256", { kty: "RSA", n: expect.any(String), e: "AQAB" }],
    ["ES384", { kty: "EC", crv: "P-384", x: expect.any(String), y: expect.any(String) }],
    ["EdDSA", { kty: "OKP", crv: "Ed25519", x: expect.any(String) }],
  ] as const)("with signingAlg %s, still public members only", async (alg, members) => {
    const h = await harness({ signingAlg: alg });
    const r = await get(h, `${BASE}/.well-known/jwks.json`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ keys: [{ ...members, alg, kid: expect.any(String), use: "sig" }] });
    for (const m of PRIVATE_MEMBERS) expect(r.text).not.toContain(`"${m}":`);
    expect(decodeProtectedHeader(await clientToken(h)).alg).toBe(alg);
  });

  it("a configured private signingKey is published without its private part", async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), kid: "configured-1" };
    const h = await harness({ signingKey: JSON.stringify(jwk) });
    const r = await get(h, `${BASE}/.well-known/jwks.json`);
    expect(r.body).toEqual({ keys: [{ kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, kid: "configured-1", alg: "ES256", use: "sig" }] });
    expect(r.text).not.toContain(jwk.d!);
    expect(decodeProtectedHeader(await clientToken(h)).kid).toBe("configured-1");
  });
});

describe("GET /.well-known/oauth-authorization-server (RFC 8414 §3)", () => {
  it("serves the whole metadata document", async () => {
    const h = await harness();
    const r = await get(h, `${BASE}/.well-known/oauth-authorization-server`);
    expect(r.status).toBe(200);
    expect(r.contentType).toBe("application/json");
    expect(r.body).toEqual({
      issuer: BASE,
      token_endpoint: `${BASE}/UserService/connect/token`,
      jwks_uri: `${BASE}/.well-known/jwks.json`,
      grant_types_supported: ["client_credentials", "password", "refresh_token"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      token_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      revocation_endpoint: `${BASE}/UserService/connect/revocation`,
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      revocation_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      introspection_endpoint: `${BASE}/UserService/connect/introspect`,
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      introspection_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      scopes_supported: SCOPES,
      response_types_supported: [],
    });
  });

  it("scopes_supported follows scopePrefix", async () => {
    const h = await harness({ scopePrefix: "Acme" });
    const r = await get(h, `${BASE}/.well-known/oauth-authorization-server`);
    expect((r.body as { scopes_supported: string[] }).scopes_supported).toEqual(["Acme_UserAPIs", "Acme_AllAppsServerCommands", "offline_access"]);
  });
});

const urlsOf = (doc: Record<string, unknown>) => ({
  issuer: doc.issuer,
  token_endpoint: doc.token_endpoint,
  jwks_uri: doc.jwks_uri,
  revocation_endpoint: doc.revocation_endpoint,
  introspection_endpoint: doc.introspection_endpoint,
});

describe("metadata URLs and caching (finding 1 of the security review)", () => {

  it("with issuer set and no baseUrl, every URL derives from the issuer, whatever the Host; served public", async () => {
    const h = await harness({ issuer: "https://auth.example.com" });
    for (const host of ["http://evil.example", "https://auth.example.com", "http://127.0.0.1:8080"]) {
      const res = await h.app.fetch(new Request(`${host}/.well-known/oauth-authorization-server`, { headers: { "x-forwarded-host": "evil.example" } }));
      expect(urlsOf((await res.json()) as Record<string, unknown>)).toEqual({
        issuer: "https://auth.example.com",
        token_endpoint: "https://auth.example.com/UserService/connect/token",
        jwks_uri: "https://auth.example.com/.well-known/jwks.json",
        revocation_endpoint: "https://auth.example.com/UserService/connect/revocation",
        introspection_endpoint: "https://auth.example.com/UserService/connect/introspect",
      });
      expect({ cache: res.headers.get("cache-control"), vary: res.headers.get("vary") }).toEqual({ cache: "public, max-age=300", vary: null });
    }
  });

  it("with issuer and basePath, the URLs are the issuer's origin plus the base path", async () => {
    const h = await harness({ issuer: "https://auth.example.com/auth", basePath: "/auth" });
    const res = await h.app.fetch(new Request("http://evil.example/.well-known/oauth-authorization-server/auth"));
    expect(urlsOf((await res.json()) as Record<string, unknown>)).toEqual({
      issuer: "https://auth.example.com/auth",
      token_endpoint: "https://auth.example.com/auth/UserService/connect/token",
      jwks_uri: "https://auth.example.com/auth/.well-known/jwks.json",
      revocation_endpoint: "https://auth.example.com/auth/UserService/connect/revocation",
      introspection_endpoint: "https://auth.example.com/auth/UserService/connect/introspect",
    });
  });

  it("with neither issuer nor baseUrl, the document follows the request's origin and is private, varying by Host", async () => {
    const h = await harness();
    const res = await h.app.fetch(new Request("http://a.example/.well-known/oauth-authorization-server"));
    expect((await res.json() as Record<string, unknown>).token_endpoint).toBe("http://a.example/UserService/connect/token");
    expect({ cache: res.headers.get("cache-control"), vary: res.headers.get("vary") }).toEqual({ cache: "private, max-age=300", vary: "Host" });
  });

  it("with a baseUrl, the document is public", async () => {
    const h = await harness({ baseUrl: BASE });
    const res = await h.app.fetch(new Request("http://a.example/.well-known/oauth-authorization-server"));
    expect({ cache: res.headers.get("cache-control"), vary: res.headers.get("vary") }).toEqual({ cache: "public, max-age=300", vary: null });
  });
});

describe("unknown paths and methods", () => {
  it.each(["/", "/nope", "/plants/", "/plants/1", "/Plants", "/rbac/ServerCommand/getaccountlist", "/.well-known/", "/UserService/connect/token/"])(
    "GET %s -> 404 {error:1404}",
    async (path) => {
      const h = await harness();
      const r = await get(h, `${BASE}${path}`);
      expect(r.status).toBe(404);
      expect(r.contentType).toBe("application/json");
      expect(r.body).toEqual({ error: 1404, message: "Not found." });
    },
  );

  it.each([
    ["GET", "/plants", "POST"],
    ["PUT", "/plants", "POST"],
    ["DELETE", "/plants", "POST"],
    ["POST", "/rbac/ServerCommand/GetAccountList", "GET, HEAD"],
    ["POST", "/.well-known/jwks.json", "GET, HEAD"],
    ["PATCH", "/.well-known/oauth-authorization-server", "GET, HEAD"],
  ])("%s %s -> 405 with Allow: %s and {error:1405}", async (method, path, allow) => {
    const h = await harness();
    const r = await read(await h.app.fetch(new Request(`${BASE}${path}`, { method, ...(method === "GET" ? {} : { body: "{}" }) })));
    expect(r.status).toBe(405);
    expect(r.contentType).toBe("application/json");
    expect(r.body).toEqual({ error: 1405, message: `Use ${allow} for this endpoint.` });
    // RFC 9110 §15.5.6: a 405 MUST carry Allow.
    const res = await h.app.fetch(new Request(`${BASE}${path}`, { method, ...(method === "GET" ? {} : { body: "{}" }) }));
    expect(res.headers.get("allow")).toBe(allow);
  });

  it("RFC 9110 §9.3.2: HEAD on a GET route answers like GET without content", async () => {
    const h = await harness();
    const get = await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
    const head = await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`, { method: "HEAD" }));
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
    expect(await head.text()).toBe("");
    // HEAD is still authenticated like GET.
    const list = await h.app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { method: "HEAD" }));
    expect(list.status).toBe(401);
    expect(list.headers.get("www-authenticate")).toBe('Bearer realm="plantgate"');
    expect(await list.text()).toBe("");
  });

  it("RFC 8414 §3.1: with an issuer path, the metadata is also served at /.well-known/oauth-authorization-server{path}", async () => {
    const h = await harness({ basePath: "/api" });
    const inserted = await h.app.fetch(new Request(`${BASE}/.well-known/oauth-authorization-server/api`));
    const mounted = await h.app.fetch(new Request(`${BASE}/api/.well-known/oauth-authorization-server`));
    expect(inserted.status).toBe(200);
    const body = await inserted.json();
    expect(body).toEqual(await mounted.json());
    expect(body).toMatchObject({ issuer: `${BASE}/api`, token_endpoint: `${BASE}/api/UserService/connect/token` });
  });

  it("RFC 8414 §3.1: an issuer URL whose path is not the base path gets its own inserted metadata path", async () => {
    const h = await harness({ issuer: "https://auth.example.com/tenant-a/", baseUrl: BASE });
    const inserted = await h.app.fetch(new Request(`${BASE}/.well-known/oauth-authorization-server/tenant-a`));
    expect(inserted.status).toBe(200);
    expect({ cache: inserted.headers.get("cache-control"), vary: inserted.headers.get("vary") }).toEqual({ cache: "public, max-age=300", vary: null });
    const body = (await inserted.json()) as Record<string, unknown>;
    expect(body).toEqual(await (await h.app.fetch(new Request(`${BASE}/.well-known/oauth-authorization-server`))).json());
    expect(urlsOf(body)).toEqual({
      issuer: "https://auth.example.com/tenant-a/",
      token_endpoint: `${BASE}/UserService/connect/token`,
      jwks_uri: `${BASE}/.well-known/jwks.json`,
      revocation_endpoint: `${BASE}/UserService/connect/revocation`,
      introspection_endpoint: `${BASE}/UserService/connect/introspect`,
    });
    expect(h.app.owns("/.well-known/oauth-authorization-server/tenant-a")).toBe(true);
    // Only that path: another tenant's, or the issuer path with the terminating slash, is not ours.
    for (const path of ["/.well-known/oauth-authorization-server/tenant-b", "/.well-known/oauth-authorization-server/tenant-a/"]) {
      expect(h.app.owns(path)).toBe(false);
      const r = await get(h, `${BASE}${path}`);
      expect({ status: r.status, body: r.body }).toEqual({ status: 404, body: { error: 1404, message: "Not found." } });
    }
  });

  it.each(["https://auth.example.com/?tenant=a", "https://auth.example.com/a#x", "https://auth.example.com?", "https://auth.example.com/#"])(
    "RFC 8414 §2: an issuer URL with a query or fragment (%s) is refused when the app is made",
    async (issuer) => {
      await expect(harness({ issuer })).rejects.toThrow(new TypeError("issuer must be a URL without a query or fragment (RFC 8414 §2)"));
    },
  );

  it.each(["https://auth.example.com", "https://auth.example.com/"])(
    "RFC 8414 §3: an issuer without a path (%s) beside a base path gets its metadata at the root well-known URL",
    async (issuer) => {
      const h = await harness({ issuer, basePath: "/auth" });
      expect(h.app.owns("/.well-known/oauth-authorization-server")).toBe(true);
      const res = await h.app.fetch(new Request("https://auth.example.com/.well-known/oauth-authorization-server"));
      expect(res.status).toBe(200);
      const body = (await res.json()) as Record<string, unknown>;
      expect(urlsOf(body)).toMatchObject({ issuer, token_endpoint: "https://auth.example.com/auth/UserService/connect/token" });
      expect(body).toEqual(await (await h.app.fetch(new Request("https://auth.example.com/auth/.well-known/oauth-authorization-server"))).json());
      // Nothing else at the root is ours.
      expect(h.app.owns("/.well-known/jwks.json")).toBe(false);
    },
  );

  it("RFC 8414 §3.1: with a base path and an issuer path that differs, both inserted paths serve the metadata", async () => {
    const h = await harness({ issuer: "https://auth.example.com/tenant-a", basePath: "/api" });
    const viaIssuer = await h.app.fetch(new Request("http://evil.example/.well-known/oauth-authorization-server/tenant-a"));
    const viaBase = await h.app.fetch(new Request("http://evil.example/.well-known/oauth-authorization-server/api"));
    expect([viaIssuer.status, viaBase.status]).toEqual([200, 200]);
    const body = (await viaIssuer.json()) as Record<string, unknown>;
    expect(body).toEqual(await viaBase.json());
    expect(urlsOf(body)).toMatchObject({ issuer: "https://auth.example.com/tenant-a", token_endpoint: "https://auth.example.com/api/UserService/connect/token" });
  });

  it("a wrong method on the token endpoint -> 405 with Allow: POST, in the OAuth error shape", async () => {
    const h = await harness();
    const res = await h.app.fetch(new Request(`${BASE}/UserService/connect/token`));
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expect(await res.json()).toEqual({ error: "invalid_request", error_description: "Use POST for this endpoint." });
  });

  it.each(["constructor", "__proto__", "valueOf", "toString", "hasOwnProperty"])(
    "a custom method named %s (an Object.prototype member) is an unknown method: 405 on every route table, through handle()",
    async (method) => {
      const h = await harness({ console: { enabled: true } });
      const decode = (body: Uint8Array | null) => JSON.parse(new TextDecoder().decode(body!)) as unknown;
      const token = await h.app.handle(new Request(`${BASE}/UserService/connect/token`, { method }));
      expect(token.status).toBe(405);
      expect(token.headers.allow).toBe("POST");
      expect(decode(token.body)).toEqual({ error: "invalid_request", error_description: "Use POST for this endpoint." });
      const jwks = await h.app.handle(new Request(`${BASE}/.well-known/jwks.json`, { method }));
      expect(jwks.status).toBe(405);
      expect(jwks.headers.allow).toBe("GET, HEAD");
      expect(decode(jwks.body)).toEqual({ error: 1405, message: "Use GET, HEAD for this endpoint." });
      const session = await h.app.handle(new Request(`${BASE}/console/api/session`, { method }));
      expect(session.status).toBe(405);
      expect(session.headers.allow).toBe("GET, POST, HEAD");
      expect(decode(session.body)).toEqual({ error: 1405, message: "Use GET, POST, HEAD for this endpoint." });
      // Paths are looked up the same way: a path named after a prototype member is simply unknown.
      const path = await h.app.handle(new Request(`${BASE}/${method}`));
      expect(path.status).toBe(404);
      expect(decode(path.body)).toEqual({ error: 1404, message: "Not found." });
    },
  );

  it("the method check comes before authentication: GET /plants without a token is 405, not 401", async () => {
    const h = await harness();
    const r = await get(h, `${BASE}/plants`);
    expect(r.status).toBe(405);
    expect(r.wwwAuthenticate).toBeNull();
  });
});

describe("basePath mounting", () => {
  it("routes live under /api and not at the root", async () => {
    const h = await harness({ basePath: "/api" });
    const API = `${BASE}/api`;
    const meta = await get(h, `${API}/.well-known/oauth-authorization-server`);
    expect(meta.status).toBe(200);
    expect(meta.body).toEqual({
      issuer: API,
      token_endpoint: `${API}/UserService/connect/token`,
      jwks_uri: `${API}/.well-known/jwks.json`,
      grant_types_supported: ["client_credentials", "password", "refresh_token"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      token_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      revocation_endpoint: `${API}/UserService/connect/revocation`,
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      revocation_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      introspection_endpoint: `${API}/UserService/connect/introspect`,
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      introspection_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      scopes_supported: SCOPES,
      response_types_supported: [],
    });
    expect((await get(h, `${API}/.well-known/jwks.json`)).status).toBe(200);

    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/jwks.json", "/plants", "/rbac/ServerCommand/GetAccountList", "/UserService/connect/token"]) {
      const root = await get(h, `${BASE}${path}`);
      expect(root.status).toBe(404);
      expect(root.body).toEqual({ error: 1404, message: "Not found." });
    }
    for (const path of ["/api", "/api/", "/apiplants", "/api2/plants", "/API/plants"]) {
      expect((await get(h, `${BASE}${path}`)).status).toBe(404);
    }

    // The token endpoint, the plant store and the listing all work under the prefix; tokens carry iss = the prefixed base.
    const tokenRes = await h.app.fetch(
      new Request(`${API}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) },
        body: "grant_type=client_credentials",
      }),
    );
    expect(tokenRes.status).toBe(200);
    const { access_token } = (await tokenRes.json()) as { access_token: string };
    expect(decodeJwt(access_token)).toMatchObject({ iss: API, aud: API });
    const plant = await read(await postPlant(h.app, '{"id":1,"name":"fern"}', { token: access_token, url: `${API}/plants` }));
    expect(plant.status).toBe(200);
    expect(plant.text).toBe('{"id":1,"name":"fern"}');
    const accounts = await read(await getAccounts(h.app, access_token, "", `${API}/rbac/ServerCommand/GetAccountList`));
    expect(accounts.status).toBe(200);
    expect((accounts.body as { total: number }).total).toBe(1);
  });

  it("a trailing slash in basePath is normalised", async () => {
    const h = await harness({ basePath: "/api/" });
    expect((await get(h, `${BASE}/api/.well-known/jwks.json`)).status).toBe(200);
  });
});

describe("issuer, baseUrl and audience options", () => {
  const INTERNAL = "http://10.0.0.5:8080";

  it("metadata and tokens use the configured issuer and baseUrl, not the request's origin", async () => {
    const h = await harness({ issuer: "https://issuer.example.test", baseUrl: "https://public.example.test/auth/" });
    const meta = await get(h, `${INTERNAL}/.well-known/oauth-authorization-server`);
    expect(meta.body).toEqual({
      issuer: "https://issuer.example.test",
      token_endpoint: "https://public.example.test/auth/UserService/connect/token",
      jwks_uri: "https://public.example.test/auth/.well-known/jwks.json",
      grant_types_supported: ["client_credentials", "password", "refresh_token"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      token_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      revocation_endpoint: "https://public.example.test/auth/UserService/connect/revocation",
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      revocation_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      introspection_endpoint: "https://public.example.test/auth/UserService/connect/introspect",
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      introspection_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      scopes_supported: SCOPES,
      response_types_supported: [],
    });
    const token = await clientToken(h); // minted via BASE: the origin must not matter
    expect(decodeJwt(token)).toMatchObject({ iss: "https://issuer.example.test", aud: "https://issuer.example.test" });
    // Accepted whatever origin the request reached us on.
    const r = await read(await getAccounts(h.app, token, "", `${INTERNAL}/rbac/ServerCommand/GetAccountList`));
    expect(r.status).toBe(200);
  });

  it("baseUrl alone sets the issuer too", async () => {
    const h = await harness({ baseUrl: "https://public.example.test" });
    const meta = (await get(h, `${INTERNAL}/.well-known/oauth-authorization-server`)).body as Record<string, unknown>;
    expect(meta.issuer).toBe("https://public.example.test");
    expect(meta.token_endpoint).toBe("https://public.example.test/UserService/connect/token");
    expect(decodeJwt((await passwordTokens(h)).access_token)).toMatchObject({ iss: "https://public.example.test", aud: "https://public.example.test" });
  });

  it("audience sets aud of issued tokens, and the APIs check it", async () => {
    const h = await harness({ issuer: "https://issuer.example.test", audience: "https://api.example.test" });
    const token = await clientToken(h);
    expect(decodeJwt(token)).toMatchObject({ iss: "https://issuer.example.test", aud: "https://api.example.test" });
    expect((await getAccounts(h.app, token)).status).toBe(200);
  });

  it("without an issuer option, a token minted on one origin is not accepted on another", async () => {
    const h = await harness();
    const token = await clientToken(h);
    const r = await read(await getAccounts(h.app, token, "", "https://other-host.example.test/rbac/ServerCommand/GetAccountList"));
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ error: 1202, message: "The access token is invalid or expired." });
    // Same origin: fine.
    expect((await getAccounts(h.app, token)).status).toBe(200);
    // The token endpoint itself answers on any origin, with iss from that origin.
    const other = await tokenRequest(
      { fetch: (req: Request) => h.app.fetch(new Request(req.url.replace(BASE, "https://other-host.example.test"), req)) } as typeof h.app,
      { grant_type: "client_credentials" },
      { authorization: basic(h.clientId, h.clientSecret) },
    );
    expect(decodeJwt(((await other.json()) as { access_token: string }).access_token).iss).toBe("https://other-host.example.test");
  });

  it("invalid options fail at construction", async () => {
    await expect(harness({ issuer: undefined, baseUrl: "not a url" })).rejects.toThrow(TypeError);
    await expect(harness({ basePath: "api" })).rejects.toThrow(TypeError);
    await expect(harness({ basePath: "/api?x=1" })).rejects.toThrow(TypeError);
  });

  it("basePath is a URL path as requests spell it: a ';' (which ended the console cookie's Path early), a space, a raw non-ASCII character or a dot segment is refused; %XX and sub-delimiters are taken", async () => {
    const refusal = new TypeError(
      "basePath must be a URL path as requests spell it: '/' and segments of letters, digits, - . _ ~ ! $ & ' ( ) * + , = : @ or %XX (no ';', space or other character)",
    );
    for (const basePath of ["/x;Domain=evil.example", "/a;b", "/a b", "/t\u00e9", "/a\r\nSet-Cookie: x=1", "/a%zz", "/a\\b", "/a\"b"]) {
      await expect(harness({ basePath }), JSON.stringify(basePath)).rejects.toThrow(refusal);
    }
    // A '.' or '..' segment (%2e too): the URL parser removes it from every request's path, so such
    // a basePath matched no request (the app answered 404 to everything under it).
    const dots = new TypeError("basePath must not have '.' or '..' segments (%2e included): a request's path never has them, the URL parser removes them");
    for (const basePath of ["/a/../b", "/./x", "/a/.", "/a/..", "/a/%2e%2E/b", "/a/.%2e", "/%2e/x"]) {
      await expect(harness({ basePath }), JSON.stringify(basePath)).rejects.toThrow(dots);
    }
    // What a request spells: the percent-encoded form of /té, and sub-delimiters, route as given;
    // dots that are not a whole segment are no dot segment.
    for (const basePath of ["/t%C3%A9", "/v1/a-b_c.d~e/x!$&'()*+,=:@", "/.../.x/a..b"]) {
      const h = await harness({ basePath });
      const res = await h.app.fetch(new Request(`${BASE}${basePath}/.well-known/jwks.json`));
      expect([basePath, res.status]).toEqual([basePath, 200]);
    }
  });
});

describe("core portability", () => {
  // Typed locally and imported by a computed specifier so the core's typecheck keeps "types": [] (no Node globals leak into src).
  type Fs = { readdirSync(path: URL, options: { recursive: true }): string[]; readFileSync(path: URL, encoding: "utf8"): string };
  const load = async () => {
    const fsName = "node:fs";
    const moduleName = "node:module";
    const fs = (await import(/* @vite-ignore */ fsName)) as Fs;
    const { builtinModules } = (await import(/* @vite-ignore */ moduleName)) as { builtinModules: string[] };
    const srcDir = new URL("../src/", import.meta.url);
    const files = fs
      .readdirSync(srcDir, { recursive: true })
      .filter((f) => /\.(?:ts|mts|js|mjs)$/.test(f))
      .sort();
    const pkg = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { dependencies?: Record<string, string> };
    return { fs, builtinModules, srcDir, files, deps: Object.keys(pkg.dependencies ?? {}) };
  };

  /** Code lines only: TSDoc and line comments may show other packages in examples. */
  const codeOf = (text: string) =>
    text
      .split("\n")
      .filter((line) => !/^\s*(?:\/\*\*?|\*|\/\/)/.test(line))
      .join("\n");

  it("no file under packages/core/src imports node:* or a Node built-in, and bare imports are declared dependencies", async () => {
    const { fs, builtinModules, srcDir, files, deps } = await load();
    expect(files.length).toBeGreaterThan(10);
    const offenders: string[] = [];
    let bareSeen = 0;
    for (const file of files) {
      const code = codeOf(fs.readFileSync(new URL(file, srcDir), "utf8"));
      const specifiers = [...code.matchAll(/\b(?:from|import|require)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!);
      for (const s of specifiers) {
        if (s.startsWith(".")) continue;
        bareSeen++;
        const root = s.startsWith("@") ? s.split("/").slice(0, 2).join("/") : s.split("/")[0]!;
        if (s.startsWith("node:") || builtinModules.includes(s) || builtinModules.includes(root)) offenders.push(`${file}: imports ${s} (Node built-in)`);
        else if (!deps.includes(root)) offenders.push(`${file}: imports ${s}, not a dependency of @plantgate/core`);
      }
      if (/\b(?:process\.|Buffer\.|__dirname|__filename|require\.resolve)/.test(code)) offenders.push(`${file}: uses a Node global`);
    }
    expect(bareSeen).toBeGreaterThan(0); // the scan found jose, so it is not vacuous
    expect(offenders).toEqual([]);
  });
});

describe("fetch() and handle() answer alike", () => {
  it("routes by the pathname of http(s) URLs only: another scheme's text after '://' is not a route", async () => {
    const h = await harness();
    for (const url of ["blob:http://h/UserService/connect/token", "foo:bar://x/UserService/connect/token"]) {
      const r = await get(h, url, { method: "POST" });
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: 1404, message: "Not found." });
    }
    const q = await get(h, `${BASE}/.well-known/jwks.json?x=/UserService/connect/token#frag`);
    expect(q.status).toBe(200);
  });

  it("handle() gives fetch()'s status, headers and body as plain data, HEAD without content", async () => {
    const h = await harness();
    const url = `${BASE}/.well-known/oauth-authorization-server`;
    const viaFetch = await h.app.fetch(new Request(url));
    const viaHandle = await h.app.handle(new Request(url));
    expect(viaHandle.status).toBe(viaFetch.status);
    expect(viaHandle.headers).toEqual(Object.fromEntries(viaFetch.headers));
    expect(new TextDecoder().decode(viaHandle.body!)).toBe(await viaFetch.text());
    const head = await h.app.handle(new Request(url, { method: "HEAD" }));
    expect(head).toEqual({ status: 200, headers: viaHandle.headers, body: null });
    // The contract is the two methods and their typed second argument: no registered symbols.
    expect(Object.getOwnPropertySymbols(h.app)).toEqual([]);
  });
});

describe("HandleInfo.readBody: the adapter's direct body read", () => {
  const form = (h: Awaited<ReturnType<typeof harness>>) =>
    new TextEncoder().encode(`grant_type=client_credentials&client_id=${h.clientId}&client_secret=${encodeURIComponent(h.clientSecret)}`);
  const post = (path: string, type: string) =>
    // The Request's own body is junk: only readBody's bytes can make these requests succeed.
    new Request(`${BASE}${path}`, { method: "POST", headers: { "content-type": type }, body: "not the body" });
  const decode = (body: Uint8Array | null) => JSON.parse(new TextDecoder().decode(body!)) as Record<string, unknown>;

  it("is used instead of request.body, once, with the app's maxBodyBytes", async () => {
    const h = await harness({ maxBodyBytes: 4096 });
    const limits: number[] = [];
    const answer = await h.app.handle(post("/UserService/connect/token", "application/x-www-form-urlencoded"), {
      readBody: async (maxBytes) => {
        limits.push(maxBytes);
        return form(h);
      },
    });
    expect(answer.status).toBe(200);
    expect(decode(answer.body)).toMatchObject({ token_type: "Bearer", expires_in: 7200 });
    expect(limits).toEqual([4096]);
    const token = decode(answer.body).access_token as string;
    const plant = await h.app.fetch(post("/plants", "application/json"), { readBody: async () => new TextEncoder().encode('{"id":9007199254740993,"name":"Fern"}') });
    expect(plant.status).toBe(401); // the bearer check comes first; readBody is not even needed
    const created = await h.app.handle(
      new Request(`${BASE}/plants`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: "junk" }),
      { readBody: async () => new TextEncoder().encode('{"id":9007199254740993,"name":"Fern"}') },
    );
    expect(created.status).toBe(200);
    expect(new TextDecoder().decode(created.body!)).toBe('{"id":9007199254740993,"name":"Fern"}');
  });

  it("null means too large, a rejection an unreadable body: the documented 400s", async () => {
    const h = await harness();
    const tooLarge = await h.app.handle(post("/UserService/connect/token", "application/x-www-form-urlencoded"), { readBody: async () => null });
    expect(tooLarge.status).toBe(400);
    expect(decode(tooLarge.body)).toEqual({ error: "invalid_request", error_description: "The request body exceeds 65536 bytes." });
    const broken = await h.app.handle(post("/UserService/connect/token", "application/x-www-form-urlencoded"), {
      readBody: () => Promise.reject(new Error("connection reset")),
    });
    expect(broken.status).toBe(400);
    expect(decode(broken.body)).toEqual({ error: "invalid_request", error_description: "The request body could not be read." });
  });
});

describe("owns(path): which paths plantgate answers", () => {
  const paths = [
    "/api/UserService/connect/token",
    "/api/UserService/connect/revocation",
    "/api/plants",
    "/api/plants/",
    "/api/rbac/ServerCommand/GetAccountList",
    "/api/.well-known/jwks.json",
    "/api/.well-known/oauth-authorization-server",
    "/.well-known/oauth-authorization-server/api",
    "/.well-known/oauth-authorization-server",
    "/api/openapi.json",
    "/api/console",
    "/api/console/",
    "/api/console/api/session",
    "/api/console/api/clients/a%2Fb/secret",
    "/api/console/api/clients//secret",
    "/api/console/nope",
    "/api/console/%E0%A4%A",
    "/api",
    "/api/",
    "/api/nope",
    "/UserService/connect/token",
    "/health",
    "/apiary/plants",
  ];

  it("says true exactly where handle() answers something other than the 1404 'no such route', with and without the console", async () => {
    for (const options of [{ basePath: "/api" }, { basePath: "/api", console: { enabled: true } }]) {
      const h = await harness(options);
      for (const path of paths) {
        for (const method of ["GET", "POST"]) {
          const answer = await h.app.handle(new Request(`${BASE}${path}`, { method, ...(method === "POST" ? { body: "" } : {}) }));
          const unknownRoute = answer.status === 404 && new TextDecoder().decode(answer.body!) === '{"error":1404,"message":"Not found."}';
          expect(h.app.owns(path), `${method} ${path} with ${JSON.stringify(options)}`).toBe(!unknownRoute);
        }
      }
    }
  });

  it("follows the options: the console's paths only when it is enabled, every path relative to basePath", async () => {
    const plain = await harness();
    expect(plain.app.owns("/UserService/connect/token")).toBe(true);
    expect(plain.app.owns("/console")).toBe(false);
    expect(plain.app.owns("/console/api/session")).toBe(false);
    const withConsole = await harness({ basePath: "/auth", console: { enabled: true } });
    expect(withConsole.app.owns("/auth/console/api/session")).toBe(true);
    expect(withConsole.app.owns("/console/api/session")).toBe(false);
    expect(withConsole.app.owns("/auth/UserService/connect/token")).toBe(true);
    expect(withConsole.app.owns("/UserService/connect/token")).toBe(false);
  });
});

describe("no issuer outside loopback (finding 3)", () => {
  // From an address: a request without one is a warning of its own (addressless-warning.test.ts).
  const jwks = (origin: string) => new Request(`${origin}/.well-known/oauth-authorization-server`);
  const from = { clientIp: "203.0.113.9" };

  it("warns once, at the first request from a non-loopback host, when neither issuer nor baseUrl is set", async () => {
    const warnings: string[] = [];
    const h = await harness({ logger: { error() {}, warn: (m: string) => void warnings.push(m) } });
    await h.app.fetch(jwks("http://127.0.0.1:3000"), from);
    await h.app.fetch(jwks("http://localhost:3000"), from);
    await h.app.fetch(jwks("http://[::1]:3000"), from);
    expect(warnings).toEqual([]);
    await h.app.fetch(jwks("http://a.example"), from);
    await h.app.fetch(jwks("http://b.example"), from);
    expect(warnings).toEqual([
      "plantgate: neither issuer nor baseUrl is configured, so token issuer and audience follow each request's Host; set issuer (or baseUrl) for any deployment reachable beyond loopback",
    ]);
  });

  it("says nothing with an issuer configured", async () => {
    const warnings: string[] = [];
    const h = await harness({ issuer: "https://auth.example.com", logger: { error() {}, warn: (m: string) => void warnings.push(m) } });
    await h.app.fetch(jwks("http://a.example"), from);
    expect(warnings).toEqual([]);
  });
});
