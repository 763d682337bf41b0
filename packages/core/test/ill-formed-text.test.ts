/**
 * Ill-formed UTF-16 (a lone surrogate, as a JSON `"\ud800"` escape carries it): core refuses it,
 * with one answer whatever the store, wherever text would reach a store or a hashed key, instead of
 * hashing it as UTF-8 (where every lone surrogate is U+FFFD, so two different inputs shared one
 * key). The same refusals on memory, SQLite, PostgreSQL, MariaDB, D1 and Redis are the conformance
 * kit's (storage-testing, through-core suite).
 */
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { describe, expect, it } from "vitest";
import { AdminError, hashPassword, verifyPassword, type SecurityEvent } from "../src/index.js";
import { BASE, harness, tokenRequest } from "./helpers.js";
import { expectTokenError, expectTokenSuccess } from "./token-helpers.js";
import { ADMIN, call, consoleHarness, signIn } from "./console-helpers.js";
import { isWellFormed, LONE_SURROGATE } from "../src/util/storable-text.js";

const TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const TOKEN_URL = `${BASE}/UserService/connect/token`;
/** A lone high surrogate, a lone low one, and the two in the wrong order: none is a pair. */
const ILL_FORMED = ["a\ud800b", "\udc00", "a\udc00\ud800"];

async function refusal(op: () => Promise<unknown>) {
  const e = await op().then(
    () => null,
    (error: unknown) => error,
  );
  if (!(e instanceof AdminError)) throw new Error(`not refused with an AdminError: ${String(e)}`);
  return { message: e.message, field: e.field };
}

describe("isWellFormed", () => {
  it("agrees with the regular expression it falls back to where String.prototype.isWellFormed is missing", () => {
    const cases = ["", "plain", "\ud83c\udf31", "a\ud83c\udf31b", ...ILL_FORMED, "\ud800", "\udfff", "\ud800\ud800\udc00", "\ud800\udc00\udc00", "x".repeat(300) + "\udbff"];
    expect(cases.map(isWellFormed)).toEqual([true, true, true, true, false, false, false, false, false, false, false, false]);
    expect(cases.map((c) => !LONE_SURROGATE.test(c))).toEqual(cases.map(isWellFormed));
  });
});

