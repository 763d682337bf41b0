/**
 * Client authentication at the token endpoint: RFC 6749 §2.3.1 (client_secret_basic with the
 * App. B encoding, client_secret_post, never both) and §5.2 invalid_client.
 */
import { describe, expect, it } from "vitest";
import { basic, harness, tokenRequest } from "./helpers.js";
import {
  auth,
  basicAppB,
  expectTokenError,
  expectTokenSuccess,
  FORM,
  freshRefreshToken,
  passwordRequest,
  rawTokenRequest,
  refreshRequest,
  verifyAt,
} from "./token-helpers.js";

const failed = { error: "invalid_client", error_description: "Client authentication failed." };
const malformedBasic = { error: "invalid_client", error_description: "The Basic credentials are malformed." };

const cc = "grant_type=client_credentials";

describe("client_secret_basic (RFC 6749 §2.3.1)", () => {
  it("RFC 6749 §2.3.1: the harness client authenticates with HTTP Basic", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(await rawTokenRequest(h.app, cc, { "content-type": FORM, ...auth(h) }));
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 7200,
      scope: "Platform_UserAPIs Platform_AllAppsServerCommands",
    });
  });

  it("RFC 6749 §2.3.1 / App. B: id and secret with ':' '+' ' ' '%' '&' and non-ASCII are form-encoded inside Basic", async () => {
    const h = await harness();
    // The admin accepts printable ASCII without spaces as client ids; the secret can be anything.
    const clientId = "acme:svc+1%&=/?";
    const clientSecret = "s3cr:t + 100% & ünïcødé €🌱 end";
    await h.app.admin.createClient({ clientId, clientSecret });
    const body = await expectTokenSuccess(
      await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: basicAppB(clientId, clientSecret) }),
    );
    const { payload } = await verifyAt(h, body.access_token);
    expect(payload.client_id).toBe(clientId);
    expect(payload.sub).toBe(`client:${clientId}`);
    // The shared helper's encodeURIComponent flavour decodes to the same credentials.
    await expectTokenSuccess(await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: basic(clientId, clientSecret) }));
  });

  it("RFC 6749 App. B: a secret sent unencoded ('+' taken as space, '%' as an escape) does not authenticate", async () => {
    const h = await harness();
    const clientSecret = "plus+sign+secret+value";
    await h.app.admin.createClient({ clientId: "plus", clientSecret });
    const raw = "Basic " + btoa(`plus:${clientSecret}`);
    await expectTokenError(await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: raw }), 401, failed);
  });

  it("RFC 7617 §2: the scheme name is case-insensitive", async () => {
    const h = await harness();
    const value = basic(h.clientId, h.clientSecret).replace(/^Basic/, "bAsIc");
    await expectTokenSuccess(await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: value }));
  });

  it("RFC 6749 §2.3.1: client_id in the body equal to the Basic id is accepted", async () => {
    const h = await harness();
    await expectTokenSuccess(await rawTokenRequest(h.app, `${cc}&client_id=app-1`, { "content-type": FORM, ...auth(h) }));
  });

  it("RFC 6749 §2.3.1 / App. B: the body client_id is compared with the decoded Basic id", async () => {
    const h = await harness();
    const clientId = "acme:svc+1%&=/?";
    const clientSecret = "s3cr:t + 100% & ünïcødé €🌱 end";
    await h.app.admin.createClient({ clientId, clientSecret });
    const body = new URLSearchParams({ grant_type: "client_credentials", client_id: clientId }).toString();
    await expectTokenSuccess(await rawTokenRequest(h.app, body, { "content-type": FORM, authorization: basicAppB(clientId, clientSecret) }));
  });

  it("RFC 6749 §2.3.1: a client_id in the body different from the Basic id is invalid_request", async () => {
    const h = await harness();
    await expectTokenError(await rawTokenRequest(h.app, `${cc}&client_id=app-2`, { "content-type": FORM, ...auth(h) }), 400, {
      error: "invalid_request",
      error_description: "client_id in the body does not match the Basic credentials.",
    });
  });

  it("RFC 6749 §2.3: Basic and client_secret in the body together is invalid_request", async () => {
    const h = await harness();
    await expectTokenError(
      await rawTokenRequest(h.app, `${cc}&client_id=app-1&client_secret=${encodeURIComponent(h.clientSecret)}`, { "content-type": FORM, ...auth(h) }),
      400,
      {
        error: "invalid_request",
        error_description: "Use one client authentication method: HTTP Basic or client_secret in the body, not both.",
      },
    );
  });
});

