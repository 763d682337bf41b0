/**
 * The usable-key rules (2026-12-02) hold a client key's members to base64url of the curve's size
 * at registration only: a member in the standard base64 alphabet (+ and /, a common hand-made JWK),
 * with padding, or a coordinate of another length (a leading zero octet, 33 bytes on P-256, as
 * Java's BigInteger writes half of all keys) imports and verifies, and did before those rules; a
 * stored or fetched key like that keeps verifying (the rules' first form passed them over: such
 * clients were locked out, seen by the session's diff review).
 */
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryStorage } from "../src/index.js";
import { BASE, harness, tokenRequest, type Harness } from "./helpers.js";

const TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const TOKEN_URL = `${BASE}/UserService/connect/token`;
let n = 0;
const assertion = (key: CryptoKey, kid: string, h: Harness, clientId: string) => {
  const now = Math.floor(h.clock.now() / 1000);
  return new SignJWT({ jti: `alphabet-${++n}` }).setProtectedHeader({ alg: "ES256", kid }).setIssuer(clientId).setSubject(clientId).setAudience(TOKEN_URL).setIssuedAt(now).setExpirationTime(now + 60).sign(key);
};
const ccWith = (h: Harness, a: string) => tokenRequest(h.app, { grant_type: "client_credentials", client_assertion_type: TYPE, client_assertion: a });
const std = (s: string) => s.replace(/-/g, "+").replace(/_/g, "/");

/** An ES256 pair whose public x or y holds a '-' or '_' (so its standard-alphabet form differs). */
async function pairWithStdForm(): Promise<{ key: CryptoKey; jwk: JWK; stdJwk: JWK }> {
  for (;;) {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    if (/[-_]/.test(jwk.x! + jwk.y!)) return { key: pair.privateKey, jwk, stdJwk: { ...jwk, x: std(jwk.x!), y: std(jwk.y!) } };
  }
}

describe("a client key written in the standard base64 alphabet (it imports and verifies)", () => {
  let server: Server;
  let published = "";
  let uri = "";
  beforeAll(async () => {
    server = createServer((_req, res) => void res.writeHead(200, { "content-type": "application/json" }).end(published));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    uri = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("stored before the usable-key rules (inline jwks), it keeps verifying", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const { key, jwk, stdJwk } = await pairWithStdForm();
    // Registered with the url-safe form, then the stored text is the one registered before 2026-12-02.
    await h.app.admin.createClient({ clientId: "std-inline", authMethod: "private_key_jwt", jwks: { keys: [{ ...jwk, kid: "k1" }] } });
    const stored = (await storage.clients.get("std-inline"))!;
    await storage.clients.delete("std-inline");
    expect(await storage.clients.create({ ...stored, jwks: JSON.stringify({ keys: [{ ...stdJwk, kid: "k1" }] }) })).toBeTruthy();
    const res = await ccWith(h, await assertion(key, "k1", h, "std-inline"));
    expect({ status: res.status, body: res.status === 200 ? "ok" : await res.text() }).toEqual({ status: 200, body: "ok" });
  });

  it("published at a jwks_uri, it keeps verifying", async () => {
    const h = await harness({ logger: { error() {}, warn() {} } });
    const { key, stdJwk } = await pairWithStdForm();
    published = JSON.stringify({ keys: [{ ...stdJwk, kid: "k2" }] });
    await h.app.admin.createClient({ clientId: "std-uri", authMethod: "private_key_jwt", jwksUri: uri });
    const res = await ccWith(h, await assertion(key, "k2", h, "std-uri"));
    expect({ status: res.status, body: res.status === 200 ? "ok" : await res.text() }).toEqual({ status: 200, body: "ok" });
  });

  it("a coordinate with a leading zero octet (33 bytes for P-256, as Java's BigInteger.toByteArray writes half of all keys) imports and verified before: it keeps verifying (jwks_uri)", async () => {
    const h = await harness({ logger: { error() {}, warn() {} } });
    const pair = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    const signByte = (s: string) => Buffer.concat([Buffer.from([0]), Buffer.from(s, "base64url")]).toString("base64url");
    published = JSON.stringify({ keys: [{ ...jwk, x: signByte(jwk.x!), y: signByte(jwk.y!), kid: "k3" }] });
    await h.app.admin.createClient({ clientId: "java-uri", authMethod: "private_key_jwt", jwksUri: uri });
    const res = await ccWith(h, await assertion(pair.privateKey, "k3", h, "java-uri"));
    expect({ status: res.status, body: res.status === 200 ? "ok" : await res.text() }).toEqual({ status: 200, body: "ok" });
  });
});
