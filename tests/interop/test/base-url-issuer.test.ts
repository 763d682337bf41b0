/**
 * The issuer plantgate takes from `baseUrl` when no `issuer` is given ("issuer: default `baseUrl`",
 * README options table and PlantgateOptions TSDoc) against oauth4webapi's RFC 8414 discovery: it is
 * served and checked as the same URL given as `issuer` is (until 2026-12-01 its §3.1 URL was a 404).
 */
import { createPlantgate, type PlantgateOptions } from "@plantgate/core";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { TOKEN_PATH } from "./helpers.js";

/**
 * oauth4webapi's discovery of `issuer` against an app behind a proxy that strips `/auth` from the
 * paths under it (what `baseUrl` is for: "Set it behind a proxy that changes the path") and
 * forwards every other path unchanged.
 */
async function discover(options: PlantgateOptions, issuer: string) {
  const app = createPlantgate(options);
  const asked: string[] = [];
  const customFetch = (url: string, init: RequestInit) => {
    asked.push(url);
    return app.fetch(new Request(url.replace("https://auth.example.com/auth/", "https://auth.example.com/"), init));
  };
  const expected = new URL(issuer);
  const response = await oauth.discoveryRequest(expected, { algorithm: "oauth2", [oauth.customFetch]: customFetch });
  return { asked, response, expected };
}

describe("an issuer that comes from baseUrl", () => {
  it("a baseUrl with a path (no issuer, no basePath): oauth4webapi finds the metadata at the RFC 8414 §3.1 URL, as with the same URL given as issuer", async () => {
    const url = "https://auth.example.com/auth";
    // The same URL as `issuer`: served at /.well-known/oauth-authorization-server/auth.
    const asIssuer = await discover({ issuer: url, baseUrl: url }, url);
    expect(asIssuer.asked).toEqual(["https://auth.example.com/.well-known/oauth-authorization-server/auth"]);
    expect(await oauth.processDiscoveryResponse(asIssuer.expected, asIssuer.response)).toMatchObject({ issuer: url, token_endpoint: `${url}${TOKEN_PATH}` });
    // The same URL as `baseUrl` alone: the metadata says `issuer: "https://auth.example.com/auth"`
    // (the README's default), served at its RFC 8414 §3.1 URL too.
    const asBaseUrl = await discover({ baseUrl: url }, url);
    expect(asBaseUrl.asked).toEqual(["https://auth.example.com/.well-known/oauth-authorization-server/auth"]);
    const [status, body] = [asBaseUrl.response.status, await asBaseUrl.response.clone().text()];
    expect([status, body.slice(0, 40)]).toEqual([200, expect.stringContaining('"issuer"')]);
    expect(await oauth.processDiscoveryResponse(asBaseUrl.expected, asBaseUrl.response)).toMatchObject({ issuer: url, token_endpoint: `${url}${TOKEN_PATH}` });
  });
});
