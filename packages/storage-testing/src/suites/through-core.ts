/**
 * The backend under the real core: a `createPlantgate` app over the store, driven only through
 * `app.fetch` and `app.admin`, as a deployment would. Catches what record-level tests cannot:
 * the core's own call sequences (read, then consume; revoke on reuse; paging) on this backend.
 */
import { AdminError, createPlantgate, refreshTokenKey, sha256, type Plantgate, type PlantgateOptions, type Storage } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

const BASE = "https://conformance.plantgate.test";
const CLIENT_ID = "conformance-client";
const USERNAME = "conformance-user";
const PASSWORD = "c0nformance-Passw0rd-\u00e9";

export interface Booted {
  app: Plantgate;
  clientSecret: string;
  /** Everything the app logged as an error, shown when a request fails unexpectedly. */
  errors: unknown[];
  /** Moves the app's clock (it starts at T0) forward. */
  advance(ms: number): void;
}

/** An app over `storage` with one client (all grants and scopes) and one account; `options` on top. */
export async function boot(storage: Storage, options: PlantgateOptions = {}): Promise<Booted> {
  const errors: unknown[] = [];
  let now = T0;
  const app = createPlantgate({
    storage,
    passwordHashIterations: 1000,
    clock: () => now,
    logger: { error: (message, context) => errors.push({ message, context }), warn() {} },
    ...options,
  });
  const { clientSecret } = await app.admin.createClient({ clientId: CLIENT_ID });
  await app.admin.createAccount({ username: USERNAME, password: PASSWORD, displayName: "Conformance" });
  return { app, clientSecret, errors, advance: (ms) => (now += ms) };
}

export interface Result {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

async function call(b: Booted, request: Request): Promise<Result> {
  const res = await b.app.fetch(request);
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON; `text` tells
  }
  return { status: res.status, body, text };
}

