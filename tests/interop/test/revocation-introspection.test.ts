/**
 * oauth4webapi 3.8.8's RFC 7009 revocation and RFC 7662 introspection clients against the real
 * example server: endpoints found through RFC 8414 discovery, the library's own response checks.
 */
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getAccounts, OFFLINE_ACCESS, rejectionOf, startFixture, stopFixture, USER_APIS, type Fixture } from "./helpers.js";

let fx: Fixture;
let as: oauth.AuthorizationServer;
let c: oauth.Client;
const insecure = { [oauth.allowInsecureRequests]: true } as const;

beforeAll(async () => {
  fx = await startFixture();
  const issuer = new URL(fx.url);
  as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
  c = { client_id: fx.clientId };
});
afterAll(async () => {
  await stopFixture(fx);
});

async function passwordTokens() {
  return oauth.processGenericTokenEndpointResponse(
    as,
    c,
    await oauth.genericTokenEndpointRequest(
      as,
      c,
      oauth.ClientSecretBasic(fx.clientSecret),
      "password",
      { username: fx.username, password: fx.password, scope: `${USER_APIS} ${OFFLINE_ACCESS}` },
      insecure,
    ),
  );
}

describe("oauth4webapi revocation and introspection", () => {
  it("discovery advertises both endpoints and their client authentication methods", () => {
    expect(as).toMatchObject({
      revocation_endpoint: `${fx.url}/UserService/connect/revocation`,
      introspection_endpoint: `${fx.url}/UserService/connect/introspect`,
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      revocation_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      introspection_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
    });
  });

  it("RFC 7662: introspects an access token (client_secret_post) and a refresh token (client_secret_basic)", async () => {
    const tokens = await passwordTokens();
    const access = await oauth.processIntrospectionResponse(
      as,
      c,
      await oauth.introspectionRequest(as, c, oauth.ClientSecretPost(fx.clientSecret), tokens.access_token, insecure),
    );
    expect(access).toMatchObject({ active: true, client_id: fx.clientId, username: fx.username, sub: fx.userId, token_type: "Bearer", iss: fx.url, aud: fx.url });
    const refresh = await oauth.processIntrospectionResponse(
      as,
      c,
      await oauth.introspectionRequest(as, c, oauth.ClientSecretBasic(fx.clientSecret), tokens.refresh_token!, { ...insecure, additionalParameters: { token_type_hint: "refresh_token" } }),
    );
    expect(refresh).toMatchObject({ active: true, client_id: fx.clientId, username: fx.username, scope: `${USER_APIS} ${OFFLINE_ACCESS}` });
  });

  it("RFC 7009: revoking the access token makes the API refuse it; revoking the refresh token ends the family", async () => {
    const tokens = await passwordTokens();
    expect((await getAccounts(fx.url, tokens.access_token)).status).toBe(200);
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, c, oauth.ClientSecretBasic(fx.clientSecret), tokens.access_token, insecure));
    expect((await getAccounts(fx.url, tokens.access_token)).status).toBe(401);

    await oauth.processRevocationResponse(await oauth.revocationRequest(as, c, oauth.ClientSecretPost(fx.clientSecret), tokens.refresh_token!, insecure));
    const refreshed = await oauth.refreshTokenGrantRequest(as, c, oauth.ClientSecretBasic(fx.clientSecret), tokens.refresh_token!, insecure);
    expect(await rejectionOf(oauth.processRefreshTokenResponse(as, c, refreshed))).toMatchObject({ error: "invalid_grant", status: 400 });
    const after = await oauth.processIntrospectionResponse(
      as,
      c,
      await oauth.introspectionRequest(as, c, oauth.ClientSecretBasic(fx.clientSecret), tokens.refresh_token!, insecure),
    );
    expect(after).toEqual({ active: false });
  });

  it("a wrong client secret is invalid_client at both endpoints", async () => {
    const tokens = await passwordTokens();
    for (const request of [
      oauth.revocationRequest(as, c, oauth.ClientSecretBasic("wrong"), tokens.access_token, insecure),
      oauth.introspectionRequest(as, c, oauth.ClientSecretBasic("wrong"), tokens.access_token, insecure),
    ]) {
      const res = await request;
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: "invalid_client", error_description: "Client authentication failed." });
    }
  });
});
