/**
 * A storage of the host's own written as a class: the stores may be getters of its prototype (or
 * of a base class), as TypeScript classes often expose them. Turning metrics or tracing on must
 * not change what core reaches. Until 2026-12-03 `instrumentStorage` copied the storage with
 * object spread and `Object.entries`, which see own enumerable properties only: a store behind a
 * prototype getter was simply missing from the instrumented storage, and every request that
 * touched it failed as soon as an observer or a tracer was given (a 500 for a token, the client
 * store being `undefined`), while the same storage without them worked.
 */
import { InMemorySpanExporter, SimpleSpanProcessor, BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type Storage, type StorageObservation } from "../src/index.js";
import { basic } from "./helpers.js";

const BASE = "https://as.example.test";

/** The memory storage behind prototype getters: nothing of it is an own property of the instance. */
class ClassStorage {
  readonly #inner: Storage = createMemoryStorage();
  get clients() { return this.#inner.clients; }
  get accounts() { return this.#inner.accounts; }
  get refreshTokens() { return this.#inner.refreshTokens; }
  get plants() { return this.#inner.plants; }
  get signingKeys() { return this.#inner.signingKeys; }
  get attempts() { return this.#inner.attempts; }
  get revokedTokens() { return this.#inner.revokedTokens; }
  get sessions() { return this.#inner.sessions; }
  get assertionJtis() { return this.#inner.assertionJtis; }
  closed = 0;
  /** A method of the host's own, on the prototype. */
  close() {
    this.closed++;
  }
  /** A getter of the host's own that is no store. */
  get state() {
    return this.closed > 0 ? "closed" : "open";
  }
}

async function tokenFrom(options: Parameters<typeof createPlantgate>[0]) {
  const app = createPlantgate({ issuer: BASE, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, ...options });
  const { clientSecret } = await app.admin.createClient({ clientId: "app-1", grantTypes: ["client_credentials"] });
  const res = await app.fetch(
    new Request(`${BASE}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic("app-1", clientSecret) },
      body: "grant_type=client_credentials",
    }),
    { clientIp: "203.0.113.9" },
  );
  return { status: res.status, tokenType: ((await res.json()) as { token_type?: string }).token_type };
}

describe("a class-based storage whose stores are prototype getters", () => {
  it("serves the same with metrics (an observer) on as with them off, and the observer sees its storage calls", async () => {
    const calls: string[] = [];
    const observer = { storage: (o: StorageObservation) => void calls.push(`${o.store}.${o.operation}`) };
    expect(await tokenFrom({ storage: new ClassStorage() as unknown as Storage })).toEqual({ status: 200, tokenType: "Bearer" });
    expect(await tokenFrom({ storage: new ClassStorage() as unknown as Storage, observer })).toEqual({ status: 200, tokenType: "Bearer" });
    expect(calls).toContain("clients.get");
  });

  it("serves the same with a tracer on, and each storage call is a span", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    expect(await tokenFrom({ storage: new ClassStorage() as unknown as Storage, tracer: provider.getTracer("t") })).toEqual({ status: 200, tokenType: "Bearer" });
    expect(exporter.getFinishedSpans().map((s) => s.name)).toContain("plantgate.storage clients.get");
  });

  it("app.storage keeps the class's other members: a prototype method bound to the instance, a getter read as it is now", async () => {
    const storage = new ClassStorage();
    const app = createPlantgate({ storage: storage as unknown as Storage, observer: { storage() {} }, logger: { error() {}, warn() {} } });
    const seen = app.storage as unknown as ClassStorage;
    expect(seen.state).toBe("open");
    seen.close();
    expect({ closed: storage.closed, state: seen.state }).toEqual({ closed: 1, state: "closed" });
  });

  it("no other member is read when the app is made: a prototype getter that throws until the host connects still lets it start (a review of 2026-12-03: the first fix read every getter)", () => {
    class LateConnection {
      #connected = false;
      constructor() {
        Object.assign(this, createMemoryStorage());
      }
      connect() {
        this.#connected = true;
      }
      get connection() {
        if (!this.#connected) throw new Error("not connected yet");
        return { connected: true };
      }
    }
    const storage = new LateConnection();
    const app = createPlantgate({ storage: storage as unknown as Storage, observer: { storage() {} }, logger: { error() {}, warn() {} } });
    const seen = app.storage as unknown as LateConnection;
    expect(() => seen.connection).toThrow("not connected yet");
    storage.connect();
    // Read through, so the very object the host's getter gives.
    expect(seen.connection).toEqual({ connected: true });
  });

  it("a prototype accessor's setter and a symbol-keyed method reach the original", async () => {
    class Extras {
      #label = "a";
      disposed = false;
      constructor() {
        Object.assign(this, createMemoryStorage());
      }
      get label() {
        return this.#label;
      }
      set label(value: string) {
        this.#label = value;
      }
      async [Symbol.asyncDispose]() {
        this.disposed = true;
      }
    }
    const storage = new Extras();
    const app = createPlantgate({ storage: storage as unknown as Storage, observer: { storage() {} }, logger: { error() {}, warn() {} } });
    const seen = app.storage as unknown as Extras;
    seen.label = "b";
    await seen[Symbol.asyncDispose]();
    expect({ label: storage.label, disposed: storage.disposed }).toEqual({ label: "b", disposed: true });
  });
});
