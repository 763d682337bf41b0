/**
 * The JWK Sets of private_key_jwt clients, inline and from a jwks_uri: keys the server cannot use
 * (an encryption key, an unknown kty or curve, a key whose alg, public members or key_ops no
 * assertion can be verified with) are passed over (RFC 7517 §5), a set without a usable key is
 * refused at registration, and a jwks_uri whose fetches fail stops verifying one cache time after its
 * set was last fetched. Each test failed before 2026-12-01 (the last describe's before 2026-12-02),
 * but the keys in the standard base64 alphabet or with a coordinate of another length: those
 * import and verify, and did before the usable-key rules (2026-12-02), which hold a key's members to
 * base64url of the curve's size at registration only; a stored or fetched key like that keeps
 * verifying (the rules' first form passed them over: such clients were locked out, seen by the
 * session's diff review).
 */
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryStorage } from "../src/index.js";
import { BASE, harness, tokenRequest, type Harness } from "./helpers.js";
import { expectTokenSuccess } from "./token-helpers.js";

const TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const TOKEN_URL = `${BASE}/UserService/connect/token`;

let n = 0;
function assertion(key: CryptoKey, alg: string, kid: string, h: Harness, clientId: string) {
  const now = Math.floor(h.clock.now() / 1000);
  return new SignJWT({ jti: `review-${++n}` })
    .setProtectedHeader({ alg, kid })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(TOKEN_URL)
    .setIssuedAt(now)
    .setExpirationTime(now + 60)
    .sign(key);
}

const NO_USABLE_KEY =
  'the JWK Set holds no usable signature key: EC P-256 (alg ES256 or none) or P-384 (ES384 or none) with x and y, RSA of 2048 bits or more (RS256, PS256 or none) with n and e, or OKP Ed25519 (EdDSA, Ed25519 or none) with x, each member base64url (x and y of the curve\'s size), use "sig" or none, key_ops holding "verify" or none';

const ccWith = (h: Harness, a: string) => tokenRequest(h.app, { grant_type: "client_credentials", client_assertion_type: TYPE, client_assertion: a });

/** A signing key (ES256) and, beside it, the kind of encryption key an OIDC client publishes in the same set. */
async function mixedSet() {
  const sig = await generateKeyPair("ES256", { extractable: true });
  const enc = await generateKeyPair("RSA-OAEP-256", { extractable: true, modulusLength: 2048 });
  const sigJwk = { ...(await exportJWK(sig.publicKey)), kid: "sig-1", alg: "ES256", use: "sig" };
  const encJwk = { ...(await exportJWK(enc.publicKey)), kid: "enc-1", alg: "RSA-OAEP-256", use: "enc" };
  return { key: sig.privateKey, sigJwk, encJwk };
}

const std = (s: string) => s.replace(/-/g, "+").replace(/_/g, "/");

/** An ES256 pair whose public x or y holds a '-' or '_' (so its standard-alphabet form differs). */
async function pairWithStdForm(): Promise<{ key: CryptoKey; jwk: JWK; stdJwk: JWK }> {
  for (;;) {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    if (/[-_]/.test(jwk.x! + jwk.y!)) return { key: pair.privateKey, jwk, stdJwk: { ...jwk, x: std(jwk.x!), y: std(jwk.y!) } };
  }
}