describe("ill-formed UTF-16 through app.admin", () => {
  it("every text field of an account or a client is refused with an AdminError naming it, and nothing is stored", async () => {
    const h = await harness();
    const password = "s3cret-Passw0rd";
    // A point on P-256: registration imports each key since 2026-12-02 (an off-curve one is refused).
    const jwks = (kid: string) => ({ keys: [{ kty: "EC", crv: "P-256", x: "mvsveKZfvoT5qUE7Hgo10iSYlc0yfJBLr1fDh0JUtUU", y: "i5hOaz9E7IEZbrz2RdQ_P5KuTM-rsY3to-foFH8dZyc", kid }] });
    for (const bad of ILL_FORMED) {
      const account = (input: Record<string, unknown>) => refusal(() => h.app.admin.createAccount({ username: "bob", password, ...input }));
      const client = (input: Record<string, unknown>) => refusal(() => h.app.admin.createClient({ clientId: "c-1", ...input }));
      expect([
        await account({ username: bad }),
        await account({ password: `${password}${bad}` }),
        await account({ displayName: bad }),
        await account({ email: `${bad}@example.test` }),
        await account({ roles: ["reader", bad] }),
        await refusal(() => h.app.admin.importAccounts([{ username: "ok-1", password }, { username: "ok-2", password, displayName: bad }])),
        await refusal(() => h.app.admin.ensureAccount("carol", `${password}${bad}`)),
        await client({ name: bad }),
        await client({ clientId: bad }),
        await client({ clientSecret: `0123456789abcdef${bad}` }),
        await refusal(() => h.app.admin.ensureClient("c-2", `0123456789abcdef${bad}`)),
        // The JWK Set as text holds the raw code unit (as an object it is stored as JSON, where
        // JSON.stringify writes it as the ASCII escape, which every store holds).
        await client({ authMethod: "private_key_jwt", jwks: JSON.stringify(jwks("k")).replace('"k"', JSON.stringify(bad).replace(/\\u(d[89a-f][0-9a-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))) }),
        await client({ authMethod: "private_key_jwt", jwksUri: `https://keys.example.test/${bad}` }),
        await client({ scopes: [bad] }),
      ]).toEqual([
        { message: "username must not contain U+0000 or unpaired surrogates", field: "username" },
        { message: "password must not contain unpaired surrogates", field: "password" },
        { message: "displayName must not contain U+0000 or unpaired surrogates", field: "displayName" },
        { message: "email must not contain U+0000 or unpaired surrogates", field: "email" },
        { message: "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters", field: "roles" },
        { message: "record 2: displayName must not contain U+0000 or unpaired surrogates", field: "displayName" },
        { message: "password must not contain unpaired surrogates", field: "password" },
        { message: "name must be 1-200 characters without U+0000 or unpaired surrogates", field: "name" },
        { message: "clientId must be 1-200 printable ASCII characters without spaces", field: "clientId" },
        { message: "clientSecret must not contain unpaired surrogates", field: "clientSecret" },
        { message: "clientSecret must not contain unpaired surrogates", field: "clientSecret" },
        { message: "jwks must not contain unpaired surrogates", field: "jwks" },
        { message: "jwksUri must not contain U+0000 or unpaired surrogates", field: "jwksUri" },
        { message: "unknown scope; known: Platform_UserAPIs Platform_AllAppsServerCommands offline_access", field: "scopes" },
      ]);
    }
    // Nothing was stored: the harness's own client and account only.
    expect((await h.app.admin.listClients()).map((c) => c.clientId)).toEqual(["app-1"]);
    expect((await h.app.admin.listAccounts()).map((a) => a.username)).toEqual(["alice"]);
    // A surrogate pair is well-formed text, and taken everywhere.
    const pair = "\ud83c\udf31";
    await h.app.admin.createAccount({ username: `fern${pair}`, password: `${password}${pair}`, displayName: pair, email: `${pair}@example.test`, roles: [pair] });
    await h.app.admin.createClient({ clientId: "c-3", name: pair, clientSecret: `0123456789abcdef${pair}` });
    const k = await h.app.admin.createClient({ authMethod: "private_key_jwt", jwks: JSON.stringify(jwks(pair)) });
    expect(JSON.parse(k.client.jwks!).keys[0].kid).toBe(pair);
  });

  it("hashPassword refuses a password holding a lone surrogate, and verifyPassword never matches one", async () => {
    const random = (n: number) => crypto.getRandomValues(new Uint8Array(n));
    await expect(hashPassword("pass-word-\ud800", random, { iterations: 1000 })).rejects.toThrow(new TypeError("a password must not contain unpaired surrogates"));
    // UTF-8 makes every lone surrogate U+FFFD: the PBKDF2 input of "pass-word-\ud800" is that of this one.
    const stored = await hashPassword("pass-word-\ufffd", random, { iterations: 1000 });
    expect(await verifyPassword("pass-word-\ufffd", stored)).toBe(true);
    for (const bad of ["pass-word-\ud800", "pass-word-\udc00"]) expect(await verifyPassword(bad, stored)).toBe(false);
  });
});

describe("ill-formed UTF-16 in a console sign-in (JSON)", () => {
  it("a password that differs from the account's U+FFFD only by a lone surrogate does not sign in; the well-formed one does", async () => {
    const events: SecurityEvent[] = [];
    const h = await consoleHarness({ onEvent: (e) => void events.push(e) });
    await h.app.admin.createAccount({ username: "fffd", password: "root-password-\ufffd", roles: ["admin"] });
    await h.app.flushEvents();
    events.length = 0;
    for (const bad of ["root-password-\ud800", "root-password-\udc00"]) {
      const res = await call(h.app, "POST", "/api/session", { body: { username: "fffd", password: bad } });
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: 1305, message: "The username or password is incorrect." });
    }
    await h.app.flushEvents();
    expect(events.map((e) => [e.type, (e as { username?: unknown }).username, (e as { reason?: unknown }).reason])).toEqual([
      ["account.login_failed", "fffd", "invalid_password"],
      ["account.login_failed", "fffd", "invalid_password"],
    ]);
    await signIn(h.app, "fffd", "root-password-\ufffd");
  });

  it("the console API refuses an account or client with a lone surrogate as 1009, naming the rule", async () => {
    const h = await consoleHarness();
    const s = await signIn(h.app, ADMIN.username, ADMIN.password);
    const post = (path: string, body: unknown) => call(h.app, "POST", path, { body, cookie: s.cookie, csrf: s.csrf });
    const answers = [];
    for (const [path, body] of [
      ["/api/accounts", { username: "dave", password: "dave-password-\ud800" }],
      ["/api/accounts", { username: "dave", password: "dave-password-1", displayName: "D\udc00" }],
      ["/api/clients", { name: "reporting\ud800" }],
    ] as const) {
      const res = await post(path, body);
      answers.push([res.status, await res.json()]);
    }
    expect(answers).toEqual([
      [400, { error: 1009, message: "password must not contain unpaired surrogates" }],
      [400, { error: 1009, message: "displayName must not contain U+0000 or unpaired surrogates" }],
      [400, { error: 1009, message: "name must be 1-200 characters without U+0000 or unpaired surrogates" }],
    ]);
  });
});

