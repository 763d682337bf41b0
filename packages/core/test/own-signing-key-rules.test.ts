/**
 * The server's own key (`signingKey` / PLANTGATE_SIGNING_KEY, `signer`) is refused at start when
 * no token it signs could be used: an RSA modulus under 2048 bits (RFC 7518 §3.3; jose refuses to
 * sign and verify with one) and a `kid` that is not a string of at most 1024 characters (RFC 7517
 * §4.5). Until 2026-12-01 both were published: every token request was a 500 (jose signing), or
 * tokens were issued (nodeCrypto(), a signer) that plantgate's own APIs and introspection refused.
 */
import { constants, createPrivateKey, generateKeyPairSync, sign as nodeSign } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type SigningKeySigner } from "../src/index.js";
import { getAccounts } from "./api-helpers.js";
import { basic, manualClock, tokenRequest } from "./helpers.js";

const quiet = { error() {}, warn() {} };

function rsa(bits: number): { privateJwk: JsonWebKey; publicJwk: JsonWebKey; sign: SigningKeySigner["sign"] } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: bits });
  const privateJwk = privateKey.export({ format: "jwk" }) as JsonWebKey;
  const key = createPrivateKey({ key: privateJwk as never, format: "jwk" });
  return { privateJwk, publicJwk: publicKey.export({ format: "jwk" }) as JsonWebKey, sign: (data) => new Uint8Array(nodeSign("sha256", data, { key, padding: constants.RSA_PKCS1_PADDING })) };
}

const app = (options: Parameters<typeof createPlantgate>[0]) => createPlantgate({ storage: createMemoryStorage(), clock: manualClock().now, passwordHashIterations: 1000, logger: quiet, ...options });

/** A client credentials token's status, and GetAccountList's with it. */
async function used(a: ReturnType<typeof app>): Promise<{ token: number; api: number | null }> {
  const { clientSecret } = await a.admin.createClient({ clientId: "app-1", scopes: ["Platform_UserAPIs"] });
  const res = await tokenRequest(a, { grant_type: "client_credentials", scope: "Platform_UserAPIs" }, { authorization: basic("app-1", clientSecret!) });
  if (res.status !== 200) return { token: res.status, api: null };
  return { token: 200, api: (await getAccounts(a, ((await res.json()) as { access_token: string }).access_token)).status };
}

