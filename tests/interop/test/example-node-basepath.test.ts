/**
 * The node example server started with a `basePath` override (`startServer(env, { basePath })`):
 * its RFC 8414 metadata names the endpoints where the app answers them, so oauth4webapi's and
 * openid-client's discovery lead to a working grant. Until 2026-12-02 the issuer and `baseUrl`
 * were the bare listening URL: `token_endpoint` and `jwks_uri` lacked `/auth` and answered 404,
 * and the console's printed address did too (found by the interop review).
 */
import * as client from "openid-client";
import * as oauth from "oauth4webapi";
import { afterAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "@plantgate/example-node-server";

let server: RunningServer | undefined;
afterAll(async () => {
  await server?.close();
});

describe("example node server with a basePath override", () => {
  it("publishes the issuer and endpoints under the base path; discovery by both libraries leads to a client-credentials token", async () => {
    const secret = "s".repeat(43);
    server = await startServer(
      {
        PORT: "0",
        PLANTGATE_DB: ":memory:",
        PLANTGATE_CONSOLE: "1",
        PLANTGATE_BOOTSTRAP_CLIENT_ID: "bp-client",
        PLANTGATE_BOOTSTRAP_CLIENT_SECRET: secret,
        PLANTGATE_BOOTSTRAP_USERNAME: "bp-user",
        PLANTGATE_BOOTSTRAP_PASSWORD: "p".repeat(16),
        PLANTGATE_PASSWORD_HASH_ITERATIONS: "10000",
      },
      { basePath: "/auth", logger: { error: () => {}, warn: () => {} } },
      { destination: { write: () => true } as never },
    );
    const base = `${server.url}/auth`;
    expect(server.consoleUrl).toBe(`${base}/console`);
    const issuer = new URL(base);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", [oauth.allowInsecureRequests]: true }));
    expect([as.issuer, as.token_endpoint, as.jwks_uri, as.revocation_endpoint, as.introspection_endpoint]).toEqual([
      base,
      `${base}/UserService/connect/token`,
      `${base}/.well-known/jwks.json`,
      `${base}/UserService/connect/revocation`,
      `${base}/UserService/connect/introspect`,
    ]);
    const jwks = await fetch(as.jwks_uri!);
    expect(jwks.status).toBe(200);
    expect(((await jwks.json()) as { keys: unknown[] }).keys.length).toBeGreaterThan(0);
    const config = await client.discovery(issuer, "bp-client", undefined, client.ClientSecretBasic(secret), {
      algorithm: "oauth2",
      execute: [client.allowInsecureRequests],
    });
    const token = await client.clientCredentialsGrant(config);
    expect([token.token_type, token.expires_in, token.scope]).toEqual(["bearer", 7200, "Platform_UserAPIs Platform_AllAppsServerCommands"]);
  });
});