interface Signer {
  key: CryptoKey;
  kid: string;
}

async function signedClient() {
  const events: SecurityEvent[] = [];
  const h = await harness({ onEvent: (e) => void events.push(e) });
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const signer: Signer = { key: privateKey, kid: "es-1" };
  await h.app.admin.createClient({ clientId: "signed", authMethod: "private_key_jwt", jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: "es-1", alg: "ES256", use: "sig" }] } });
  const take = async () => {
    await h.app.flushEvents();
    return events.splice(0).map((e) => (e.type === "client.authentication_failed" ? [e.type, e.client_id, e.reason] : [e.type]));
  };
  await take();
  const assertion = (claims: Record<string, unknown>) => {
    const now = Math.floor(h.clock.now() / 1000);
    return new SignJWT({ iss: "signed", sub: "signed", aud: TOKEN_URL, iat: now, exp: now + 60, ...claims }).setProtectedHeader({ alg: "ES256", kid: signer.kid }).sign(signer.key);
  };
  const cc = async (claims: Record<string, unknown>) =>
    tokenRequest(h.app, { grant_type: "client_credentials", client_assertion_type: TYPE, client_assertion: await assertion(claims) });
  return { h, cc, take };
}

const refused = (description: string) => ({ error: "invalid_client", error_description: description });

describe("ill-formed UTF-16 in a client assertion's claims", () => {
  it("two jtis that differ only by a lone surrogate are both refused, and neither uses up the jti the store would have confused them with", async () => {
    const { cc, take } = await signedClient();
    // JSON carries them as escapes: SignJWT writes "\ud800", and the server parses it back.
    await expectTokenError(await cc({ jti: "jti-\ud800" }), 401, refused("The client assertion's jti must not contain unpaired surrogates."));
    await expectTokenError(await cc({ jti: "jti-\udc00" }), 401, refused("The client assertion's jti must not contain unpaired surrogates."));
    // Hashed as UTF-8, both were the key of this one: "already used" before 2026-11-30.
    await expectTokenSuccess(await cc({ jti: "jti-\ufffd" }));
    await expectTokenError(await cc({ jti: "jti-\ufffd" }), 401, refused("The client assertion was already used (jti)."));
    // A surrogate pair is a well-formed jti.
    await expectTokenSuccess(await cc({ jti: "jti-\ud83c\udf31" }));
    expect(await take()).toEqual([
      ["client.authentication_failed", "signed", "invalid_assertion"],
      ["client.authentication_failed", "signed", "invalid_assertion"],
      ["token.issued"],
      ["client.authentication_failed", "signed", "invalid_assertion"],
      ["token.issued"],
    ]);
  });

  it("a sub with a lone surrogate is a malformed assertion (no client is looked up by it); an iss with one is not the client id", async () => {
    const { cc, take } = await signedClient();
    await expectTokenError(await cc({ jti: "s-1", sub: "signed\ud800" }), 401, refused("The client assertion's sub must not contain unpaired surrogates."));
    await expectTokenError(await cc({ jti: "s-2", iss: "signed\ud800" }), 401, refused("The client assertion's iss and sub must both be the client id."));
    expect(await take()).toEqual([
      ["client.authentication_failed", null, "malformed"],
      ["client.authentication_failed", "signed", "invalid_assertion"],
    ]);
  });
});
