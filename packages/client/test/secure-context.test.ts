/**
 * The client claims to run "anywhere fetch does (Node 20+, workerd, browsers)". A browser page
 * served over plain http from anything but localhost (an intranet app at http://10.0.0.5/, a
 * kiosk) is not a secure context: `crypto.getRandomValues` is there, `crypto.subtle` is not
 * (the same holds for React Native's Hermes). Only `private_key_jwt` needs WebCrypto by its
 * nature; a refresh-token rotation should not.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { clientOn, fakeTokenEndpoint, manualClock, newMock, USER } from "./support.js";

const OFFLINE = "Platform_UserAPIs offline_access";

/** globalThis.crypto as an insecure browser context has it: getRandomValues, no subtle. */
function insecureContextCrypto(): void {
  const real = globalThis.crypto;
  vi.stubGlobal("crypto", { getRandomValues: real.getRandomValues.bind(real) });
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("a refresh-token rotation where crypto.subtle is missing (an insecure browser context)", () => {
  it("keeps the rotated refresh token the server sent and presents it at the next renewal", async () => {
    const fm = newMock();
    const tokens = fakeTokenEndpoint(fm, { expiresIn: 100 });
    const clock = manualClock();
    insecureContextCrypto();
    expect(globalThis.crypto.subtle).toBeUndefined();
    const client = clientOn(fm, { clock: clock.now, credentials: USER, scope: OFFLINE, keepCredentials: false });
    expect(await client.getAccessToken()).toBe("at-1"); // password grant: at-1 / rt-1
    clock.advance(100);
    // The server rotates: at-2 / rt-2 arrive, rt-1 is spent. Until 2026-12-01 the lineage's hash
    // threw here (a TypeError, not a PlantgateClientError) and rt-2 was dropped.
    expect(await client.getAccessToken()).toBe("at-2");
    clock.advance(100);
    // rt-1 presented again after the server's grace window would be reuse (the family revoked,
    // the user signed out).
    expect(await client.getAccessToken()).toBe("at-3");
    expect(tokens.requests.map((r) => r.refresh_token ?? r.grant_type)).toEqual(["password", "rt-1", "rt-2"]);
  });
});
