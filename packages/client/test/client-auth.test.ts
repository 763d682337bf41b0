/**
 * Client authentication at the token endpoint: `basic` is client_secret_basic with the RFC 6749
 * App. B form-encoding of id and secret before base64; `post` puts them in the form body.
 */
import { describe, expect, it } from "vitest";
import { basicAuthorization } from "../src/index.js";
import { clientOn, fakeTokenEndpoint, formOf, headerOf, newMock } from "./support.js";

/** Decodes a Basic header the way RFC 6749 App. B says a server must. */
function decodeBasic(header: string): [string, string] {
  const decoded = Buffer.from(header.replace(/^Basic /, ""), "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
  return [formDecode(decoded.slice(0, colon)), formDecode(decoded.slice(colon + 1))];
}

describe("basic (client_secret_basic, RFC 6749 §2.3.1 + App. B)", () => {
  it("form-encodes id and secret before base64", () => {
    // "my:client" -> "my%3Aclient"; "s3cret é" -> "s3cret+%C3%A9"
    expect(basicAuthorization("my:client", "s3cret é")).toBe(`Basic ${Buffer.from("my%3Aclient:s3cret+%C3%A9").toString("base64")}`);
    expect(basicAuthorization("my:client", "s3cret é")).toBe("Basic bXklM0FjbGllbnQ6czNjcmV0KyVDMyVBOQ==");
    // Plain ASCII ids and secrets are unchanged by the encoding.
    expect(basicAuthorization("reporting", "abc-DEF_123.xyz")).toBe(`Basic ${Buffer.from("reporting:abc-DEF_123.xyz").toString("base64")}`);
  });

  it.each([
    ["colon in the id", "a:b", "secret"],
    ["reserved characters", "a+b%c&d=e", "p@ss/w?rd#+%25"],
    ["spaces and unicode", "client one", "pässwörd ✓ 𝄞"],
    ["characters encodeURIComponent leaves alone", "id!'()*~", "s!'()*~"],
  ])("round-trips %s", (_name, id, secret) => {
    const header = basicAuthorization(id, secret);
    expect(header).toMatch(/^Basic [A-Za-z0-9+/]+=*$/);
    expect(decodeBasic(header)).toEqual([id, secret]);
    // App. B is the form serializer: every byte outside [A-Za-z0-9*-._] is %XX, space is '+'.
    const inner = Buffer.from(header.slice(6), "base64").toString("ascii");
    expect(inner).toMatch(/^[A-Za-z0-9*\-._%+]*:[A-Za-z0-9*\-._%+]*$/);
  });

  it("sends the Basic header and no credentials in the body", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm);
    await clientOn(fm, { clientId: "id:with colon", clientSecret: "sécret+1", auth: "basic" }).getAccessToken();
    const call = fm.callHistory.calls("token")[0]!;
    expect(decodeBasic(headerOf(call, "authorization")!)).toEqual(["id:with colon", "sécret+1"]);
    expect(headerOf(call, "content-type")).toBe("application/x-www-form-urlencoded");
    expect(headerOf(call, "accept")).toBe("application/json");
    expect(tokens.requests[0]).toEqual({ grant_type: "client_credentials", scope: "Platform_UserAPIs" });
  });

  it("is the default", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm);
    await clientOn(fm, { auth: undefined }).getAccessToken();
    expect(headerOf(fm.callHistory.calls("token")[0]!, "authorization")).toMatch(/^Basic /);
  });
});

describe("post (client_secret_post)", () => {
  it("puts client_id and client_secret in the form body and sends no Authorization header", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm);
    await clientOn(fm, { clientId: "id:with colon", clientSecret: "sécret+1 &x=y", auth: "post", credentials: { username: "bob smith", password: "p&ss=w+rd" } }).getAccessToken();
    const call = fm.callHistory.calls("token")[0]!;
    expect(headerOf(call, "authorization")).toBeUndefined();
    expect(formOf(call)).toEqual({
      grant_type: "password",
      username: "bob smith",
      password: "p&ss=w+rd",
      scope: "Platform_UserAPIs",
      client_id: "id:with colon",
      client_secret: "sécret+1 &x=y",
    });
  });
});
