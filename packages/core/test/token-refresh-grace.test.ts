/**
 * The refresh-token grace window (issue 18): within `refreshGraceSeconds` of a rotation, the
 * rotated token presented again (concurrently, or as a retry) is answered with the rotation's own
 * answer; after it, or past `refreshGraceMaxUses`, that is reuse and revokes the family
 * (RFC 9700 §4.14.2). Replays are sealed under the old token; revocation is never undone.
 */
import { decodeJwt, decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, optionsFromEnv, ConfigError, type SecurityEvent, type Storage } from "../src/index.js";
import { openReplay } from "../src/crypto/replay.js";
import { sha256 } from "../src/crypto/index.js";
import { refreshTokenKey } from "../src/oauth/refresh-key.js";
import { BASE, basic, harness, type Harness } from "./helpers.js";
import { getAccounts } from "./api-helpers.js";
import { auth, expectTokenError, expectTokenSuccess, FORM, freshRefreshToken, INVALID_REFRESH, passwordRequest, refreshRequest, type TokenBody } from "./token-helpers.js";

const REVOKE = `${BASE}/UserService/connect/revocation`;
const SCOPE = "Platform_UserAPIs offline_access";

function revoke(h: Harness, token: string) {
  return h.app.fetch(
    new Request(REVOKE, { method: "POST", headers: { "content-type": FORM, ...auth(h) }, body: new URLSearchParams({ token }).toString() }),
  );
}

async function record(h: Harness, token: string) {
  return h.app.storage.refreshTokens.findByHash(await refreshTokenKey(sha256, token));
}