describe("RFC 7517 §5 / README: a JWK Set that also holds an encryption key (use: enc)", () => {
  let server: Server;
  let published = "";
  let uri = "";
  beforeAll(async () => {
    server = createServer((_req, res) => void (published === "" ? res.writeHead(404).end() : res.writeHead(200, { "content-type": "application/json" }).end(published)));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    uri = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("is accepted at registration: the encryption key is neither private nor symmetric (README), it is skipped as `use` says", async () => {
    const h = await harness();
    const { key, sigJwk, encJwk } = await mixedSet();
    await h.app.admin.createClient({ clientId: "mixed", authMethod: "private_key_jwt", jwks: { keys: [sigJwk, encJwk] } });
    await expectTokenSuccess(await ccWith(h, await assertion(key, "ES256", "sig-1", h, "mixed")));
  });

  it("fetched from a jwks_uri, its signature key still verifies the client's assertions", async () => {
    const warnings: unknown[] = [];
    const h = await harness({ logger: { error() {}, warn: (message, context) => void warnings.push({ message, context }) } });
    const { key, sigJwk, encJwk } = await mixedSet();
    published = JSON.stringify({ keys: [sigJwk, encJwk] });
    await h.app.admin.createClient({ clientId: "mixed-uri", authMethod: "private_key_jwt", jwksUri: uri });
    const res = await ccWith(h, await assertion(key, "ES256", "sig-1", h, "mixed-uri"));
    expect({ status: res.status, body: await res.text(), warnings: warnings.filter((w) => (w as { message: string }).message.startsWith("jwks_uri")) }).toMatchObject({ status: 200, warnings: [] });
  });

  it("a key the client removed from its jwks_uri (with an encryption key now beside the new one) stops verifying after the 10-minute cache", async () => {
    const h = await harness();
    const old = await mixedSet();
    const next = await mixedSet();
    published = JSON.stringify({ keys: [{ ...old.sigJwk, kid: "old-1" }] });
    await h.app.admin.createClient({ clientId: "rolled", authMethod: "private_key_jwt", jwksUri: uri });
    await expectTokenSuccess(await ccWith(h, await assertion(old.key, "ES256", "old-1", h, "rolled")));
    // The client rolls its key (the old one may have leaked) and publishes the new set with its encryption key.
    published = JSON.stringify({ keys: [{ ...next.sigJwk, kid: "new-1" }, next.encJwk] });
    h.clock.advance(11 * 60_000);
    expect((await ccWith(h, await assertion(old.key, "ES256", "old-1", h, "rolled"))).status).toBe(401);
    h.clock.advance(61 * 60_000);
    expect((await ccWith(h, await assertion(old.key, "ES256", "old-1", h, "rolled"))).status).toBe(401);
  });

  it("a jwks_uri that answers 404 from now on (the client withdrew its keys) does not keep the last set verifying without end", async () => {
    const h = await harness();
    const old = await mixedSet();
    published = JSON.stringify({ keys: [{ ...old.sigJwk, kid: "gone-1" }] });
    await h.app.admin.createClient({ clientId: "withdrawn", authMethod: "private_key_jwt", jwksUri: uri });
    await expectTokenSuccess(await ccWith(h, await assertion(old.key, "ES256", "gone-1", h, "withdrawn")));
    published = "";
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      h.clock.advance(11 * 60_000);
      statuses.push((await ccWith(h, await assertion(old.key, "ES256", "gone-1", h, "withdrawn"))).status);
    }
    // Used for one more cache time after it was last fetched (the first 404 at 11 minutes), then
    // refused (until 2026-12-01 each failed fetch kept it as if fetched anew: 200 an hour on).
    expect(statuses).toEqual([200, 401, 401, 401, 401, 401]);
    // The key host back: the next fetch (a minute after the last) takes the set again.
    published = JSON.stringify({ keys: [{ ...old.sigJwk, kid: "gone-1" }] });
    h.clock.advance(60_000);
    await expectTokenSuccess(await ccWith(h, await assertion(old.key, "ES256", "gone-1", h, "withdrawn")));
  });

  it("a clock stepped back (NTP, a restored VM) does not keep a withdrawn jwks_uri set verifying for the length of the step", async () => {
    const h = await harness();
    const old = await mixedSet();
    published = JSON.stringify({ keys: [{ ...old.sigJwk, kid: "stepped-1" }] });
    await h.app.admin.createClient({ clientId: "stepped", authMethod: "private_key_jwt", jwksUri: uri });
    await expectTokenSuccess(await ccWith(h, await assertion(old.key, "ES256", "stepped-1", h, "stepped")));
    published = "";
    h.clock.advance(-30 * 60_000);
    h.clock.advance(11 * 60_000);
    // Until 2026-12-01 the set's age read negative: fresh, no fetch, 200 for the step's 30 minutes
    // on top of the cache time. Now a step back counts as the cache time over: fetched (404), and
    // a set of unknown age is not used.
    expect((await ccWith(h, await assertion(old.key, "ES256", "stepped-1", h, "stepped"))).status).toBe(401);
    published = JSON.stringify({ keys: [{ ...old.sigJwk, kid: "stepped-1" }] });
    h.clock.advance(60_000);
    await expectTokenSuccess(await ccWith(h, await assertion(old.key, "ES256", "stepped-1", h, "stepped")));
  });

  it("RFC 7517 §5 (SHOULD ignore keys of a kty it does not understand): a set with a key of an unknown kty beside an ES256 key", async () => {
    const warnings: unknown[] = [];
    const h = await harness({ logger: { error() {}, warn: (message, context) => void warnings.push({ message, context }) } });
    const { key, sigJwk } = await mixedSet();
    published = JSON.stringify({ keys: [sigJwk, { kty: "AKP", alg: "ML-DSA-44", kid: "pq-1", use: "sig", pub: "AAAA" }] });
    await h.app.admin.createClient({ clientId: "pq-uri", authMethod: "private_key_jwt", jwksUri: uri });
    const res = await ccWith(h, await assertion(key, "ES256", "sig-1", h, "pq-uri"));
    expect({ status: res.status, body: await res.text(), warnings: warnings.filter((w) => (w as { message: string }).message.startsWith("jwks_uri")) }).toMatchObject({ status: 200, warnings: [] });
  });
});

describe("README: a JWK Set must hold only public EC (P-256, P-384), RSA or OKP (Ed25519) keys", () => {
  it("a set whose only key is P-521 (or X25519) is refused at registration, not stored as a client that can never authenticate", async () => {
    const h = await harness();
    const p521 = await generateKeyPair("ES512", { extractable: true });
    const x25519 = await generateKeyPair("ECDH-ES", { crv: "X25519", extractable: true });
    const outcomes: string[] = [];
    for (const [name, key] of [["P-521", p521.publicKey], ["X25519", x25519.publicKey]] as const) {
      const jwk = { ...(await exportJWK(key)), kid: name };
      outcomes.push(
        await h.app.admin.createClient({ authMethod: "private_key_jwt", jwks: { keys: [jwk] } }).then(
          () => `${name}: registered`,
          (e: Error) => `${name}: refused (${e.message})`,
        ),
      );
    }
    expect(outcomes).toEqual([`P-521: refused (${NO_USABLE_KEY})`, `X25519: refused (${NO_USABLE_KEY})`]);
  });
});

describe("README: a key no assertion can be verified with (its alg not its kind's, key_ops without verify, a public member missing) is passed over", () => {
  /** Sets of one key each that jose (WebCrypto) can never verify an assertion with, by what is wrong. */
  async function unusable() {
    const ec = await exportJWK((await generateKeyPair("ES256", { extractable: true })).publicKey);
    const ed = await exportJWK((await generateKeyPair("EdDSA", { extractable: true })).publicKey);
    const rsa = await exportJWK((await generateKeyPair("PS256", { extractable: true, modulusLength: 2048 })).publicKey);
    return {
      "P-256 with alg ES384": { ...ec, alg: "ES384" },
      "EC with alg RS256": { ...ec, alg: "RS256" },
      "RSA with alg ES256": { ...rsa, alg: "ES256" },
      "Ed25519 with alg ES256": { ...ed, alg: "ES256" },
      "EC without x and y": { kty: "EC", crv: "P-256" },
      "EC with a short x": { ...ec, x: ec.x!.slice(0, 40) },
      "EC with a number for y": { ...ec, y: 7 },
      "OKP without x": { kty: "OKP", crv: "Ed25519" },
      "RSA without e": { ...rsa, e: undefined },
      "key_ops encrypt only": { ...ec, key_ops: ["encrypt"] },
      "key_ops not an array": { ...ec, key_ops: "verify" },
    } as Record<string, Record<string, unknown>>;
  }

  it("a set of only such a key is refused at registration (until 2026-12-02 registered, and every assertion 401)", async () => {
    const h = await harness();
    const outcomes: Record<string, string> = {};
    for (const [name, jwk] of Object.entries(await unusable())) {
      outcomes[name] = await h.app.admin.createClient({ authMethod: "private_key_jwt", jwks: { keys: [{ ...jwk, kid: "k1" }] } }).then(
        () => "registered",
        (e: Error) => `refused (${e.message})`,
      );
    }
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(await unusable()).map((name) => [name, `refused (${NO_USABLE_KEY})`])));
  });

  it('a public key with key_ops ["sign", "verify"] (the pair\'s operations) verifies (until 2026-12-02 jose took them as its usages and refused "sign" for a public key: 401)', async () => {
    const h = await harness();
    const pair = await generateKeyPair("ES256", { extractable: true });
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: "ops-1", key_ops: ["sign", "verify"], ext: true };
    await h.app.admin.createClient({ clientId: "ops", authMethod: "private_key_jwt", jwks: { keys: [jwk] } });
    await expectTokenSuccess(await ccWith(h, await assertion(pair.privateKey, "ES256", "ops-1", h, "ops")));
  });

  it("a key whose members carry base64 padding (no RFC 7515 form, but it imports and verifies) stays usable: registered and verifying as before these rules", async () => {
    const h = await harness();
    const pair = await generateKeyPair("ES256", { extractable: true });
    const jwk = await exportJWK(pair.publicKey);
    await h.app.admin.createClient({ clientId: "padded", authMethod: "private_key_jwt", jwks: { keys: [{ ...jwk, x: `${jwk.x}=`, y: `${jwk.y}=`, kid: "pad-1" }] } });
    await expectTokenSuccess(await ccWith(h, await assertion(pair.privateKey, "ES256", "pad-1", h, "padded")));
  });

  it("a key in the standard base64 alphabet (+ and /, a common hand-made JWK) stored before the usable-key rules (inline jwks) keeps verifying", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const { key, jwk, stdJwk } = await pairWithStdForm();
    // Registered with the url-safe form, then the stored text is the one registered before 2026-12-02.
    await h.app.admin.createClient({ clientId: "std-inline", authMethod: "private_key_jwt", jwks: { keys: [{ ...jwk, kid: "k1" }] } });
    const stored = (await storage.clients.get("std-inline"))!;
    await storage.clients.delete("std-inline");
    expect(await storage.clients.create({ ...stored, jwks: JSON.stringify({ keys: [{ ...stdJwk, kid: "k1" }] }) })).toBeTruthy();
    const res = await ccWith(h, await assertion(key, "ES256", "k1", h, "std-inline"));
    expect({ status: res.status, body: res.status === 200 ? "ok" : await res.text() }).toEqual({ status: 200, body: "ok" });
  });

  it("ten such keys before the client's key do not use up the ten keys tried for an assertion without kid", async () => {
    const h = await harness();
    const pair = await generateKeyPair("ES256", { extractable: true });
    const good = await exportJWK(pair.publicKey);
    const bad = Array.from({ length: 10 }, (_, i) => ({ ...good, kid: `bad-${i}`, key_ops: ["encrypt"] }));
    await h.app.admin.createClient({ clientId: "crowded", authMethod: "private_key_jwt", jwks: { keys: [...bad, { ...good, kid: "good" }] } });
    const now = Math.floor(h.clock.now() / 1000);
    const a = await new SignJWT({ jti: `review-${++n}` }).setProtectedHeader({ alg: "ES256" }).setIssuer("crowded").setSubject("crowded").setAudience(TOKEN_URL).setIssuedAt(now).setExpirationTime(now + 60).sign(pair.privateKey);
    // Until 2026-12-02 the ten keys tried were the ten that failed to import: 401 "No key of the client matches".
    await expectTokenSuccess(await ccWith(h, a));
  });

  describe("fetched from a jwks_uri", () => {
    let server: Server;
    let published = "";
    let uri = "";
    beforeAll(async () => {
      server = createServer((_req, res) => void res.writeHead(200, { "content-type": "application/json" }).end(published));
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      uri = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it("a set of only such keys could not be used (logged, the set fetched before kept for its time), as a set of P-521 keys", async () => {
      const warnings: unknown[] = [];
      const h = await harness({ logger: { error() {}, warn: (message, context) => void warnings.push({ message, context }) } });
      const { key, sigJwk } = await mixedSet();
      published = JSON.stringify({ keys: [sigJwk] });
      await h.app.admin.createClient({ clientId: "broken-uri", authMethod: "private_key_jwt", jwksUri: uri });
      await expectTokenSuccess(await ccWith(h, await assertion(key, "ES256", "sig-1", h, "broken-uri")));
      // The client publishes its key again, marked for encryption only: no assertion verifies with it.
      published = JSON.stringify({ keys: [{ ...sigJwk, key_ops: ["encrypt"] }] });
      h.clock.advance(11 * 60_000);
      const res = await ccWith(h, await assertion(key, "ES256", "sig-1", h, "broken-uri"));
      // Until 2026-12-02 the fetched set replaced the one before, unlogged: 401 "No key of the client matches".
      expect({ status: res.status, warnings: warnings.filter((w) => (w as { message: string }).message.startsWith("jwks_uri")) }).toEqual({
        status: 200,
        warnings: [{ message: "jwks_uri could not be used", context: { jwksUri: uri, reason: NO_USABLE_KEY } }],
      });
      await res.text();
    });

    it("a key in the standard base64 alphabet published at a jwks_uri keeps verifying", async () => {
      const h = await harness({ logger: { error() {}, warn() {} } });
      const { key, stdJwk } = await pairWithStdForm();
      published = JSON.stringify({ keys: [{ ...stdJwk, kid: "k2" }] });
      await h.app.admin.createClient({ clientId: "std-uri", authMethod: "private_key_jwt", jwksUri: uri });
      const res = await ccWith(h, await assertion(key, "ES256", "k2", h, "std-uri"));
      expect({ status: res.status, body: res.status === 200 ? "ok" : await res.text() }).toEqual({ status: 200, body: "ok" });
    });

    it("a coordinate with a leading zero octet (33 bytes for P-256, as Java's BigInteger.toByteArray writes half of all keys) imports and verified before: it keeps verifying (jwks_uri)", async () => {
      const h = await harness({ logger: { error() {}, warn() {} } });
      const pair = await generateKeyPair("ES256", { extractable: true });
      const jwk = await exportJWK(pair.publicKey);
      const signByte = (s: string) => Buffer.concat([Buffer.from([0]), Buffer.from(s, "base64url")]).toString("base64url");
      published = JSON.stringify({ keys: [{ ...jwk, x: signByte(jwk.x!), y: signByte(jwk.y!), kid: "k3" }] });
      await h.app.admin.createClient({ clientId: "java-uri", authMethod: "private_key_jwt", jwksUri: uri });
      const res = await ccWith(h, await assertion(pair.privateKey, "ES256", "k3", h, "java-uri"));
      expect({ status: res.status, body: res.status === 200 ? "ok" : await res.text() }).toEqual({ status: 200, body: "ok" });
    });
  });
});