describe("the server's own signing key: refused at start when its tokens could not be used", () => {
  it("signingKey: RS256 of 1024 bits is refused when the keys load, nothing stored; 2048 bits signs tokens the APIs take", async () => {
    const storage = createMemoryStorage();
    const weak = createPlantgate({ storage, clock: manualClock().now, passwordHashIterations: 1000, logger: quiet, signingKey: { ...rsa(1024).privateJwk, alg: "RS256" } as never });
    await expect(weak.jwks()).rejects.toThrow(new TypeError("signingKey (PLANTGATE_SIGNING_KEY) is an RSA key of 1024 bits; RS256 and PS256 need 2048 or more (RFC 7518 §3.3); nothing was stored"));
    expect(await storage.signingKeys.list()).toEqual([]);
    expect(await used(app({ signingKey: { ...rsa(2048).privateJwk, alg: "RS256" } as never }))).toEqual({ token: 200, api: 200 });
  });

  it("signer: an RSA public key of 1024 bits is refused by createPlantgate; 2048 bits signs tokens the APIs take", async () => {
    const weak = rsa(1024);
    expect(() => app({ signer: { alg: "RS256", kid: "kms-1", publicJwk: weak.publicJwk as never, sign: weak.sign } })).toThrow(
      new TypeError("signer.publicJwk is an RSA key of 1024 bits; RS256 and PS256 need 2048 or more (RFC 7518 §3.3); nothing was stored"),
    );
    const strong = rsa(2048);
    expect(await used(app({ signer: { alg: "RS256", kid: "kms-2", publicJwk: strong.publicJwk as never, sign: strong.sign } }))).toEqual({ token: 200, api: 200 });
  });

  it("a kid that is not a string of at most 1024 characters is refused (signingKey when the keys load, signer by createPlantgate); a given string kid is used", async () => {
    const { privateJwk, publicJwk, sign } = rsa(2048);
    for (const kid of [7, "k".repeat(1025), null, { id: "k" }]) {
      await expect(app({ signingKey: { ...privateJwk, alg: "RS256", kid } as never }).jwks(), String(kid).slice(0, 8)).rejects.toThrow(
        new TypeError("signingKey (PLANTGATE_SIGNING_KEY) kid must be a string of at most 1024 characters (RFC 7517 §4.5); nothing was stored"),
      );
      expect(() => app({ signer: { alg: "RS256", kid: kid as never, publicJwk: publicJwk as never, sign } }), String(kid).slice(0, 8)).toThrow(
        new TypeError("signer.kid must be a string of at most 1024 characters (RFC 7517 §4.5); nothing was stored"),
      );
    }
    const named = app({ signingKey: { ...privateJwk, alg: "RS256", kid: "k".repeat(1024) } as never });
    expect((await named.jwks()).keys.map((k) => (k as { kid: string }).kid)).toEqual(["k".repeat(1024)]);
    expect(await used(named)).toEqual({ token: 200, api: 200 });
  });

  it("a signer whose answer is not the JWS signature (DER from a KMS, undefined, an ArrayBuffer) fails the token request with a log line saying so, and issues nothing; the raw form signs tokens the APIs take", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const publicJwk = publicKey.export({ format: "jwk" }) as never;
    const cases: [string, SigningKeySigner["sign"], RegExp][] = [
      // Node's sign() (and AWS KMS, Google Cloud KMS) give ECDSA signatures DER-encoded: 70-72 bytes
      // mostly, and 69 or fewer when r or s happens to start with a zero byte (about 1 signature in
      // 128: until 2026-12-03 this case expected 70-72 and failed so now and then).
      ["der", (data) => new Uint8Array(nodeSign("sha256", data, privateKey)), /^signer\.sign returned (6[5-9]|7[0-2]) bytes; an ES256 signature with this key is 64 bytes \(raw r \|\| s, RFC 7518 §3\.4: a DER-encoded signature, as cloud KMSs and Node's sign\(\) give by default, must be converted\)$/],
      ["undefined", (() => undefined) as never, /^signer\.sign must return a Uint8Array holding the signature; it returned undefined$/],
      ["ArrayBuffer", ((data: Uint8Array) => new Uint8Array(nodeSign("sha256", data, { key: privateKey, dsaEncoding: "ieee-p1363" })).buffer) as never, /^signer\.sign must return a Uint8Array holding the signature; it returned ArrayBuffer$/],
    ];
    for (const [name, sign, message] of cases) {
      const errors: unknown[][] = [];
      const a = createPlantgate({ storage: createMemoryStorage(), clock: manualClock().now, passwordHashIterations: 1000, logger: { warn() {}, error: (...args: unknown[]) => void errors.push(args) }, signer: { alg: "ES256", kid: "kms-ec", publicJwk, sign } });
      const { clientSecret } = await a.admin.createClient({ clientId: "app-1", scopes: ["Platform_UserAPIs"] });
      const res = await tokenRequest(a, { grant_type: "client_credentials", scope: "Platform_UserAPIs" }, { authorization: basic("app-1", clientSecret!) });
      expect([name, res.status, await res.json()]).toEqual([name, 500, { error: "server_error", error_description: "The server encountered an unexpected error." }]);
      expect(errors, name).toEqual([["unexpected error at the token endpoint", { name: "TypeError", message: expect.stringMatching(message) }]]);
    }
    const raw: SigningKeySigner["sign"] = (data) => new Uint8Array(nodeSign("sha256", data, { key: privateKey, dsaEncoding: "ieee-p1363" }));
    expect(await used(app({ signer: { alg: "ES256", kid: "kms-ec", publicJwk, sign: raw } }))).toEqual({ token: 200, api: 200 });
  });
});
