/**
 * Input limits of the form endpoints (token, revocation, introspection), each a 400 with the
 * RFC 6749 §5.2 code: body size and parameter count/length -> invalid_request; scope count and
 * scope-token length -> invalid_scope. Defaults 65536 bytes / 32 parameters / 4096 bytes per field
 * / 16 scopes / 128 characters per scope, all configurable.
 */
import { describe, expect, it } from "vitest";
import { createPlantgate } from "../src/index.js";
import { BASE, harness } from "./helpers.js";
import { auth, expectTokenError, expectTokenSuccess, FORM, rawTokenRequest } from "./token-helpers.js";

const cc = "grant_type=client_credentials";
const extra = (n: number) => Array.from({ length: n }, (_, i) => `x${i}=1`).join("&");
const invalidRequest = (description: string) => ({ error: "invalid_request", error_description: description });
const invalidScope = (description: string) => ({ error: "invalid_scope", error_description: description });

describe("form parameter count", () => {
  it("RFC 6749 §5.2: 32 parameters pass (unknown ones are ignored, §3.2), 33 are invalid_request", async () => {
    const h = await harness();
    await expectTokenSuccess(await rawTokenRequest(h.app, `${cc}&${extra(31)}`, { "content-type": FORM, ...auth(h) }));
    await expectTokenError(
      await rawTokenRequest(h.app, `${cc}&${extra(32)}`, { "content-type": FORM, ...auth(h) }),
      400,
      invalidRequest("The request has more than 32 parameters."),
    );
    // Empty pairs (a&&b) are not parameters.
    await expectTokenSuccess(await rawTokenRequest(h.app, `${cc}&&&&${extra(31)}&&`, { "content-type": FORM, ...auth(h) }));
  });

  it("repeated parameters count too, and the limit is checked before anything else about them", async () => {
    const h = await harness();
    await expectTokenError(
      await rawTokenRequest(h.app, `${cc}&${"scope=a&".repeat(32)}`, { "content-type": FORM, ...auth(h) }),
      400,
      invalidRequest("The request has more than 32 parameters."),
    );
  });
});

describe("form field length", () => {
  it("RFC 6749 §5.2: a value of 4096 bytes passes, 4097 bytes is invalid_request", async () => {
    const h = await harness();
    await expectTokenSuccess(await rawTokenRequest(h.app, `${cc}&note=${"a".repeat(4096)}`, { "content-type": FORM, ...auth(h) }));
    await expectTokenError(
      await rawTokenRequest(h.app, `${cc}&note=${"a".repeat(4097)}`, { "content-type": FORM, ...auth(h) }),
      400,
      invalidRequest("A parameter name or value is longer than 4096 bytes."),
    );
  });

  it("counts UTF-8 bytes after decoding, for names as well as values", async () => {
    const h = await harness();
    // 2049 x "é" = 4098 bytes in 2049 characters.
    const e = encodeURIComponent("é".repeat(2049));
    await expectTokenError(await rawTokenRequest(h.app, `${cc}&note=${e}`, { "content-type": FORM, ...auth(h) }), 400, invalidRequest("A parameter name or value is longer than 4096 bytes."));
    await expectTokenError(await rawTokenRequest(h.app, `${cc}&${"n".repeat(4097)}=1`, { "content-type": FORM, ...auth(h) }), 400, invalidRequest("A parameter name or value is longer than 4096 bytes."));
    // %-escapes count once decoded: 4096 x "%41" is 4096 bytes.
    await expectTokenSuccess(await rawTokenRequest(h.app, `${cc}&note=${"%41".repeat(4096)}`, { "content-type": FORM, ...auth(h) }));
  });

  it("credentials keep their tighter limits: an over-long password is the usual invalid_grant", async () => {
    const h = await harness();
    const body = new URLSearchParams({ grant_type: "password", username: "alice", password: "p".repeat(1025) }).toString();
    await expectTokenError(await rawTokenRequest(h.app, body, { "content-type": FORM, ...auth(h) }), 400, {
      error: "invalid_grant",
      error_description: "The username or password is incorrect.",
    });
  });
});

describe("scope count and length", () => {
  it("RFC 6749 §3.3 / §5.2: 16 scope tokens pass, 17 are invalid_scope", async () => {
    const h = await harness();
    const scope = (n: number) => Array.from({ length: n }, () => "Platform_UserAPIs").join(" ");
    const ok = await expectTokenSuccess(await rawTokenRequest(h.app, `${cc}&scope=${encodeURIComponent(scope(16))}`, { "content-type": FORM, ...auth(h) }));
    expect(ok.scope).toBe("Platform_UserAPIs");
    await expectTokenError(
      await rawTokenRequest(h.app, `${cc}&scope=${encodeURIComponent(scope(17))}`, { "content-type": FORM, ...auth(h) }),
      400,
      invalidScope("The scope parameter has more than 16 scopes."),
    );
  });

  it("RFC 6749 §5.2: a scope token over 128 characters is invalid_scope (and is not echoed back)", async () => {
    const h = await harness();
    const res = await rawTokenRequest(h.app, `${cc}&scope=${"S".repeat(129)}`, { "content-type": FORM, ...auth(h) });
    const text = await expectTokenError(res, 400, invalidScope("A scope is longer than 128 characters."));
    expect(text).not.toContain("SSSS");
  });
});

describe("configuration", () => {
  it("every limit is an option", async () => {
    const h = await harness({ maxFormParameters: 3, maxFormFieldBytes: 64, maxScopes: 1, maxScopeLength: 30, maxBodyBytes: 200 });
    const post = (body: string) => rawTokenRequest(h.app, body, { "content-type": FORM, ...auth(h) });
    await expectTokenError(await post(`${cc}&a=1&b=2&c=3`), 400, invalidRequest("The request has more than 3 parameters."));
    await expectTokenError(await post(`${cc}&a=${"x".repeat(65)}`), 400, invalidRequest("A parameter name or value is longer than 64 bytes."));
    await expectTokenError(await post(`${cc}&scope=Platform_UserAPIs+offline_access`), 400, invalidScope("The scope parameter has more than 1 scopes."));
    // 30: the least that holds Platform_AllAppsServerCommands (a shorter one is refused when the app is made).
    await expectTokenError(await post(`${cc}&scope=${"x".repeat(31)}`), 400, invalidScope("A scope is longer than 30 characters."));
    await expectTokenError(await post(`${cc}&a=${"x".repeat(200)}`), 400, invalidRequest("The request body exceeds 200 bytes."));
    await expectTokenSuccess(await post(`${cc}&scope=Platform_UserAPIs`));
  });

  it("the same form limits hold at revocation and introspection", async () => {
    const h = await harness();
    for (const path of ["/UserService/connect/revocation", "/UserService/connect/introspect"]) {
      const res = await h.app.fetch(
        new Request(`${BASE}${path}`, { method: "POST", headers: { "content-type": FORM, ...auth(h) }, body: `token=t&${extra(32)}` }),
      );
      await expectTokenError(res, 400, invalidRequest("The request has more than 32 parameters."));
    }
  });

  it("rejects non-positive limits at construction", () => {
    for (const name of ["maxFormParameters", "maxFormFieldBytes", "maxScopes", "maxScopeLength"] as const) {
      expect(() => createPlantgate({ [name]: 0 })).toThrow(`${name} must be a positive integer`);
    }
  });
});