describe("client_secret_post (RFC 6749 §2.3.1)", () => {
  it("RFC 6749 §2.3.1: client_id and client_secret in the body authenticate", async () => {
    const h = await harness();
    const body = await expectTokenSuccess(
      await tokenRequest(h.app, { grant_type: "client_credentials", client_id: h.clientId, client_secret: h.clientSecret, scope: "Platform_UserAPIs" }),
    );
    expect(body).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs" });
    expect((await verifyAt(h, body.access_token)).payload.client_id).toBe("app-1");
  });

  it("RFC 6749 §2.3.1 / App. B: a form-encoded id and secret with special characters authenticate in the body", async () => {
    const h = await harness();
    const clientId = "acme:svc+1%&=/?";
    const clientSecret = "s3cr:t + 100% & ünïcødé €🌱 end";
    await h.app.admin.createClient({ clientId, clientSecret });
    const body = await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret }));
    expect((await verifyAt(h, body.access_token)).payload.client_id).toBe(clientId);
  });

  it("RFC 6749 §5.2: client_id without client_secret is invalid_client", async () => {
    const h = await harness();
    await expectTokenError(await tokenRequest(h.app, { grant_type: "client_credentials", client_id: h.clientId }), 401, {
      error: "invalid_client",
      error_description: "Client authentication is required (HTTP Basic, client_id and client_secret, or a client assertion).",
    });
  });
});

