/**
 * A `signingKey` that is no private JWK is refused with a message that says what is wrong with it.
 * Until 2026-12-02 one message covered three cases: a JWK with `d` but no `kty` (and a value that
 * is no object at all) was told "it has no 'd' member", which was false.
 */
import { generateKeyPairSync } from "node:crypto";
import type { JWK } from "jose";
import { describe, expect, it } from "vitest";
import { createPlantgate, type PlantgateOptions } from "../src/index.js";
import { keyRecordFromJwk } from "../src/tokens/keys.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };
const D = "pNk8OUd9QXUEdMUhnQ3Y1tgNLBlFp0pRtGjjxSU2iMk";
const X = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
const Y = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";

describe("signingKey refusals say what is wrong", () => {
  it.each([
    ["d but no kty", { crv: "P-256", x: X, y: Y, d: D }, "signingKey must be a private JWK (it has no 'kty' member)"],
    ["d and an empty kty", { kty: "", crv: "P-256", x: X, y: Y, d: D }, "signingKey must be a private JWK (its 'kty' member is not a non-empty string)"],
    ["d and a kty that is no string", { kty: 2, crv: "P-256", x: X, y: Y, d: D }, "signingKey must be a private JWK (its 'kty' member is not a non-empty string)"],
    ["a public key (kty, no d)", { kty: "EC", crv: "P-256", x: X, y: Y }, "signingKey must be a private JWK (it has no 'd' member)"],
  ])("%s: the app's key load is refused naming that", async (_what, jwk, message) => {
    const app = createPlantgate({ ...quiet, signingKey: jwk } as unknown as PlantgateOptions);
    await expect(app.jwks()).rejects.toThrow(new TypeError(message));
    // As JSON text (PLANTGATE_SIGNING_KEY), the same.
    await expect(createPlantgate({ ...quiet, signingKey: JSON.stringify(jwk) }).jwks()).rejects.toThrow(new TypeError(message));
  });

  it.each([["null", null], ["an array", [D]], ["a number", 7]])("%s is no JWK at all, said so", async (_what, value) => {
    await expect(keyRecordFromJwk(value as never, "ES256", 0)).rejects.toThrow(new TypeError("signingKey must be a private JWK (a JSON object)"));
  });

  it("a private EC key is taken", async () => {
    const jwk = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" });
    const app = createPlantgate({ ...quiet, signingKey: jwk as JWK });
    expect((await app.jwks()).keys).toHaveLength(1);
  });
});
