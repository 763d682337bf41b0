/**
 * Two instances over one store, each on its own wall clock. The keyring's key reload ("every
 * instance re-reads the keys every 60 s") and its unknown-kid look ("at most once a second") are
 * timed on the wall clock (`clock`, Date.now by default), measured from the clock reading of the
 * last reload. Until 2026-12-01 a wall clock stepped back (an NTP correction, a VM restored, an
 * operator's `date`) put that reading in the instance's future: until its clock passed it again,
 * plus the interval, the instance neither re-read the keys nor looked for an unknown kid. A step
 * back now counts as the interval over. The README promises a revoked key's tokens refused "on the
 * others within a minute" and a `--now` key's tokens taken there "within a second".
 */
import { decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { createPlantgate } from "../src/index.js";
import { getAccounts } from "./api-helpers.js";
import { basic, clientToken, harness, tokenRequest } from "./helpers.js";

const kidOf = (token: string) => decodeProtectedHeader(token).kid!;

describe("an instance whose wall clock steps back (10 minutes) after it loaded the keys", () => {
  it("takes a --now key's tokens a second after it signs, refuses a revoked key's tokens a minute after the revocation, and no longer signs with it", async () => {
    const h = await harness();
    // Instance B: the same store, its own wall clock (h.clock plus a step we set).
    let step = 0;
    const other = createPlantgate({ storage: h.app.storage, clock: () => h.clock.now() + step, logger: { error() {}, warn() {} } });
    const old = await clientToken(h);
    const k1 = kidOf(old);
    // B has loaded the keys (verifying a token of k1).
    expect((await getAccounts(other, old)).status).toBe(200);

    // B's clock is put right: 10 minutes back.
    step = -600_000;

    // A leak: rotate now on A; k2 signs at once. A second later B takes k2's tokens (README).
    const { kid: k2 } = await h.app.admin.rotateSigningKey({ now: true });
    const fresh = await clientToken(h);
    expect(kidOf(fresh)).toBe(k2);
    h.clock.advance(1_000);
    const freshOnB = (await getAccounts(other, fresh)).status;

    // A minute later k1 is revoked on A; a minute after that every instance refuses its tokens (README).
    h.clock.advance(60_000);
    await h.app.admin.revokeSigningKey(k1);
    expect((await getAccounts(h.app, old)).status).toBe(401);
    h.clock.advance(61_000);
    const oldOnB = (await getAccounts(other, old)).status;
    // And B itself still signs with the revoked key: tokens every other instance refuses.
    const res = await tokenRequest(other, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    const signedOnB = kidOf(((await res.json()) as { access_token: string }).access_token) === k1 ? "k1 (revoked)" : "k2";

    expect({ freshOnB, oldOnB, signedOnB }).toEqual({ freshOnB: 200, oldOnB: 401, signedOnB: "k2" });
  });
});
