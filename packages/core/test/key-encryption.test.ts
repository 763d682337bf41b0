/**
 * Private signing keys at rest: AES-256-GCM under the key encryption keys (the first encrypts, all
 * decrypt), the kid as associated data; clear keys are encrypted at the first start with a KEK;
 * `reencrypt` moves every key to the first KEK; a start without a matching KEK is refused with one
 * line naming the variable; without any KEK a warning is given once. And the `signer` option.
 */
import { calculateJwkThumbprint, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { AdminError, ConfigError, createMemoryStorage, createPlantgate, generateKeyRecord, KEYS_SEALED_PER_LOAD, KeyEncryptionError, optionsFromEnv, type RequestObservation, type Storage } from "../src/index.js";
import { getAccounts } from "./api-helpers.js";
import { BASE, basic, clientToken, harness, manualClock, tokenRequest } from "./helpers.js";
import { createKeyEncryption, parseKeyEncryptionKeys } from "../src/crypto/key-encryption.js";

const kek = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32)))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const quiet = { error() {}, warn() {} };
const kidOf = (token: string) => decodeProtectedHeader(token).kid!;

/** The private members of every stored key that is in clear; [] when all are sealed. */
async function clearPrivateMembers(storage: Storage): Promise<string[]> {
  const out: string[] = [];
  for (const k of await storage.signingKeys.list()) if (k.privateJwk.startsWith("{")) out.push((JSON.parse(k.privateJwk) as { d: string }).d);
  return out;
}

