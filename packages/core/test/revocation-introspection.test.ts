/**
 * Token revocation (RFC 7009) at POST /UserService/connect/revocation and token introspection
 * (RFC 7662) at POST /UserService/connect/introspect: client-authenticated like the token endpoint,
 * a client sees and revokes only its own tokens, refresh-token revocation takes the whole family.
 */
import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, StorageError } from "../src/index.js";
import { getAccounts, read } from "./api-helpers.js";
import { BASE, basic, clientToken, harness, passwordTokens, type Harness } from "./helpers.js";
import { BASIC_CHALLENGE, expectTokenError, expectTokenSuccess, FORM, INVALID_REFRESH, refreshRequest } from "./token-helpers.js";

const REVOKE = `${BASE}/UserService/connect/revocation`;
const INTROSPECT = `${BASE}/UserService/connect/introspect`;

function post(h: Harness, url: string, params: Record<string, string>, headers: Record<string, string> = { authorization: basic(h.clientId, h.clientSecret) }) {
  return h.app.fetch(new Request(url, { method: "POST", headers: { "content-type": FORM, ...headers }, body: new URLSearchParams(params).toString() }));
}

async function expectRevoked200(res: Response): Promise<void> {
  expect(res.status).toBe(200);
  expect(await res.text()).toBe("");
  expect(res.headers.get("cache-control")).toBe("no-store");
}

async function introspect(h: Harness, token: string, extra: Record<string, string> = {}, headers?: Record<string, string>) {
  const res = await post(h, INTROSPECT, { token, ...extra }, headers);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/json");
  expect(res.headers.get("cache-control")).toBe("no-store");
  return (await res.json()) as Record<string, unknown>;
}

/** A second client of the same server with its own credentials. */
async function otherClient(h: Harness) {
  const { clientSecret } = await h.app.admin.createClient({ clientId: "app-2" });
  return { authorization: basic("app-2", clientSecret) };
}

const API_OK = 200;

/** A memory store whose revoked tokens' `add` fails while `down.add` (a Redis that is down while the rest answers). */
function failingRevokedTokens() {
  const memory = createMemoryStorage();
  const down = { add: false };
  const storage = {
    ...memory,
    revokedTokens: { ...memory.revokedTokens, add: (key: string, at: number) => (down.add ? Promise.reject(new StorageError("revoked-token store down")) : memory.revokedTokens.add(key, at)) },
  };
  return { storage, down };
}