describe("refresh-token grace window (default 30 s)", () => {
  it("two parallel refreshes of one token both get 200 with the very same answer, and its refresh token works once more", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const [a, b] = await Promise.all([refreshRequest(h, rt), refreshRequest(h, rt)]);
    const first = await expectTokenSuccess(a!);
    const second = await expectTokenSuccess(b!);
    expect(first).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: SCOPE, refresh_token: expect.any(String) });
    expect(second).toEqual(first);
    // One family, one head: the returned token is live and rotates normally.
    const stored = await record(h, first.refresh_token!);
    expect(stored).toMatchObject({ familyId: (await record(h, rt))!.familyId, consumedAt: null, revokedAt: null, graceUses: 0, replay: null });
    expect((await record(h, rt))!.graceUses).toBe(1);
    const next = await expectTokenSuccess(await refreshRequest(h, first.refresh_token!));
    expect(next.refresh_token).not.toBe(first.refresh_token);
    await expectTokenSuccess(await refreshRequest(h, next.refresh_token!));
  });

  it("a loser of the race that read the clock before the winner gets the winner's answer unchanged (expires_in never grows)", async () => {
    // The first request's consume waits until the second (started 900 ms later) has rotated.
    const memory = createMemoryStorage();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const storage: Storage = {
      ...memory,
      refreshTokens: {
        ...memory.refreshTokens,
        async consume(hash, now, replacement, replay) {
          if (++calls === 1) await gate;
          const won = await memory.refreshTokens.consume(hash, now, replacement, replay);
          if (calls === 2) release();
          return won;
        },
      },
    };
    const h = await harness({ storage });
    const rt = await freshRefreshToken(h);
    const early = refreshRequest(h, rt);
    await new Promise((resolve) => setTimeout(resolve, 50));
    h.clock.advance(900);
    const late = await expectTokenSuccess(await refreshRequest(h, rt));
    expect(await expectTokenSuccess(await early)).toEqual(late);
    expect(late.expires_in).toBe(7200);
  });

  /**
   * A memory store whose first `consume` waits until the second `consume` call has started, then
   * runs to its end before the second goes on: the first request wins a rotation that commits
   * after the second request read the token unconsumed (the second then loses the race).
   */
  function slowWinnerStorage(): Storage {
    const memory = createMemoryStorage();
    let secondArrived: () => void = () => {};
    const arrival = new Promise<void>((resolve) => (secondArrived = resolve));
    let firstDone: () => void = () => {};
    const firstFinished = new Promise<void>((resolve) => (firstDone = resolve));
    let calls = 0;
    return {
      ...memory,
      refreshTokens: {
        ...memory.refreshTokens,
        async consume(hash, now, replacement, replay) {
          const call = ++calls;
          if (call === 1) {
            await arrival;
            const won = await memory.refreshTokens.consume(hash, now, replacement, replay);
            firstDone();
            return won;
          }
          if (call === 2) {
            secondArrived();
            await firstFinished;
          }
          return memory.refreshTokens.consume(hash, now, replacement, replay);
        },
      },
    };
  }

  for (const [label, options, stallMs] of [
    ["the default 30 s window, a rotation that takes 31 s", {}, 31_000],
    ["a per-client 2 s window, a rotation that takes 2.5 s", { refreshGraceSecondsPerClient: { "app-1": 2 } }, 2_500],
  ] as const) {
    it(`a parallel refresh is no reuse however long the winner's rotation takes (${label}): both get the winner's answer, the family lives`, async () => {
      const events: SecurityEvent[] = [];
      const h = await harness({ storage: slowWinnerStorage(), onEvent: (e) => void events.push(e), ...options });
      const rt = await freshRefreshToken(h);
      const early = refreshRequest(h, rt); // reads the clock at t0, then its consume waits
      await new Promise((resolve) => setTimeout(resolve, 50));
      h.clock.advance(stallMs);
      const late = await expectTokenSuccess(await refreshRequest(h, rt)); // read the token unconsumed, lost the rotation
      const first = await expectTokenSuccess(await early);
      expect(late).toEqual({ ...first, expires_in: 7200 - Math.floor(stallMs / 1000) });
      await expectTokenSuccess(await refreshRequest(h, first.refresh_token!));
      await h.app.flushEvents();
      expect(events.filter((e) => e.type === "refresh_token.reuse_detected")).toEqual([]);
    });
  }

  it("a refresh that loses its rotation to a revocation (RFC 7009) is invalid_grant, and no reuse is reported", async () => {
    const memory = createMemoryStorage();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let consumeStarted: () => void = () => {};
    const started = new Promise<void>((resolve) => (consumeStarted = resolve));
    const storage: Storage = {
      ...memory,
      refreshTokens: {
        ...memory.refreshTokens,
        async consume(hash, now, replacement, replay) {
          consumeStarted();
          await gate;
          return memory.refreshTokens.consume(hash, now, replacement, replay);
        },
      },
    };
    const events: SecurityEvent[] = [];
    const h = await harness({ storage, onEvent: (e) => void events.push(e) });
    const rt = await freshRefreshToken(h);
    const refreshing = refreshRequest(h, rt);
    await started;
    expect((await revoke(h, rt)).status).toBe(200);
    release();
    await expectTokenError(await refreshing, 400, INVALID_REFRESH);
    await h.app.flushEvents();
    expect(events.map((e) => e.type)).not.toContain("refresh_token.reuse_detected");
    expect(events.map((e) => e.type)).toContain("token.revoked");
  });

  it("a retry within the window replays the same tokens; expires_in counts down by the whole seconds since the rotation", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const answer = await expectTokenSuccess(await refreshRequest(h, rt));
    h.clock.advance(999);
    expect(await expectTokenSuccess(await refreshRequest(h, rt)), "within the same second: byte-identical").toEqual(answer);
    h.clock.advance(29_000);
    const retry = await expectTokenSuccess(await refreshRequest(h, rt));
    expect(retry).toEqual({ ...answer, expires_in: 7200 - 29 });
    expect(decodeJwt(retry.access_token).exp! - Math.floor(h.clock.now() / 1000)).toBe(7200 - 29);
  });

  it("after the window (30 s, injected clock) the rotated token is reuse: invalid_grant, and the newest token of its family is refused too", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const other = await freshRefreshToken(h);
    const rt2 = (await expectTokenSuccess(await refreshRequest(h, rt))).refresh_token!;
    h.clock.advance(10_000);
    const rt3 = (await expectTokenSuccess(await refreshRequest(h, rt2))).refresh_token!;
    h.clock.advance(20_000); // rt was rotated exactly 30 s ago
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
    expect((await record(h, rt3))!.revokedAt).toBe(h.clock.now());
    await expectTokenError(await refreshRequest(h, rt3), 400, INVALID_REFRESH);
    // rt2 is still within its own window, but its family is revoked: never brought back.
    await expectTokenError(await refreshRequest(h, rt2), 400, INVALID_REFRESH);
    // Another family of the same user lives on.
    await expectTokenSuccess(await refreshRequest(h, other));
  });

  it("grace uses are bounded (refreshGraceMaxUses): the next presentation is reuse and revokes the family", async () => {
    const h = await harness({ refreshGraceMaxUses: 2 });
    const rt = await freshRefreshToken(h);
    const answer = await expectTokenSuccess(await refreshRequest(h, rt));
    expect(await expectTokenSuccess(await refreshRequest(h, rt))).toEqual(answer);
    expect(await expectTokenSuccess(await refreshRequest(h, rt))).toEqual(answer);
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
    await expectTokenError(await refreshRequest(h, answer.refresh_token!), 400, INVALID_REFRESH);
  });

  it("20 parallel presentations with refreshGraceMaxUses 5: one rotation, exactly 5 replays, the rest are reuse and the family is revoked", async () => {
    const h = await harness({ refreshGraceMaxUses: 5 });
    const rt = await freshRefreshToken(h);
    const responses = await Promise.all(Array.from({ length: 20 }, () => refreshRequest(h, rt)));
    const ok = responses.filter((r) => r.status === 200);
    expect(ok).toHaveLength(6);
    const bodies = await Promise.all(ok.map((r) => expectTokenSuccess(r)));
    for (const b of bodies) expect(b).toEqual(bodies[0]);
    for (const r of responses.filter((x) => x.status !== 200)) await expectTokenError(r, 400, INVALID_REFRESH);
    expect((await record(h, rt))!.graceUses).toBe(5);
    await expectTokenError(await refreshRequest(h, bodies[0]!.refresh_token!), 400, INVALID_REFRESH);
  });

  it("RFC 7009: a family revoked by revocation is never brought back by a grace use, even under concurrent ones", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const answer = await expectTokenSuccess(await refreshRequest(h, rt));
    const revoked = await revoke(h, answer.refresh_token!);
    expect(revoked.status).toBe(200);
    const responses = await Promise.all(Array.from({ length: 10 }, () => refreshRequest(h, rt)));
    for (const r of responses) await expectTokenError(r, 400, INVALID_REFRESH);
    expect((await record(h, rt))!.graceUses).toBe(0);
    await expectTokenError(await refreshRequest(h, answer.refresh_token!), 400, INVALID_REFRESH);
  });

  it("RFC 7009: a replayed access token that was revoked is not replayed: a fresh one is issued with the same refresh token", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const answer = await expectTokenSuccess(await refreshRequest(h, rt));
    expect((await revoke(h, answer.access_token)).status).toBe(200);
    const retry = await expectTokenSuccess(await refreshRequest(h, rt));
    expect(retry).toEqual({ ...answer, access_token: expect.any(String) });
    expect(decodeJwt(retry.access_token).jti).not.toBe(decodeJwt(answer.access_token).jti);
    expect(decodeJwt(retry.access_token)).toMatchObject({ sub: decodeJwt(answer.access_token).sub, scope: SCOPE, client_id: h.clientId });
  });

  it("a replayed access token whose signing key was revoked since is not replayed: a fresh one, signed by the key now active, works at the API", async () => {
    const h = await harness();
    // A second instance over the same store, its keys loaded before the rotation below.
    const b = createPlantgate({ storage: h.app.storage, clock: h.clock.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const rt = await freshRefreshToken({ ...h, app: b });
    const k1 = (await h.app.admin.listSigningKeys()).find((k) => k.status === "active")!.kid;
    h.clock.advance(1000);
    await h.app.admin.rotateSigningKey({ now: true }); // a suspected leak of k1
    // 50 s later B, not yet re-read (as documented), rotates the refresh token: its access token is k1's.
    h.clock.advance(50_000);
    const answer = await expectTokenSuccess(await refreshRequest({ ...h, app: b }, rt));
    expect(decodeProtectedHeader(answer.access_token).kid).toBe(k1);
    h.clock.advance(11_000);
    await h.app.admin.revokeSigningKey(k1); // a minute after the new key took over, as the README says
    // The client's retry within the window (its answer was lost): until 2026-12-01 k1's token again.
    const retry = await expectTokenSuccess(await refreshRequest(h, rt));
    expect(retry).toEqual({ ...answer, access_token: expect.any(String), expires_in: answer.expires_in });
    expect(decodeProtectedHeader(retry.access_token).kid).not.toBe(k1);
    expect((await getAccounts(h.app, retry.access_token)).status).toBe(200);
  });

  it("an access token shorter-lived than the window is not replayed once expired: a fresh one comes with the same refresh token", async () => {
    const h = await harness({ accessTokenTtl: 10 });
    const rt = await freshRefreshToken(h);
    const answer = await expectTokenSuccess(await refreshRequest(h, rt));
    h.clock.advance(9_500); // less than a second left: not worth replaying
    const retry = await expectTokenSuccess(await refreshRequest(h, rt));
    expect(retry).toEqual({ ...answer, access_token: expect.any(String), expires_in: 10 });
    expect(retry.access_token).not.toBe(answer.access_token);
  });

  it("client binding holds: another client presenting the rotated token gets invalid_grant and the family survives", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const answer = await expectTokenSuccess(await refreshRequest(h, rt));
    const { clientSecret } = await h.app.admin.createClient({ clientId: "app-2" });
    await expectTokenError(await refreshRequest(h, rt, {}, { authorization: basic("app-2", clientSecret) }), 400, INVALID_REFRESH);
    expect((await record(h, rt))!.graceUses).toBe(0);
    expect(await expectTokenSuccess(await refreshRequest(h, rt))).toEqual(answer);
  });

  it("scope holds: a narrower scope on the grace use gets a fresh access token of that scope; a broader one is invalid_scope", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const answer = await expectTokenSuccess(await refreshRequest(h, rt));
    const narrow = await expectTokenSuccess(await refreshRequest(h, rt, { scope: "Platform_UserAPIs" }));
    expect(narrow).toEqual({ access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs", refresh_token: answer.refresh_token });
    expect(decodeJwt(narrow.access_token).scope).toBe("Platform_UserAPIs");
    const broad = await refreshRequest(h, rt, { scope: "Platform_UserAPIs Platform_AllAppsServerCommands" });
    await expectTokenError(broad, 400, { error: "invalid_scope", error_description: "The scope 'Platform_AllAppsServerCommands' was not granted to this refresh token." });
  });

  it("the family's absolute lifetime holds: past it, a grace use is invalid_grant", async () => {
    const h = await harness({ refreshTokenAbsoluteTtl: 20 });
    const rt = await freshRefreshToken(h);
    h.clock.advance(15_000);
    await expectTokenSuccess(await refreshRequest(h, rt));
    h.clock.advance(4_999);
    await expectTokenSuccess(await refreshRequest(h, rt));
    h.clock.advance(1);
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
  });

  it("a retry of a rotation made in the token's last second (answer lost) past the old token's own sliding expiry replays the answer: its successor is live and nobody else holds it", async () => {
    const h = await harness({ refreshTokenTtl: 3600 });
    const rt = await freshRefreshToken(h);
    h.clock.advance(3600_000 - 1000);
    const lost = await expectTokenSuccess(await refreshRequest(h, rt));
    h.clock.advance(2000);
    // Until 2026-12-02 invalid_grant: the old token's sliding expiry had passed, and the user was signed out.
    expect(await expectTokenSuccess(await refreshRequest(h, rt))).toEqual({ ...lost, expires_in: lost.expires_in - 2 });
    expect(await record(h, lost.refresh_token!)).toMatchObject({ consumedAt: null, revokedAt: null });
  });

  it("a used token of a family past its absolute lifetime is refused as any token of an ended family: no reuse event or warning, whether or not prune has deleted it", async () => {
    const events: SecurityEvent[] = [];
    const warnings: string[] = [];
    const h = await harness({ refreshTokenAbsoluteTtl: 3600, onEvent: (e: SecurityEvent) => void events.push(e), logger: { error() {}, warn: (message: string) => void warnings.push(message) } });
    const rt = await freshRefreshToken(h);
    const next = await expectTokenSuccess(await refreshRequest(h, rt));
    h.clock.advance(3600_000 + 1000);
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
    await expectTokenError(await refreshRequest(h, next.refresh_token!), 400, INVALID_REFRESH);
    // Until 2026-12-02 the used one went down the reuse path first: an event and a warning for a dead family.
    expect(events.map((e) => e.type)).not.toContain("refresh_token.reuse_detected");
    expect(warnings.filter((w) => w.includes("reuse"))).toEqual([]);
    expect((await record(h, next.refresh_token!))!.revokedAt).toBeNull();
    // Once prune has deleted the ended family's tokens, the same answer.
    await h.app.admin.prune();
    expect(await record(h, rt)).toBeNull();
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
    expect(events.map((e) => e.type)).not.toContain("refresh_token.reuse_detected");
  });

  it("a since-disabled account gets no replay", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    await expectTokenSuccess(await refreshRequest(h, rt));
    await h.app.admin.setAccountEnabled("alice", false);
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
  });

  it("nothing usable at rest: the stored replay holds neither token in clear and opens only with the old refresh token", async () => {
    const h = await harness();
    const rt = await freshRefreshToken(h);
    const answer = await expectTokenSuccess(await refreshRequest(h, rt));
    const hash = await refreshTokenKey(sha256, rt);
    const sealed = (await record(h, rt))!.replay!;
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    for (const secret of [answer.access_token, answer.refresh_token!, rt, answer.access_token.split(".")[1]!]) expect(sealed).not.toContain(secret);
    expect(JSON.parse((await openReplay(rt, hash, sealed))!)).toEqual({ ...answer });
    expect(await openReplay(answer.refresh_token!, hash, sealed), "another token's key").toBeNull();
    expect(await openReplay(rt, await sha256("other"), sealed), "another row's hash as associated data").toBeNull();
    // One character of the tag changed (the second-to-last: all six of its bits are data), always to a different one.
    const tampered = sealed.slice(0, -2) + (sealed.at(-2) === "A" ? "B" : "A") + sealed.slice(-1);
    expect(tampered).not.toBe(sealed);
    expect(await openReplay(rt, hash, tampered), "tampered").toBeNull();
  });
});

