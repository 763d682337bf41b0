/**
 * The APIs over the socket with node-fetch 3.3.2 as the HTTP client, using tokens that real OAuth
 * clients obtained (openid-client for client credentials, simple-oauth2 for password + refresh).
 */
import fetch from "node-fetch";
import * as client from "openid-client";
import { ResourceOwnerPassword, type AccessToken } from "simple-oauth2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ACCOUNTS_PATH,
  DEFAULT_SCOPE,
  type Fixture,
  getAccounts,
  OFFLINE_ACCESS,
  postPlant,
  startFixture,
  stopFixture,
  TOKEN_PATH,
  USER_APIS,
  verifyAccessToken,
} from "./helpers.js";

const MONSTERA = '{"id":9223372036854775807,"name":"Monstera","tag":"indoor"}';

let fx: Fixture;
let machineToken: string;
let userToken: AccessToken;

beforeAll(async () => {
  fx = await startFixture();
  const config = await client.discovery(new URL(fx.url), fx.clientId, undefined, client.ClientSecretBasic(fx.clientSecret), {
    algorithm: "oauth2",
    execute: [client.allowInsecureRequests],
  });
  machineToken = (await client.clientCredentialsGrant(config)).access_token;
  userToken = await new ResourceOwnerPassword({
    client: { id: fx.clientId, secret: fx.clientSecret },
    auth: { tokenHost: fx.url, tokenPath: TOKEN_PATH },
  }).getToken({ username: fx.username, password: fx.password, scope: [USER_APIS, OFFLINE_ACCESS] });
  await verifyAccessToken(fx, machineToken, { sub: `client:${fx.clientId}`, scope: DEFAULT_SCOPE });
  await verifyAccessToken(fx, userToken.token.access_token as string, { sub: fx.userId, scope: `${USER_APIS} ${OFFLINE_ACCESS}` });
});
afterAll(async () => {
  await stopFixture(fx);
});

describe("GET /rbac/ServerCommand/GetAccountList", () => {
  it("200 with the whole page body", async () => {
    const response = await getAccounts(fx.url, machineToken, "page=1&pageSize=20");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json\b/);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const body = (await response.json()) as { accounts: { createdAt: string }[] };
    expect(body).toEqual({
      accounts: [
        {
          id: fx.userId,
          username: fx.username,
          displayName: null,
          email: null,
          roles: [],
          enabled: true,
          createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
        },
      ],
      page: 1,
      pageSize: 20,
      total: 1,
      totalPages: 1,
    });
    const createdAt = Date.parse(body.accounts[0]!.createdAt);
    expect(Math.abs(createdAt - Date.now())).toBeLessThan(5 * 60_000);
  });

  it("the user's own token works too", async () => {
    const response = await getAccounts(fx.url, userToken.token.access_token as string);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ total: 1, accounts: [{ id: fx.userId }] });
  });

  it("no token: 401 with a Bearer challenge and an Error body", async () => {
    const response = await getAccounts(fx.url, null);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe('Bearer realm="plantgate"');
    expect(await response.json()).toEqual({ error: 1201, message: expect.any(String) });
  });

  it("a tampered token: 401 with error=\"invalid_token\"", async () => {
    const [header, payload, signature] = machineToken.split(".") as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString()) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: fx.userId })).toString("base64url");
    const response = await getAccounts(fx.url, `${header}.${forged}.${signature}`);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer realm="plantgate", error="invalid_token"/);
    expect(await response.json()).toEqual({ error: 1202, message: expect.any(String) });
  });

  it("a bad pageSize is 400 with an Error body", async () => {
    const response = await getAccounts(fx.url, machineToken, "page=1&pageSize=0");
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: 1102, message: expect.any(String) });
  });
});

describe("POST /plants", () => {
  it("no token: 401 with WWW-Authenticate, and nothing is stored", async () => {
    const body = '{"id":7,"name":"Ghost"}';
    const response = await postPlant(fx.url, null, body);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe('Bearer realm="plantgate"');
    expect(await response.json()).toEqual({ error: 1201, message: expect.any(String) });
    // Had the unauthenticated request stored the plant, this would be 400 error 1006.
    const stored = await postPlant(fx.url, machineToken, body);
    expect(stored.status).toBe(200);
    expect(await stored.text()).toBe(body);
  });

  it("200 with the exact response text (int64 id round-trips)", async () => {
    const response = await postPlant(fx.url, userToken.token.access_token as string, MONSTERA);
    expect(response.headers.get("content-type")).toMatch(/^application\/json\b/);
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(text).toBe(MONSTERA);
  });

  it("the same id again is 400 error 1006", async () => {
    await postPlant(fx.url, machineToken, MONSTERA); // stored already unless run alone
    const response = await postPlant(fx.url, machineToken, MONSTERA);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: 1006, message: expect.any(String) });
  });

  it("a plant without tag comes back without tag", async () => {
    const response = await postPlant(fx.url, machineToken, '{"id":-9223372036854775808,"name":"Fern"}');
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('{"id":-9223372036854775808,"name":"Fern"}');
  });
});

describe("after a refresh", () => {
  it("the new access token works on both APIs", async () => {
    const refreshed = await userToken.refresh();
    const token = refreshed.token.access_token as string;
    expect(token).not.toBe(userToken.token.access_token);
    await verifyAccessToken(fx, token, { sub: fx.userId, scope: `${USER_APIS} ${OFFLINE_ACCESS}` });

    const list = await fetch(`${fx.url}${ACCOUNTS_PATH}?page=1&pageSize=20`, { headers: { authorization: `Bearer ${token}` } });
    expect(list.status).toBe(200);
    const plant = await postPlant(fx.url, token, '{"id":42,"name":"Pothos","tag":"hanging"}');
    expect(plant.status).toBe(200);
    expect(await plant.text()).toBe('{"id":42,"name":"Pothos","tag":"hanging"}');
  });
});

describe("GET /.well-known/jwks.json", () => {
  it("publishes public keys only", async () => {
    const response = await fetch(`${fx.url}/.well-known/jwks.json`);
    expect(response.status).toBe(200);
    const { keys } = (await response.json()) as { keys: Record<string, unknown>[] };
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", kid: expect.any(String) });
      for (const secret of ["d", "p", "q", "dp", "dq", "qi", "k"]) expect(key).not.toHaveProperty(secret);
    }
  });
});
