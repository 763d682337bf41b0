/**
 * openid-client 6.8.9 against the real example server: RFC 8414 discovery, then every grant,
 * with the library's own response validation (oauth4webapi underneath).
 */
import * as client from "openid-client";
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
beforeAll(async () => {
  fx = await startFixture();
});
afterAll(async () => {
  await stopFixture(fx);
});

type Auth = "basic" | "post";

function discover(auth: Auth, secret = fx.clientSecret): Promise<client.Configuration> {
  const clientAuth = auth === "basic" ? client.ClientSecretBasic(secret) : client.ClientSecretPost(secret);
  return client.discovery(new URL(fx.url), fx.clientId, undefined, clientAuth, {
    algorithm: "oauth2",
    execute: [client.allowInsecureRequests],
  });
}

describe("openid-client discovery", () => {
  it("reads the RFC 8414 document at /.well-known/oauth-authorization-server", async () => {
    const requested: string[] = [];
    const config = await client.discovery(new URL(fx.url), fx.clientId, undefined, client.ClientSecretBasic(fx.clientSecret), {
      algorithm: "oauth2",
      execute: [client.allowInsecureRequests],
      [client.customFetch]: (url, options) => {
        requested.push(url);
        return fetch(url, options as RequestInit); // FetchBody includes Uint8Array, which TS 5.9 lib typing rejects
      },
    });
    expect(requested).toEqual([`${fx.url}/.well-known/oauth-authorization-server`]);
    expect(config.serverMetadata()).toMatchObject({
      issuer: fx.url,
      token_endpoint: `${fx.url}${TOKEN_PATH}`,
      jwks_uri: `${fx.url}/.well-known/jwks.json`,
      grant_types_supported: ["client_credentials", "password", "refresh_token"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "private_key_jwt"],
      token_endpoint_auth_signing_alg_values_supported: ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"],
      scopes_supported: [USER_APIS, SERVER_COMMANDS, OFFLINE_ACCESS],
    });
    expect(config.clientMetadata().client_id).toBe(fx.clientId);
  });
});

describe.each(["basic", "post"] as const)("openid-client with client_secret_%s", (auth) => {
  it("clientCredentialsGrant: bearer token without refresh token", async () => {
    const config = await discover(auth);
    const tokens = await client.clientCredentialsGrant(config);
    expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 7200, scope: DEFAULT_SCOPE });
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.expiresIn()).toBeGreaterThan(7100);
    await verifyAccessToken(fx, tokens.access_token, { sub: `client:${fx.clientId}`, scope: DEFAULT_SCOPE });
    await expectTokenWorks(fx.url, tokens.access_token);
  });

  it("clientCredentialsGrant with a narrower scope", async () => {
    const config = await discover(auth);
    const tokens = await client.clientCredentialsGrant(config, { scope: SERVER_COMMANDS });
    expect(tokens.scope).toBe(SERVER_COMMANDS);
    await verifyAccessToken(fx, tokens.access_token, { sub: `client:${fx.clientId}`, scope: SERVER_COMMANDS });
    await expectTokenWorks(fx.url, tokens.access_token);
  });

  it("genericGrantRequest 'password' with offline_access, then refreshTokenGrant rotates", async () => {
    const scope = `${USER_APIS} ${OFFLINE_ACCESS}`;
    const config = await discover(auth);
    const first = await client.genericGrantRequest(config, "password", { username: fx.username, password: fx.password, scope });
    expect(first).toMatchObject({ token_type: "bearer", expires_in: 7200, scope, refresh_token: expect.any(String) });
    await verifyAccessToken(fx, first.access_token, { sub: fx.userId, scope });
    await expectTokenWorks(fx.url, first.access_token);

    const second = await client.refreshTokenGrant(config, first.refresh_token!);
    expect(second).toMatchObject({ token_type: "bearer", expires_in: 7200, scope, refresh_token: expect.any(String) });
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    await verifyAccessToken(fx, second.access_token, { sub: fx.userId, scope });
    await expectTokenWorks(fx.url, second.access_token);

    // A refresh may narrow the scope (RFC 6749 §6); the access token carries the narrower scope.
    const third = await client.refreshTokenGrant(config, second.refresh_token!, { scope: USER_APIS });
    expect(third.scope).toBe(USER_APIS);
    expect(third.refresh_token).toEqual(expect.any(String));
    await verifyAccessToken(fx, third.access_token, { sub: fx.userId, scope: USER_APIS });
    await expectTokenWorks(fx.url, third.access_token);

    const error = await rejectionOf(client.refreshTokenGrant(config, first.refresh_token!));
    expect(error).toBeInstanceOf(client.ResponseBodyError);
    expect(error).toMatchObject({ error: "invalid_grant", status: 400 });
  });

  it("a wrong password is a ResponseBodyError invalid_grant", async () => {
    const config = await discover(auth);
    const error = await rejectionOf(
      client.genericGrantRequest(config, "password", { username: fx.username, password: "wrong-password" }),
    );
    expect(error).toBeInstanceOf(client.ResponseBodyError);
    expect(error).toMatchObject({ error: "invalid_grant", status: 400 });
  });

  it("offline_access with client_credentials is invalid_scope", async () => {
    const config = await discover(auth);
    const error = await rejectionOf(client.clientCredentialsGrant(config, { scope: `${USER_APIS} ${OFFLINE_ACCESS}` }));
    expect(error).toBeInstanceOf(client.ResponseBodyError);
    expect(error).toMatchObject({ error: "invalid_scope", status: 400 });
  });

  it("a wrong secret: 401 with a Basic challenge and an invalid_client body", async () => {
    const config = await discover(auth, `${fx.clientSecret}x`);
    const error = await rejectionOf(client.clientCredentialsGrant(config));
    // oauth4webapi reports a 401 carrying WWW-Authenticate as a challenge before looking at the body.
    expect(error).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    const challenge = error as client.WWWAuthenticateChallengeError;
    expect(challenge.status).toBe(401);
    expect(challenge.cause).toEqual([{ scheme: "basic", parameters: { realm: "plantgate", charset: "UTF-8" } }]);
    expect(await challenge.response.json()).toEqual({ error: "invalid_client", error_description: expect.any(String) });
  });
});
