/**
 * `private_key_jwt` (RFC 7523) from the SDK against the real example Node server over a socket:
 * `createClient({ clientId, privateKey })` signs a fresh assertion per token request.
 */
import { createMemoryStorage } from "@plantgate/core";
import { startServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, OAuthError } from "../src/index.js";
import { rejectionOf } from "./support.js";

type Server = Awaited<ReturnType<typeof startServer>>;

const KEYS: [string, AlgorithmIdentifier | RsaHashedKeyGenParams | EcKeyGenParams][] = [
  ["ES256", { name: "ECDSA", namedCurve: "P-256" }],
  ["ES384", { name: "ECDSA", namedCurve: "P-384" }],
  ["PS256", { name: "RSA-PSS", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }],
  ["RS256", { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }],
  ["EdDSA", { name: "Ed25519" }],
];

describe("createClient({ clientId, privateKey }) against the example server", () => {
  let server: Server;
  const seen: string[] = [];
  const lines = serverLines();
  beforeAll(async () => {
    server = await startServer({ PORT: "0", PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" }, { storage: createMemoryStorage(), logger: { error() {}, warn() {} } }, { destination: lines.destination });
  });
  afterAll(async () => {
    await server.close();
    // No assertion or access token (JWTs) in any line, nor the demo client's secret or password.
    lines.check(server.demo ? [server.demo.clientSecret, server.demo.password] : []);
  });

  for (const [alg, params] of KEYS) {
    it(`${alg}: a private JWK gets a token, and every token request carries a new assertion (fresh jti)`, async () => {
      const pair = (await crypto.subtle.generateKey(params, true, ["sign", "verify"])) as CryptoKeyPair;
      const publicJwk = { ...(await crypto.subtle.exportKey("jwk", pair.publicKey)), kid: `${alg}-1`, alg };
      const privateJwk = { ...(await crypto.subtle.exportKey("jwk", pair.privateKey)), kid: `${alg}-1`, alg };
      const clientId = `signed-${alg}`;
      await server.app.admin.createClient({ clientId, authMethod: "private_key_jwt", jwks: { keys: [publicJwk] }, grantTypes: ["client_credentials"] });
      const fetch: typeof globalThis.fetch = async (url, init) => {
        const form = new URLSearchParams(String(init?.body ?? ""));
        if (form.has("client_assertion")) seen.push(form.get("client_assertion")!);
        return globalThis.fetch(url, init);
      };
      const client = createClient({ baseUrl: server.url, clientId, privateKey: JSON.stringify(privateJwk), fetch });
      const first = await client.getToken();
      expect(first).toMatchObject({ tokenType: "Bearer", grantType: "client_credentials", hasRefreshToken: false, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" });
      const second = await client.refresh();
      expect(second.accessToken).not.toBe(first.accessToken);
      const page = await client.listAccounts();
      expect(page).toMatchObject({ page: 1, pageSize: 20 });
      const jtis = seen.slice(-2).map((a) => JSON.parse(atob(a.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as Record<string, unknown>);
      expect(jtis[0]!.jti).not.toBe(jtis[1]!.jti);
      expect(jtis[0]).toMatchObject({ iss: clientId, sub: clientId, aud: `${server.url}/UserService/connect/token` });
    });
  }

  it("a CryptoKey works too; a key the server does not know is OAuthError invalid_client", async () => {
    const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])) as CryptoKeyPair;
    const publicJwk = await crypto.subtle.exportKey("jwk", pair.publicKey);
    await server.app.admin.createClient({ clientId: "signed-cryptokey", authMethod: "private_key_jwt", jwks: { keys: [publicJwk] } });
    const ok = createClient({ baseUrl: server.url, clientId: "signed-cryptokey", privateKey: pair.privateKey });
    expect(await ok.getAccessToken()).toEqual(expect.any(String));
    const stranger = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])) as CryptoKeyPair;
    const bad = createClient({ baseUrl: server.url, clientId: "signed-cryptokey", privateKey: stranger.privateKey });
    const error = await rejectionOf(bad.getAccessToken());
    expect(error).toBeInstanceOf(OAuthError);
    expect(error).toMatchObject({ error: "invalid_client", status: 401 });
  });

  it("option errors are TypeErrors at createClient", () => {
    expect(() => createClient({ baseUrl: server.url, clientId: "x" })).toThrow("give exactly one of clientSecret and privateKey");
    expect(() => createClient({ baseUrl: server.url, clientId: "x", clientSecret: "s", privateKey: "{}" })).toThrow("give exactly one of clientSecret and privateKey");
    expect(() => createClient({ baseUrl: server.url, clientId: "x", privateKey: "not json" })).toThrow("privateKey: a string must be a private JWK as JSON");
    expect(() => createClient({ baseUrl: server.url, clientId: "x", privateKey: { kty: "EC", crv: "P-256", x: "a", y: "b" } })).toThrow("privateKey: the JWK must be a private key (with d)");
    expect(() => createClient({ baseUrl: server.url, clientId: "x", privateKey: { kty: "oct", k: "AAAA", d: "x" } as JsonWebKey })).toThrow("privateKey: unsupported key type");
    // An alg named like a property every object inherits is no algorithm either (it passed as one,
    // and the first token request failed with "the JWK could not be imported (TypeError)").
    for (const alg of ["toString", "constructor", "__proto__", "hasOwnProperty"]) {
      expect(() => createClient({ baseUrl: server.url, clientId: "x", privateKey: { kty: "EC", crv: "P-256", x: "a", y: "b", d: "c", alg } })).toThrow(
        new TypeError(`privateKey: alg ${alg} is not one of ES256, ES384, RS256, PS256, EdDSA`),
      );
    }
  });
});
