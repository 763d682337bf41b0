/**
 * private_key_jwt (RFC 7523 §2.2) with third-party clients against the real example server:
 * oauth4webapi 3.8.8's `PrivateKeyJwt` and openid-client 6.8.9's `PrivateKeyJwt` obtain
 * client_credentials tokens, introspect and revoke with assertions they sign themselves; a replayed
 * assertion is refused.
 */
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import * as client from "openid-client";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SCOPE, expectTokenWorks, type Fixture, rejectionOf, startFixture, stopFixture, TOKEN_PATH, verifyAccessToken } from "./helpers.js";

let fx: Fixture;
let as: oauth.AuthorizationServer;
const insecure = { [oauth.allowInsecureRequests]: true } as const;
const keys: Record<string, { privateKey: CryptoKey; clientId: string }> = {};

beforeAll(async () => {
  fx = await startFixture();
  const issuer = new URL(fx.url);
  as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
  for (const [alg, options] of [["ES256", {}], ["PS256", { modulusLength: 2048 }], ["EdDSA", {}]] as const) {
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...options });
    const clientId = `pkjwt-${alg.toLowerCase()}`;
    await fx.server.app.admin.createClient({ clientId, authMethod: "private_key_jwt", jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: `${alg}-k`, alg }] } });
    keys[alg] = { privateKey, clientId };
  }
});
afterAll(async () => {
  await stopFixture(fx);
});

describe("oauth4webapi PrivateKeyJwt", () => {
  it("discovery advertises private_key_jwt and its algorithms", () => {
    expect(as.token_endpoint_auth_methods_supported).toEqual(["client_secret_basic", "client_secret_post", "private_key_jwt"]);
    expect(as.token_endpoint_auth_signing_alg_values_supported).toEqual(["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"]);
  });

  for (const alg of ["ES256", "PS256", "EdDSA"]) {
    it(`${alg}: client_credentials through processClientCredentialsResponse; the token verifies as RFC 9068`, async () => {
      const { privateKey, clientId } = keys[alg]!;
      const c = { client_id: clientId };
      const res = await oauth.clientCredentialsGrantRequest(as, c, oauth.PrivateKeyJwt({ key: privateKey, kid: `${alg}-k` }), new URLSearchParams(), insecure);
      const tokens = await oauth.processClientCredentialsResponse(as, c, res);
      expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 7200, scope: DEFAULT_SCOPE });
      const { payload } = await verifyAccessToken({ url: fx.url, clientId }, tokens.access_token, { sub: `client:${clientId}`, scope: DEFAULT_SCOPE, clientId });
      expect(payload).toMatchObject({ client_id: clientId, sub: `client:${clientId}` });
      await expectTokenWorks(fx.url, tokens.access_token);
    });
  }

  it("introspection and revocation with PrivateKeyJwt (RFC 7662 / RFC 7009)", async () => {
    const { privateKey, clientId } = keys.ES256!;
    const c = { client_id: clientId };
    const auth = () => oauth.PrivateKeyJwt({ key: privateKey, kid: "ES256-k" });
    const tokens = await oauth.processClientCredentialsResponse(as, c, await oauth.clientCredentialsGrantRequest(as, c, auth(), new URLSearchParams(), insecure));
    const active = await oauth.processIntrospectionResponse(as, c, await oauth.introspectionRequest(as, c, auth(), tokens.access_token, insecure));
    expect(active).toMatchObject({ active: true, client_id: clientId, token_type: "Bearer" });
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, c, auth(), tokens.access_token, insecure));
    const after = await oauth.processIntrospectionResponse(as, c, await oauth.introspectionRequest(as, c, auth(), tokens.access_token, insecure));
    expect(after).toEqual({ active: false });
  });

  it("an assertion presented twice is refused the second time: 401 invalid_client", async () => {
    const { privateKey, clientId } = keys.ES256!;
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ jti: crypto.randomUUID() })
      .setProtectedHeader({ alg: "ES256", kid: "ES256-k" })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(`${fx.url}${TOKEN_PATH}`)
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(privateKey);
    const send = () =>
      fetch(`${fx.url}${TOKEN_PATH}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "client_credentials", client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", client_assertion: assertion }),
      });
    expect((await send()).status).toBe(200);
    const replay = await send();
    expect([replay.status, replay.headers.get("www-authenticate"), await replay.json()]).toEqual([
      401,
      'Basic realm="plantgate", charset="UTF-8"',
      { error: "invalid_client", error_description: "The client assertion was already used (jti)." },
    ]);
  });
});

describe("openid-client PrivateKeyJwt", () => {
  const discover = (alg: string) =>
    client.discovery(new URL(fx.url), keys[alg]!.clientId, undefined, client.PrivateKeyJwt({ key: keys[alg]!.privateKey, kid: `${alg}-k` }), {
      algorithm: "oauth2",
      execute: [client.allowInsecureRequests],
    });

  for (const alg of ["ES256", "PS256", "EdDSA"]) {
    it(`${alg}: clientCredentialsGrant gets a token`, async () => {
      const tokens = await client.clientCredentialsGrant(await discover(alg));
      expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 7200, scope: DEFAULT_SCOPE });
      await expectTokenWorks(fx.url, tokens.access_token);
    });
  }

  it("a key the server does not have for the client: ResponseBodyError invalid_client (401)", async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const config = await client.discovery(new URL(fx.url), keys.ES256!.clientId, undefined, client.PrivateKeyJwt({ key: privateKey, kid: "ES256-k" }), {
      algorithm: "oauth2",
      execute: [client.allowInsecureRequests],
    });
    const error = await rejectionOf(client.clientCredentialsGrant(config));
    // A 401 with WWW-Authenticate: openid-client reports the challenge, with the response body as cause.
    expect(error).toBeInstanceOf(client.WWWAuthenticateChallengeError);
    const res = (error as client.WWWAuthenticateChallengeError).response;
    expect([res.status, await res.json()]).toEqual([401, { error: "invalid_client", error_description: "The client assertion's signature does not verify with the client's keys." }]);
  });
});
