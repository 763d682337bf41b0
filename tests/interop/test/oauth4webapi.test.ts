/**
 * oauth4webapi 3.8.8 against the real example server: RFC 8414 discovery, every grant with the
 * library's own response processing, and its RFC 9068 resource-server check of the access tokens.
 */
import { createPlantgate } from "@plantgate/core";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_SCOPE,
  expectTokenWorks,
  type Fixture,
  OFFLINE_ACCESS,
  rejectionOf,
  SERVER_COMMANDS,
  startFixture,
  stopFixture,
  TOKEN_PATH,
  USER_APIS,
  verifyAccessToken,
} from "./helpers.js";

let fx: Fixture;
let issuer: URL;
let as: oauth.AuthorizationServer;
let c: oauth.Client;
const insecure = { [oauth.allowInsecureRequests]: true } as const;

beforeAll(async () => {
  fx = await startFixture();
  issuer = new URL(fx.url);
  as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
  c = { client_id: fx.clientId };
});
afterAll(async () => {
  await stopFixture(fx);
});

const auths = {
  client_secret_basic: () => oauth.ClientSecretBasic(fx.clientSecret),
  client_secret_post: () => oauth.ClientSecretPost(fx.clientSecret),
};

describe("oauth4webapi discovery", () => {
  it("processDiscoveryResponse accepts the RFC 8414 document", () => {
    expect(as).toMatchObject({
      issuer: fx.url,
      token_endpoint: `${fx.url}${TOKEN_PATH}`,
      jwks_uri: `${fx.url}/.well-known/jwks.json`,
      grant_types_supported: ["client_credentials", "password", "refresh_token"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      token_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
    });
  });

  it("an issuer with a path (RFC 8414 §3.1): oauth4webapi finds the document at the inserted path and accepts it", async () => {
    // In process: the issuer names a tenant whose endpoints are at the origin's root; oauth4webapi
    // asks for /.well-known/oauth-authorization-server/tenant-a, the app answers through fetch.
    const app = createPlantgate({ issuer: "https://auth.example.com/tenant-a", baseUrl: "https://auth.example.com" });
    const asked: string[] = [];
    const customFetch = (url: string, init: RequestInit) => {
      asked.push(url);
      return app.fetch(new Request(url, init));
    };
    const tenant = new URL("https://auth.example.com/tenant-a");
    const found = await oauth.processDiscoveryResponse(tenant, await oauth.discoveryRequest(tenant, { algorithm: "oauth2", [oauth.customFetch]: customFetch }));
    expect(asked).toEqual(["https://auth.example.com/.well-known/oauth-authorization-server/tenant-a"]);
    expect(found).toMatchObject({ issuer: "https://auth.example.com/tenant-a", token_endpoint: `https://auth.example.com${TOKEN_PATH}` });
  });

  it("processDiscoveryResponse really checks the issuer (a different expected issuer fails)", async () => {
    const response = await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure });
    const other = new URL(fx.url.replace("127.0.0.1", "localhost"));
    const error = await rejectionOf(oauth.processDiscoveryResponse(other, response));
    expect(error).toBeInstanceOf(oauth.OperationProcessingError);
    expect(error).toMatchObject({ code: oauth.JSON_ATTRIBUTE_COMPARISON });
  });
});

