/**
 * simple-oauth2 5.1.0 (hapi wreck underneath) against the real example server on a socket.
 */
import { ClientCredentials, ResourceOwnerPassword, type ModuleOptions } from "simple-oauth2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_SCOPE,
  expectTokenWorks,
  type Fixture,
  getAccounts,
  OFFLINE_ACCESS,
  rejectionOf,
  startFixture,
  stopFixture,
  TOKEN_PATH,
  USER_APIS,
  verifyAccessToken,
} from "./helpers.js";

/** The shape of the error simple-oauth2 rejects with on a non-2xx answer (a Boom from wreck). */
interface WreckResponseError extends Error {
  isBoom: boolean;
  output: { statusCode: number };
  data: { isResponseError: boolean; payload: unknown; headers: Record<string, string | undefined> };
}

function asWreckError(error: unknown): WreckResponseError {
  expect(error).toBeInstanceOf(Error);
  const e = error as WreckResponseError;
  expect(e.isBoom).toBe(true);
  expect(e.data?.isResponseError).toBe(true);
  return e;
}

let fx: Fixture;
beforeAll(async () => {
  fx = await startFixture();
});
afterAll(async () => {
  await stopFixture(fx);
});

const options = (authorizationMethod: "header" | "body", secret?: string): ModuleOptions => ({
  client: { id: fx.clientId, secret: secret ?? fx.clientSecret },
  auth: { tokenHost: fx.url, tokenPath: TOKEN_PATH },
  options: { authorizationMethod },
});

