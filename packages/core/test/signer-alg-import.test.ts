/**
 * A `signer` whose `publicJwk` does not import under its `alg` (an EC P-256 key named PS256) was,
 * until 2026-12-02, taken by createPlantgate and stored at the first load, before any import: every
 * token request and the JWKS were then a 500, and the stored row (alg PS256) outlived the fix. Given
 * the right alg with the same key (same kid: the RFC 7638 thumbprint ignores alg), the stored row's
 * alg was loaded, so tokens and the JWKS stayed a 500 until the row was deleted by hand. Now the
 * first load refuses it before anything is stored, as the signingKey option's (keyRecordFromJwk).
 */
import { createPrivateKey, generateKeyPairSync, sign as nodeSign } from "node:crypto";
import { expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type SigningKeySigner } from "../src/index.js";
import { basic, manualClock, tokenRequest } from "./helpers.js";

it("a signer whose publicJwk does not import as its alg is refused before it is stored, and the fixed signer then works", async () => {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const publicJwk = publicKey.export({ format: "jwk" }) as never;
  const key = createPrivateKey(privateKey.export({ format: "pem", type: "pkcs8" }));
  const sign: SigningKeySigner["sign"] = (data) => new Uint8Array(nodeSign("sha256", data, { key, dsaEncoding: "ieee-p1363" }));
  const storage = createMemoryStorage();
  const clock = manualClock();
  const make = (alg: SigningKeySigner["alg"]) =>
    createPlantgate({ storage, clock: clock.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, signer: { alg, publicJwk, sign } });

  // Refused at the first load, as signingKey is, naming the options, with nothing stored.
  const wrong = make("PS256");
  const firstLoad = await wrong.jwks().then(() => "loaded", (e: Error) => `${e.name}: ${e.message}`);
  const storedAfterWrong = (await storage.signingKeys.list()).map((k) => k.alg);

  // The operator fixes the alg; the key (and so its kid) is the same.
  const fixed = make("ES256");
  const { clientSecret } = await fixed.admin.createClient({ clientId: "c1" });
  const res = await tokenRequest(fixed, { grant_type: "client_credentials" }, { authorization: basic("c1", clientSecret!) });
  const jwks = await fixed.fetch(new Request("https://as.example.test/.well-known/jwks.json"));
  expect({ firstLoad, storedAfterWrong, fixedToken: res.status, fixedJwks: jwks.status, stored: (await storage.signingKeys.list()).map((k) => k.alg) }).toEqual({
    firstLoad: "TypeError: signer.publicJwk does not import as a PS256 key (signer.alg); nothing was stored",
    storedAfterWrong: [],
    fixedToken: 200,
    fixedJwks: 200,
    stored: ["ES256"],
  });
});

it("the refusal names the alg with the article it is read with: a PS256, an RS256, an ES384, an EdDSA (until 2026-12-02 always 'an')", async () => {
  const { publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const publicJwk = publicKey.export({ format: "jwk" }) as never;
  const refusals: string[] = [];
  for (const alg of ["PS256", "RS256", "ES384", "EdDSA"] as const) {
    const app = createPlantgate({ storage: createMemoryStorage(), passwordHashIterations: 1000, logger: { error() {}, warn() {} }, signer: { alg, publicJwk, sign: () => new Uint8Array(64) } });
    refusals.push(await app.jwks().then(() => "loaded", (e: Error) => `${e.name}: ${e.message}`));
  }
  expect(refusals).toEqual([
    "TypeError: signer.publicJwk does not import as a PS256 key (signer.alg); nothing was stored",
    "TypeError: signer.publicJwk does not import as an RS256 key (signer.alg); nothing was stored",
    "TypeError: signer.publicJwk does not import as an ES384 key (signer.alg); nothing was stored",
    "TypeError: signer.publicJwk does not import as an EdDSA key (signer.alg); nothing was stored",
  ]);
});
