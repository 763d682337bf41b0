/**
 * `signingKeyLoadTimeoutMs`: a request waits at most that long for a load of the signing keys.
 * Past it the keys loaded before serve (none yet: 503), the late load is given up on (the next
 * request starts another), and a load given up on that ends after a newer one changes nothing.
 * The store's `list` is held open by the test (the workerd case, where it never settles, is in
 * packages/cloudflare/test/hung-storage.test.ts).
 */
import { describe, expect, it, vi } from "vitest";
import { createMemoryStorage, createPlantgate, generateKeyRecord, type Plantgate, type SigningKeyRecord } from "../src/index.js";
import { BASE, manualClock } from "./helpers.js";

/** A memory store whose `signingKeys.list` answers only once `release()` is called, while `holding`. */
function heldStorage() {
  const storage = createMemoryStorage();
  const list = storage.signingKeys.list.bind(storage.signingKeys);
  const held: (() => void)[] = [];
  const gate = { holding: false, calls: 0, release: () => held.splice(0).forEach((go) => go()) };
  storage.signingKeys.list = async (): Promise<SigningKeyRecord[]> => {
    gate.calls++;
    const records = await list();
    if (gate.holding) await new Promise<void>((go) => held.push(go));
    return records;
  };
  return { storage, gate };
}

const jwks = async (app: Plantgate) => {
  const started = Date.now();
  const res = await app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
  return { status: res.status, body: (await res.json()) as { keys?: { kid: string }[] }, ms: Date.now() - started };
};
const kids = (body: { keys?: { kid: string }[] }) => body.keys!.map((k) => k.kid).sort();

describe("signingKeyLoadTimeoutMs", () => {
  it("a late reload: the keys loaded before serve within the bound; the next request starts a fresh load; the late one, ending last, does not put older keys back", async () => {
    const clock = manualClock(Date.now());
    const { storage, gate } = heldStorage();
    const app = createPlantgate({ storage, clock: clock.now, signingKeyLoadTimeoutMs: 200, logger: { error() {}, warn() {} } });
    const first = await jwks(app);
    expect(first.status).toBe(200);
    const k1 = kids(first.body);

    gate.holding = true;
    clock.advance(61_000); // past the reload interval
    const during = await jwks(app);
    expect([during.status, kids(during.body)]).toEqual([200, k1]);
    expect(during.ms).toBeGreaterThanOrEqual(150);
    expect(during.ms).toBeLessThan(2000);

    // A key stored elsewhere meanwhile; the store answers again, except the load still held.
    const k2: SigningKeyRecord = await generateKeyRecord("ES256", clock.now());
    await storage.signingKeys.create(k2);
    gate.holding = false;
    const calls = gate.calls;
    const after = await jwks(app);
    expect(gate.calls).toBe(calls + 1); // a new load, not the late one waited for again
    expect([after.status, kids(after.body)]).toEqual([200, [...k1, k2.kid].sort()]);

    // The late load ends now, with what it read before k2 was stored: k1 alone, whose private and
    // public parts it imports last. Waited for explicitly (imports counted as they settle), so the
    // check below runs after that load has applied its keys or been told not to.
    const subtle = globalThis.crypto.subtle;
    const importKey = subtle.importKey.bind(subtle) as (...args: unknown[]) => Promise<CryptoKey>;
    let imported = 0;
    const spy = vi.spyOn(subtle, "importKey").mockImplementation((async (...args: unknown[]) => {
      try {
        return await importKey(...args);
      } finally {
        imported++;
      }
    }) as typeof subtle.importKey);
    try {
      gate.release();
      await vi.waitFor(() => expect(imported).toBe(2), { timeout: 5000, interval: 5 });
    } finally {
      spy.mockRestore();
    }
    // What is left of that load after its last import is synchronous or microtasks: one turn ends it.
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(kids((await jwks(app)).body)).toEqual([...k1, k2.kid].sort());
  });

  it("0 sets no bound (the Node default): a request waits for a load held an hour, then is served the keys it read", async () => {
    // Only the timers are faked: the store and WebCrypto settle as they do. Any bound, the 0 taken
    // for 0 ms or a default of its own, would have answered 503 within the hour.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    try {
      for (const options of [{ signingKeyLoadTimeoutMs: 0 }, {}]) {
        const { storage, gate } = heldStorage();
        const app = createPlantgate({ storage, ...options, logger: { error() {}, warn() {} } });
        gate.holding = true;
        let settled = false;
        const waiting = app.fetch(new Request(`${BASE}/.well-known/jwks.json`)).finally(() => (settled = true));
        await vi.advanceTimersByTimeAsync(3_600_000);
        expect([options, settled, gate.calls]).toEqual([options, false, 1]);
        gate.holding = false;
        gate.release();
        const res = await waiting;
        const body = (await res.json()) as { keys?: { kid: string }[] };
        expect([options, res.status, body.keys?.length]).toEqual([options, 200, 1]);
        expect(kids((await jwks(app)).body)).toEqual(kids(body));
      }
    } finally {
      vi.useRealTimers();
    }
  });

  it("no keys loaded yet and the load is late: 503 with the documented body within the bound", async () => {
    const { storage, gate } = heldStorage();
    const app = createPlantgate({ storage, signingKeyLoadTimeoutMs: 200, logger: { error() {}, warn() {} } });
    gate.holding = true;
    const during = await jwks(app);
    expect([during.status, during.body]).toEqual([503, { error: 1503, message: "The service is temporarily unavailable; retry later." }]);
    expect(during.ms).toBeLessThan(2000);
    gate.holding = false;
    expect((await jwks(app)).status).toBe(200);
    gate.release();
  });

  it("while the last re-read was given up on (late), the JWK Set is served no-store, as after a failed one; public, max-age=300 again once a load lands", async () => {
    const clock = manualClock(Date.now());
    const { storage, gate } = heldStorage();
    const app = createPlantgate({ storage, clock: clock.now, signingKeyLoadTimeoutMs: 200, logger: { error() {}, warn() {} } });
    const cacheOf = async () => {
      const res = await app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
      const body = (await res.json()) as { keys: { kid: string }[] };
      return { status: res.status, cache: res.headers.get("cache-control"), kids: body.keys.map((k) => k.kid) };
    };
    const first = await cacheOf();
    expect(first).toEqual({ status: 200, cache: "public, max-age=300", kids: [expect.any(String)] });
    gate.holding = true;
    clock.advance(61_000); // past the reload interval: this request's re-read is late
    // The keys loaded before serve, and may lack one another instance stored since: not to be kept 300 s.
    expect(await cacheOf()).toEqual({ status: 200, cache: "no-store", kids: first.kids });
    gate.holding = false;
    gate.release();
    // The next request's fresh load lands: cacheable again.
    expect(await cacheOf()).toEqual({ status: 200, cache: "public, max-age=300", kids: first.kids });
  });

  it("is checked when the app is made: an integer from 0 (no bound) to 2147483647", () => {
    for (const signingKeyLoadTimeoutMs of [Number.NaN, -1, 1.5, 2 ** 31]) {
      expect(() => createPlantgate({ signingKeyLoadTimeoutMs })).toThrow(new TypeError("signingKeyLoadTimeoutMs must be an integer from 0 (no bound) to 2147483647"));
    }
    expect(() => createPlantgate({ signingKeyLoadTimeoutMs: 0 })).not.toThrow();
  });
});