export function token(b: Booted, params: Record<string, string>): Promise<Result> {
  return call(
    b,
    new Request(`${BASE}/UserService/connect/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: "Basic " + btoa(`${encodeURIComponent(CLIENT_ID)}:${encodeURIComponent(b.clientSecret)}`),
      },
      body: new URLSearchParams(params).toString(),
    }),
  );
}

/** Asserts a 200 and returns the body; on failure shows the response and anything logged. */
export function ok(b: Booted, r: Result, what: string): Record<string, unknown> {
  expect(r.status, `${what}: ${r.text} ${JSON.stringify(b.errors)}`).toBe(200);
  return r.body;
}

export async function passwordGrant(b: Booted): Promise<{ access: string; refresh: string }> {
  const body = ok(b, await token(b, { grant_type: "password", username: USERNAME, password: PASSWORD, scope: "Platform_UserAPIs offline_access" }), "password grant");
  expect(body.refresh_token, "the password grant with offline_access returns a refresh token").toEqual(expect.any(String));
  return { access: body.access_token as string, refresh: body.refresh_token as string };
}

export async function refreshGrant(b: Booted, refreshToken: string): Promise<Result> {
  return token(b, { grant_type: "refresh_token", refresh_token: refreshToken });
}

export const INVALID_GRANT = { error: "invalid_grant", error_description: "The refresh token is invalid, expired or revoked." };

export function throughCoreSuite(s: SuiteContext): void {
  describe("through the core (createPlantgate over this store)", () => {
    it("client_credentials and password grants issue tokens; the refresh token is stored only by its hash", async () => {
      const b = await boot(s.storage());
      const cc = ok(b, await token(b, { grant_type: "client_credentials" }), "client_credentials");
      expect(cc.access_token).toEqual(expect.any(String));
      const { refresh } = await passwordGrant(b);
      const stored = await s.storage().refreshTokens.findByHash(await refreshTokenKey(sha256, refresh));
      expect(stored, "the refresh token is found by its SHA-256").not.toBeNull();
      expect(stored).toMatchObject({ clientId: CLIENT_ID, consumedAt: null, revokedAt: null, scope: ["Platform_UserAPIs", "offline_access"] });
      expect(await s.storage().refreshTokens.findByHash(refresh), "nothing is stored under the clear token").toBeNull();
    });

    it("refresh rotates: the presented token is consumed, the new one stored in the same family", async () => {
      const b = await boot(s.storage());
      const { refresh } = await passwordGrant(b);
      const body = ok(b, await refreshGrant(b, refresh), "refresh");
      const next = body.refresh_token as string;
      expect(next).toEqual(expect.any(String));
      expect(next).not.toBe(refresh);
      const old = await s.storage().refreshTokens.findByHash(await refreshTokenKey(sha256, refresh));
      const fresh = await s.storage().refreshTokens.findByHash(await refreshTokenKey(sha256, next));
      expect(old?.consumedAt).toBe(T0);
      expect(fresh).toMatchObject({ familyId: old?.familyId, consumedAt: null, revokedAt: null });
      // The rotated token works in turn.
      ok(b, await refreshGrant(b, next), "second refresh");
    });

    it("RFC 9700 §4.14.2 (strict, refreshGraceSeconds: 0): presenting a consumed refresh token again revokes its whole family", async () => {
      const b = await boot(s.storage(), { refreshGraceSeconds: 0 });
      const { refresh } = await passwordGrant(b);
      const next = ok(b, await refreshGrant(b, refresh), "refresh").refresh_token as string;
      const reuse = await refreshGrant(b, refresh);
      expect({ status: reuse.status, body: reuse.body }).toEqual({ status: 400, body: INVALID_GRANT });
      const stolen = await refreshGrant(b, next);
      expect({ status: stolen.status, body: stolen.body }, "the newest token of the family is revoked too").toEqual({ status: 400, body: INVALID_GRANT });
      expect((await s.storage().refreshTokens.findByHash(await refreshTokenKey(sha256, next)))?.revokedAt).toBe(T0);
    });

    it("disabling an account revokes its refresh tokens: stored revoked, and still refused once the account is enabled again", async () => {
      const b = await boot(s.storage());
      const { refresh } = await passwordGrant(b);
      await b.app.admin.setAccountEnabled(USERNAME, false);
      // The refresh grant refuses a disabled account by itself; the store must have revoked the token.
      expect((await s.storage().refreshTokens.findByHash(await refreshTokenKey(sha256, refresh)))?.revokedAt, "the stored token's revokedAt").toBe(T0);
      const r = await refreshGrant(b, refresh);
      expect({ status: r.status, body: r.body }).toEqual({ status: 400, body: INVALID_GRANT });
      await b.app.admin.setAccountEnabled(USERNAME, true);
      const again = await refreshGrant(b, refresh);
      expect({ status: again.status, body: again.body }, "after re-enabling, the revoked token stays refused").toEqual({ status: 400, body: INVALID_GRANT });
    });

    it("GetAccountList pages through the accounts of the store", async () => {
      const b = await boot(s.storage());
      await b.app.admin.importAccounts([
        { username: "imported-1", password: "password-one" },
        { username: "imported-2", password: "password-two", roles: ["reader"] },
        { username: "imported-3", password: "password-three", enabled: false },
      ]);
      const { access } = await passwordGrant(b);
      const get = (query: string) => call(b, new Request(`${BASE}/rbac/ServerCommand/GetAccountList?${query}`, { headers: { authorization: `Bearer ${access}` } }));
      const p1 = ok(b, await get("page=1&pageSize=3"), "page 1");
      const p2 = ok(b, await get("page=2&pageSize=3"), "page 2");
      const p3 = ok(b, await get("page=3&pageSize=3"), "page 3");
      expect([p1.total, p1.totalPages, p2.total, p3.total]).toEqual([4, 2, 4, 4]);
      expect(p3.accounts).toEqual([]);
      const all = [...(p1.accounts as { username: string; id: string }[]), ...(p2.accounts as { username: string; id: string }[])];
      expect(all.map((a) => a.username), "in creation order, the import in its input order").toEqual(["conformance-user", "imported-1", "imported-2", "imported-3"]);
      expect(JSON.stringify(all)).not.toContain("pbkdf2");
    });

    it("POST /plants stores int64 ids exactly; a duplicate id is 400 with error 1006", async () => {
      const b = await boot(s.storage());
      const { access } = await passwordGrant(b);
      const post = (json: string) =>
        call(b, new Request(`${BASE}/plants`, { method: "POST", headers: { authorization: `Bearer ${access}`, "content-type": "application/json" }, body: json }));
      const max = '{"id":9223372036854775807,"name":"Monstera \\ud83c\\udf3f","tag":"indoor"}';
      const created = await post(max);
      expect(created.status, `${created.text} ${JSON.stringify(b.errors)}`).toBe(200);
      expect(created.text).toBe('{"id":9223372036854775807,"name":"Monstera \u{1F33F}","tag":"indoor"}');
      const min = await post('{"id":-9223372036854775808,"name":"Ficus"}');
      expect(min.text).toBe('{"id":-9223372036854775808,"name":"Ficus"}');
      expect(await s.storage().plants.get(9223372036854775807n)).toEqual({ id: 9223372036854775807n, name: "Monstera \u{1F33F}", tag: "indoor" });
      expect(await s.storage().plants.get(-9223372036854775808n)).toEqual({ id: -9223372036854775808n, name: "Ficus", tag: null });
      const dup = await post('{"id":9223372036854775807,"name":"Other"}');
      expect(dup.status).toBe(400);
      expect(dup.body.error).toBe(1006);
      expect((await s.storage().plants.get(9223372036854775807n))?.name).toBe("Monstera \u{1F33F}");
    });

    it("ill-formed UTF-16 (a lone surrogate) in any text app.admin is given: the same AdminError, naming the field, as on every store, and nothing stored (2026-11-30)", async () => {
      const b = await boot(s.storage());
      const refusal = async (op: () => Promise<unknown>) => {
        const e = await op().then(
          () => null,
          (error: unknown) => error,
        );
        // Not an AdminError: the store's own refusal (storage-sql's UnstorableValueError) or none (memory) before 2026-11-30.
        expect(e, `${String(e)} ${JSON.stringify(b.errors)}`).toBeInstanceOf(AdminError);
        return { message: (e as AdminError).message, field: (e as AdminError).field };
      };
      const password = "s3cret-Passw0rd";
      // A JWK Set given as text with the raw code unit in a member (as an object, JSON.stringify would write the ASCII escape).
      // A point on P-256: registration imports each key since 2026-12-02 (an off-curve one is refused).
      const jwks = (kid: string) => `{"keys":[{"kty":"EC","crv":"P-256","x":"mvsveKZfvoT5qUE7Hgo10iSYlc0yfJBLr1fDh0JUtUU","y":"i5hOaz9E7IEZbrz2RdQ_P5KuTM-rsY3to-foFH8dZyc","kid":"${kid}"}]}`;
      for (const bad of ["a\ud800b", "\udc00", "a\udc00\ud800"]) {
        const got = [
          await refusal(() => b.app.admin.createAccount({ username: bad, password })),
          await refusal(() => b.app.admin.createAccount({ username: "bob", password: password + bad })),
          await refusal(() => b.app.admin.createAccount({ username: "bob", password, displayName: bad })),
          await refusal(() => b.app.admin.createAccount({ username: "bob", password, email: bad })),
          await refusal(() => b.app.admin.createAccount({ username: "bob", password, roles: [bad] })),
          await refusal(() => b.app.admin.importAccounts([{ username: "ok-1", password }, { username: "ok-2", password, displayName: bad }])),
          await refusal(() => b.app.admin.createClient({ clientId: "c-1", name: bad })),
          await refusal(() => b.app.admin.createClient({ clientId: "c-1", clientSecret: "0123456789abcdef" + bad })),
          await refusal(() => b.app.admin.createClient({ clientId: "c-1", authMethod: "private_key_jwt", jwks: jwks(bad) })),
          await refusal(() => b.app.admin.createClient({ clientId: "c-1", authMethod: "private_key_jwt", jwksUri: `https://keys.example.test/${bad}` })),
        ];
        expect(got, JSON.stringify(bad)).toEqual([
          { message: "username must not contain U+0000 or unpaired surrogates", field: "username" },
          { message: "password must not contain unpaired surrogates", field: "password" },
          { message: "displayName must not contain U+0000 or unpaired surrogates", field: "displayName" },
          { message: "email must not contain U+0000 or unpaired surrogates", field: "email" },
          { message: "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters", field: "roles" },
          { message: "record 2: displayName must not contain U+0000 or unpaired surrogates", field: "displayName" },
          { message: "name must be 1-200 characters without U+0000 or unpaired surrogates", field: "name" },
          { message: "clientSecret must not contain unpaired surrogates", field: "clientSecret" },
          { message: "jwks must not contain unpaired surrogates", field: "jwks" },
          { message: "jwksUri must not contain U+0000 or unpaired surrogates", field: "jwksUri" },
        ]);
        // Looked up by such a name, nothing is found (no store holds one): the same answer too.
        await expect(b.app.admin.setAccountEnabled(bad, false)).rejects.toThrow(`user ${JSON.stringify(bad)} does not exist`);
        await expect(b.app.admin.getClient(bad)).rejects.toThrow(`client ${JSON.stringify(bad)} does not exist`);
      }
      expect((await b.app.admin.listAccounts()).map((a) => a.username), "nothing stored").toEqual([USERNAME]);
      expect((await b.app.admin.listClients()).map((c) => c.clientId), "nothing stored").toEqual([CLIENT_ID]);
      // A surrogate pair is well-formed, and stored exactly.
      const pair = "\ud83c\udf31";
      await b.app.admin.createAccount({ username: `fern ${pair}`, password: password + pair, displayName: pair, email: `${pair}@example.test`, roles: [pair] });
      await b.app.admin.createClient({ clientId: "c-pair", name: pair, authMethod: "private_key_jwt", jwks: jwks(pair) });
      expect(await s.storage().accounts.findByUsername(`fern ${pair}`)).toMatchObject({ displayName: pair, email: `${pair}@example.test`, roles: [pair] });
      expect(await s.storage().clients.get("c-pair")).toMatchObject({ name: pair, jwks: jwks(pair) });
    });

    it("a client assertion whose jti holds a lone surrogate is refused (invalid_client) before the store: it does not use up the jti that UTF-8 would make of it (2026-11-30)", async () => {
      const b = await boot(s.storage());
      const signer = await assertionSigner();
      await b.app.admin.createClient({ clientId: "signed", authMethod: "private_key_jwt", jwks: { keys: [signer.publicJwk] } });
      const cc = async (jti: string) => {
        const assertion = await signer.sign({ iss: "signed", sub: "signed", aud: `${BASE}/UserService/connect/token`, exp: T0 / 1000 + 60, jti });
        const form = { grant_type: "client_credentials", client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", client_assertion: assertion };
        const r = await call(b, new Request(`${BASE}/UserService/connect/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(form).toString() }));
        return r.status === 200 ? { status: 200 } : { status: r.status, body: r.body };
      };
      const refused = (description: string) => ({ status: 401, body: { error: "invalid_client", error_description: description } });
      expect([await cc("jti-\ud800"), await cc("jti-\udc00"), await cc("jti-\ufffd"), await cc("jti-\ufffd")]).toEqual([
        refused("The client assertion's jti must not contain unpaired surrogates."),
        refused("The client assertion's jti must not contain unpaired surrogates."),
        // Before 2026-11-30 the first was taken, and this one was "already used" (SHA-256 of UTF-8: U+FFFD for each lone surrogate).
        { status: 200 },
        refused("The client assertion was already used (jti)."),
      ]);
    });

    it("a second instance over the same store accepts the first one's tokens (the signing key is read back from the store)", async () => {
      const b = await boot(s.storage());
      const { access } = await passwordGrant(b);
      const second = createPlantgate({ storage: s.storage(), clock: () => T0, logger: { error() {}, warn() {} } });
      const res = await second.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${access}` } }));
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await second.jwks()).toEqual(await b.app.jwks());
    });
  });
}

