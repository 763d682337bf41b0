/**
 * A password the server refused (invalid_grant on the password grant) against the real example
 * server over a socket: it is presented once, never again. plantgate counts each refused password
 * toward its brute-force lock (10 per username + address, 50 per username from anywhere), so a
 * client that kept presenting a stale password at every call locked the real user out.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { createClient, OAuthError } from "../src/index.js";
import { countingFetch, rejectionOf, startTarget, type ServerTarget } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

let t: ServerTarget;
beforeEach(async () => {
  t = await startTarget();
});
afterEach(async () => {
  await t.close();
});

it("a wrong password is presented once: later calls reject with the same OAuthError and send nothing, so the user is not locked out", async () => {
  const { grants, fetch } = countingFetch();
  const stale = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: "a-password-changed-since" }, fetch });
  const first = await rejectionOf(stale.listAccounts());
  expect(first).toBeInstanceOf(OAuthError);
  expect(first).toMatchObject({ status: 400, error: "invalid_grant", error_description: "The username or password is incorrect.", grantType: "password" });
  expect((first as Error).message).toBe("invalid_grant: The username or password is incorrect.");
  for (let i = 0; i < 11; i++) {
    expect(await rejectionOf(stale.listAccounts())).toBe(first);
    expect(await rejectionOf(stale.getAccessToken())).toBe(first);
    expect(await rejectionOf(stale.refresh())).toBe(first);
  }
  expect(grants).toEqual(["password"]);
  const events = await t.events();
  expect(events.filter((e) => e === "account.login_failed")).toHaveLength(1);
  expect(events).not.toContain("account.locked_out");
  // The user (here: another client with the right password, from the same address) still signs in.
  const right = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password } });
  expect((await right.listAccounts()).total).toBe(1);
});

it("the kept password refused after a refused refresh token (account disabled): one refresh, one password grant, then nothing is sent", async () => {
  const { grants, fetch } = countingFetch();
  const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, fetch });
  expect((await client.listAccounts()).total).toBe(1);
  await t.app.admin.setAccountEnabled(t.username, false);
  const refused = await rejectionOf(client.refresh());
  expect(refused).toBeInstanceOf(OAuthError);
  expect(refused).toMatchObject({ status: 400, error: "invalid_grant", grantType: "password" });
  for (let i = 0; i < 11; i++) expect(await rejectionOf(client.listAccounts())).toBe(refused);
  expect(grants).toEqual(["password", "refresh_token", "password"]);
  const events = await t.events();
  expect(events.filter((e) => e === "account.login_failed")).toHaveLength(1);
  expect(events).not.toContain("account.locked_out");
});