describe.each(Object.keys(auths) as (keyof typeof auths)[])("oauth4webapi with %s", (method) => {
  const auth = () => auths[method]();

  it("client credentials grant", async () => {
    const response = await oauth.clientCredentialsGrantRequest(as, c, auth(), new URLSearchParams(), insecure);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("pragma")).toBe("no-cache");
    const tokens = await oauth.processClientCredentialsResponse(as, c, response);
    expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 7200, scope: DEFAULT_SCOPE });
    expect(tokens.refresh_token).toBeUndefined();
    await verifyAccessToken(fx, tokens.access_token, { sub: `client:${fx.clientId}`, scope: DEFAULT_SCOPE });
    await expectTokenWorks(fx.url, tokens.access_token);

    // The library's own RFC 9068 validation as a resource server would run it.
    const request = new Request(`${fx.url}/plants`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    const claims = await oauth.validateJwtAccessToken(as, request, fx.url, insecure);
    expect(claims).toMatchObject({ iss: fx.url, aud: fx.url, sub: `client:${fx.clientId}`, client_id: fx.clientId, scope: DEFAULT_SCOPE });
  });

  it("password grant (genericTokenEndpointRequest) with offline_access, then refresh", async () => {
    const scope = `${USER_APIS} ${OFFLINE_ACCESS}`;
    const first = await oauth.processGenericTokenEndpointResponse(
      as,
      c,
      await oauth.genericTokenEndpointRequest(as, c, auth(), "password", { username: fx.username, password: fx.password, scope }, insecure),
    );
    expect(first).toMatchObject({ token_type: "bearer", expires_in: 7200, scope, refresh_token: expect.any(String) });
    await verifyAccessToken(fx, first.access_token, { sub: fx.userId, scope });
    await expectTokenWorks(fx.url, first.access_token);

    const second = await oauth.processRefreshTokenResponse(
      as,
      c,
      await oauth.refreshTokenGrantRequest(as, c, auth(), first.refresh_token!, insecure),
    );
    expect(second).toMatchObject({ token_type: "bearer", expires_in: 7200, scope, refresh_token: expect.any(String) });
    expect(second.refresh_token).not.toBe(first.refresh_token);
    await verifyAccessToken(fx, second.access_token, { sub: fx.userId, scope });
    await expectTokenWorks(fx.url, second.access_token);
    const request = new Request(`${fx.url}/plants`, { headers: { authorization: `Bearer ${second.access_token}` } });
    expect(await oauth.validateJwtAccessToken(as, request, fx.url, insecure)).toMatchObject({ sub: fx.userId, scope });

    const reused = await oauth.refreshTokenGrantRequest(as, c, auth(), first.refresh_token!, insecure);
    const error = await rejectionOf(oauth.processRefreshTokenResponse(as, c, reused));
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    expect(error).toMatchObject({ error: "invalid_grant", status: 400 });
  });

  it("a scope the server does not know is invalid_scope", async () => {
    const response = await oauth.clientCredentialsGrantRequest(as, c, auth(), { scope: `${SERVER_COMMANDS} Unknown_Scope` }, insecure);
    const error = await rejectionOf(oauth.processClientCredentialsResponse(as, c, response));
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    expect(error).toMatchObject({ error: "invalid_scope", status: 400 });
  });

  it("an unknown client is 401 with a Basic challenge", async () => {
    const stranger: oauth.Client = { client_id: "nobody-here" };
    const clientAuth = method === "client_secret_basic" ? oauth.ClientSecretBasic("whatever-secret-123") : oauth.ClientSecretPost("whatever-secret-123");
    const response = await oauth.clientCredentialsGrantRequest(as, stranger, clientAuth, new URLSearchParams(), insecure);
    const error = await rejectionOf(oauth.processClientCredentialsResponse(as, stranger, response));
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect(error).toMatchObject({ status: 401, cause: [{ scheme: "basic", parameters: { realm: "plantgate", charset: "UTF-8" } }] });
    expect(await response.json()).toEqual({ error: "invalid_client", error_description: expect.any(String) });
  });
});

describe("oauth4webapi, RFC 6749 App. B credentials", () => {
  it("a client id and a non-ASCII secret with reserved characters work with Basic and with post", async () => {
    const clientId = "svc:o4w+1%2F(x)*!'~";
    const clientSecret = "sécret ünïcode 🌱 +%20&=:/?#";
    await fx.server.app.admin.createClient({ clientId, clientSecret, grantTypes: ["client_credentials"] });
    const odd: oauth.Client = { client_id: clientId };
    for (const clientAuth of [oauth.ClientSecretBasic(clientSecret), oauth.ClientSecretPost(clientSecret)]) {
      const response = await oauth.clientCredentialsGrantRequest(as, odd, clientAuth, new URLSearchParams(), insecure);
      const tokens = await oauth.processClientCredentialsResponse(as, odd, response);
      await verifyAccessToken(fx, tokens.access_token, { sub: `client:${clientId}`, clientId, scope: DEFAULT_SCOPE });
    }
  });
});