describe.each(["header", "body"] as const)("simple-oauth2, authorizationMethod '%s'", (method) => {
  it("ClientCredentials.getToken: access token, no refresh token", async () => {
    const accessToken = await new ClientCredentials(options(method)).getToken({});
    const token = accessToken.token;
    expect(token).toMatchObject({ token_type: "Bearer", expires_in: 7200, scope: DEFAULT_SCOPE });
    expect(token).not.toHaveProperty("refresh_token");
    expect(accessToken.expired()).toBe(false);
    expect(typeof token.access_token).toBe("string");

    await verifyAccessToken(fx, token.access_token as string, { sub: `client:${fx.clientId}`, scope: DEFAULT_SCOPE });
    await expectTokenWorks(fx.url, token.access_token as string);
  });

  it("ClientCredentials.getToken with a narrower scope (array form)", async () => {
    const { token } = await new ClientCredentials(options(method)).getToken({ scope: [USER_APIS] });
    expect(token.scope).toBe(USER_APIS);
    await verifyAccessToken(fx, token.access_token as string, { sub: `client:${fx.clientId}`, scope: USER_APIS });
  });

  it("ResourceOwnerPassword.getToken + refresh(): rotation, and the spent refresh token is invalid_grant", async () => {
    const scope = `${USER_APIS} ${OFFLINE_ACCESS}`;
    const client = new ResourceOwnerPassword(options(method));
    const first = await client.getToken({ username: fx.username, password: fx.password, scope: [USER_APIS, OFFLINE_ACCESS] });
    expect(first.token).toMatchObject({ token_type: "Bearer", expires_in: 7200, scope });
    expect(first.token.refresh_token).toEqual(expect.any(String));
    await verifyAccessToken(fx, first.token.access_token as string, { sub: fx.userId, scope });
    await expectTokenWorks(fx.url, first.token.access_token as string);

    const second = await first.refresh();
    expect(second.token).toMatchObject({ token_type: "Bearer", expires_in: 7200, scope });
    expect(second.token.access_token).toEqual(expect.any(String));
    expect(second.token.refresh_token).toEqual(expect.any(String));
    expect(second.token.access_token).not.toBe(first.token.access_token);
    expect(second.token.refresh_token).not.toBe(first.token.refresh_token);
    await verifyAccessToken(fx, second.token.access_token as string, { sub: fx.userId, scope });
    await expectTokenWorks(fx.url, second.token.access_token as string);

    // The first refresh token was consumed by the rotation.
    const error = asWreckError(await rejectionOf(first.refresh()));
    expect(error.message).toBe("Response Error: 400 Bad Request");
    expect(error.output.statusCode).toBe(400);
    expect(error.data.payload).toEqual({ error: "invalid_grant", error_description: expect.any(String) });
    expect(error.data.headers["cache-control"]).toBe("no-store");

    // Reuse revoked the whole family (RFC 9700 §4.14.2), so the newest refresh token is dead too,
    // and so are the family's access tokens (since 2026-12-01; until then they worked on until
    // they expired).
    const revoked = asWreckError(await rejectionOf(second.refresh()));
    expect(revoked.output.statusCode).toBe(400);
    expect(revoked.data.payload).toMatchObject({ error: "invalid_grant" });
    expect((await getAccounts(fx.url, second.token.access_token as string)).status).toBe(401);
    expect(fx.logs).toContainEqual(expect.objectContaining({ level: "warn", message: expect.stringMatching(/reuse/) }));
  });

  it("ResourceOwnerPassword.getToken without offline_access: no refresh token", async () => {
    const { token } = await new ResourceOwnerPassword(options(method)).getToken({
      username: fx.username,
      password: fx.password,
      scope: USER_APIS,
    });
    expect(token).toMatchObject({ token_type: "Bearer", scope: USER_APIS });
    expect(token).not.toHaveProperty("refresh_token");
    await verifyAccessToken(fx, token.access_token as string, { sub: fx.userId, scope: USER_APIS });
  });

  it("AccessToken.revoke('refresh_token') with wreck's json: true (the empty 200 is not strict JSON): the grant's access token is refused too (RFC 7009 §2.1)", async () => {
    const client = new ResourceOwnerPassword({
      ...options(method),
      auth: { tokenHost: fx.url, tokenPath: TOKEN_PATH, revokePath: "/UserService/connect/revocation" },
      http: { json: true },
    });
    const token = await client.getToken({ username: fx.username, password: fx.password, scope: [USER_APIS, OFFLINE_ACCESS] });
    await expectTokenWorks(fx.url, token.token.access_token as string);
    // Resolves (with wreck's payload, the empty body); with its default strict JSON it rejected.
    await token.revoke("refresh_token");
    expect((await getAccounts(fx.url, token.token.access_token as string)).status).toBe(401);
    expect(asWreckError(await rejectionOf(token.refresh())).output.statusCode).toBe(400);
  });

  it("a wrong password surfaces 400 invalid_grant", async () => {
    const client = new ResourceOwnerPassword(options(method));
    const error = asWreckError(await rejectionOf(client.getToken({ username: fx.username, password: "not-the-password" })));
    expect(error.output.statusCode).toBe(400);
    expect(error.data.payload).toEqual({ error: "invalid_grant", error_description: expect.any(String) });
  });

  it("a wrong client secret surfaces 401 invalid_client with a Basic challenge", async () => {
    const client = new ClientCredentials(options(method, `${fx.clientSecret}x`));
    const error = asWreckError(await rejectionOf(client.getToken({})));
    expect(error.message).toBe("Response Error: 401 Unauthorized");
    expect(error.output.statusCode).toBe(401);
    expect(error.data.payload).toEqual({ error: "invalid_client", error_description: expect.any(String) });
    expect(error.data.headers["www-authenticate"]).toMatch(/^Basic\b/);
  });
});

describe("simple-oauth2, RFC 6749 App. B credentials", () => {
  it("id and secret with reserved characters work in the Basic header (strict encoding) and in the body", async () => {
    // Printable ASCII only (simple-oauth2 rejects anything else); ':' '+' '%' and ' ' are the
    // characters that break implementations that skip the form-decoding of Basic credentials.
    const clientId = "svc:reports+1%2F";
    const clientSecret = "p@ss:w/rd +%20&=~!*'()secret";
    await fx.server.app.admin.createClient({ clientId, clientSecret, grantTypes: ["client_credentials"] });
    for (const authorizationMethod of ["header", "body"] as const) {
      const { token } = await new ClientCredentials({
        client: { id: clientId, secret: clientSecret },
        auth: { tokenHost: fx.url, tokenPath: TOKEN_PATH },
        options: { authorizationMethod },
      }).getToken({});
      await verifyAccessToken(fx, token.access_token as string, { sub: `client:${clientId}`, clientId, scope: DEFAULT_SCOPE });
    }
  });
});