describe("strict one-time use and per-client windows", () => {
  it("refreshGraceSeconds 0: a second presentation is reuse at once, and nothing is sealed", async () => {
    const h = await harness({ refreshGraceSeconds: 0 });
    const rt = await freshRefreshToken(h);
    const answer = await expectTokenSuccess(await refreshRequest(h, rt));
    expect((await record(h, rt))!.replay).toBeNull();
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
    await expectTokenError(await refreshRequest(h, answer.refresh_token!), 400, INVALID_REFRESH);
  });

  it("refreshGraceSecondsPerClient overrides the server's window for that client only", async () => {
    const h = await harness({ refreshGraceSeconds: 5, refreshGraceSecondsPerClient: { strict: 0, patient: 60 } });
    const clients: Record<string, string> = {};
    for (const id of ["strict", "patient"]) clients[id] = basic(id, (await h.app.admin.createClient({ clientId: id })).clientSecret);
    const tokenFor = async (id: string) => (await expectTokenSuccess(await passwordRequest(h, { scope: SCOPE }, { authorization: clients[id]! }))).refresh_token!;
    const strict = await tokenFor("strict");
    const patient = await tokenFor("patient");
    const server = await freshRefreshToken(h);
    const rotate = async (token: string, authz: string): Promise<TokenBody> =>
      expectTokenSuccess(await refreshRequest(h, token, {}, { authorization: authz }));
    await rotate(strict, clients.strict!);
    const patientAnswer = await rotate(patient, clients.patient!);
    await rotate(server, auth(h).authorization);
    await expectTokenError(await refreshRequest(h, strict, {}, { authorization: clients.strict! }), 400, INVALID_REFRESH);
    h.clock.advance(5_000);
    await expectTokenError(await refreshRequest(h, server), 400, INVALID_REFRESH);
    h.clock.advance(54_999);
    expect(await rotate(patient, clients.patient!)).toEqual({ ...patientAnswer, expires_in: 7200 - 59 });
  });

  it("the options and PLANTGATE_REFRESH_GRACE_SECONDS are checked: 0-300 s, max uses 1-1000", () => {
    for (const bad of [-1, 301, 1.5, Number.NaN]) expect(() => createPlantgate({ refreshGraceSeconds: bad })).toThrow("refreshGraceSeconds must be an integer from 0 to 300");
    expect(() => createPlantgate({ refreshGraceSecondsPerClient: { a: 400 } })).toThrow("refreshGraceSecondsPerClient.a must be an integer from 0 to 300");
    expect(() => createPlantgate({ refreshGraceMaxUses: 0 })).toThrow("refreshGraceMaxUses must be a positive integer");
    expect(() => createPlantgate({ refreshGraceMaxUses: 1001 })).toThrow("refreshGraceMaxUses must be an integer from 1 to 1000");
    expect(optionsFromEnv({ PLANTGATE_REFRESH_GRACE_SECONDS: "0" })).toEqual({ refreshGraceSeconds: 0 });
    expect(optionsFromEnv({ PLANTGATE_REFRESH_GRACE_SECONDS: "2", PLANTGATE_REFRESH_GRACE_MAX_USES: "3" })).toEqual({ refreshGraceSeconds: 2, refreshGraceMaxUses: 3 });
    expect(optionsFromEnv({ PLANTGATE_REFRESH_GRACE_SECONDS: "" })).toEqual({});
    expect(() => optionsFromEnv({ PLANTGATE_REFRESH_GRACE_SECONDS: "301" })).toThrow(ConfigError);
    expect(() => optionsFromEnv({ PLANTGATE_REFRESH_GRACE_SECONDS: "-1" })).toThrow('PLANTGATE_REFRESH_GRACE_SECONDS must be a non-negative integer, got "-1"');
    expect(() => optionsFromEnv({ PLANTGATE_REFRESH_GRACE_MAX_USES: "0" })).toThrow(ConfigError);
  });
});

