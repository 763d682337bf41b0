/**
 * A refresh token's last second at introspection, and the revocation event of a family revoked by a
 * revocation answered 503 (both failed before 2026-12-01).
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, StorageError } from "../src/index.js";
import { BASE, basic, harness, passwordTokens, type Harness } from "./helpers.js";
import { expectTokenError, FORM, INVALID_REFRESH, refreshRequest } from "./token-helpers.js";

const REVOKE = `${BASE}/UserService/connect/revocation`;
const INTROSPECT = `${BASE}/UserService/connect/introspect`;

function post(h: Harness, url: string, params: Record<string, string>) {
  return h.app.fetch(
    new Request(url, { method: "POST", headers: { "content-type": FORM, authorization: basic(h.clientId, h.clientSecret) }, body: new URLSearchParams(params).toString() }),
  );
}

describe("refresh tokens at introspection and revocation events", () => {
  it("RFC 7662 §2.2: a refresh token introspected as active never carries an exp that has already passed (its last second)", async () => {
    const h = await harness();
    h.clock.advance(700); // issued at .700 s: expiresAt is not a whole second
    const refresh = (await passwordTokens(h)).refresh_token!;
    h.clock.advance(7 * 24 * 3600 * 1000 - 300); // 300 ms before its sliding expiry: still usable
    const res = await post(h, INTROSPECT, { token: refresh });
    const body = (await res.json()) as { active: boolean; exp?: number };
    const nowSeconds = h.clock.now() / 1000;
    expect(body.active).toBe(true);
    // exp was floor(expiresAt / 1000): in the token's last second, active with an exp already passed.
    expect({ active: body.active, expPassed: body.exp! <= nowSeconds }).toEqual({ active: true, expPassed: false });
  });

  it("token.revoked: an RFC 7009 revocation that revoked the refresh family (503 after the grant entry failed) is reported, as reuse is", async () => {
    const memory = createMemoryStorage();
    let down = false;
    const storage = {
      ...memory,
      revokedTokens: { ...memory.revokedTokens, add: (key: string, at: number) => (down ? Promise.reject(new StorageError("revoked-token store down")) : memory.revokedTokens.add(key, at)) },
    };
    const events: string[] = [];
    const h = await harness({ storage, onEvent: (e) => void events.push(e.type) });
    const granted = await passwordTokens(h);
    down = true;
    expect((await post(h, REVOKE, { token: granted.refresh_token! })).status).toBe(503);
    // The family is revoked (README: "still revokes the family and answers 503")...
    await expectTokenError(await refreshRequest(h, granted.refresh_token!), 400, INVALID_REFRESH);
    const introspected = (await (await post(h, INTROSPECT, { token: granted.refresh_token! })).json()) as { active: boolean };
    expect(introspected.active).toBe(false);
    // ...and the security event stream (and the audit trail built on it) hears of it without a
    // retry: a fire-and-forget logout left a revoked family with no token.revoked.
    expect(events.filter((t) => t === "token.revoked")).toEqual(["token.revoked"]);
  });
});
