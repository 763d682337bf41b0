import { createHash } from "node:crypto";
import { createPlantgate, sha256 as webSha256, type Plantgate } from "@plantgate/core";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from "jose";
import { describe, expect, it } from "vitest";
import { nodeCrypto } from "../src/index.js";

const ISSUER = "https://auth.example.test";
const CLIENT_ID = "crypto-client";
const CLIENT_SECRET = "crypto-secret-0123456789abcdef";
const BASIC = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`;

/** nodeCrypto() with a count of the signatures it made, to prove tokens were signed through it. */
function countedNodeCrypto() {
  const inner = nodeCrypto();
  const counts = { sign: 0, sha256: 0 };
  return {
    counts,
    provider: {
      sha256(data: Uint8Array) {
        counts.sha256++;
        return inner.sha256(data);
      },
      async sign(alg: string, key: CryptoKey, data: Uint8Array) {
        const signature = await inner.sign(alg, key, data);
        if (signature !== undefined) counts.sign++;
        return signature;
      },
    },
  };
}

async function clientCredentials(app: Plantgate): Promise<Response> {
  return app.fetch(
    new Request(`${ISSUER}/UserService/connect/token`, {
      method: "POST",
      headers: { authorization: BASIC, "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials",
    }),
  );
}

describe("nodeCrypto()", () => {
  it("hashes exactly like core's Web Crypto SHA-256", async () => {
    const provider = nodeCrypto();
    for (const text of ["", "secret", "ünïcödé ✓", "x".repeat(10_000)]) {
      const expected = Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
      expect(Buffer.from(provider.sha256(new TextEncoder().encode(text)))).toEqual(expected);
      expect(Buffer.from(provider.sha256(new TextEncoder().encode(text))).toString("base64url")).toBe(await webSha256(text));
    }
    expect(Buffer.from(provider.sha256(Buffer.from("abc")))).toEqual(createHash("sha256").update("abc").digest());
  });

  it.each(["ES256", "ES384", "RS256", "PS256", "EdDSA"] as const)(
    "signs %s access tokens that jose verifies against the published JWKS, and the app accepts",
    async (alg) => {
      const { provider, counts } = countedNodeCrypto();
      const now = Date.now();
      const app = createPlantgate({ issuer: ISSUER, baseUrl: ISSUER, signingAlg: alg, crypto: provider, clock: () => now });
      // The secret is stored hashed by the admin API with Web Crypto; authenticating with it
      // through the provider's SHA-256 proves both hash alike.
      await app.admin.ensureClient(CLIENT_ID, CLIENT_SECRET);

      const response = await clientCredentials(app);
      expect(response.status).toBe(200);
      const body = (await response.json()) as { access_token: string; token_type: string; expires_in: number; scope: string };
      expect(body).toMatchObject({ token_type: "Bearer", expires_in: 7200 });
      expect(counts.sign).toBe(1);
      expect(counts.sha256).toBeGreaterThan(0);

      const token = body.access_token;
      const jwks = (await app.jwks()) as JSONWebKeySet;
      const kid = jwks.keys[0]!.kid;
      expect(decodeProtectedHeader(token)).toEqual({ alg, kid, typ: "at+jwt" });
      const iat = Math.floor(now / 1000);
      const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
        algorithms: [alg],
        typ: "at+jwt",
        issuer: ISSUER,
        audience: ISSUER,
        currentDate: new Date(now),
      });
      expect(protectedHeader).toEqual({ alg, kid, typ: "at+jwt" });
      expect(payload).toEqual({
        client_id: CLIENT_ID,
        scope: body.scope,
        cgen: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/),
        iss: ISSUER,
        sub: `client:${CLIENT_ID}`,
        aud: ISSUER,
        iat,
        exp: iat + 7200,
        jti: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      });
      // The same claims in the same order as jose's SignJWT writes them.
      const [, encodedPayload] = token.split(".");
      expect(Buffer.from(encodedPayload!, "base64url").toString()).toBe(
        JSON.stringify({ client_id: CLIENT_ID, scope: body.scope, cgen: payload.cgen, iss: ISSUER, sub: `client:${CLIENT_ID}`, aud: ISSUER, iat, exp: iat + 7200, jti: payload.jti }),
      );

      const plant = await app.fetch(
        new Request(`${ISSUER}/plants`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: '{"id":7,"name":"fern","tag":"indoor"}',
        }),
      );
      expect(plant.status).toBe(200);
      expect(await plant.json()).toEqual({ id: 7, name: "fern", tag: "indoor" });
    },
  );

  it("signs with a stored key encrypted at rest (keyEncryptionKeys), batched, and with a scheduled key once it activates", async () => {
    const { provider, counts } = countedNodeCrypto();
    let now = Date.now();
    const storage = (await import("@plantgate/core")).createMemoryStorage();
    const kek = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
    const app = createPlantgate({ issuer: ISSUER, baseUrl: ISSUER, storage, keyEncryptionKeys: [kek], crypto: provider, clock: () => now, logger: { error() {}, warn() {} } });
    await app.admin.ensureClient(CLIENT_ID, CLIENT_SECRET);
    // Several requests in one turn: one batch, every token verifies.
    const answers = await Promise.all([0, 1, 2].map(() => clientCredentials(app)));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(counts.sign).toBe(3);
    for (const k of await storage.signingKeys.list()) expect(k.privateJwk).toMatch(/^enc:A256GCM:/);
    const { kid, activatesAt } = await app.admin.rotateSigningKey();
    now = activatesAt;
    const after = (await (await clientCredentials(app)).json()) as { access_token: string };
    expect(decodeProtectedHeader(after.access_token).kid).toBe(kid);
    expect(counts.sign).toBe(4);
    await jwtVerify(after.access_token, createLocalJWKSet((await app.jwks()) as JSONWebKeySet), { issuer: ISSUER, audience: ISSUER, currentDate: new Date(now) });
  });

  it("declines keys it does not fit, so core falls back to jose", async () => {
    const { privateKey } = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])) as CryptoKeyPair;
    const provider = nodeCrypto();
    const data = new TextEncoder().encode("a.b");
    expect(provider.sign("ES384", privateKey, data)).toBeUndefined();
    expect(provider.sign("RS256", privateKey, data)).toBeUndefined();
    expect(provider.sign("HS256", privateKey, data)).toBeUndefined();
    const signature = await provider.sign("ES256", privateKey, data);
    expect(signature?.byteLength).toBe(64);
  });

  it("batches: signatures asked for in one event-loop turn are made together after it, and each verifies", async () => {
    const { privateKey, publicKey } = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])) as CryptoKeyPair;
    const provider = nodeCrypto();
    const inputs = Array.from({ length: 20 }, (_, i) => new TextEncoder().encode(`header.payload-${i}`));
    let settled = 0;
    const pending = inputs.map((data) => Promise.resolve(provider.sign("ES256", privateKey, data)).then((s) => (settled++, s)));
    await Promise.resolve();
    expect(settled).toBe(0); // nothing is signed in the middle of the turn
    const signatures = await Promise.all(pending);
    for (const [i, signature] of signatures.entries()) {
      expect(signature?.byteLength).toBe(64);
      expect(await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, publicKey, signature! as Uint8Array<ArrayBuffer>, inputs[i]!)).toBe(true);
      expect(await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, publicKey, signature! as Uint8Array<ArrayBuffer>, inputs[(i + 1) % 20]!)).toBe(false);
    }
    // Unbatched, the signature is there at once.
    const now = nodeCrypto({ batchSignatures: false }).sign("ES256", privateKey, inputs[0]!);
    expect(now).toBeInstanceOf(Uint8Array);
  });
});