/** base64url (no padding) of bytes, or of a string's UTF-8. */
function b64url(data: Uint8Array | string): string {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * An ES256 key pair and a compact-JWS signer over WebCrypto alone (this package has no JOSE
 * library): ECDSA's signature from `subtle.sign` is already JWS's `r || s`. JSON.stringify writes a
 * lone surrogate in a claim as its `\\uXXXX` escape, as any JWT library does.
 */
async function assertionSigner(): Promise<{ publicJwk: Record<string, unknown>; sign(claims: Record<string, unknown>): Promise<string> }> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const { kty, crv, x, y } = (await crypto.subtle.exportKey("jwk", pair.publicKey)) as Record<string, unknown>;
  return {
    publicJwk: { kty, crv, x, y, kid: "k1", alg: "ES256", use: "sig" },
    async sign(claims) {
      const input = `${b64url(JSON.stringify({ alg: "ES256", kid: "k1" }))}.${b64url(JSON.stringify(claims))}`;
      const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, pair.privateKey, new TextEncoder().encode(input));
      return `${input}.${b64url(new Uint8Array(signature))}`;
    },
  };
}

/** 32 random bytes as base64url, like the console's session ids and CSRF tokens. */
function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function secretsSuite(s: SuiteContext): void {
  describe("secrets reach storage only as hashes", () => {
    it.skipIf(!s.target.rawDump)(
      "the raw dump holds no client secret, password, refresh token or console session id/CSRF token; it holds their SHA-256 and the PBKDF2 PHC string",
      async () => {
        const b = await boot(s.storage());
        const { refresh } = await passwordGrant(b);
        const rotated = ok(b, await refreshGrant(b, refresh), "refresh").refresh_token as string;
        const { clientSecret: newSecret } = await b.app.admin.rotateClientSecret(CLIENT_ID);
        // A console session as the console stores one: the cookie's id and the CSRF token are
        // random, only their SHA-256 reach the store, and the dump must hold exactly those.
        const sessionId = randomToken();
        const csrfToken = randomToken();
        const account = await s.storage().accounts.findByUsername(USERNAME);
        expect(
          await s.storage().sessions.create({ idHash: await sha256(sessionId), accountId: account!.id, csrfHash: await sha256(csrfToken), createdAt: T0, expiresAt: T0 + 3_600_000 }),
          "storing the console session",
        ).toBe(true);
        const dump = await s.target.rawDump!(s.storage());
        expect(typeof dump).toBe("string");
        const secrets = {
          "client secret": b.clientSecret,
          "rotated client secret": newSecret,
          password: PASSWORD,
          "refresh token": refresh,
          "rotated refresh token": rotated,
          "console session id": sessionId,
          "console CSRF token": csrfToken,
        };
        for (const [what, secret] of Object.entries(secrets)) expect(dump.includes(secret), `the dump must not contain the ${what}`).toBe(false);
        const hashes = {
          "rotated client secret": await sha256(newSecret),
          "refresh token": await sha256(refresh),
          "rotated refresh token": await sha256(rotated),
          "console session id (the dump must cover sessions)": await sha256(sessionId),
          "console CSRF token": await sha256(csrfToken),
        };
        for (const [what, hash] of Object.entries(hashes)) expect(dump.includes(hash), `the dump should contain the SHA-256 of the ${what}`).toBe(true);
        expect(dump, "the dump should contain the password as a PHC string").toContain("$pbkdf2-sha256$");
      },
    );

    it.skipIf(!s.target.rawDump)(
      "with a key encryption key, the raw dump holds no private signing key material: every stored private key is AES-256-GCM sealed under the KEK with its kid",
      async () => {
        const kek = crypto.getRandomValues(new Uint8Array(32));
        const kekText = base64url(kek);
        const app = createPlantgate({ storage: s.storage(), keyEncryptionKeys: [kekText], clock: () => T0, logger: { error() {}, warn() {} } });
        await app.jwks(); // the first key
        await app.admin.rotateSigningKey({ now: true }); // one that signs at once
        await app.admin.rotateSigningKey(); // and a next key (a --now rotation after it would delete it)
        const records = await s.storage().signingKeys.list();
        expect(records).toHaveLength(3);
        const dump = await s.target.rawDump!(s.storage());
        const key = await crypto.subtle.importKey("raw", kek, "AES-GCM", false, ["decrypt"]);
        for (const r of records) {
          expect(r.privateJwk.startsWith("enc:A256GCM:"), `key ${r.kid} is stored sealed`).toBe(true);
          expect(dump.includes(r.privateJwk), "the dump covers the signing keys").toBe(true);
          const [, , , iv, ct] = r.privateJwk.split(":");
          const clear = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64url(iv!), additionalData: new TextEncoder().encode(r.kid) }, key, fromBase64url(ct!));
          const jwk = JSON.parse(new TextDecoder().decode(clear)) as Record<string, string>;
          expect(typeof jwk.d).toBe("string");
          for (const member of ["d", "p", "q", "dp", "dq", "qi"]) {
            if (jwk[member] !== undefined) expect(dump.includes(jwk[member]), `the dump must not contain the private member ${member} of ${r.kid}`).toBe(false);
          }
        }
        expect(dump.includes(kekText), "the dump must not contain the KEK").toBe(false);
        expect(dump, "no private JWK member in clear").not.toMatch(/\\?"d\\?"\s*:/);
      },
    );
  });
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}