describe("RFC 7009 revocation", () => {
  it("RFC 7009 §2.1: revoking an access token makes the bearer check refuse it; other tokens still work", async () => {
    const h = await harness();
    const a = await clientToken(h);
    const b = await clientToken(h);
    expect((await getAccounts(h.app, a)).status).toBe(API_OK);
    await expectRevoked200(await post(h, REVOKE, { token: a, token_type_hint: "access_token" }));
    const refused = await read(await getAccounts(h.app, a));
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: 1202, message: "The access token is invalid or expired." });
    expect(refused.wwwAuthenticate).toBe('Bearer realm="plantgate", error="invalid_token", error_description="The access token is invalid or expired."');
    expect((await getAccounts(h.app, b)).status).toBe(API_OK);
    // Another instance over the same store refuses it too.
    const sibling = createPlantgate({ storage: h.app.storage, clock: h.clock.now, logger: { error() {}, warn() {} } });
    expect((await getAccounts(sibling, a)).status).toBe(401);
    // The entry is kept exactly as long as the token could have lived.
    const { exp, jti } = decodeJwt(a) as { exp: number; jti: string };
    expect(await h.app.storage.revokedTokens.has(jti)).toBe(true);
    expect(await h.app.storage.revokedTokens.deleteExpired(exp * 1000 - 1)).toBe(0);
    expect(await h.app.storage.revokedTokens.deleteExpired(exp * 1000)).toBe(1);
  });

  it("RFC 7009 §2.1: revoking a refresh token revokes its whole family (earlier and later tokens)", async () => {
    const h = await harness();
    const first = (await passwordTokens(h)).refresh_token!;
    const second = (await expectTokenSuccess(await refreshRequest(h, first))).refresh_token!;
    // Revoke the consumed first token: the live second one, of the same family, dies with it.
    await expectRevoked200(await post(h, REVOKE, { token: first, token_type_hint: "refresh_token" }));
    await expectTokenError(await refreshRequest(h, second), 400, INVALID_REFRESH);
    // A separate family of the same user is untouched.
    const other = (await passwordTokens(h)).refresh_token!;
    await expectTokenSuccess(await refreshRequest(h, other));
  });

  it("RFC 7009 §2.1: revoking a refresh token revokes the access tokens of its grant too (their sid), and no other token", async () => {
    const events: { type: string; family_id?: string | null }[] = [];
    const h = await harness({ onEvent: (e) => void events.push(e as never) });
    const granted = await passwordTokens(h);
    const refreshed = await expectTokenSuccess(await refreshRequest(h, granted.refresh_token!));
    // Every access token of the grant names its family as sid, the one the events name.
    await h.app.flushEvents();
    const family = events.find((e) => e.type === "token.issued")!.family_id!;
    expect([decodeJwt(granted.access_token).sid, decodeJwt(refreshed.access_token).sid]).toEqual([family, family]);
    const other = await passwordTokens(h);
    const noRefresh = (await passwordTokens(h, "Platform_UserAPIs")).access_token;
    const machine = await clientToken(h);
    expect([decodeJwt(noRefresh).sid, decodeJwt(machine).sid]).toEqual([undefined, undefined]);
    for (const t of [granted.access_token, refreshed.access_token]) expect((await read(await getAccounts(h.app, t))).status).toBe(API_OK);

    await expectRevoked200(await post(h, REVOKE, { token: refreshed.refresh_token!, token_type_hint: "refresh_token" }));
    // Until 2026-12-01 both worked on until they expired (two hours).
    for (const t of [granted.access_token, refreshed.access_token]) {
      const res = await read(await getAccounts(h.app, t));
      expect([res.status, res.body]).toEqual([401, { error: 1202, message: "The access token is invalid or expired." }]);
      expect(await introspect(h, t)).toEqual({ active: false });
    }
    // Another grant of the same user, a grant without refresh and a client's token are untouched.
    for (const t of [other.access_token, noRefresh, machine]) expect((await read(await getAccounts(h.app, t))).status).toBe(API_OK);
    expect((await introspect(h, other.access_token)).active).toBe(true);
    // The family's entry lives as long as the longest access-token lifetime (7200 s here), then goes.
    expect(await h.app.storage.revokedTokens.has(`sid:${family}`)).toBe(true);
    h.clock.advance(7200 * 1000);
    expect(await h.app.storage.revokedTokens.deleteExpired(h.clock.now(), 100)).toBe(1);
  });

  it("a reuse whose grant entry cannot be stored (revoked tokens in a failing Redis) is a 503 that still revokes the family and is reported (event, warn): the thief's newest token is refused at once; the access tokens live until they expire", async () => {
    const { storage, down } = failingRevokedTokens();
    const events: string[] = [];
    const warns: string[] = [];
    const h = await harness({ storage, refreshGraceSeconds: 0, onEvent: (e) => void events.push(e.type), logger: { error() {}, warn: (m: string) => void warns.push(m) } });
    const granted = await passwordTokens(h);
    // The thief rotates the stolen token first; the victim presents it then (the breach signal).
    const thief = await expectTokenSuccess(await refreshRequest(h, granted.refresh_token!));
    down.add = true;
    const victim = await refreshRequest(h, granted.refresh_token!);
    expect([victim.status, await victim.json()]).toEqual([503, { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." }]);
    // Reported now: a retry finds the family revoked, which is no reuse any more.
    expect(events.filter((e) => e === "refresh_token.reuse_detected")).toEqual(["refresh_token.reuse_detected"]);
    expect(warns.filter((m) => m.includes("reuse"))).toEqual(["refresh token reuse detected; family revoked, but its access tokens could not be revoked (they work until they expire)"]);
    // Until 2026-12-01 the 503 revoked nothing: the thief's token rotated on until someone
    // presented a spent token again after the outage.
    await expectTokenError(await refreshRequest(h, thief.refresh_token!), 400, INVALID_REFRESH);
    down.add = false;
    await expectTokenError(await refreshRequest(h, granted.refresh_token!), 400, INVALID_REFRESH);
    // The entry was never written (a revoked family's tokens write nothing): the access tokens work
    // until they expire, as every grant's did before the entries existed.
    expect(await h.app.storage.revokedTokens.has(`sid:${decodeJwt(thief.access_token).sid as string}`)).toBe(false);
    for (const t of [granted.access_token, thief.access_token]) expect((await read(await getAccounts(h.app, t))).status).toBe(API_OK);
    expect(events.filter((e) => e === "refresh_token.reuse_detected")).toHaveLength(1);
  });

  it("an RFC 7009 revocation whose grant entry cannot be stored is a 503 that still revokes the refresh tokens; the retry is a 200 that writes the entry (the access token refused from then on)", async () => {
    const { storage, down } = failingRevokedTokens();
    const h = await harness({ storage });
    const granted = await passwordTokens(h);
    down.add = true;
    expect((await post(h, REVOKE, { token: granted.refresh_token! })).status).toBe(503);
    down.add = false;
    await expectTokenError(await refreshRequest(h, granted.refresh_token!), 400, INVALID_REFRESH);
    // The access token works until the retry writes the grant's entry; then it is refused.
    expect((await read(await getAccounts(h.app, granted.access_token))).status).toBe(API_OK);
    await expectRevoked200(await post(h, REVOKE, { token: granted.refresh_token! }));
    expect((await read(await getAccounts(h.app, granted.access_token))).status).toBe(401);
  });

  it("a grace use that loses to a logout (RFC 7009) between the token's read and its grace use is invalid_grant, not reuse: no event, no warn line", async () => {
    const memory = createMemoryStorage();
    let beforeGraceUse: (() => Promise<void>) | null = null;
    const storage = {
      ...memory,
      refreshTokens: {
        ...memory.refreshTokens,
        async graceUse(hash: string, after: number, max: number) {
          const run = beforeGraceUse;
          beforeGraceUse = null;
          if (run) await run();
          return memory.refreshTokens.graceUse(hash, after, max);
        },
      },
    };
    const events: string[] = [];
    const warns: string[] = [];
    const h = await harness({ storage, onEvent: (e) => void events.push(e.type), logger: { error() {}, warn: (m: string) => void warns.push(m) } });
    const granted = await passwordTokens(h);
    const rotated = await expectTokenSuccess(await refreshRequest(h, granted.refresh_token!));
    // A second tab retries the rotated token within the window while the first tab logs out.
    beforeGraceUse = async () => expectRevoked200(await post(h, REVOKE, { token: rotated.refresh_token! }));
    await expectTokenError(await refreshRequest(h, granted.refresh_token!), 400, INVALID_REFRESH);
    expect(beforeGraceUse).toBeNull();
    expect(events).toEqual(["client.created", "account.created", "token.issued", "token.refreshed", "token.issued", "token.revoked"]);
    expect(warns.filter((m) => m.includes("reuse"))).toEqual([]);
  });

  it("a family's access token names sid (and cgen, the client generation) in the same place whoever signs it: jose, an external signer (the JWS assembled by hand)", async () => {
    const { privateKey, publicKey } = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])) as CryptoKeyPair;
    const signer = {
      alg: "ES256" as const,
      publicJwk: await crypto.subtle.exportKey("jwk", publicKey),
      sign: async (data: Uint8Array) => new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, privateKey, data as Uint8Array<ArrayBuffer>)),
    };
    const keysOf = (jwt: string) => Object.keys(JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString()) as object);
    const order = ["client_id", "scope", "sid", "cgen", "iss", "sub", "aud", "iat", "exp", "jti"];
    for (const options of [{}, { signer }]) {
      const h = await harness(options);
      const { access_token } = await passwordTokens(h);
      expect(keysOf(access_token), JSON.stringify(Object.keys(options))).toEqual(order);
      expect((await read(await getAccounts(h.app, access_token))).status).toBe(API_OK);
    }
  });

  it("refresh-token reuse revokes the family's access tokens too (the thief's and the holder's)", async () => {
    const h = await harness({ refreshGraceSeconds: 0 });
    const granted = await passwordTokens(h);
    const refreshed = await expectTokenSuccess(await refreshRequest(h, granted.refresh_token!));
    // The first refresh token again: reuse.
    await expectTokenError(await refreshRequest(h, granted.refresh_token!), 400, INVALID_REFRESH);
    for (const t of [granted.access_token, refreshed.access_token]) expect((await read(await getAccounts(h.app, t))).status).toBe(401);
  });

  it("RFC 7009 §2.1: a wrong token_type_hint only changes the search order", async () => {
    const h = await harness();
    const access = await clientToken(h);
    const refresh = (await passwordTokens(h)).refresh_token!;
    await expectRevoked200(await post(h, REVOKE, { token: access, token_type_hint: "refresh_token" }));
    await expectRevoked200(await post(h, REVOKE, { token: refresh, token_type_hint: "access_token" }));
    expect((await getAccounts(h.app, access)).status).toBe(401);
    await expectTokenError(await refreshRequest(h, refresh), 400, INVALID_REFRESH);
    // A hint the server does not know is ignored (RFC 7009 §2.1): each kind is still found and revoked.
    const access2 = await clientToken(h);
    const refresh2 = (await passwordTokens(h)).refresh_token!;
    await expectRevoked200(await post(h, REVOKE, { token: refresh2, token_type_hint: "something_else" }));
    await expectRevoked200(await post(h, REVOKE, { token: access2, token_type_hint: "id_token" }));
    expect((await getAccounts(h.app, access2)).status).toBe(401);
    await expectTokenError(await refreshRequest(h, refresh2), 400, INVALID_REFRESH);
  });

  it("RFC 7009 §2.2: an unknown, malformed, expired or already revoked token is a 200 and changes nothing", async () => {
    const h = await harness();
    const access = await clientToken(h);
    for (const token of ["not-a-token", "a.b.c", "x".repeat(4096), "ünïcødé"]) {
      await expectRevoked200(await post(h, REVOKE, { token }));
    }
    h.clock.advance(7200 * 1000);
    // Expired: nothing to record (the bearer check refuses it anyway).
    await expectRevoked200(await post(h, REVOKE, { token: access }));
    expect(await h.app.storage.revokedTokens.has((decodeJwt(access) as { jti: string }).jti)).toBe(false);
    const fresh = await clientToken(h);
    await expectRevoked200(await post(h, REVOKE, { token: fresh }));
    await expectRevoked200(await post(h, REVOKE, { token: fresh }));
    // Revoked once and for good: the second 200 changed nothing.
    expect(await h.app.storage.revokedTokens.has((decodeJwt(fresh) as { jti: string }).jti)).toBe(true);
    expect((await getAccounts(h.app, fresh)).status).toBe(401);
  });

  it("RFC 7009 §2.1: a token of another client is refused with invalid_request and stays valid", async () => {
    const h = await harness();
    const other = await otherClient(h);
    const access = await clientToken(h);
    const refresh = (await passwordTokens(h)).refresh_token!;
    const body = { error: "invalid_request", error_description: "The token was not issued to this client." };
    await expectTokenError(await post(h, REVOKE, { token: access }, other), 400, body);
    await expectTokenError(await post(h, REVOKE, { token: refresh }, other), 400, body);
    expect((await getAccounts(h.app, access)).status).toBe(API_OK);
    await expectTokenSuccess(await refreshRequest(h, refresh));
  });

  it("RFC 7009 §2.2: another client's refresh token that is consumed, revoked or expired, or access token that is revoked, is an invalid token: 200, as an unknown string (a 400 told it had been a token)", async () => {
    const h = await harness({ refreshGraceSeconds: 0 });
    const other = await otherClient(h);
    const consumed = (await passwordTokens(h)).refresh_token!;
    await expectTokenSuccess(await refreshRequest(h, consumed));
    const revoked = (await passwordTokens(h)).refresh_token!;
    await expectRevoked200(await post(h, REVOKE, { token: revoked }));
    const expiring = (await passwordTokens(h)).refresh_token!;
    const live = (await passwordTokens(h)).refresh_token!;
    for (const token of [consumed, revoked, "an-unknown-string-of-no-token"]) await expectRevoked200(await post(h, REVOKE, { token }, other));
    // Another client's access token once revoked is invalid too (a 400 would tell it had been a token).
    const revokedAccess = await clientToken(h);
    await expectRevoked200(await post(h, REVOKE, { token: revokedAccess }));
    await expectRevoked200(await post(h, REVOKE, { token: revokedAccess }, other));
    // The live one is still refused with the error, and stays usable.
    await expectTokenError(await post(h, REVOKE, { token: live }, other), 400, { error: "invalid_request", error_description: "The token was not issued to this client." });
    h.clock.advance(400 * 24 * 3600 * 1000);
    await expectRevoked200(await post(h, REVOKE, { token: expiring }, other));
    // Introspection by the other client says the same of each: inactive.
    for (const token of [consumed, revoked, expiring]) expect(await introspect(h, token, {}, other)).toEqual({ active: false });
  });

  it("RFC 7009 §2.2.1: a revocation that was stored stands when the sweep of old revoked jtis after it fails: 200, logged, not 503", async () => {
    const warned: unknown[][] = [];
    const storage = createMemoryStorage();
    const failing = { ...storage, revokedTokens: { ...storage.revokedTokens, deleteExpired: async () => Promise.reject(new StorageError("revoked-token store down")) } };
    const h = await harness({ storage: failing, logger: { error() {}, warn: (...args: unknown[]) => void warned.push(args) } });
    const access = await clientToken(h);
    await expectRevoked200(await post(h, REVOKE, { token: access }));
    expect(await storage.revokedTokens.has((decodeJwt(access) as { jti: string }).jti)).toBe(true);
    expect((await getAccounts(h.app, access)).status).toBe(401);
    expect(warned.map((w) => w[0]).filter((m) => String(m).startsWith("revoked-token"))).toEqual(["revoked-token sweep failed after a revocation (the revocation stands; prune clears the backlog)"]);
  });

  it("RFC 7009 §2.1 / RFC 6749 §2.3.1: the client must authenticate; token is required", async () => {
    const h = await harness();
    const access = await clientToken(h);
    const failed = { error: "invalid_client", error_description: "Client authentication failed." };
    await expectTokenError(await post(h, REVOKE, { token: access }, { authorization: basic(h.clientId, "wrong") }), 401, failed);
    const none = await post(h, REVOKE, { token: access }, {});
    expect(none.headers.get("www-authenticate")).toBe(BASIC_CHALLENGE);
    await expectTokenError(none, 401, {
      error: "invalid_client",
      error_description: "Client authentication is required (HTTP Basic, client_id and client_secret, or a client assertion).",
    });
    // client_secret_post works as at the token endpoint.
    await expectRevoked200(await post(h, REVOKE, { token: "unknown", client_id: h.clientId, client_secret: h.clientSecret }, {}));
    await expectTokenError(await post(h, REVOKE, {}), 400, { error: "invalid_request", error_description: "The token parameter is required." });
    await expectTokenError(await post(h, REVOKE, { token: "a", token_type_hint: "x" }, { authorization: basic(h.clientId, h.clientSecret), "content-type": "application/json" }), 400, {
      error: "invalid_request",
      error_description: "The request body must be application/x-www-form-urlencoded.",
    });
    expect((await getAccounts(h.app, access)).status).toBe(API_OK);
    const get = await h.app.fetch(new Request(REVOKE));
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
  });
});

