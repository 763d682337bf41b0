/**
 * The configured key's stamp (signingKeys.markSigning) is a write inside a load of the keys. Until
 * the diff review of 2026-12-02 its failure failed the load: with writes failing and reads working
 * (a full disk, D1's daily write limit, a read-only failover) an instance could neither sign nor
 * learn another instance's new key. Now a failed stamp is told once (a warn line) and the load goes on.
 */
import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, StorageError, type Plantgate, type Storage } from "../src/index.js";
import { getAccounts } from "./api-helpers.js";
import { basic, manualClock, tokenRequest } from "./helpers.js";

const quiet = { error() {}, warn() {} };

function privateJwk(kid: string): JsonWebKey & { kid: string; alg: string } {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { ...(privateKey.export({ format: "jwk" }) as JsonWebKey), kid, alg: "ES256" };
}

async function tokenRes(app: Plantgate, secret: string) {
  return tokenRequest(app, { grant_type: "client_credentials", scope: "Platform_UserAPIs" }, { authorization: basic("svc", secret) });
}

function failingWrites(memory: Storage, fail: { on: boolean }): Storage {
  const keys = memory.signingKeys;
  return {
    ...memory,
    signingKeys: {
      ...keys,
      markSigning: async (kid: string, at: number) => {
        if (fail.on) throw new StorageError("signingKeys.markSigning: database or disk is full");
        return keys.markSigning!(kid, at);
      },
    },
  };
}

describe("a failing markSigning (writes failing, reads working)", () => {
  it("a configured-key instance still issues tokens when only the stamp fails", async () => {
    const memory = createMemoryStorage();
    const clock = manualClock();
    const key = privateJwk("k-a");
    const first = createPlantgate({ storage: memory, clock: clock.now, passwordHashIterations: 1000, logger: quiet, signingKey: key as never });
    const { clientSecret } = await first.admin.createClient({ clientId: "svc", scopes: ["Platform_UserAPIs"] });
    expect((await tokenRes(first, clientSecret)).status).toBe(200);
    // A second instance (a restart) with the same key, over a store whose writes now fail.
    const fail = { on: true };
    const warnings: Array<[string, unknown]> = [];
    const logger = { error() {}, warn: (message: string, fields?: unknown) => void warnings.push([message, fields]) };
    const second = createPlantgate({ storage: failingWrites(memory, fail), clock: clock.now, passwordHashIterations: 1000, logger, signingKey: key as never });
    const res = await tokenRes(second, clientSecret);
    expect(res.status).toBe(200);
    // Told once per run of failures: a later load (a minute on) that fails again adds no line.
    clock.advance(61_000);
    expect((await tokenRes(second, clientSecret)).status).toBe(200);
    expect(warnings).toEqual([
      // The test passes no client address.
      [expect.stringMatching(/^plantgate: a request came with no client address \(the adapter passed no clientIp; /), undefined],
      [
        "plantgate: neither issuer nor baseUrl is configured, so token issuer and audience follow each request's Host; set issuer (or baseUrl) for any deployment reachable beyond loopback",
        undefined,
      ],
      [
        "the configured signing key could not be marked as in use (signingKeys.markSigning failed); it signs here as before, but instances configured with another key trust it only until the longest token lifetime + 60 s after its last mark",
        { error: "signingKeys.markSigning: database or disk is full" },
      ],
      [
        "signing keys are stored in clear: anyone who can read the store can sign tokens; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys) to encrypt them at rest",
        undefined,
      ],
    ]);
  });

  it("a token signed by another instance's key is verified when only the stamp fails (the new key is read)", async () => {
    const memory = createMemoryStorage();
    const clock = manualClock();
    const fail = { on: false };
    const a = createPlantgate({ storage: failingWrites(memory, fail), clock: clock.now, passwordHashIterations: 1000, logger: quiet, signingKey: privateJwk("k-old") as never });
    const { clientSecret } = await a.admin.createClient({ clientId: "svc", scopes: ["Platform_UserAPIs"] });
    expect((await tokenRes(a, clientSecret)).status).toBe(200);
    clock.advance(10_000);
    const b = createPlantgate({ storage: memory, clock: clock.now, passwordHashIterations: 1000, logger: quiet, signingKey: privateJwk("k-new") as never });
    const fromB = (await (await tokenRes(b, clientSecret)).json()) as { access_token: string };
    fail.on = true;
    clock.advance(61_000);
    expect((await getAccounts(a, fromB.access_token)).status).toBe(200);
  });
});
