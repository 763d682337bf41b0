/**
 * A refresh family's revocation (RFC 7009 logout, reuse detection) writes a `sid:` entry to the
 * revoked tokens and sweeps their expired entries as an access token's revocation does: until
 * 2026-12-02 only the access-token branch swept, so the `sid:` entries of logouts piled up until
 * `prune` (the Redis index `r:i`, the SQL table).
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, StorageError } from "../src/index.js";
import { BASE, basic, harness, passwordTokens, type Harness } from "./helpers.js";
import { expectTokenError, INVALID_REFRESH, refreshRequest } from "./token-helpers.js";

const REVOKE = `${BASE}/UserService/connect/revocation`;
const HOUR = 3600 * 1000;

const revoke = (h: Harness, token: string) =>
  h.app.fetch(new Request(REVOKE, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) }, body: new URLSearchParams({ token }).toString() }));

async function signInAndLogOut(h: Harness): Promise<void> {
  const res = await revoke(h, (await passwordTokens(h)).refresh_token!);
  expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: "" });
}

describe("refresh-family revocations sweep the expired revoked-token entries", () => {
  it("RFC 7009 logout: twenty logouts, three hours on (past the longest access-token lifetime, 2 h), one more logout leaves only its own entry", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    for (let i = 0; i < 20; i++) await signInAndLogOut(h);
    h.clock.advance(3 * HOUR);
    await signInAndLogOut(h);
    // Nothing expired left for prune: the logout swept the twenty (before: 20 here).
    expect(await storage.revokedTokens.deleteExpired(h.clock.now())).toBe(0);
    // Its own entry is kept until it expires.
    expect(await storage.revokedTokens.deleteExpired(h.clock.now() + 2 * HOUR)).toBe(1);
  });

  it("RFC 9700 §4.14.2 reuse detection sweeps too", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    for (let i = 0; i < 5; i++) await signInAndLogOut(h);
    h.clock.advance(3 * HOUR);
    const first = (await passwordTokens(h)).refresh_token!;
    expect((await refreshRequest(h, first)).status).toBe(200);
    h.clock.advance(60_000); // past the default grace window: presenting it again is reuse
    await expectTokenError(await refreshRequest(h, first), 400, INVALID_REFRESH);
    expect(await storage.revokedTokens.deleteExpired(h.clock.now())).toBe(0);
    expect(await storage.revokedTokens.deleteExpired(h.clock.now() + 2 * HOUR)).toBe(1);
  });

  it("a sweep that fails leaves the logout answered 200 and the family revoked, with a warn line", async () => {
    const warned: unknown[] = [];
    const memory = createMemoryStorage();
    const storage = { ...memory, revokedTokens: { ...memory.revokedTokens, deleteExpired: () => Promise.reject(new StorageError("revoked-token store down")) } };
    const h = await harness({ storage, logger: { error() {}, warn: (message: unknown) => void warned.push(message) } });
    const refresh = (await passwordTokens(h)).refresh_token!;
    const res = await revoke(h, refresh);
    expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: "" });
    await expectTokenError(await refreshRequest(h, refresh), 400, INVALID_REFRESH);
    expect(warned.filter((m) => String(m).startsWith("revoked-token"))).toEqual(["revoked-token sweep failed after a revocation (the revocation stands; prune clears the backlog)"]);
  });
});
