/**
 * `baseUrl` is held to the issuer's rules, as the issuer defaults to it (README, `issuer`): until
 * 2026-12-01 a baseUrl with a query, a fragment, white space at either end, or a scheme other than
 * http(s) was taken, and became the metadata's `issuer`, the tokens' `iss` and every endpoint's URL.
 */
import { describe, expect, it } from "vitest";
import { createPlantgate } from "../src/index.js";
import { BASE } from "./helpers.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };

describe("baseUrl is held to the issuer's rules", () => {
  it.each([
    ["a query (RFC 8414 §2)", "https://as.example.test/?tenant=a", "baseUrl must be a URL without a query or fragment (RFC 8414 §2)"],
    ["an empty query", "https://as.example.test/auth?", "baseUrl must be a URL without a query or fragment (RFC 8414 §2)"],
    ["a fragment (RFC 8414 §2)", "https://as.example.test/#x", "baseUrl must be a URL without a query or fragment (RFC 8414 §2)"],
    // The URL parser drops it; the issuer (and the endpoints' URLs) kept it.
    ["white space at the end", "https://as.example.test\n", "baseUrl must not begin or end with white space"],
    ["white space at the start", " https://as.example.test", "baseUrl must not begin or end with white space"],
    ["a scheme other than http(s)", "urn:example:as", "baseUrl must be an http(s) URL (the public origin and base path the endpoints' URLs are made of)"],
    ["an ftp URL", "ftp://as.example.test/auth", "baseUrl must be an http(s) URL (the public origin and base path the endpoints' URLs are made of)"],
    ["no URL at all", "as.example.test", "baseUrl must be an absolute URL"],
  ])("a baseUrl with %s is a TypeError naming baseUrl when the app is made", (_what, baseUrl, message) => {
    expect(() => createPlantgate({ ...quiet, baseUrl })).toThrow(new TypeError(message));
  });

  it.each([
    ["a space in its path", "https://as.example.test/a b", ' ("https://as.example.test/a%20b")'],
    ["a non-ASCII path", "https://as.example.test/pflanzen-ä", ' ("https://as.example.test/pflanzen-%C3%A4")'],
    ["an IDN host written in Unicode", "https://bücher.example", ' ("https://xn--bcher-kva.example/")'],
    ["a bad percent escape", "https://as.example.test/a%zz", ' ("https://as.example.test/a%zz")'],
    ["a backslash", "https://as.example.test/a\\b", ' ("https://as.example.test/a/b")'],
    // User info is never echoed.
    ["user info and a space", "https://user:secret@as.example.test/a b", ""],
  ])("a baseUrl or http(s) issuer that is no RFC 3986 URI (%s) is a TypeError naming it and the parser's form (the metadata's URLs carried it as typed: no URI, as the document says they are)", (_what, value, written) => {
    const rule = "must be a URI (RFC 3986): percent-encode spaces and other characters and write an IDN host in its xn-- form, as a URL parser writes it";
    expect(() => createPlantgate({ ...quiet, baseUrl: value })).toThrow(new TypeError(`baseUrl ${rule}${written}`));
    expect(() => createPlantgate({ ...quiet, issuer: value })).toThrow(new TypeError(`issuer ${rule}${written}`));
  });

  it("square brackets outside an IP-literal host (no RFC 3986 pchar: java.net.URI refuses them) are refused in a baseUrl or issuer; an IPv6 host keeps its brackets", () => {
    const rule = "must be a URI (RFC 3986): percent-encode spaces and other characters and write an IDN host in its xn-- form, as a URL parser writes it";
    expect(() => createPlantgate({ ...quiet, baseUrl: "https://as.example.test/t[1]" })).toThrow(new TypeError(`baseUrl ${rule} ("https://as.example.test/t[1]")`));
    expect(() => createPlantgate({ ...quiet, issuer: "https://as.example.test/tenants/[eu]" })).toThrow(new TypeError(`issuer ${rule} ("https://as.example.test/tenants/[eu]")`));
    expect(() => createPlantgate({ ...quiet, baseUrl: "https://[2001:db8::1]/auth" })).not.toThrow();
  });

  it("the same values as issuer are refused as before (one set of rules)", () => {
    expect(() => createPlantgate({ ...quiet, issuer: "https://as.example.test/?tenant=a" })).toThrow(new TypeError("issuer must be a URL without a query or fragment (RFC 8414 §2)"));
    expect(() => createPlantgate({ ...quiet, issuer: "https://as.example.test\n" })).toThrow(new TypeError("issuer must not begin or end with white space"));
    // An issuer need not be an http(s) URL (a URN); baseUrl, the endpoints' origin, must.
    expect(() => createPlantgate({ ...quiet, issuer: "urn:example:as" })).not.toThrow();
  });

  it("an http(s) baseUrl, with a path and a trailing slash, is taken and names the issuer and the endpoints", async () => {
    const app = createPlantgate({ ...quiet, baseUrl: "https://login.example.test/auth/" });
    const meta = (await (await app.fetch(new Request(`${BASE}/.well-known/oauth-authorization-server`))).json()) as { issuer: string; token_endpoint: string };
    expect({ issuer: meta.issuer, token_endpoint: meta.token_endpoint }).toEqual({
      issuer: "https://login.example.test/auth",
      token_endpoint: "https://login.example.test/auth/UserService/connect/token",
    });
    expect(() => createPlantgate({ ...quiet, baseUrl: "http://127.0.0.1:3000" })).not.toThrow();
  });
});