describe("encryption at rest (keyEncryptionKeys)", () => {
  it("every stored private key is sealed under the KEK, tokens are signed and verify, and another instance with the KEK loads them", async () => {
    const k1 = kek();
    const h = await harness({ keyEncryptionKeys: [k1] });
    const token = await clientToken(h);
    await h.app.admin.rotateSigningKey();
    const stored = await h.app.storage.signingKeys.list();
    expect(stored).toHaveLength(2);
    for (const r of stored) {
      expect(r.privateJwk).toMatch(/^enc:A256GCM:[A-Za-z0-9_-]{11}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$/);
      expect(r.privateJwk).not.toContain(k1);
    }
    expect((await getAccounts(h.app, token)).status).toBe(200);
    const other = createPlantgate({ storage: h.app.storage, keyEncryptionKeys: k1, clock: h.clock.now, logger: quiet });
    expect(await other.jwks()).toEqual(await h.app.jwks());
    expect((await getAccounts(other, token)).status).toBe(200);
  });

  it("a sealed key copied onto another kid's row does not open (the kid is the associated data)", async () => {
    const k1 = kek();
    const h = await harness({ keyEncryptionKeys: [k1] });
    await clientToken(h);
    const [only] = await h.app.storage.signingKeys.list();
    const storage = createMemoryStorage();
    await storage.signingKeys.create({ ...only!, kid: "someone-else" });
    const app = createPlantgate({ storage, keyEncryptionKeys: [k1], logger: quiet });
    await expect(app.jwks()).rejects.toThrow(
      new KeyEncryptionError(
        'signing key "someone-else" does not decrypt with its key encryption key (the stored row was altered or belongs to another kid); check PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)',
      ),
    );
  });

  it("refuses to start with sealed keys and no KEK, or a KEK that does not match: one line naming the variable, never a key", async () => {
    const k1 = kek();
    const k2 = kek();
    const h = await harness({ keyEncryptionKeys: [k1] });
    const kid = kidOf(await clientToken(h));
    const none = createPlantgate({ storage: h.app.storage, logger: quiet });
    const noneError = await none.jwks().then(() => null, (e: unknown) => e as Error);
    expect(noneError).toBeInstanceOf(KeyEncryptionError);
    expect(noneError!.message).toBe(
      `signing key "${kid}" is stored encrypted and no key encryption key is configured; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)`,
    );
    const wrong = createPlantgate({ storage: h.app.storage, keyEncryptionKeys: [k2], logger: quiet });
    const wrongError = await wrong.jwks().then(() => null, (e: unknown) => e as Error);
    expect(wrongError).toBeInstanceOf(KeyEncryptionError);
    expect(wrongError!.message).toBe(
      `signing key "${kid}" is encrypted with a key encryption key that is not configured; add it to PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)`,
    );
    for (const e of [noneError!, wrongError!]) {
      expect(e.message).not.toContain("\n");
      expect(e.message).not.toContain(k1);
      expect(e.message).not.toContain(k2);
    }
    // A request on such an instance is a 503 with nothing internal in it (a 500 until 2026-12-01:
    // it is this instance's configuration, not a fault in the request or the code).
    const res = await none.fetch(new Request(`${BASE}/.well-known/jwks.json`));
    expect([res.status, await res.json()]).toEqual([503, { error: 1503, message: "The service is temporarily unavailable; retry later." }]);
  });

  it("keys stored in clear are encrypted at the first start with a KEK and keep signing under the same kid", async () => {
    const clock = manualClock();
    const storage = createMemoryStorage();
    const before = createPlantgate({ storage, clock: clock.now, logger: quiet });
    const kid = ((await before.jwks()).keys[0] as { kid: string }).kid;
    const clear = await clearPrivateMembers(storage);
    expect(clear).toHaveLength(1);
    const after = createPlantgate({ storage, clock: clock.now, keyEncryptionKeys: [kek()], logger: quiet });
    expect(((await after.jwks()).keys as { kid: string }[]).map((k) => k.kid)).toEqual([kid]);
    expect(await clearPrivateMembers(storage)).toEqual([]);
    expect(JSON.stringify(await storage.signingKeys.list())).not.toContain(clear[0]);
  });

  it("a KEK newly configured over many keys in clear: each load of the keys seals at most KEYS_SEALED_PER_LOAD, the newest first, and the loads a minute apart the rest; the keys sign and verify meanwhile", async () => {
    const clock = manualClock();
    const storage = createMemoryStorage();
    // 10 keys in clear, rotated an hour apart and the newest an hour ago: it signs, and the one
    // before it still verifies (retired less than the token lifetime ago).
    const t0 = clock.now() - 10 * 3600_000;
    for (let i = 0; i < 10; i++) await storage.signingKeys.create(await generateKeyRecord("ES256", t0 + i * 3600_000, t0 + i * 3600_000));
    const newestFirst = (await storage.signingKeys.list()).sort((a, b) => b.activatesAt - a.activatesAt).map((k) => k.kid);
    let seals = 0;
    const real = storage.signingKeys.replacePrivateJwk.bind(storage.signingKeys);
    storage.signingKeys.replacePrivateJwk = (kid, expected, next) => (seals++, real(kid, expected, next));
    const inClear = async () => (await storage.signingKeys.list()).filter((k) => k.privateJwk.startsWith("{")).map((k) => k.kid);
    const app = createPlantgate({ storage, clock: clock.now, keyEncryptionKeys: [kek()], logger: quiet, passwordHashIterations: 1000 });
    const { clientSecret } = await app.admin.createClient({ clientId: "sealing" });
    const token = async () => {
      const res = await tokenRequest(app, "grant_type=client_credentials", { authorization: basic("sealing", clientSecret) });
      expect(res.status).toBe(200);
      return ((await res.json()) as { access_token: string }).access_token;
    };
    expect(KEYS_SEALED_PER_LOAD).toBe(4);
    const first = await token();
    expect(seals).toBe(4);
    expect((await inClear()).sort()).toEqual(newestFirst.slice(4).sort());
    expect(kidOf(first)).toBe(newestFirst[0]);
    // The next loads, a minute apart: 4 more, then the last 2.
    clock.advance(60_000);
    await token();
    expect(seals).toBe(8);
    expect((await inClear()).sort()).toEqual(newestFirst.slice(8).sort());
    clock.advance(60_000);
    const last = await token();
    expect(seals).toBe(10);
    expect(await inClear()).toEqual([]);
    expect(await clearPrivateMembers(storage)).toEqual([]);
    // The same key signed throughout, and its tokens verify.
    expect(kidOf(last)).toBe(newestFirst[0]);
    expect((await getAccounts(app, first)).status).toBe(200);
  });

  it("reencrypt with maxMoves (the console's REENCRYPT_MOVES) writes at most that many keys a call, in the store's order, answering the rest in `left` with complete: false; calls until complete move them all", async () => {
    const oldKek = kek();
    const newKek = kek();
    const h = await harness({ keyEncryptionKeys: [oldKek] });
    // The first rotation on the empty store makes its first key.
    for (let i = 0; i < 5; i++) await h.app.admin.rotateSigningKey();
    const kids = (await h.app.storage.signingKeys.list()).map((k) => k.kid);
    expect(kids).toHaveLength(5);
    const both = createPlantgate({ storage: h.app.storage, keyEncryptionKeys: [newKek, oldKek], clock: h.clock.now, logger: quiet });
    let writes = 0;
    const replace = h.app.storage.signingKeys.replacePrivateJwk.bind(h.app.storage.signingKeys);
    h.app.storage.signingKeys.replacePrivateJwk = (...args) => (writes++, replace(...args));
    expect(await both.admin.reencryptSigningKeys({ maxMoves: 2 })).toEqual({ reencrypted: kids.slice(0, 2), unchanged: [], left: kids.slice(2), complete: false });
    expect(writes).toBe(2);
    expect(await both.admin.reencryptSigningKeys({ maxMoves: 2 })).toEqual({ reencrypted: kids.slice(2, 4), unchanged: kids.slice(0, 2), left: kids.slice(4), complete: false });
    expect(await both.admin.reencryptSigningKeys({ maxMoves: 2 })).toEqual({ reencrypted: kids.slice(4), unchanged: kids.slice(0, 4), left: [], complete: true });
    expect(writes).toBe(5);
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(both.admin.reencryptSigningKeys({ maxMoves: bad }), String(bad)).rejects.toThrow(new TypeError("maxMoves must be a positive integer"));
    }
  });

  it("KEK rotation: with [new, old] reencrypt moves every key to the new KEK; afterwards the new one alone suffices and the old alone is refused", async () => {
    const oldKek = kek();
    const newKek = kek();
    const h = await harness({ keyEncryptionKeys: [oldKek] });
    const token = await clientToken(h);
    await h.app.admin.rotateSigningKey();
    const before = await h.app.storage.signingKeys.list();
    const both = createPlantgate({ storage: h.app.storage, keyEncryptionKeys: [newKek, oldKek], clock: h.clock.now, logger: quiet });
    // Already-sealed keys are not moved by a start: only reencrypt does that.
    expect(await both.jwks()).toEqual(await h.app.jwks());
    expect(await h.app.storage.signingKeys.list()).toEqual(before);
    const result = await both.admin.reencryptSigningKeys();
    expect(result.reencrypted.sort()).toEqual(before.map((k) => k.kid).sort());
    expect(result.unchanged).toEqual([]);
    expect(await both.admin.reencryptSigningKeys()).toEqual({ reencrypted: [], unchanged: expect.arrayContaining(before.map((k) => k.kid)), left: [], complete: true });
    const onlyNew = createPlantgate({ storage: h.app.storage, keyEncryptionKeys: newKek, clock: h.clock.now, logger: quiet });
    expect((await getAccounts(onlyNew, token)).status).toBe(200);
    const onlyOld = createPlantgate({ storage: h.app.storage, keyEncryptionKeys: oldKek, clock: h.clock.now, logger: quiet });
    await expect(onlyOld.jwks()).rejects.toBeInstanceOf(KeyEncryptionError);
    // Without any KEK there is nothing to re-encrypt under.
    const plain = createPlantgate({ storage: createMemoryStorage(), logger: quiet });
    await expect(plain.admin.reencryptSigningKeys()).rejects.toThrow(
      new AdminError("No key encryption key is configured; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)."),
    );
  });

  it("while [new, old] is deployed gradually, a rotation (automatic, or an administrator's) seals its key under the KEK of the key signing now: instances on old alone keep serving; reencrypt then moves it", async () => {
    const oldKek = kek();
    const newKek = kek();
    const [oldId] = await createKeyEncryption(parseKeyEncryptionKeys(oldKek)).ids();
    const clock = manualClock();
    const storage = createMemoryStorage();
    const maxAge = { signingKeyMaxAgeSeconds: 86_400 };
    const old = createPlantgate({ storage, clock: clock.now, logger: quiet, keyEncryptionKeys: [oldKek], passwordHashIterations: 1000, ...maxAge });
    const { clientSecret } = await old.admin.createClient({ clientId: "c" });
    const auth = { authorization: basic("c", clientSecret) };
    expect((await tokenRequest(old, { grant_type: "client_credentials" }, auth)).status).toBe(200);
    // A day later, during the deployment of [new, old], a redeployed instance finds the key due.
    clock.advance(86_400_000 - 300_000);
    const redeployed = createPlantgate({ storage, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek, oldKek], ...maxAge });
    await redeployed.jwks();
    await redeployed.admin.rotateSigningKey();
    const rows = await storage.signingKeys.list();
    expect(rows).toHaveLength(3);
    // Until 2026-12-01 both new keys went under new, and old's next reload was a 500 on every request.
    expect(rows.map((r) => r.privateJwk.split(":")[2])).toEqual([oldId, oldId, oldId]);
    clock.advance(61_000);
    expect((await tokenRequest(old, { grant_type: "client_credentials" }, auth)).status).toBe(200);
    expect((await redeployed.admin.reencryptSigningKeys()).reencrypted).toHaveLength(3);
  });

  it("an administrator's rotation in a process without the KEK the signing key is sealed under is refused, storing nothing (keys rotate without the servers' variable stored its key in clear)", async () => {
    const k1 = kek();
    const h = await harness({ keyEncryptionKeys: [k1] });
    await clientToken(h);
    const [id] = await createKeyEncryption(parseKeyEncryptionKeys(k1)).ids();
    const before = await h.app.storage.signingKeys.list();
    for (const keyEncryptionKeys of [undefined, [kek()]]) {
      const cli = createPlantgate({ storage: h.app.storage, clock: h.clock.now, logger: quiet, ...(keyEncryptionKeys ? { keyEncryptionKeys } : {}) });
      await expect(cli.admin.rotateSigningKey({ now: true })).rejects.toThrow(
        new AdminError(
          `The signing key is stored encrypted under a key encryption key (id ${id}) this process does not have: give it PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys) as the servers have it; nothing was stored.`,
        ),
      );
      expect(await h.app.storage.signingKeys.list()).toEqual(before);
    }
  });

  it("enabling the first KEK: the instances still without it answer 503 (not 500) once another has sealed the keys, and log why, naming the variable", async () => {
    const clock = manualClock();
    const storage = createMemoryStorage();
    const errors: unknown[][] = [];
    const requests: RequestObservation[] = [];
    const old = createPlantgate({
      storage,
      clock: clock.now,
      logger: { error: (...a: unknown[]) => void errors.push(a), warn() {} },
      passwordHashIterations: 1000,
      observer: { request: (o) => void requests.push(o) },
    });
    const { clientSecret } = await old.admin.createClient({ clientId: "c" });
    const auth = { authorization: basic("c", clientSecret) };
    const token = ((await (await tokenRequest(old, { grant_type: "client_credentials" }, auth)).json()) as { access_token: string }).access_token;
    // The first instance given the KEK seals the keys at its start (as the README says).
    await createPlantgate({ storage, clock: clock.now, logger: quiet, keyEncryptionKeys: [kek()] }).jwks();
    clock.advance(61_000);
    const refused = await tokenRequest(old, { grant_type: "client_credentials" }, auth);
    expect([refused.status, refused.headers.get("retry-after"), await refused.json()]).toEqual([503, "5", { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." }]);
    // The metrics' result label is the answer's OAuth code (it said server_error at first).
    expect([requests.at(-1)!.status, requests.at(-1)!.result]).toEqual([503, "temporarily_unavailable"]);
    expect((await getAccounts(old, token)).status).toBe(503);
    expect(errors[0]).toEqual([
      "the signing keys cannot be loaded",
      { name: "KeyEncryptionError", message: expect.stringMatching(/^signing key ".+" is stored encrypted and no key encryption key is configured; set PLANTGATE_KEY_ENCRYPTION_KEY \(option keyEncryptionKeys\)$/) },
    ]);
  });

  it("the listing names the KEK each key is sealed under and how it stands in the lister's configuration: current, older (until reencrypt), or missing", async () => {
    const oldKek = kek();
    const newKek = kek();
    const other = kek();
    const h = await harness({ keyEncryptionKeys: [oldKek] });
    await h.app.jwks();
    const [first] = await h.app.storage.signingKeys.list();
    const oldId = first!.privateJwk.split(":")[2]!;
    const both = createPlantgate({ storage: h.app.storage, keyEncryptionKeys: [newKek, oldKek], clock: h.clock.now, logger: quiet });
    // A key sealed under new beside one under old (a rotation seals under the signing key's KEK,
    // old here, so the row is written as a process with new first would seal it).
    const record = await generateKeyRecord("ES256", h.clock.now() + 1, h.clock.now() + 360_000);
    const second = record.kid;
    await h.app.storage.signingKeys.create({ ...record, privateJwk: await createKeyEncryption(parseKeyEncryptionKeys(newKek)).seal(second, record.privateJwk) });
    const newId = (await h.app.storage.signingKeys.list())[1]!.privateJwk.split(":")[2]!;
    const listed = async (keys: string[]) =>
      (await createPlantgate({ storage: h.app.storage, keyEncryptionKeys: keys, clock: h.clock.now, logger: quiet }).admin.listSigningKeys()).map((k) => [k.kid, k.atRest, k.kek, k.kekStatus]);
    expect(await listed([newKek, oldKek])).toEqual([
      [second, "encrypted", newId, "current"],
      [first!.kid, "encrypted", oldId, "older"],
    ]);
    // A KEK that is configured but is neither of them.
    expect(await listed([other])).toEqual([
      [second, "encrypted", newId, "missing"],
      [first!.kid, "encrypted", oldId, "missing"],
    ]);
    await both.admin.reencryptSigningKeys();
    expect(await listed([newKek, oldKek])).toEqual([
      [second, "encrypted", newId, "current"],
      [first!.kid, "encrypted", newId, "current"],
    ]);
  });

  it("reencrypt of a key another instance keeps rewriting: after its second try it stops, naming the kid (quoted) and both ways to run it again, never a key", async () => {
    const oldKek = kek();
    const newKek = kek();
    const storage = createMemoryStorage();
    await createPlantgate({ storage, keyEncryptionKeys: [oldKek], logger: quiet }).jwks();
    const [row] = await storage.signingKeys.list();
    // Another instance, configured with the old KEK alone, seals the key anew (a fresh IV: another
    // stored value, still under the old KEK) just before each of reencrypt's compare-and-set writes.
    const old = createKeyEncryption(parseKeyEncryptionKeys([oldKek]));
    let rewrites = 0;
    const racing: Storage = {
      ...storage,
      signingKeys: {
        ...storage.signingKeys,
        async replacePrivateJwk(kid, expected, replacement) {
          if (rewrites < 2) {
            rewrites++;
            const [current] = await storage.signingKeys.list();
            expect(await storage.signingKeys.replacePrivateJwk(kid, current!.privateJwk, await old.seal(kid, await old.open(kid, current!.privateJwk)))).toBe(true);
          }
          return storage.signingKeys.replacePrivateJwk(kid, expected, replacement);
        },
      },
    };
    const both = createPlantgate({ storage: racing, keyEncryptionKeys: [newKek, oldKek], logger: quiet });
    const error = await both.admin.reencryptSigningKeys().then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(AdminError);
    expect([(error as AdminError).message, (error as AdminError).field]).toEqual([
      `signing key "${row!.kid}" changed while it was being re-encrypted; re-encrypt again (pnpm plantgate keys reencrypt, or Re-encrypt keys in the console)`,
      undefined,
    ]);
    expect(rewrites).toBe(2);
    // The row is as the other instance left it (under the old KEK); run again, it moves.
    expect((await storage.signingKeys.list())[0]!.privateJwk.split(":")[2]).toBe((await old.ids())[0]);
    expect(await both.admin.reencryptSigningKeys()).toEqual({ reencrypted: [row!.kid], unchanged: [], left: [], complete: true });
  });

  it("reencrypt also encrypts keys stored in clear", async () => {
    const storage = createMemoryStorage();
    await createPlantgate({ storage, logger: quiet }).jwks();
    const app = createPlantgate({ storage, keyEncryptionKeys: [kek()], logger: quiet });
    // Straight to the admin: no load has run, so the key is still in clear.
    expect(await clearPrivateMembers(storage)).toHaveLength(1);
    const { reencrypted } = await app.admin.reencryptSigningKeys();
    expect(reencrypted).toHaveLength(1);
    expect(await clearPrivateMembers(storage)).toEqual([]);
  });

  it("without a KEK, a given store gets one warning at the first load (not per reload); none with a KEK or the default in-memory store", async () => {
    const clock = manualClock();
    const warnings: string[] = [];
    const logger = { error() {}, warn: (m: string) => void warnings.push(m) };
    const app = createPlantgate({ storage: createMemoryStorage(), clock: clock.now, logger });
    await app.jwks();
    clock.advance(120_000);
    await app.jwks();
    expect(warnings).toEqual([
      "signing keys are stored in clear: anyone who can read the store can sign tokens; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys) to encrypt them at rest",
    ]);
    warnings.length = 0;
    await createPlantgate({ storage: createMemoryStorage(), keyEncryptionKeys: [kek()], logger }).jwks();
    await createPlantgate({ logger }).jwks();
    expect(warnings).toEqual([]);
  });

  it("an empty or blank string is no KEK, as an unset or blank PLANTGATE_KEY_ENCRYPTION_KEY is (keys in clear, said once); an empty entry beside others is still refused", async () => {
    // The TSDoc example's form: a variable that is not set.
    expect(parseKeyEncryptionKeys(process.env.PLANTGATE_TEST_KEK_NEVER_SET ?? "")).toEqual([]);
    expect(parseKeyEncryptionKeys(" \t\n")).toEqual([]);
    expect(parseKeyEncryptionKeys([])).toEqual([]);
    expect(optionsFromEnv({ PLANTGATE_KEY_ENCRYPTION_KEY: " " }).keyEncryptionKeys).toBeUndefined();
    for (const given of ["", "  "]) {
      const warnings: string[] = [];
      const storage = createMemoryStorage();
      const app = createPlantgate({ storage, keyEncryptionKeys: given, logger: { error() {}, warn: (m: string) => void warnings.push(m) } });
      expect((await app.jwks()).keys).toHaveLength(1);
      expect(await clearPrivateMembers(storage)).toHaveLength(1);
      expect(warnings).toEqual([
        "signing keys are stored in clear: anyone who can read the store can sign tokens; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys) to encrypt them at rest",
      ]);
    }
    expect(() => parseKeyEncryptionKeys(",")).toThrow(new TypeError("keyEncryptionKeys: entry 1 is not a base64url-encoded 256-bit key (43 characters)"));
    expect(() => parseKeyEncryptionKeys([""])).toThrow(new TypeError("keyEncryptionKeys: entry 1 is not a base64url-encoded 256-bit key (43 characters)"));
    expect(() => createPlantgate({ keyEncryptionKeys: `${kek()},` })).toThrow(new TypeError("keyEncryptionKeys: entry 2 is not a base64url-encoded 256-bit key (43 characters)"));
  });

  it("malformed KEKs are refused at construction and from the environment, naming the position, never the value", () => {
    const short = "c2hvcnQ";
    expect(() => createPlantgate({ keyEncryptionKeys: [kek(), short] })).toThrow(
      new TypeError("keyEncryptionKeys: entry 2 is not a base64url-encoded 256-bit key (43 characters)"),
    );
    const envError = (() => {
      try {
        optionsFromEnv({ PLANTGATE_KEY_ENCRYPTION_KEY: `${kek()},${short}` });
        return null;
      } catch (e) {
        return e as Error;
      }
    })();
    expect(envError).toBeInstanceOf(ConfigError);
    expect(envError!.message).toBe(
      "PLANTGATE_KEY_ENCRYPTION_KEY: entry 2 is not a base64url-encoded 256-bit key (43 characters); give one or more comma-separated base64url 256-bit keys",
    );
    const a = kek();
    const b = kek();
    expect(optionsFromEnv({ PLANTGATE_KEY_ENCRYPTION_KEY: ` ${a} , ${b}` }).keyEncryptionKeys).toEqual([a, b]);
    expect(optionsFromEnv({ PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: "1209600" }).signingKeyActivationDelaySeconds).toBe(1_209_600);
    expect(() => optionsFromEnv({ PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: "60" })).toThrow(
      new ConfigError('PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY must be at least 360 (the JWKS cache lifetime plus the key reload interval), got "60"'),
    );
  });
});

describe("signer: a key held outside plantgate", () => {
  async function nonExtractableSigner() {
    const { privateKey, publicKey } = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])) as CryptoKeyPair;
    const publicJwk = await crypto.subtle.exportKey("jwk", publicKey);
    const inputs: string[] = [];
    return {
      inputs,
      publicJwk,
      signer: {
        alg: "ES256" as const,
        publicJwk,
        sign: async (data: Uint8Array) => {
          inputs.push(new TextDecoder().decode(data));
          return new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, privateKey, data as Uint8Array<ArrayBuffer>));
        },
      },
    };
  }

  it("signs every token with a non-extractable Web Crypto key: the JWKS publishes its public key, tokens verify here and with jose", async () => {
    const { signer, inputs, publicJwk } = await nonExtractableSigner();
    const h = await harness({ signer });
    const token = await clientToken(h);
    const kid = await calculateJwkThumbprint({ kty: publicJwk.kty!, crv: publicJwk.crv!, x: publicJwk.x!, y: publicJwk.y! });
    expect(decodeProtectedHeader(token)).toEqual({ alg: "ES256", kid, typ: "at+jwt" });
    expect(inputs).toEqual([token.split(".").slice(0, 2).join(".")]);
    const jwks = await h.app.jwks();
    expect(jwks).toEqual({ keys: [{ kty: "EC", crv: "P-256", x: publicJwk.x, y: publicJwk.y, kid, alg: "ES256", use: "sig" }] });
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks as never), { issuer: BASE, audience: BASE, currentDate: new Date(h.clock.now()) });
    expect(payload.client_id).toBe(h.clientId);
    expect((await getAccounts(h.app, token)).status).toBe(200);
    // Only the public key reaches storage.
    expect(await h.app.storage.signingKeys.list()).toEqual([
      { kid, alg: "ES256", privateJwk: "external", publicJwk: JSON.stringify({ kty: "EC", crv: "P-256", x: publicJwk.x, y: publicJwk.y, kid, alg: "ES256" }), createdAt: h.clock.now(), activatesAt: h.clock.now(), lastSignedAt: h.clock.now() },
    ]);
    await expect(h.app.admin.rotateSigningKey()).rejects.toThrow(new AdminError("The signing key is held by a signer (option signer); rotate it by changing the signer."));
    expect((await h.app.admin.listSigningKeys()).map((k) => [k.kid, k.status])).toEqual([[kid, "active"]]);
  });

  it("listing before any load shows the signer's key as the active key, not stored (and stores nothing); once a load stored it, its private key is external", async () => {
    const { signer, publicJwk } = await nonExtractableSigner();
    const now = Date.UTC(2026, 0, 1);
    const app = createPlantgate({ signer, clock: () => now, logger: quiet });
    const kid = await calculateJwkThumbprint({ kty: publicJwk.kty!, crv: publicJwk.crv!, x: publicJwk.x!, y: publicJwk.y! });
    const key = { kid, alg: "ES256", createdAt: now, activatesAt: now, retiredAt: null, status: "active" };
    expect(await app.admin.listSigningKeys()).toEqual([{ ...key, stored: false, atRest: null, kek: null, kekStatus: null }]);
    expect(await app.storage.signingKeys.list()).toEqual([]);
    await app.jwks();
    expect(await app.admin.listSigningKeys()).toEqual([{ ...key, stored: true, atRest: "external", kek: null, kekStatus: null }]);
  });

  it("an instance without the signer verifies its tokens from the stored public key; a host crypto provider is not asked to sign for it; a token request there is a 500 whose log names the kid, quoted", async () => {
    const { signer } = await nonExtractableSigner();
    const asked: string[] = [];
    const h = await harness({ signer, crypto: { sign: (alg) => void asked.push(alg) } });
    const token = await clientToken(h);
    expect(asked).toEqual([]);
    const errors: unknown[][] = [];
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, logger: { error: (...a: unknown[]) => void errors.push(a), warn() {} } });
    expect((await getAccounts(other, token)).status).toBe(200);
    // It cannot sign: a token request is a 500, and its log names the kid quoted as JSON.
    const kid = kidOf(token);
    const refused = await tokenRequest(other, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect([refused.status, await refused.json()]).toEqual([500, { error: "server_error", error_description: "The server encountered an unexpected error." }]);
    expect(errors).toEqual([
      ["unexpected error at the token endpoint", { name: "Error", message: `signing key "${kid}" is held by a signer this instance was not given (option signer)` }],
    ]);
  });

  it("with a key encryption key too: tokens are signed, the stored marker stays the marker, and a marker an earlier version sealed still works", async () => {
    const { signer } = await nonExtractableSigner();
    const k1 = kek();
    const h = await harness({ signer, keyEncryptionKeys: [k1] });
    const token = await clientToken(h);
    expect((await getAccounts(h.app, token)).status).toBe(200);
    const [stored] = await h.app.storage.signingKeys.list();
    expect(stored!.privateJwk).toBe("external");
    // What the earlier version stored: the marker sealed under the KEK.
    const storage = createMemoryStorage();
    const sealed = await createKeyEncryption(parseKeyEncryptionKeys([k1])).seal(stored!.kid, "external");
    await storage.signingKeys.create({ ...stored!, privateJwk: sealed });
    const upgraded = createPlantgate({ storage, signer, keyEncryptionKeys: [k1], clock: h.clock.now, logger: quiet });
    const { clientSecret } = await upgraded.admin.createClient({ clientId: "c" });
    const res = await upgraded.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`c:${clientSecret}`)}` },
        body: "grant_type=client_credentials",
      }),
    );
    expect(res.status).toBe(200);
    expect((await getAccounts(h.app, ((await res.json()) as { access_token: string }).access_token)).status).toBe(200);
    // Listed as what it is, the signer's key (no private key stored), under the KEK that sealed it;
    // reencrypt stores it as the marker, which needs no KEK.
    const kekOf = sealed.split(":")[2]!;
    expect((await upgraded.admin.listSigningKeys()).map((k) => [k.kid, k.atRest, k.kek, k.kekStatus])).toEqual([[stored!.kid, "external", kekOf, "current"]]);
    expect(await upgraded.admin.reencryptSigningKeys()).toEqual({ reencrypted: [stored!.kid], unchanged: [], left: [], complete: true });
    expect((await storage.signingKeys.list()).map((k) => k.privateJwk)).toEqual(["external"]);
    expect((await upgraded.admin.listSigningKeys()).map((k) => [k.kid, k.atRest, k.kek, k.kekStatus])).toEqual([[stored!.kid, "external", null, null]]);
    expect(await upgraded.admin.reencryptSigningKeys()).toEqual({ reencrypted: [], unchanged: [stored!.kid], left: [], complete: true });
  });

  it("is refused with signingKey, without a sign function, or with a private JWK (which is never echoed)", async () => {
    const { signer } = await nonExtractableSigner();
    expect(() => createPlantgate({ signer, signingKey: '{"kty":"EC","d":"x"}' })).toThrow(new TypeError("give either signingKey or signer, not both"));
    expect(() => createPlantgate({ signer: { ...signer, sign: undefined as never } })).toThrow(new TypeError("signer must have a sign(data) function"));
    expect(() => createPlantgate({ signer: { ...signer, publicJwk: { ...signer.publicJwk, d: "secret-d" } } })).toThrow(
      new TypeError("signer.publicJwk must be the public key only (it has a 'd' member)"),
    );
  });
});
