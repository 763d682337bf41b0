/**
 * A periodic re-read of the signing keys that fails (a storage outage) while keys are loaded: the
 * keys loaded before keep signing and verifying, one warn line says so, and the re-read is tried
 * again 5 s later, not on every request. Before 2026-11-29 every request that came after the reload
 * interval failed with 503 until the store answered again, though nothing else needed it.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, generateKeyRecord, StorageError, type SigningKeyRecord } from "../src/index.js";
import { getAccounts } from "./api-helpers.js";
import { basic, manualClock, tokenRequest } from "./helpers.js";

/** A memory store whose signing-key reads fail with StorageError while `outage.on`, counted. */
function outageStorage() {
  const storage = createMemoryStorage();
  const list = storage.signingKeys.list.bind(storage.signingKeys);
  const outage = { on: false, calls: 0 };
  storage.signingKeys.list = async (): Promise<SigningKeyRecord[]> => {
    outage.calls++;
    if (outage.on) throw new StorageError("memory storage failed during signingKeys.list");
    return list();
  };
  return { storage, outage };
}

describe("a failed re-read of the signing keys", () => {
  it("serves the keys loaded before, warns once, tries again every 5 s, and picks up what changed once the store answers", async () => {
    const clock = manualClock();
    const { storage, outage } = outageStorage();
    const warnings: unknown[][] = [];
    const app = createPlantgate({ storage, clock: clock.now, passwordHashIterations: 1000, logger: { error() {}, warn: (...args: unknown[]) => void warnings.push(args) } });
    const { clientSecret } = await app.admin.createClient({ clientId: "app-1" });
    const token = async () => {
      const res = await tokenRequest(app, { grant_type: "client_credentials" }, { authorization: basic("app-1", clientSecret) });
      const body = (await res.json()) as { access_token?: string; error?: string };
      return { status: res.status, token: body.access_token ?? body.error! };
    };
    const before = await token();
    expect(before.status).toBe(200);
    // The start's own warnings (a request without a client address: the test passes none; no
    // issuer set; keys stored in clear in a store of the caller's own).
    expect(warnings.map(([message]) => message)).toEqual([
      expect.stringMatching(/^plantgate: a request came with no client address /),
      expect.stringMatching(/neither issuer nor baseUrl/),
      expect.stringMatching(/^signing keys are stored in clear/),
    ]);
    warnings.length = 0;

    outage.on = true;
    clock.advance(61_000); // past the 60 s reload interval
    const calls = outage.calls;
    const during = await token();
    expect(during.status).toBe(200);
    expect((await getAccounts(app, during.token)).status).toBe(200);
    expect((await getAccounts(app, before.token)).status).toBe(200);
    expect(outage.calls).toBe(calls + 1);
    expect(warnings).toEqual([
      [
        "signing keys could not be re-read from storage; the keys loaded before keep serving, and a re-read is tried every 5 s",
        { error: "memory storage failed during signingKeys.list" },
      ],
    ]);

    // Within the 5 s: no re-read; at 5 s: one, failing again, and not told again.
    clock.advance(4_999);
    expect((await token()).status).toBe(200);
    expect(outage.calls).toBe(calls + 1);
    clock.advance(1);
    expect((await token()).status).toBe(200);
    expect(outage.calls).toBe(calls + 2);
    expect(warnings).toHaveLength(1);

    // The store answers again, holding a key rotated elsewhere meanwhile (signing at once).
    const next = await generateKeyRecord("ES256", clock.now());
    await storage.signingKeys.create(next);
    outage.on = false;
    clock.advance(5_000);
    const after = await token();
    expect(after.status).toBe(200);
    expect(JSON.parse(Buffer.from(after.token.split(".")[0]!, "base64url").toString()).kid).toBe(next.kid);
    expect(warnings).toHaveLength(1);

    // A later outage is told again.
    outage.on = true;
    clock.advance(61_000);
    expect((await token()).status).toBe(200);
    expect(warnings).toHaveLength(2);
  });

  it("tokens with kids this instance does not know, during an outage: 401, one read of the store per 5 s (not one per request), warned once", async () => {
    const clock = manualClock();
    const { storage, outage } = outageStorage();
    const warnings: unknown[] = [];
    const app = createPlantgate({ storage, clock: clock.now, passwordHashIterations: 1000, issuer: "https://auth.example.test", logger: { error() {}, warn: (message: unknown) => void warnings.push(message) } });
    const { clientSecret } = await app.admin.createClient({ clientId: "app-1" });
    const res = await tokenRequest(app, { grant_type: "client_credentials" }, { authorization: basic("app-1", clientSecret) });
    const [head, payload, signature] = ((await res.json()) as { access_token: string }).access_token.split(".");
    const forged = (i: number) => {
      const header = { ...(JSON.parse(Buffer.from(head!, "base64url").toString()) as object), kid: `made-up-${i}` };
      return `${Buffer.from(JSON.stringify(header)).toString("base64url")}.${payload}.${signature}`;
    };
    warnings.length = 0;
    outage.on = true;
    clock.advance(2_000); // past the 1 s unknown-kid interval, within the 60 s reload
    const calls = outage.calls;
    for (let i = 0; i < 20; i++) expect((await getAccounts(app, forged(i))).status).toBe(401);
    expect([outage.calls - calls, warnings]).toEqual([1, ["signing keys could not be re-read from storage; the keys loaded before keep serving, and a re-read is tried every 5 s"]]);
    clock.advance(5_000);
    for (let i = 20; i < 40; i++) expect((await getAccounts(app, forged(i))).status).toBe(401);
    expect([outage.calls - calls, warnings.length]).toEqual([2, 1]);
  });

  it("with no keys loaded yet, a failed load is still the request's 503 (nothing to serve)", async () => {
    const storage = createMemoryStorage();
    storage.signingKeys.list = async () => {
      throw new StorageError("memory storage failed during signingKeys.list");
    };
    const app = createPlantgate({ storage, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const res = await app.fetch(new Request("https://auth.example.test/.well-known/jwks.json"));
    expect(res.status).toBe(503);
  });
});

describe("the JWK Set while re-reads of the keys fail (since 2026-12-03)", () => {
  it("is served no-store while the last re-read failed (it may lack a key another instance stored since, and a resource server kept it 300 s), and public, max-age=300 again once a re-read works", async () => {
    const clock = manualClock();
    const { storage, outage } = outageStorage();
    const app = createPlantgate({ storage, clock: clock.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const jwks = async () => {
      const res = await app.fetch(new Request("https://as.example.test/.well-known/jwks.json"));
      const body = (await res.json()) as { keys: { kid: string }[] };
      return { status: res.status, cache: res.headers.get("cache-control"), kids: body.keys.map((k) => k.kid) };
    };
    const first = await jwks();
    expect(first).toEqual({ status: 200, cache: "public, max-age=300", kids: [expect.any(String)] });
    outage.on = true;
    clock.advance(61_000); // past the 60 s reload interval: the re-read this request makes fails
    expect(await jwks()).toEqual({ status: 200, cache: "no-store", kids: first.kids });
    clock.advance(1_000);
    expect(await jwks(), "no re-read within 5 s: still the keys of before").toEqual({ status: 200, cache: "no-store", kids: first.kids });
    // Another instance stores a next key meanwhile; the store answers again at the next try.
    const next = await generateKeyRecord("ES256", clock.now(), clock.now() + 360_000);
    await storage.signingKeys.create(next);
    outage.on = false;
    clock.advance(5_000);
    const after = await jwks();
    expect(after).toEqual({ status: 200, cache: "public, max-age=300", kids: expect.arrayContaining([...first.kids, next.kid]) });
    expect(after.kids).toHaveLength(2);
  });
});
