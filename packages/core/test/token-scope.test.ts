/**
 * Scope handling at the token endpoint: RFC 6749 §3.3 (syntax, defaults) and §5.2 invalid_scope.
 */
import { describe, expect, it } from "vitest";
import { basic, harness, tokenRequest } from "./helpers.js";
import { auth, expectTokenError, expectTokenSuccess, FORM, passwordRequest, rawTokenRequest } from "./token-helpers.js";

const malformed = { error: "invalid_scope", error_description: "The scope parameter is malformed." };

describe("invalid_scope (RFC 6749 §5.2)", () => {
  it("RFC 6749 §5.2: an unknown scope is invalid_scope (client_credentials and password)", async () => {
    const h = await harness();
    const expected = { error: "invalid_scope", error_description: "A requested scope is unknown (the server's scopes are in scopes_supported of its metadata)." };
    await expectTokenError(
      await tokenRequest(h.app, { grant_type: "client_credentials", scope: "Platform_UserAPIs Platform_Everything" }, auth(h)),
      400,
      expected,
    );
    await expectTokenError(await passwordRequest(h, { scope: "Platform_Everything" }), 400, expected);
  });

  it("a credential sent as scope (a refresh token, a client secret) is not echoed in the error_description", async () => {
    // Until 2026-12-01 an unknown scope was named ("The scope '...' is unknown."), and SDKs put
    // the description into their errors' messages, which apps log.
    const h = await harness();
    const { refresh_token } = await expectTokenSuccess(await passwordRequest(h, { scope: "Platform_UserAPIs offline_access" }));
    const expected = { error: "invalid_scope", error_description: "A requested scope is unknown (the server's scopes are in scopes_supported of its metadata)." };
    for (const [grant, value] of [
      ["client_credentials", refresh_token as string],
      ["client_credentials", h.clientSecret],
      ["refresh_token", h.clientSecret],
    ] as const) {
      const body: Record<string, string> = { grant_type: grant, scope: value };
      if (grant === "refresh_token") body.refresh_token = refresh_token as string;
      const text = await expectTokenError(await tokenRequest(h.app, body, auth(h)), 400, expected);
      expect(text).not.toContain(value);
    }
  });

  it("RFC 6749 §5.2: a known scope the client is not allowed is invalid_scope", async () => {
    const h = await harness();
    const { clientSecret } = await h.app.admin.createClient({ clientId: "limited", scopes: ["Platform_UserAPIs"] });
    const authz = { authorization: basic("limited", clientSecret) };
    const expected = { error: "invalid_scope", error_description: "The scope 'Platform_AllAppsServerCommands' is not allowed for this client." };
    await expectTokenError(await tokenRequest(h.app, { grant_type: "client_credentials", scope: "Platform_AllAppsServerCommands" }, authz), 400, expected);
    await expectTokenError(await passwordRequest(h, { scope: "Platform_UserAPIs Platform_AllAppsServerCommands" }, authz), 400, expected);
    // What it is allowed still works.
    const ok = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials", scope: "Platform_UserAPIs" }, authz));
    expect(ok.scope).toBe("Platform_UserAPIs");
  });

  it.each([
    ["a double space between tokens", "Platform_UserAPIs  offline_access"],
    ["a leading space", " Platform_UserAPIs"],
    ["a trailing space", "Platform_UserAPIs "],
    ["a '\"' character", 'Platform_"UserAPIs'],
    ["a '\\' character", "Platform_\\UserAPIs"],
    ["a tab separator", "Platform_UserAPIs\toffline_access"],
    ["a non-ASCII character", "Platform_UserAPIś"],
  ])("RFC 6749 §3.3: a scope with %s is malformed -> invalid_scope", async (_name, scope) => {
    const h = await harness();
    await expectTokenError(await tokenRequest(h.app, { grant_type: "client_credentials", scope }, auth(h)), 400, malformed);
  });

  it("RFC 6749 §4.4.3: offline_access with client_credentials is invalid_scope (no refresh token for this grant)", async () => {
    const h = await harness();
    await expectTokenError(
      await tokenRequest(h.app, { grant_type: "client_credentials", scope: "Platform_UserAPIs offline_access" }, auth(h)),
      400,
      {
        error: "invalid_scope",
        error_description: "offline_access is not available with client_credentials: this grant has no refresh token.",
      },
    );
  });

  it("RFC 6749 §5.2: offline_access on the password grant for a client without the refresh_token grant is invalid_scope", async () => {
    const h = await harness();
    const { clientSecret } = await h.app.admin.createClient({ clientId: "no-refresh", grantTypes: ["password"] });
    const authz = { authorization: basic("no-refresh", clientSecret) };
    await expectTokenError(await passwordRequest(h, { scope: "Platform_UserAPIs offline_access" }, authz), 400, {
      error: "invalid_scope",
      error_description: "offline_access needs the refresh_token grant, which this client is not allowed.",
    });
    // Without offline_access the same client gets an access token and no refresh token.
    const ok = await expectTokenSuccess(await passwordRequest(h, { scope: "Platform_UserAPIs" }, authz));
    expect(ok).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs" });
  });

  it("RFC 6749 §5.2: a scope error is reported without revealing whether the password was right", async () => {
    const h = await harness();
    const a = await expectTokenError(await passwordRequest(h, { scope: "Nope" }), 400, {
      error: "invalid_scope",
      error_description: "A requested scope is unknown (the server's scopes are in scopes_supported of its metadata).",
    });
    const b = await expectTokenError(await passwordRequest(h, { scope: "Nope", password: "wrong-password" }), 400, {
      error: "invalid_scope",
      error_description: "A requested scope is unknown (the server's scopes are in scopes_supported of its metadata).",
    });
    expect(a).toBe(b);
  });

  it("RFC 6749 §3.2: scope given twice is invalid_request even when both values are equal", async () => {
    const h = await harness();
    await expectTokenError(
      await rawTokenRequest(h.app, "grant_type=client_credentials&scope=Platform_UserAPIs&scope=Platform_UserAPIs", { "content-type": FORM, ...auth(h) }),
      400,
      { error: "invalid_request", error_description: "Parameters must not be repeated: scope." },
    );
  });
});