describe("replays at rest after their window (since 2026-12-03)", () => {
  /** The refresh tokens reached from `token` by opening each stored replay with the token before it: what a reader of the store who holds `token` gets. */
  async function walk(h: Harness, token: string): Promise<string[]> {
    const reached: string[] = [];
    for (let at = token; ; ) {
      const hash = await refreshTokenKey(sha256, at);
      const sealed = (await h.app.storage.refreshTokens.findByHash(hash))?.replay;
      if (!sealed) return reached;
      const opened = await openReplay(at, hash, sealed);
      if (opened === null) return reached;
      at = (JSON.parse(opened) as TokenBody).refresh_token!;
      reached.push(at);
    }
  }

  it("prune drops the replays of tokens rotated 6 minutes ago or more: a stale rotated token and a copy of the store no longer lead to the family's live token; a rotation within the window keeps its replay and its grace answer", async () => {
    const h = await harness();
    const first = await freshRefreshToken(h);
    let head = first;
    for (let i = 0; i < 5; i++) {
      h.clock.advance(3_600_000);
      head = (await expectTokenSuccess(await refreshRequest(h, head))).refresh_token!;
    }
    // Before a prune: the oldest token and the store reach the live head, with no request made (reuse detection never sees it).
    expect((await walk(h, first)).at(-1)).toBe(head);
    // One more rotation, just before the prune: within its window.
    h.clock.advance(3_600_000);
    const latest = await expectTokenSuccess(await refreshRequest(h, head));
    h.clock.advance(10_000);
    expect(await h.app.admin.prune()).toEqual({ refreshTokens: 0, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 0, complete: true });
    expect(await walk(h, first), "every replay older than 6 minutes dropped").toEqual([]);
    // The rotated rows stay (presenting one again is reuse), without their replays.
    const rotated = await record(h, first);
    expect(rotated).toMatchObject({ replay: null, revokedAt: null, consumedAt: expect.any(Number) });
    // The last rotation (10 s ago) keeps its replay: a retry of its token within the window gets the same answer (10 s less to live).
    expect((await walk(h, head)).at(-1)).toBe(latest.refresh_token);
    expect(await expectTokenSuccess(await refreshRequest(h, head))).toEqual({ ...latest, expires_in: 7190 });
    // Past 6 minutes the next prune drops it too; the family lives on at its head.
    h.clock.advance(360_000);
    await h.app.admin.prune();
    expect(await walk(h, head)).toEqual([]);
    const next = await expectTokenSuccess(await refreshRequest(h, latest.refresh_token!));
    expect(next.refresh_token).not.toBe(latest.refresh_token);
    // And a stale token presented again is still reuse: the family is revoked.
    await expectTokenError(await refreshRequest(h, first), 400, INVALID_REFRESH);
    await expectTokenError(await refreshRequest(h, next.refresh_token!), 400, INVALID_REFRESH);
  });
});
