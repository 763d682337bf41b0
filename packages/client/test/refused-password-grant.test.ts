/**
 * A password grant refused for good with another code than `invalid_grant` (RFC 6749 §5.2):
 * `unauthorized_client` (this client may not use the password grant), `unsupported_grant_type`
 * (the server has none) and `invalid_scope` (the scope this client asks for, a fixed option, is not
 * granted: plantgate's `offline_access` for a client without the refresh_token grant). The same
 * request gets the same answer whenever it is sent, so the password is dropped and the request is
 * never sent again, as for `invalid_grant`: every later call rejects with that same `OAuthError`,
 * sending nothing. An `invalid_request` (a malformed request: a proxy in between, a server's bug)
 * says nothing of the password: it is sent again. Until 2026-12-02 only `invalid_grant` stopped
 * it: every call sent the password again and got the same refusal.
 */
import { describe, expect, it } from "vitest";
import { createClient, OAuthError } from "../src/index.js";
import { countingFetch, expectStopped, expectStoppedOrSentAgain, rejectionOf, serversClosedAfterEach } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

const servers = serversClosedAfterEach();

it("plantgate refusing the scope of a password grant (offline_access without the refresh_token grant): the password is sent once, later calls reject with the same OAuthError", async () => {
  const t = await servers.target();
  await t.app.admin.deleteClient(t.clientId);
  await t.app.admin.createClient({ clientId: t.clientId, clientSecret: t.clientSecret, grantTypes: ["client_credentials", "password"] });
  const { grants, fetch } = countingFetch();
  const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, fetch });
  const first = await rejectionOf(client.listAccounts());
  expect(first).toBeInstanceOf(OAuthError);
  expect(first).toMatchObject({ status: 400, error: "invalid_scope", error_description: "offline_access needs the refresh_token grant, which this client is not allowed.", grantType: "password", retryAfter: null });
  await expectStopped(client, first);
  expect(grants).toEqual(["password"]);
});

describe("which refusals of a password grant stop it (RFC 6749 §5.2)", () => {
  it.each([
    ["invalid_grant", true],
    ["unauthorized_client", true],
    ["unsupported_grant_type", true],
    ["invalid_scope", true],
    ["invalid_request", false],
  ])("%s: stopped %s", async (code, stopped) => {
    // Another authorization server (node:http on a socket) that answers every password grant with `code` (HTTP 400).
    const s = await servers.refusingServer(code);
    const client = createClient({ baseUrl: s.baseUrl, clientId: "third-party", clientSecret: "a-client-secret-0123456789", scope: OFFLINE, credentials: { username: "alice", password: "wonderland-42" } });
    const first = await rejectionOf(client.getAccessToken());
    expect(first).toBeInstanceOf(OAuthError);
    expect(first).toMatchObject({ status: 400, error: code, error_description: `refused: ${code}`, grantType: "password", retryAfter: null });
    const later = [await rejectionOf(client.getAccessToken()), await rejectionOf(client.refresh())];
    expectStoppedOrSentAgain(stopped, { grants: s.grants, first, later, status: 400, code, grantType: "password" });
  });
});
