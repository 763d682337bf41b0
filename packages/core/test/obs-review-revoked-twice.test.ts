/**
 * Review (obs): `token.revoked` is "emitted when a token is revoked at the revocation endpoint".
 * A token already revoked (a logout sent twice, an SDK retrying its sign-out), or a refresh token
 * whose family reuse detection already ended, is an invalid token to RFC 7009 §2.2: the second
 * request revokes nothing, yet each one records another `token.revoked` in the audit trail.
 */
import { expect, it } from "vitest";
import { createMemoryStorage, StorageError, type SecurityEvent, type Storage } from "../src/index.js";
import { basic, BASE, harness } from "./helpers.js";

it("revoking the same access token and refresh token twice: one token.revoked each", async () => {
  const events: SecurityEvent[] = [];
  const h = await harness({ onEvent: (e) => void events.push(e) });
  const post = (path: string, form: Record<string, string>) =>
    h.app.fetch(new Request(`${BASE}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) }, body: new URLSearchParams(form).toString() }));
  const t = (await (await post("/UserService/connect/token", { grant_type: "password", username: h.username, password: h.password, scope: "Platform_UserAPIs offline_access" })).json()) as { access_token: string; refresh_token: string };
  for (let i = 0; i < 2; i++) {
    expect((await post("/UserService/connect/revocation", { token: t.access_token })).status).toBe(200);
    expect((await post("/UserService/connect/revocation", { token: t.refresh_token })).status).toBe(200);
  }
  await h.app.flushEvents();
  const revoked = events.filter((e) => e.type === "token.revoked").map((e) => (e as Extract<SecurityEvent, { type: "token.revoked" }>).token_type);
  expect(revoked).toEqual(["access_token", "refresh_token"]);
});

it("a refresh token whose family was already revoked for reuse: its revocation records no token.revoked", async () => {
  const events: SecurityEvent[] = [];
  const h = await harness({ onEvent: (e) => void events.push(e), refreshGraceSeconds: 0 });
  const post = (path: string, form: Record<string, string>) =>
    h.app.fetch(new Request(`${BASE}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) }, body: new URLSearchParams(form).toString() }));
  const t = (await (await post("/UserService/connect/token", { grant_type: "password", username: h.username, password: h.password, scope: "Platform_UserAPIs offline_access" })).json()) as { refresh_token: string };
  expect((await post("/UserService/connect/token", { grant_type: "refresh_token", refresh_token: t.refresh_token })).status).toBe(200);
  await h.app.flushEvents();
  events.length = 0;
  h.clock.advance(120_000);
  expect((await post("/UserService/connect/token", { grant_type: "refresh_token", refresh_token: t.refresh_token })).status).toBe(400); // reuse: family revoked
  expect((await post("/UserService/connect/revocation", { token: t.refresh_token })).status).toBe(200);
  await h.app.flushEvents();
  expect(events.map((e) => e.type)).toEqual(["refresh_token.reuse_detected"]);
});

type Revoked = Extract<SecurityEvent, { type: "token.revoked" }>;