describe("RFC 7662 introspection", () => {
  it("RFC 7662 §2.2: an active password-grant access token, with every member", async () => {
    const h = await harness();
    const { access_token } = await passwordTokens(h, "Platform_UserAPIs");
    const claims = decodeJwt(access_token) as { sub: string; jti: string; iat: number; exp: number };
    expect(await introspect(h, access_token)).toEqual({
      active: true,
      scope: "Platform_UserAPIs",
      client_id: "app-1",
      username: "alice",
      token_type: "Bearer",
      exp: claims.exp,
      iat: claims.iat,
      sub: claims.sub,
      aud: BASE,
      iss: BASE,
      jti: claims.jti,
    });
    expect(claims.exp - claims.iat).toBe(7200);
  });

  it("RFC 7662 §2.2: a client-credentials token has no username", async () => {
    const h = await harness();
    const token = await clientToken(h, "Platform_AllAppsServerCommands");
    const c = decodeJwt(token) as { jti: string; iat: number; exp: number };
    expect(await introspect(h, token, { token_type_hint: "access_token" })).toEqual({
      active: true,
      scope: "Platform_AllAppsServerCommands",
      client_id: "app-1",
      token_type: "Bearer",
      exp: c.exp,
      iat: c.iat,
      sub: "client:app-1",
      aud: BASE,
      iss: BASE,
      jti: c.jti,
    });
  });

  it("RFC 7662 §2.2: an active refresh token; consumed, revoked or expired ones are inactive", async () => {
    const h = await harness();
    const t0 = h.clock.now();
    const refresh = (await passwordTokens(h)).refresh_token!;
    const account = (await h.app.storage.accounts.findByUsername("alice"))!;
    expect(await introspect(h, refresh, { token_type_hint: "refresh_token" })).toEqual({
      active: true,
      scope: "Platform_UserAPIs offline_access",
      client_id: "app-1",
      username: "alice",
      exp: t0 / 1000 + 7 * 24 * 3600,
      iat: t0 / 1000,
      sub: account.id,
      iss: BASE,
    });
    const next = (await expectTokenSuccess(await refreshRequest(h, refresh))).refresh_token!;
    // Inactive at once, within the 30 s grace window too, where presenting it again still gets the
    // rotation's answer (README: a grace use only delivers that answer again).
    expect(await introspect(h, refresh)).toEqual({ active: false });
    expect((await expectTokenSuccess(await refreshRequest(h, refresh))).refresh_token).toBe(next);
    expect(await introspect(h, refresh)).toEqual({ active: false });
    expect((await introspect(h, next)).active).toBe(true);
    h.clock.advance(7 * 24 * 3600 * 1000);
    expect(await introspect(h, next)).toEqual({ active: false });
    const third = (await passwordTokens(h)).refresh_token!;
    await expectRevoked200(await post(h, REVOKE, { token: third }));
    expect(await introspect(h, third)).toEqual({ active: false });
  });

  it("RFC 7662 §2.2: unknown, expired and revoked access tokens are {active:false}", async () => {
    const h = await harness();
    expect(await introspect(h, "garbage")).toEqual({ active: false });
    const revoked = await clientToken(h);
    await expectRevoked200(await post(h, REVOKE, { token: revoked }));
    expect(await introspect(h, revoked)).toEqual({ active: false });
    const expiring = await clientToken(h);
    h.clock.advance(7200 * 1000);
    expect(await introspect(h, expiring)).toEqual({ active: false });
  });

  it("RFC 7662 §2.1 / §4: another client's token is {active:false}, not an error", async () => {
    const h = await harness();
    const other = await otherClient(h);
    const access = await clientToken(h);
    const refresh = (await passwordTokens(h)).refresh_token!;
    expect(await introspect(h, access, {}, other)).toEqual({ active: false });
    expect(await introspect(h, refresh, {}, other)).toEqual({ active: false });
    expect((await introspect(h, access)).active).toBe(true);
  });

  it("a client re-created with a deleted client's id does not inherit its tokens (introspection, revocation, refresh)", async () => {
    const h = await harness();
    const access = await clientToken(h);
    const { access_token: userAccess, refresh_token } = await passwordTokens(h);
    h.clock.advance(1000);
    await h.app.admin.deleteClient(h.clientId);
    const { clientSecret } = await h.app.admin.createClient({ clientId: h.clientId });
    const again = { ...h, clientSecret };
    const auth = { authorization: basic(h.clientId, clientSecret) };
    for (const token of [access, userAccess, refresh_token!]) expect(await introspect(again, token, {}, auth)).toEqual({ active: false });
    await expectTokenError(await post(again, REVOKE, { token: access }, auth), 400, { error: "invalid_request", error_description: "The token was not issued to this client." });
    await expectTokenError(await post(again, REVOKE, { token: refresh_token! }, auth), 400, { error: "invalid_request", error_description: "The token was not issued to this client." });
    await expectTokenError(await refreshRequest(again, refresh_token!, {}, auth), 400, INVALID_REFRESH);
    // The new client's own tokens, even issued within the second it was created, are its own.
    const own = await clientToken(again);
    expect((await introspect(again, own, {}, auth)).active).toBe(true);
  });

  it("a token issued in the same second as its client's creation (later in that second) is the client's own", async () => {
    const h = await harness();
    h.clock.advance(700); // the client below is created at .700 s; iat has whole seconds (.000)
    const { clientSecret } = await h.app.admin.createClient({ clientId: "app-late" });
    const late = { ...h, clientId: "app-late", clientSecret };
    h.clock.advance(100);
    const access = await clientToken(late);
    expect((await introspect(late, access, {}, { authorization: basic("app-late", clientSecret) })).active).toBe(true);
  });

  it("tokens of a disabled account are inactive; disabling also revokes its refresh tokens", async () => {
    const h = await harness();
    const { access_token, refresh_token } = await passwordTokens(h);
    await h.app.admin.setAccountEnabled("alice", false);
    expect(await introspect(h, access_token)).toEqual({ active: false });
    expect(await introspect(h, refresh_token!)).toEqual({ active: false });
    await expectTokenError(await refreshRequest(h, refresh_token!), 400, INVALID_REFRESH);
    // Documented decision: the API bearer check does not read the account (no extra storage read
    // per call); the access token lives out its (short) lifetime unless it is revoked explicitly.
    expect((await getAccounts(h.app, access_token)).status).toBe(API_OK);
    await expectRevoked200(await post(h, REVOKE, { token: access_token }));
    expect((await getAccounts(h.app, access_token)).status).toBe(401);
  });

  it("RFC 7662 §2.1: the client must authenticate and token is required", async () => {
    const h = await harness();
    const token = await clientToken(h);
    await expectTokenError(await post(h, INTROSPECT, { token }, { authorization: basic(h.clientId, "nope") }), 401, {
      error: "invalid_client",
      error_description: "Client authentication failed.",
    });
    await expectTokenError(await post(h, INTROSPECT, { token_type_hint: "access_token" }), 400, {
      error: "invalid_request",
      error_description: "The token parameter is required.",
    });
    // RFC 7662 §2.1 uses RFC 6749 form rules: a repeated parameter is invalid_request.
    const repeated = await h.app.fetch(
      new Request(INTROSPECT, {
        method: "POST",
        headers: { "content-type": FORM, authorization: basic(h.clientId, h.clientSecret) },
        body: `token=${token}&token=other`,
      }),
    );
    await expectTokenError(repeated, 400, { error: "invalid_request", error_description: "Parameters must not be repeated: token." });
    // RFC 6749 §3.2: a parameter introspection does not know (a token request's) is ignored, repeated or not.
    const ignored = await h.app.fetch(
      new Request(INTROSPECT, {
        method: "POST",
        headers: { "content-type": FORM, authorization: basic(h.clientId, h.clientSecret) },
        body: `token=${token}&scope=a&scope=b&grant_type=x&grant_type=y`,
      }),
    );
    expect(ignored.status).toBe(200);
    expect(((await ignored.json()) as { active: unknown }).active).toBe(true);
  });
});

