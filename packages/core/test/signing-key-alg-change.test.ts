/**
 * A configured signingKey or signer whose `alg` is changed (RS256 to PS256, the same RSA key: the
 * same kid, its RFC 7638 thumbprint ignores alg) was, until 2026-12-02, matched to its stored row by
 * kid and thumbprint, and the row's alg was loaded: the server kept signing RS256 and publishing
 * `"alg":"RS256"`, without a word, though it was configured PS256. Now the load refuses, as for a
 * changed key under a kept kid (key-rotation.test.ts), and a kid of its own for the key under its
 * new alg then works.
 */
import { createPrivateKey, generateKeyPairSync, sign as nodeSign, constants } from "node:crypto";
import { decodeProtectedHeader } from "jose";
import { expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type PlantgateOptions } from "../src/index.js";
import { basic, manualClock, tokenRequest } from "./helpers.js";

it("signingKey or signer: a changed alg for the same key refuses the load, naming the kid and both algs, the stored row left as it was; a kid of its own then signs with the new alg", async () => {
  const quiet = { error() {}, warn() {} };
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = privateKey.export({ format: "jwk" }) as Record<string, unknown>;
  const key = createPrivateKey(privateKey.export({ format: "pem", type: "pkcs8" }));
  const signer = (alg: "RS256" | "PS256", kid?: string) => ({
    alg,
    publicJwk: publicKey.export({ format: "jwk" }) as never,
    ...(kid === undefined ? {} : { kid }),
    sign: (data: Uint8Array) =>
      new Uint8Array(nodeSign("sha256", data, alg === "PS256" ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } : key)),
  });
  for (const [what, configure] of [
    ["signingKey (PLANTGATE_SIGNING_KEY)", (alg: "RS256" | "PS256", kid?: string): Partial<PlantgateOptions> => ({ signingKey: { ...jwk, alg, ...(kid === undefined ? {} : { kid }) } as never })],
    ["signer", (alg: "RS256" | "PS256", kid?: string): Partial<PlantgateOptions> => ({ signer: signer(alg, kid) })],
  ] as const) {
    const storage = createMemoryStorage();
    const clock = manualClock();
    const make = (options: Partial<PlantgateOptions>) => createPlantgate({ storage, clock: clock.now, passwordHashIterations: 1000, logger: quiet, ...options });
    const before = make(configure("RS256"));
    const published = await before.jwks();
    const rows = await storage.signingKeys.list();
    expect(rows.map((r) => r.alg)).toEqual(["RS256"]);

    const changed = make(configure("PS256"));
    await expect(changed.jwks(), what).rejects.toThrow(
      new TypeError(
        `${what} has kid "${rows[0]!.kid}", which is stored with alg RS256, not PS256: give the key under its new alg a kid of its own (its RFC 7638 thumbprint, the kid by default, is the same whatever the alg); nothing was stored`,
      ),
    );
    expect(await storage.signingKeys.list(), what).toEqual(rows);
    expect(await before.jwks(), what).toEqual(published);

    // A kid of its own: it signs PS256, and the RS256 row stays published as the key it replaced.
    clock.advance(60_000);
    const renamed = make(configure("PS256", "main-ps256"));
    const { clientSecret } = await renamed.admin.createClient({ clientId: "c1" });
    const res = await tokenRequest(renamed, { grant_type: "client_credentials" }, { authorization: basic("c1", clientSecret!) });
    const header = decodeProtectedHeader(((await res.json()) as { access_token: string }).access_token);
    expect({ status: res.status, header: [header.kid, header.alg], jwks: (await renamed.jwks()).keys.map((k) => [(k as { kid: string }).kid, (k as { alg: string }).alg]) }, what).toEqual({
      status: 200,
      header: ["main-ps256", "PS256"],
      jwks: [
        [rows[0]!.kid, "RS256"],
        ["main-ps256", "PS256"],
      ],
    });
  }
});