async function withEvents(options: Parameters<typeof harness>[0] = {}) {
  const events: SecurityEvent[] = [];
  const h = await harness({ onEvent: (e) => void events.push(e), ...options });
  const post = (path: string, form: Record<string, string>) =>
    h.app.fetch(new Request(`${BASE}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) }, body: new URLSearchParams(form).toString() }));
  const grant = async () =>
    (await (await post("/UserService/connect/token", { grant_type: "password", username: h.username, password: h.password, scope: "Platform_UserAPIs offline_access" })).json()) as { access_token: string; refresh_token: string };
  const revokedEvents = async () => {
    await h.app.flushEvents();
    return events.filter((e): e is Revoked => e.type === "token.revoked").map((e) => ({ token_type: e.token_type, family_id: e.family_id, jti: e.jti }));
  };
  return { h, events, post, grant, revokedEvents };
}

it("a rotated (consumed) refresh token of a live family: revoking it revokes the family, and that is one token.revoked", async () => {
  const { post, grant, revokedEvents, events } = await withEvents();
  const t = await grant();
  const next = (await (await post("/UserService/connect/token", { grant_type: "refresh_token", refresh_token: t.refresh_token })).json()) as { refresh_token: string };
  await revokedEvents();
  const familyId = (events.find((e) => e.type === "token.refreshed") as Extract<SecurityEvent, { type: "token.refreshed" }>).family_id;
  expect((await post("/UserService/connect/revocation", { token: t.refresh_token })).status).toBe(200);
  // The family's newest token is revoked with it.
  const after = await post("/UserService/connect/token", { grant_type: "refresh_token", refresh_token: next.refresh_token });
  expect({ status: after.status, body: await after.json() }).toEqual({ status: 400, body: { error: "invalid_grant", error_description: expect.any(String) } });
  expect(await revokedEvents()).toEqual([{ token_type: "refresh_token", family_id: familyId, jti: null }]);
});

it("an access token whose family a revocation already revoked: revoking it records no second token.revoked", async () => {
  const { post, grant, revokedEvents } = await withEvents();
  const t = await grant();
  expect((await post("/UserService/connect/revocation", { token: t.refresh_token })).status).toBe(200);
  expect((await post("/UserService/connect/revocation", { token: t.access_token })).status).toBe(200);
  expect((await revokedEvents()).map((e) => e.token_type)).toEqual(["refresh_token"]);
});

it("a refresh token past its sliding expiry, or past its family's absolute expiry: 200, no token.revoked", async () => {
  const { h, post, grant, revokedEvents } = await withEvents({ refreshTokenTtl: 3600, refreshTokenAbsoluteTtl: 7200 });
  const slid = await grant();
  h.clock.advance(3600_000); // past the sliding expiry, within the family's
  expect((await post("/UserService/connect/revocation", { token: slid.refresh_token })).status).toBe(200);
  const ended = await grant();
  h.clock.advance(7200_000);
  expect((await post("/UserService/connect/revocation", { token: ended.refresh_token })).status).toBe(200);
  expect(await revokedEvents()).toEqual([]);
});

it("three concurrent revocations of the same live refresh token, each read before any revokes (a clock that moves): one token.revoked", async () => {
  let now = Date.UTC(2026, 0, 1);
  const memory = createMemoryStorage();
  // Each revocation's revokeFamily waits until all three have read the token (all saw it live).
  let reads = 0;
  let allRead = () => {};
  const readByAll = new Promise<void>((resolve) => (allRead = resolve));
  const storage = {
    ...memory,
    refreshTokens: {
      ...memory.refreshTokens,
      findByHash: async (hash: string) => {
        const r = await memory.refreshTokens.findByHash(hash);
        if (++reads === 3) allRead();
        return r;
      },
      revokeFamily: async (familyId: string, at: number) => {
        await readByAll;
        return memory.refreshTokens.revokeFamily(familyId, at);
      },
    },
  };
  const { post, grant, revokedEvents } = await withEvents({ storage, clock: () => (now += 1) });
  const t = await grant();
  reads = 0;
  const statuses = await Promise.all([0, 1, 2].map(() => post("/UserService/connect/revocation", { token: t.refresh_token }).then((r) => r.status)));
  expect(statuses).toEqual([200, 200, 200]);
  expect((await revokedEvents()).map((e) => e.token_type)).toEqual(["refresh_token"]);
});

it("a revocation answered 503 (the grant entry failed, the family revoked) and its retry: one token.revoked", async () => {
  const memory = createMemoryStorage();
  let down = false;
  const storage = { ...memory, revokedTokens: { ...memory.revokedTokens, add: (key: string, at: number) => (down ? Promise.reject(new StorageError("revoked-token store down")) : memory.revokedTokens.add(key, at)) } };
  const { post, grant, revokedEvents } = await withEvents({ storage });
  const t = await grant();
  down = true;
  expect((await post("/UserService/connect/revocation", { token: t.refresh_token })).status).toBe(503);
  down = false;
  expect((await post("/UserService/connect/revocation", { token: t.refresh_token })).status).toBe(200);
  expect((await revokedEvents()).map((e) => e.token_type)).toEqual(["refresh_token"]);
});

/**
 * The memory store, with each `revokedTokens.add` held until `n` calls have arrived once `arm` is
 * called: every racing revocation has read the token live (its `has`, its refresh record) before any
 * of them writes. The calls then run on the real store, and their answers pass through, or with
 * `legacy` are dropped (a custom store written before the contract change of 2026-12-02, whose
 * `add` and `revokeFamily` resolve to nothing).
 */
function gatedAdds(n: number, legacy = false): { storage: Storage; arm: () => void } {
  const memory = createMemoryStorage();
  let armed = false;
  let arrived = 0;
  let release = () => {};
  const all = new Promise<void>((resolve) => (release = resolve));
  const add = async (key: string, expiresAt: number) => {
    if (armed) {
      if (++arrived === n) release();
      await all;
    }
    const result = await memory.revokedTokens.add(key, expiresAt);
    return legacy ? undefined : result;
  };
  const revokeFamily = async (familyId: string, now: number) => {
    const result = await memory.refreshTokens.revokeFamily(familyId, now);
    return legacy ? undefined : result;
  };
  return {
    storage: { ...memory, revokedTokens: { ...memory.revokedTokens, add }, refreshTokens: { ...memory.refreshTokens, revokeFamily } },
    arm: () => void (armed = true),
  };
}

/** `n` revocations of `token` at once: each one's status and body. */
const revokeTogether = (post: (path: string, form: Record<string, string>) => Promise<Response>, token: string, n: number) =>
  Promise.all(Array.from({ length: n }, () => post("/UserService/connect/revocation", { token }).then(async (r) => ({ status: r.status, body: await r.text() }))));

// Until the contract change of 2026-12-02 `revokedTokens.add` and `revokeFamily` said nothing, so
// two revocations of one token that both read it live each recorded one (a refresh token's when
// both ran in the same millisecond: the harness clock stands still).
it("two concurrent revocations of one access token, both reading it live: one token.revoked", async () => {
  const { storage, arm } = gatedAdds(2);
  const { post, grant, revokedEvents } = await withEvents({ storage });
  const t = await grant();
  arm();
  expect(await revokeTogether(post, t.access_token, 2)).toEqual([{ status: 200, body: "" }, { status: 200, body: "" }]);
  expect((await revokedEvents()).map((e) => e.token_type)).toEqual(["access_token"]);
});

it("two concurrent revocations of one refresh token in the same millisecond, both reading its family live: one token.revoked", async () => {
  const { storage, arm } = gatedAdds(2);
  const { post, grant, revokedEvents } = await withEvents({ storage });
  const t = await grant();
  arm();
  expect(await revokeTogether(post, t.refresh_token, 2)).toEqual([{ status: 200, body: "" }, { status: 200, body: "" }]);
  expect((await revokedEvents()).map((e) => e.token_type)).toEqual(["refresh_token"]);
});

it("a custom store written before the contract change of 2026-12-02 (add and revokeFamily resolve to nothing): revoking twice in turn still records one; two at once record one each, as before", async () => {
  const { storage, arm } = gatedAdds(2, true);
  const { post, grant, revokedEvents } = await withEvents({ storage });
  const inTurn = await grant();
  expect(await revokeTogether(post, inTurn.access_token, 1)).toEqual([{ status: 200, body: "" }]);
  expect(await revokeTogether(post, inTurn.access_token, 1)).toEqual([{ status: 200, body: "" }]);
  expect((await revokedEvents()).map((e) => e.token_type)).toEqual(["access_token"]);
  const t = await grant();
  arm();
  expect(await revokeTogether(post, t.access_token, 2)).toEqual([{ status: 200, body: "" }, { status: 200, body: "" }]);
  expect((await revokedEvents()).map((e) => e.token_type)).toEqual(["access_token", "access_token", "access_token"]);
});