describe("tokens of another host, with neither issuer nor baseUrl configured (finding 3)", () => {
  const tokenOn = async (h: Harness, origin: string) => {
    const res = await h.app.fetch(
      new Request(`${origin}/UserService/connect/token`, {
        method: "POST",
        headers: { authorization: basic(h.clientId, h.clientSecret), "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=client_credentials",
      }),
    );
    expect(res.status).toBe(200);
    return ((await res.json()) as { access_token: string }).access_token;
  };
  it("a token issued on host A and revoked on host B is revoked on A too; introspection on B names A's iss and aud", async () => {
    const h = await harness();
    const token = await tokenOn(h, "http://a.example");
    const auth = { authorization: basic(h.clientId, h.clientSecret), "content-type": "application/x-www-form-urlencoded" };
    const seen = await h.app.fetch(new Request("http://b.example/UserService/connect/introspect", { method: "POST", headers: auth, body: `token=${encodeURIComponent(token)}` }));
    const body = (await seen.json()) as Record<string, unknown>;
    expect({ active: body.active, iss: body.iss, aud: body.aud, jti: body.jti }).toEqual({ active: true, iss: "http://a.example", aud: "http://a.example", jti: decodeJwt(token).jti });
    const revoked = await h.app.fetch(new Request("http://b.example/UserService/connect/revocation", { method: "POST", headers: auth, body: `token=${encodeURIComponent(token)}` }));
    await expectRevoked200(revoked);
    const onA = await h.app.fetch(new Request("http://a.example/plants", { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: '{"id":1,"name":"x"}' }));
    expect(onA.status).toBe(401);
    const after = await h.app.fetch(new Request("http://a.example/UserService/connect/introspect", { method: "POST", headers: auth, body: `token=${encodeURIComponent(token)}` }));
    expect(await after.json()).toEqual({ active: false });
  });

  it("a token signed by a stranger that names some host is still unknown", async () => {
    const h = await harness();
    const other = await harness();
    const token = await tokenOn(other, "http://a.example");
    const auth = { authorization: basic(h.clientId, h.clientSecret), "content-type": "application/x-www-form-urlencoded" };
    const seen = await h.app.fetch(new Request("http://b.example/UserService/connect/introspect", { method: "POST", headers: auth, body: `token=${encodeURIComponent(token)}` }));
    expect(await seen.json()).toEqual({ active: false });
  });
});
