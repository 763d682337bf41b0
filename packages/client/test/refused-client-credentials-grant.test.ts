/**
 * A client_credentials grant refused for good (RFC 6749 §5.2, a 4xx other than 429):
 * `unauthorized_client` (this client may not use the grant), `unsupported_grant_type` (the server
 * has none) and `invalid_scope` (the scope it asks for, a fixed option, is not granted). The same
 * request gets the same answer whenever it is sent (client id, secret and `scope` are fixed), so it
 * is never sent again: every later call rejects with that same `OAuthError`, sending nothing, as a
 * refused password grant does. `invalid_client` (a refused secret) stops it as before. An
 * `invalid_request` (a malformed request: a proxy in between, a server's bug), an `invalid_grant`
 * (§5.2 gives it no meaning for this grant: no grant is presented besides the client's own
 * authentication) and a 429 or 5xx (transient, whatever the body) are sent again. Until 2026-12-02
 * every call sent the request again into the same refusal (a 4xx is not counted by the backoff).
 */
import { describe, expect, it } from "vitest";
import { createClient, OAuthError } from "../src/index.js";
import { countingFetch, expectStopped, expectStoppedOrSentAgain, rejectionOf, serversClosedAfterEach } from "./support.js";

const servers = serversClosedAfterEach();

describe("plantgate refusing a client_credentials grant", () => {
  it("offline_access asked (invalid_scope): the request is sent once, later calls reject with the same OAuthError", async () => {
    const t = await servers.target();
    const { grants, fetch } = countingFetch();
    const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: "Platform_UserAPIs offline_access", fetch });
    const first = await rejectionOf(client.listAccounts());
    expect(first).toBeInstanceOf(OAuthError);
    expect(first).toMatchObject({ status: 400, error: "invalid_scope", error_description: "offline_access is not available with client_credentials: this grant has no refresh token.", grantType: "client_credentials", retryAfter: null });
    await expectStopped(client, first);
    expect(grants).toEqual(["client_credentials"]);
    // A new client (the documented way on) asking a scope it is granted gets its token.
    const fixed = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: "Platform_UserAPIs", fetch });
    expect((await fixed.listAccounts()).total).toBe(1);
    expect(grants).toEqual(["client_credentials", "client_credentials"]);
  });

  it("a client without the client_credentials grant (unauthorized_client): sent once, later calls reject with the same OAuthError", async () => {
    const t = await servers.target();
    await t.app.admin.deleteClient(t.clientId);
    await t.app.admin.createClient({ clientId: t.clientId, clientSecret: t.clientSecret, grantTypes: ["password", "refresh_token"] });
    const { grants, fetch } = countingFetch();
    const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, fetch });
    const first = await rejectionOf(client.listAccounts());
    expect(first).toBeInstanceOf(OAuthError);
    expect(first).toMatchObject({ status: 400, error: "unauthorized_client", grantType: "client_credentials", retryAfter: null });
    await expectStopped(client, first);
    expect(grants).toEqual(["client_credentials"]);
  });
});

describe("which answers to a client_credentials grant stop it (RFC 6749 §5.2; a 4xx other than 429)", () => {
  it.each([
    ["unauthorized_client", 400, true],
    ["unsupported_grant_type", 400, true],
    ["invalid_scope", 400, true],
    ["invalid_client", 401, true],
    ["invalid_request", 400, false],
    ["invalid_grant", 400, false],
  ] as const)("%s (%i): stopped %s", async (code, status, stopped) => {
    // Another authorization server (node:http on a socket) that answers every token request with `code` and `status`.
    const s = await servers.refusingServer(code, status);
    const client = createClient({ baseUrl: s.baseUrl, clientId: "third-party", clientSecret: "a-client-secret-0123456789", scope: "Platform_UserAPIs" });
    const first = await rejectionOf(client.getAccessToken());
    expect(first).toBeInstanceOf(OAuthError);
    expect(first).toMatchObject({ status, error: code, error_description: `refused: ${code}`, grantType: "client_credentials", retryAfter: null });
    const later = [await rejectionOf(client.getAccessToken()), await rejectionOf(client.refresh())];
    expectStoppedOrSentAgain(stopped, { grants: s.grants, first, later, status, code, grantType: "client_credentials" });
  });
});

// A 429 or 5xx is transient whatever its body: the next call sends the request again (the one after
// is held by the backoff, which counts transient answers, see "Backoff after failed token requests").
it.each([
  ["invalid_scope", 429],
  ["unauthorized_client", 503],
  ["unsupported_grant_type", 500],
] as const)("%s with a %i is transient: the next call sends the request again", async (code, status) => {
  const s = await servers.refusingServer(code, status);
  const client = createClient({ baseUrl: s.baseUrl, clientId: "third-party", clientSecret: "a-client-secret-0123456789", scope: "Platform_UserAPIs" });
  const first = await rejectionOf(client.getAccessToken());
  expect(first).toMatchObject({ status, error: code, error_description: `refused: ${code}`, grantType: "client_credentials", retryAfter: null });
  const second = await rejectionOf(client.getAccessToken());
  expect(second).not.toBe(first);
  expect(second).toMatchObject({ status, error: code, error_description: `refused: ${code}`, grantType: "client_credentials", retryAfter: null });
  expect(s.grants).toEqual(["client_credentials", "client_credentials"]);
});