describe("invalid_client (RFC 6749 §5.2)", () => {
  it("RFC 6749 §5.2: no client credentials at all -> 401 invalid_client with WWW-Authenticate: Basic", async () => {
    const h = await harness();
    await expectTokenError(await tokenRequest(h.app, { grant_type: "client_credentials" }), 401, {
      error: "invalid_client",
      error_description: "Client authentication is required (HTTP Basic, client_id and client_secret, or a client assertion).",
    });
  });

  it("RFC 6749 §5.2: a wrong secret and an unknown client give the same 401 body, by Basic and by post", async () => {
    const h = await harness();
    const wrongBasic = await expectTokenError(
      await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: basic(h.clientId, h.clientSecret + "x") }),
      401,
      failed,
    );
    const unknownBasic = await expectTokenError(
      await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: basic("nobody", h.clientSecret) }),
      401,
      failed,
    );
    const wrongPost = await expectTokenError(
      await tokenRequest(h.app, { grant_type: "client_credentials", client_id: h.clientId, client_secret: "x".repeat(43) }),
      401,
      failed,
    );
    const unknownPost = await expectTokenError(
      await tokenRequest(h.app, { grant_type: "client_credentials", client_id: "nobody", client_secret: h.clientSecret }),
      401,
      failed,
    );
    expect(new Set([wrongBasic, unknownBasic, wrongPost, unknownPost]).size).toBe(1);
  });

  it("RFC 6749 §5.2: a wrong secret fails on every grant, before any grant-specific check", async () => {
    const h = await harness();
    const bad = { authorization: basic(h.clientId, "wrong-secret-wrong-secret") };
    await expectTokenError(await passwordRequest(h, {}, bad), 401, failed);
    await expectTokenError(await refreshRequest(h, "whatever", {}, bad), 401, failed);
  });

  it.each([
    ["not base64", "Basic !!!not-base64!!!"],
    ["base64 without a colon", "Basic " + btoa("app-1")],
    ["a bad percent-escape in the id", "Basic " + btoa("app%ZZ-1:secret-secret-secret")],
    ["a bad percent-escape in the secret", "Basic " + btoa("app-1:secret%E0%A4")],
    ["no credentials after the scheme", "Basic"],
    ["two credentials", `Basic ${btoa("a:b")} ${btoa("c:d")}`],
    ["bytes that are not UTF-8", "Basic " + btoa("app-1:\xff\xfe")],
  ])("RFC 7617 §2 / RFC 6749 §5.2: malformed Basic (%s) -> 401 invalid_client", async (_name, header) => {
    const h = await harness();
    await expectTokenError(await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: header }), 401, malformedBasic);
  });

  it("RFC 7617 §2.1: the Basic credentials are taken byte for byte, a leading U+FEFF (UTF-8 EF BB BF) included: it is not the client's id", async () => {
    const h = await harness();
    const bytes = new TextEncoder().encode(`\uFEFF${h.clientId}:${h.clientSecret}`);
    expect([...bytes.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const value = "Basic " + btoa(String.fromCharCode(...bytes));
    await expectTokenError(await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: value }), 401, failed);
    // Percent-encoded (App. B), the same id is refused the same way.
    await expectTokenError(await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: basic(`\uFEFF${h.clientId}`, h.clientSecret) }), 401, failed);
  });

  it("RFC 6749 §5.2: Basic with an empty id or secret -> 401 invalid_client", async () => {
    const h = await harness();
    await expectTokenError(await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: "Basic " + btoa(":secret") }), 401, failed);
    await expectTokenError(await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: "Basic " + btoa("app-1:") }), 401, failed);
  });

  it("RFC 6749 §2.3.1 (spec: regenerate on suspected leak): rotating a secret kills the old one at once and the new one works", async () => {
    const h = await harness();
    await expectTokenSuccess(await rawTokenRequest(h.app, cc, { "content-type": FORM, ...auth(h) }));
    const { clientSecret } = await h.app.admin.rotateClientSecret(h.clientId);
    expect(clientSecret).not.toBe(h.clientSecret);
    await expectTokenError(await rawTokenRequest(h.app, cc, { "content-type": FORM, ...auth(h) }), 401, failed);
    await expectTokenError(
      await tokenRequest(h.app, { grant_type: "client_credentials", client_id: h.clientId, client_secret: h.clientSecret }),
      401,
      failed,
    );
    await expectTokenSuccess(await rawTokenRequest(h.app, cc, { "content-type": FORM, authorization: basic(h.clientId, clientSecret) }));
    await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials", client_id: h.clientId, client_secret: clientSecret }));
  });

  it("RFC 6749 §6: a refresh token stays bound to its client, which must authenticate with the current secret after a rotation", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const { clientSecret } = await h.app.admin.rotateClientSecret(h.clientId);
    await expectTokenError(await refreshRequest(h, rt), 401, failed);
    const body = await expectTokenSuccess(await refreshRequest(h, rt, {}, { authorization: basic(h.clientId, clientSecret) }));
    expect(body.refresh_token).toEqual(expect.any(String));
  });

  it("RFC 6749 §10.1: the client secret never appears in any response, success or failure", async () => {
    const h = await harness();
    const s = h.clientSecret;
    const responses = [
      await rawTokenRequest(h.app, cc, { "content-type": FORM, ...auth(h) }),
      await tokenRequest(h.app, { grant_type: "client_credentials", client_id: h.clientId, client_secret: s }),
      await tokenRequest(h.app, { grant_type: "client_credentials", client_id: "nobody", client_secret: s }),
      await tokenRequest(h.app, { grant_type: "client_credentials", client_id: h.clientId, client_secret: s, scope: "Nope" }),
      await tokenRequest(h.app, { grant_type: "client_credentials", client_id: h.clientId, client_secret: s + "x" }),
      await rawTokenRequest(h.app, `${cc}&client_secret=${s}`, { "content-type": FORM, ...auth(h) }),
      await rawTokenRequest(h.app, `${cc}&client_id=${s}`, { "content-type": FORM, ...auth(h) }),
      await tokenRequest(h.app, { grant_type: "authorization_code", client_id: h.clientId, client_secret: s }),
      await passwordRequest(h, { password: s }),
      await rawTokenRequest(h.app, `grant_type=password&client_id=app-1&client_secret=${s}&client_secret=${s}`, { "content-type": FORM }),
      await rawTokenRequest(h.app, `grant_type=client_credentials&${s}=1&${s}=2`, { "content-type": FORM, ...auth(h) }),
    ];
    for (const res of responses) {
      const text = await res.text();
      expect(text).not.toContain(s);
      for (const [, value] of res.headers) expect(value).not.toContain(s);
    }
  });
});
