/**
 * nodeCrypto() (the example servers' `crypto`) with a configured RS256 PLANTGATE_SIGNING_KEY under
 * 2048 bits (RFC 7518 §3.3: "A key of size 2048 bits or larger MUST be used"): node:crypto signs
 * with it, jose (which verifies every token on the APIs and at introspection) refuses it. The key
 * is refused when the keys load; until 2026-12-01 the server started, published it, answered every
 * token request 200, and refused every token it issued on its own APIs (401) and at introspection.
 */
import { generateKeyPairSync } from "node:crypto";
import { createPlantgate } from "@plantgate/core";
import { expect, it } from "vitest";
import { nodeCrypto } from "../src/index.js";

const ISSUER = "https://auth.example.test";

it("RFC 7518 §3.3: nodeCrypto() with a 1024-bit RS256 signingKey: the key is refused at load, not tokens issued (200) that GetAccountList refuses (401)", async () => {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 1024 });
  const jwk = { ...(privateKey.export({ format: "jwk" }) as JsonWebKey), alg: "RS256", kid: "weak-rsa" };
  const app = createPlantgate({ issuer: ISSUER, signingKey: jwk, crypto: nodeCrypto(), passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
  const loaded = await app.jwks().then(
    (jwks) => ({ published: jwks.keys.length }),
    (e: unknown) => ({ refused: String(e) }),
  );
  let seen: { token: number; api?: number; introspected?: unknown } | null = null;
  if ("published" in loaded) {
    const { clientSecret } = await app.admin.createClient({ clientId: "weak-client" });
    const basic = `Basic ${Buffer.from(`weak-client:${clientSecret}`).toString("base64")}`;
    const form = { authorization: basic, "content-type": "application/x-www-form-urlencoded" };
    const res = await app.fetch(new Request(`${ISSUER}/UserService/connect/token`, { method: "POST", headers: form, body: "grant_type=client_credentials" }));
    seen = { token: res.status };
    if (res.status === 200) {
      const { access_token } = (await res.json()) as { access_token: string };
      seen.api = (await app.fetch(new Request(`${ISSUER}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${access_token}` } }))).status;
      const introspection = await app.fetch(new Request(`${ISSUER}/UserService/connect/introspect`, { method: "POST", headers: form, body: `token=${access_token}` }));
      seen.introspected = await introspection.json();
    }
  }
  expect({ loaded, seen }).toEqual({
    loaded: { refused: "TypeError: signingKey (PLANTGATE_SIGNING_KEY) is an RSA key of 1024 bits; RS256 and PS256 need 2048 or more (RFC 7518 §3.3); nothing was stored" },
    seen: null,
  });
});
