/**
 * Traces (OpenTelemetry, through the SDK's in-memory exporter) and the observer hooks: a server
 * span per request with the HTTP semantic attributes, child spans for client authentication, the
 * grant, signing and each storage call, nested through the context manager; nothing when no
 * tracer is set; observer calls with low-cardinality labels only.
 */
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createMemoryStorage, StorageError, type RequestObservation, type StorageObservation } from "../src/index.js";
import { activeSpan } from "../src/telemetry/spans.js";
import type { TraceSpan, Tracer } from "../src/telemetry/types.js";
import { ROUTE_PATHS } from "../src/app.js";
import { BASE, basic, harness, tokenRequest, type Harness } from "./helpers.js";
import { TEST_PAGE } from "./page-helpers.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  context.disable();
});
beforeEach(() => exporter.reset());

const SERVER = 1;
const INTERNAL = 0;
const CLIENT = 2;
const ERROR = 2;

function byName(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0]!;
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;

async function tracedHarness(): Promise<Harness> {
  const h = await harness({ tracer: provider.getTracer("plantgate-test") });
  exporter.reset(); // drop the spans of the set-up (admin calls)
  return h;
}

describe("tracing", () => {
  it("a token request is one server span with the HTTP attributes and nested child spans", async () => {
    const h = await tracedHarness();
    const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string };
    const spans = exporter.getFinishedSpans();
    const server = byName(spans, "POST /UserService/connect/token");
    expect(server.kind).toBe(SERVER);
    expect(parentOf(server)).toBeUndefined();
    expect(server.attributes).toEqual({
      "http.request.method": "POST",
      "url.path": "/UserService/connect/token",
      "url.scheme": "https",
      "server.address": "as.example.test",
      "server.port": 443,
      "http.route": "/UserService/connect/token",
      "http.response.status_code": 200,
      "plantgate.grant_type": "client_credentials",
    });
    expect(server.status.code).toBe(0);
    const auth = byName(spans, "plantgate.client_authentication");
    const grant = byName(spans, "plantgate.grant");
    const sign = byName(spans, "plantgate.sign");
    expect([auth.kind, grant.kind, sign.kind]).toEqual([INTERNAL, INTERNAL, INTERNAL]);
    expect(parentOf(auth)).toBe(idOf(server));
    expect(parentOf(grant)).toBe(idOf(server));
    expect(parentOf(sign)).toBe(idOf(grant));
    expect(grant.attributes).toEqual({ "plantgate.grant_type": "client_credentials" });
    expect(sign.attributes).toEqual({ "plantgate.signing_alg": "ES256" });
    const clientsGet = byName(spans, "plantgate.storage clients.get");
    expect(clientsGet.kind).toBe(CLIENT);
    expect(clientsGet.attributes).toEqual({ "db.collection.name": "clients", "db.operation.name": "get" });
    expect(parentOf(clientsGet)).toBe(idOf(auth));
    // Every span belongs to the one trace, and none carries the secret or the token.
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    const text = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.status, s.events]));
    expect(text).not.toContain(h.clientSecret);
    expect(text).not.toContain(body.access_token);
  });

  it("a wrong secret marks the client-authentication span as an error; a 401 server span is not one", async () => {
    const h = await tracedHarness();
    const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, "wrong-secret") });
    expect(res.status).toBe(401);
    const spans = exporter.getFinishedSpans();
    const auth = byName(spans, "plantgate.client_authentication");
    expect(auth.status.code).toBe(ERROR);
    expect(auth.attributes).toEqual({ "error.type": "invalid_client" });
    const server = byName(spans, "POST /UserService/connect/token");
    expect(server.status.code).toBe(0);
    expect(server.attributes["http.response.status_code"]).toBe(401);
    expect(spans.some((s) => s.name === "plantgate.grant")).toBe(false);
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain("wrong-secret");
  });

  it("a storage failure marks the storage span and the 503 server span as errors", async () => {
    const storage = createMemoryStorage();
    storage.clients.get = async () => {
      throw new StorageError("database unreachable");
    };
    const h = await harness({ storage, tracer: provider.getTracer("t") });
    exporter.reset();
    const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(res.status).toBe(503);
    const spans = exporter.getFinishedSpans();
    const get = byName(spans, "plantgate.storage clients.get");
    expect(get.status.code).toBe(ERROR);
    expect(get.attributes["error.type"]).toBe("StorageError");
    const server = byName(spans, "POST /UserService/connect/token");
    expect(server.status.code).toBe(ERROR);
    expect(server.attributes["error.type"]).toBe("StorageError");
    expect(server.attributes["http.response.status_code"]).toBe(503);
  });

  it("error.type is a short token: a custom storage passing on a driver error whose code or name is free text gets the next candidate, never that text", async () => {
    // What a custom storage that does not wrap its driver's errors in StorageError passes on: the
    // code and name are the driver's, whatever they hold. Before 2026-11-30 the code went into the
    // span attribute whole (the first case's URL and password with it).
    const driverError = (code: unknown, name?: string) => Object.assign(new Error("driver failed"), { code }, name === undefined ? {} : { name });
    const cases: [unknown, string][] = [
      [driverError("connect to postgres://app:hunter2@db.internal:5432/plantgate refused"), "Error"],
      [driverError("X".repeat(65)), "Error"],
      [driverError("auth/invalid-credential"), "Error"],
      [driverError("", "DriverError"), "DriverError"],
      [driverError({ toString: () => "hunter2" }, "ConnectionError: password hunter2 rejected"), "_OTHER"],
      [driverError("E".repeat(64), "DriverError"), "E".repeat(64)],
      [driverError("ER_DUP_ENTRY"), "ER_DUP_ENTRY"],
      [driverError(23505), "23505"],
      [driverError("28P01"), "28P01"],
      [new StorageError("database unreachable"), "StorageError"],
    ];
    for (const [thrown, type] of cases) {
      const storage = createMemoryStorage();
      storage.clients.get = async () => {
        throw thrown;
      };
      const h = await harness({ storage, tracer: provider.getTracer("t"), logger: { error() {}, warn() {} } });
      exporter.reset();
      const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
      const storageFailure = thrown instanceof StorageError;
      expect(res.status).toBe(storageFailure ? 503 : 500);
      const spans = exporter.getFinishedSpans();
      const get = byName(spans, "plantgate.storage clients.get");
      expect(get.attributes).toEqual({ "db.collection.name": "clients", "db.operation.name": "get", "error.type": type });
      const server = byName(spans, "POST /UserService/connect/token");
      expect(server.attributes["error.type"]).toBe(type);
      expect(server.attributes["http.response.status_code"]).toBe(storageFailure ? 503 : 500);
      const text = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.status, s.events]));
      expect(text).not.toContain("hunter2");
      expect(text).not.toContain("X".repeat(65));
    }
  });

  it("a logger that throws changes no answer: the 503s still come, their spans end and the observer sees them", async () => {
    const storage = createMemoryStorage();
    storage.clients.get = async () => {
      throw new StorageError("database unreachable");
    };
    storage.signingKeys.list = async () => {
      throw new StorageError("database unreachable");
    };
    const requests: RequestObservation[] = [];
    const logged: string[] = [];
    const h = await harness({
      storage,
      tracer: provider.getTracer("t"),
      observer: { request: (o) => void requests.push(o) },
      logger: {
        error(message) {
          logged.push(message);
          throw new Error("log sink full");
        },
        warn() {
          throw new Error("log sink full");
        },
      },
    });
    exporter.reset();
    requests.length = 0;
    const token = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(token.status).toBe(503);
    expect(await token.json()).toEqual({ error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." });
    const jwks = await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
    expect(jwks.status).toBe(503);
    expect(await jwks.json()).toEqual({ error: 1503, message: "The service is temporarily unavailable; retry later." });
    expect(logged).toEqual(["storage unavailable", "storage unavailable"]);
    const servers = exporter.getFinishedSpans().filter((s) => s.kind === SERVER);
    expect(servers.map((s) => [s.name, s.attributes["http.response.status_code"], s.status.code])).toEqual([
      ["POST /UserService/connect/token", 503, ERROR],
      ["GET /.well-known/jwks.json", 503, ERROR],
    ]);
    expect(requests.map((o) => [o.route, o.status])).toEqual([
      ["/UserService/connect/token", 503],
      ["/.well-known/jwks.json", 503],
    ]);
  });

  it("a tracer that throws changes no answer: a span processor failing on start or on end (the SDK passes its throw on) leaves every status and body as without a tracer", async () => {
    // A span processor of the host's own (the SDK runs onStart inside startActiveSpan and onEnd
    // inside span.end(), and neither catches a throw): before 2026-11-30 a correct token request
    // answered 500 server_error, and a storage outage 500 instead of 503.
    for (const failing of ["start", "end", "both"] as const) {
      const thrower: SpanProcessor = {
        onStart() {
          if (failing !== "end") throw new Error("span processor failed on start");
        },
        onEnd() {
          if (failing !== "start") throw new Error("span processor failed on end");
        },
        forceFlush: async () => {},
        shutdown: async () => {},
      };
      const tracer = new BasicTracerProvider({ spanProcessors: [thrower] }).getTracer("t");
      const h = await harness({ tracer });
      const token = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
      const body = (await token.json()) as Record<string, unknown>;
      expect([failing, token.status, { ...body, access_token: typeof body.access_token }]).toEqual([
        failing,
        200,
        { access_token: "string", token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" },
      ]);
      const list = await h.app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${String(body.access_token)}` } }));
      expect([failing, list.status, ((await list.json()) as { total: number }).total]).toEqual([failing, 200, 1]);
      const storage = createMemoryStorage();
      storage.clients.get = async () => {
        throw new StorageError("database unreachable");
      };
      const down = await harness({ storage, tracer });
      const refused = await tokenRequest(down.app, { grant_type: "client_credentials" }, { authorization: basic(down.clientId, down.clientSecret) });
      expect([failing, refused.status, await refused.json()]).toEqual([failing, 503, { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." }]);
    }
  });

  it("a tracer that throws after running the callback (e.g. restoring the context) changes no answer; the callback's own throw still propagates", async () => {
    // A test double of the OpenTelemetry Tracer interface standing for a buggy third-party tracer:
    // it runs the callback inside a span, then throws on the way out. Before the fix that throw
    // replaced the callback's result (a correct token request answered 500).
    const spanCalls: string[] = [];
    const span: TraceSpan = {
      setAttribute: (key) => void spanCalls.push(`setAttribute ${key}`),
      setStatus: () => void spanCalls.push("setStatus"),
      updateName: () => void spanCalls.push("updateName"),
      end: () => void spanCalls.push("end"),
    };
    const tracer: Tracer = {
      startActiveSpan(_name, _options, fn) {
        fn(span);
        throw new Error("context restore failed");
      },
    };
    const h = await harness({ tracer });
    const token = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    const body = (await token.json()) as Record<string, unknown>;
    expect([token.status, { ...body, access_token: typeof body.access_token }]).toEqual([
      200,
      { access_token: "string", token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" },
    ]);
    const list = await h.app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${String(body.access_token)}` } }));
    expect([list.status, ((await list.json()) as { total: number }).total]).toEqual([200, 1]);
    const storage = createMemoryStorage();
    storage.clients.get = async () => {
      throw new StorageError("database unreachable");
    };
    const down = await harness({ storage, tracer });
    const refused = await tokenRequest(down.app, { grant_type: "client_credentials" }, { authorization: basic(down.clientId, down.clientSecret) });
    expect([refused.status, await refused.json()]).toEqual([503, { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." }]);
    expect(spanCalls).toContain("end");
    // activeSpan itself: the callback's result survives the tracer's late throw; the callback's own
    // synchronous throw is passed on (not swallowed, not run a second time without a span).
    expect(activeSpan(tracer, "s", {}, () => 42)).toBe(42);
    let runs = 0;
    const own = new Error("fn's own");
    expect(() =>
      activeSpan(tracer, "s", {}, () => {
        runs++;
        throw own;
      }),
    ).toThrow(own);
    expect(runs).toBe(1);
  });

  it("a span whose updateName, setAttribute or setStatus throws is still ended, and the answer stands", async () => {
    for (const failing of ["updateName", "setAttribute", "setStatus"] as const) {
      const spans: { name: string; calls: string[] }[] = [];
      const tracer: Tracer = {
        startActiveSpan(name, _options, fn) {
          const record = { name, calls: [] as string[] };
          spans.push(record);
          const call = (what: string) => () => {
            record.calls.push(what);
            if (what === failing) throw new Error(`${what} failed`);
          };
          const span: TraceSpan = { setAttribute: call("setAttribute"), setStatus: call("setStatus"), updateName: call("updateName"), end: call("end") };
          return fn(span);
        },
      };
      const h = await harness({ tracer });
      spans.length = 0;
      const token = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
      expect([failing, token.status]).toEqual([failing, 200]);
      // A 503 sets the server span's status too (setStatus's turn to throw).
      const storage = createMemoryStorage();
      storage.clients.get = async () => {
        throw new StorageError("database unreachable");
      };
      const down = await harness({ storage, tracer });
      const refused = await tokenRequest(down.app, { grant_type: "client_credentials" }, { authorization: basic(down.clientId, down.clientSecret) });
      expect([failing, refused.status]).toEqual([failing, 503]);
      expect(spans.length).toBeGreaterThan(2);
      for (const span of spans) expect([failing, span.name, span.calls.filter((c) => c === "end").length]).toEqual([failing, span.name, 1]);
    }
  });

  it("an unknown path is a server span named by its method only, without http.route, its url.path REDACTED (until 2026-12-02 the path as sent)", async () => {
    const h = await tracedHarness();
    const res = await h.app.fetch(new Request(`${BASE}/no/such/path?secret=x`));
    expect(res.status).toBe(404);
    const [server] = exporter.getFinishedSpans();
    expect(server!.name).toBe("GET");
    expect(server!.attributes).toEqual({
      "http.request.method": "GET",
      "url.path": "REDACTED",
      "url.scheme": "https",
      "server.address": "as.example.test",
      "server.port": 443,
      "http.response.status_code": 404,
    });
  });

  it("an async logger that rejects changes no answer and leaves no unhandled rejection", async () => {
    const storage = createMemoryStorage();
    storage.clients.get = async () => {
      throw new StorageError("database unreachable");
    };
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const h = await harness({ storage, logger: { error: async () => Promise.reject(new Error("log sink closed")), warn: async () => {} } });
      const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
      expect(res.status).toBe(503);
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("a method OpenTelemetry does not know is _OTHER, the span is named HTTP and keeps the method as sent; an explicit port is the port", async () => {
    const h = await tracedHarness();
    const res = await h.app.fetch(new Request("https://as.example.test:8443/.well-known/jwks.json", { method: "PROPFIND" }));
    expect(res.status).toBe(405);
    const [server] = exporter.getFinishedSpans();
    expect(server!.name).toBe("HTTP /.well-known/jwks.json");
    expect(server!.attributes).toEqual({
      "http.request.method": "_OTHER",
      "http.request.method_original": "PROPFIND",
      "url.path": "/.well-known/jwks.json",
      "url.scheme": "https",
      "server.address": "as.example.test",
      "server.port": 8443,
      "http.route": "/.well-known/jwks.json",
      "http.response.status_code": 405,
    });
  });

  it("an IPv6 host is server.address without its brackets (the address itself, as for IPv4)", async () => {
    const h = await tracedHarness();
    const res = await h.app.fetch(new Request("http://[::1]:8080/.well-known/jwks.json"));
    expect(res.status).toBe(200);
    const [server, ...others] = exporter.getFinishedSpans().filter((s) => s.kind === SERVER);
    expect(others).toEqual([]);
    expect(server!.attributes).toEqual({
      "http.request.method": "GET",
      "url.path": "/.well-known/jwks.json",
      "url.scheme": "http",
      "server.address": "::1",
      "server.port": 8080,
      "http.route": "/.well-known/jwks.json",
      "http.response.status_code": 200,
    });
  });

  it("a host name longer than a DNS name can be (253 characters) is server.address REDACTED: a hostile Host is not copied into every span", async () => {
    // Until 2026-12-03 the host was taken as sent: the URL parser checks no length, so a Host of
    // several kilobytes (up to the adapter's header limit) went into the span of each request.
    const h = await tracedHarness();
    const long = Array.from({ length: 130 }, () => "a".repeat(63)).join(".");
    const atLimit = Array.from({ length: 4 }, (_, i) => (i < 3 ? "b".repeat(63) : "b".repeat(61))).join(".");
    expect([long.length, atLimit.length]).toEqual([8319, 253]);
    // The longest DNS name written with its trailing dot (a review of 2026-12-03) is a name too.
    for (const host of [long, atLimit, `${atLimit}.`, `${atLimit}b`]) expect((await h.app.fetch(new Request(`https://${host}/.well-known/jwks.json`))).status).toBe(200);
    expect(exporter.getFinishedSpans().filter((s) => s.kind === SERVER).map((s) => s.attributes["server.address"])).toEqual(["REDACTED", atLimit, `${atLimit}.`, "REDACTED"]);
  });


  it("client.address is the client's address as the throttle and the events see it (a trusted proxy's X-Forwarded-For resolved), set when the span starts; absent without one", async () => {
    // Until 2026-12-03 server spans carried no client.address (recommended on HTTP server spans):
    // an operator tracing a burst of failures could not tell the callers apart.
    const started: Record<string, unknown>[] = [];
    const watch: SpanProcessor = {
      onStart: (span) => void started.push({ ...(span as unknown as ReadableSpan).attributes }),
      onEnd() {},
      forceFlush: async () => {},
      shutdown: async () => {},
    };
    const watched = new BasicTracerProvider({ spanProcessors: [watch, new SimpleSpanProcessor(exporter)] });
    const h = await harness({ tracer: watched.getTracer("plantgate-test"), trustedProxies: ["10.0.0.0/8"] });
    exporter.reset();
    started.length = 0;
    const jwks = (headers: Record<string, string> = {}) => new Request(`${BASE}/.well-known/jwks.json`, { headers });
    const answers = [
      await h.app.fetch(jwks(), { clientIp: "198.51.100.7" }),
      await h.app.fetch(jwks({ "x-forwarded-for": "203.0.113.50, 198.51.100.9" }), { clientIp: "10.1.2.3" }),
      // A peer that is no trusted proxy: its X-Forwarded-For proves nothing.
      await h.app.fetch(jwks({ "x-forwarded-for": "203.0.113.50" }), { clientIp: "198.51.100.8" }),
      await h.app.fetch(jwks({ "x-forwarded-for": "203.0.113.50" }), { clientIp: "::ffff:198.51.100.10" }),
      await h.app.fetch(jwks()),
      // IPv6 as the events' client_ip writes it: in full, uncompressed.
      await h.app.fetch(jwks(), { clientIp: "2001:db8::1" }),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const servers = exporter.getFinishedSpans().filter((s) => s.kind === SERVER);
    const want = ["198.51.100.7", "198.51.100.9", "198.51.100.8", "198.51.100.10", undefined, "2001:db8:0:0:0:0:0:1"];
    expect(servers.map((s) => s.attributes["client.address"])).toEqual(want);
    expect(started.filter((a) => a["http.request.method"] !== undefined).map((a) => a["client.address"])).toEqual(want);
    expect(servers[0]!.attributes).toEqual({
      "http.request.method": "GET",
      "url.path": "/.well-known/jwks.json",
      "url.scheme": "https",
      "server.address": "as.example.test",
      "server.port": 443,
      "client.address": "198.51.100.7",
      "http.route": "/.well-known/jwks.json",
      "http.response.status_code": 200,
    });
  });
  it("a client address an adapter got wrong (not a string, or empty) changes no answer with a tracer: the answer is the one without, and the span has no client.address", async () => {
    // A review of 2026-12-03: the address is resolved before the span starts, outside dispatch's
    // guard, so a hand-written adapter's `clientIp: null` rejected app.fetch on every route with a
    // tracer on, where without one the request is answered (a 500 on a route that reads it).
    const plain = await harness();
    const traced = await tracedHarness();
    const answer = async (h: Harness, clientIp: unknown) => {
      const info = { clientIp } as never;
      const jwks = await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`), info);
      const token = await h.app.fetch(
        new Request(`${BASE}/UserService/connect/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) }, body: "grant_type=client_credentials" }),
        info,
      );
      return [jwks.status, token.status, (await token.json()) as unknown];
    };
    const shape = (a: unknown[]) => [a[0], a[1], typeof (a[2] as { access_token?: unknown }).access_token === "string" ? "a token" : a[2]];
    for (const bad of [null, 42, ""]) {
      exporter.reset();
      const without = shape(await answer(plain, bad));
      expect(shape(await answer(traced, bad)), String(bad)).toEqual(without);
      const servers = exporter.getFinishedSpans().filter((s) => s.kind === SERVER);
      expect(servers.map((s) => [s.name, s.attributes["client.address"]])).toEqual([
        ["GET /.well-known/jwks.json", undefined],
        ["POST /UserService/connect/token", undefined],
      ]);
    }
    // What the answers are (the same with a tracer and without): every route's handler is handed
    // the address, so a null one is a 500 (an adapter fault); an empty one is an opaque identity.
    expect(shape(await answer(plain, null))).toEqual([500, 500, { error: "server_error", error_description: "The server encountered an unexpected error." }]);
    expect(shape(await answer(plain, ""))).toEqual([200, 200, "a token"]);
  });

  it("the audit trail's writes (after the answer) are spans of their own trace, not children of the request's ended spans", async () => {
    const h = await harness({ storage: createMemoryStorage({ audit: true }), tracer: provider.getTracer("t") });
    await h.app.flushEvents();
    exporter.reset();
    const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(res.status).toBe(200);
    await h.app.flushEvents();
    const spans = exporter.getFinishedSpans();
    const server = byName(spans, "POST /UserService/connect/token");
    const append = byName(spans, "plantgate.storage audit.append");
    expect(parentOf(append)).toBeUndefined();
    expect(append.spanContext().traceId).not.toBe(server.spanContext().traceId);
    // The request's own storage calls stay in its trace.
    expect(byName(spans, "plantgate.storage clients.get").spanContext().traceId).toBe(server.spanContext().traceId);
  });

  it("with the API's tracer and no SDK registered, answers are unchanged and nothing is recorded", async () => {
    const h = await harness({ tracer: trace.getTracer("plantgate") });
    exporter.reset();
    const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(res.status).toBe(200);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("without tracer and observer the storage is used as given (nothing wrapped)", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    expect(h.app.storage).toBe(storage);
    const traced = await harness({ storage: createMemoryStorage(), tracer: provider.getTracer("t") });
    expect(Object.keys(traced.app.storage).sort()).toEqual(Object.keys(storage).sort());
    expect(traced.app.storage.clients).not.toBe(storage.clients);
  });

  it("refuses a tracer without startActiveSpan and an observer hook that is not a function", async () => {
    await expect(harness({ tracer: {} as never })).rejects.toThrow("tracer must be an OpenTelemetry Tracer (with startActiveSpan)");
    await expect(harness({ observer: { request: 1 } as never })).rejects.toThrow("observer.request must be a function");
  });
});

describe("observer", () => {
  async function observed(options: { throwing?: boolean } = {}) {
    const requests: RequestObservation[] = [];
    const storageCalls: StorageObservation[] = [];
    const h = await harness({
      observer: {
        request: (o) => {
          requests.push(o);
          if (options.throwing) throw new Error("observer bug");
        },
        storage: (o) => {
          storageCalls.push(o);
          if (options.throwing) throw new Error("observer bug");
        },
      },
    });
    requests.length = 0;
    storageCalls.length = 0;
    return { h, requests, storageCalls };
  }
  const strip = (o: RequestObservation) => {
    expect(o.durationMs).toBeGreaterThanOrEqual(0);
    const { durationMs: _, ...rest } = o;
    return rest;
  };

  it("reports each request with route, method, status, grant type and result", async () => {
    const { h, requests } = await observed();
    const auth = { authorization: basic(h.clientId, h.clientSecret) };
    expect((await tokenRequest(h.app, { grant_type: "client_credentials" }, auth)).status).toBe(200);
    expect((await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, "nope") })).status).toBe(401);
    expect((await tokenRequest(h.app, { grant_type: "password", username: "alice", password: "bad" }, auth)).status).toBe(400);
    expect((await tokenRequest(h.app, { grant_type: "urn:made-up:alice" }, auth)).status).toBe(400);
    expect((await tokenRequest(h.app, {}, auth)).status).toBe(400);
    expect((await h.app.fetch(new Request(`${BASE}/UserService/connect/token`))).status).toBe(405);
    expect((await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`, { method: "BREW" }))).status).toBe(405);
    expect((await h.app.fetch(new Request(`${BASE}/users/alice`))).status).toBe(404);
    const token = "/UserService/connect/token";
    expect(requests.map(strip)).toEqual([
      { route: token, method: "POST", status: 200, grantType: "client_credentials", result: "success" },
      { route: token, method: "POST", status: 401, grantType: "client_credentials", result: "invalid_client" },
      { route: token, method: "POST", status: 400, grantType: "password", result: "invalid_grant" },
      { route: token, method: "POST", status: 400, grantType: "unsupported", result: "unsupported_grant_type" },
      { route: token, method: "POST", status: 400, grantType: "none", result: "invalid_request" },
      { route: token, method: "GET", status: 405, grantType: "none", result: "invalid_request" },
      { route: "/.well-known/jwks.json", method: "_OTHER", status: 405, grantType: undefined, result: undefined },
      { route: "unmatched", method: "GET", status: 404, grantType: undefined, result: undefined },
    ]);
  });

  it("reports a brute-force refusal as locked_out", async () => {
    const requests: RequestObservation[] = [];
    const h = await harness({ bruteForce: { maxFailures: 1, windowSeconds: 60 }, observer: { request: (o) => requests.push(o) } });
    const wrong = { authorization: basic(h.clientId, "nope") };
    await tokenRequest(h.app, { grant_type: "client_credentials" }, wrong);
    expect((await tokenRequest(h.app, { grant_type: "client_credentials" }, wrong)).status).toBe(429);
    expect(requests.map((o) => o.result)).toEqual(["invalid_client", "locked_out"]);
  });

  it("reports a client's lock-out at revocation and introspection as locked_out with grant type none; their other answers carry neither", async () => {
    const requests: RequestObservation[] = [];
    const h = await harness({ bruteForce: { maxFailures: 1, windowSeconds: 60 }, observer: { request: (o) => requests.push(o) } });
    for (const path of ["revocation", "introspect"]) {
      const post = (secret: string) =>
        h.app.fetch(new Request(`${BASE}/UserService/connect/${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, secret) }, body: "token=x" }));
      expect([(await post(h.clientSecret)).status, (await post("nope")).status, (await post("nope")).status]).toEqual([200, 401, 429]);
      // The token endpoint's lock for the same client and address (one throttle for the three).
      h.clock.advance(61_000);
    }
    expect(requests.map((o) => [o.route, o.status, o.grantType, o.result])).toEqual([
      ["/UserService/connect/revocation", 200, undefined, undefined],
      ["/UserService/connect/revocation", 401, undefined, undefined],
      ["/UserService/connect/revocation", 429, "none", "locked_out"],
      ["/UserService/connect/introspect", 200, undefined, undefined],
      ["/UserService/connect/introspect", 401, undefined, undefined],
      ["/UserService/connect/introspect", 429, "none", "locked_out"],
    ]);
  });

  it("reports each storage call with store, operation and failure", async () => {
    const { h, storageCalls } = await observed();
    await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    const calls = storageCalls.map((o) => `${o.store}.${o.operation}${o.failed ? " failed" : ""}`);
    expect(calls).toContain("clients.get");
    expect(storageCalls.every((o) => o.durationMs >= 0)).toBe(true);
    const storage = createMemoryStorage();
    storage.plants.get = async () => {
      throw new StorageError("down");
    };
    const seen: StorageObservation[] = [];
    const app = (await harness({ storage, observer: { storage: (o) => seen.push(o) } })).app;
    await expect(app.storage.plants.get(1n)).rejects.toThrow("down");
    expect(seen.at(-1)).toMatchObject({ store: "plants", operation: "get", failed: true });
  });

  it("times every kind of store result once and hands it on as the store gave it", async () => {
    const storage = createMemoryStorage();
    // The store's method answers as the test says (the wrapper holds the method it was made with).
    let answer: () => unknown = () => null;
    (storage.plants as unknown as Record<string, unknown>).get = () => answer();
    const seen: StorageObservation[] = [];
    const app = (await harness({ storage, observer: { storage: (o) => seen.push(o) } })).app;
    const plants = app.storage.plants as unknown as Record<string, (...args: unknown[]) => unknown>;
    const last = () => {
      const o = seen.at(-1)!;
      expect(o.durationMs).toBeGreaterThanOrEqual(0);
      return [o.store, o.operation, o.failed, seen.length];
    };
    // A native promise: the caller gets that very promise; the timing is reported before the caller resumes.
    const resolved = Promise.resolve("plant");
    answer = () => resolved;
    seen.length = 0;
    const got = plants.get!(1n);
    expect(got).toBe(resolved);
    expect(await got).toBe("plant");
    expect(last()).toEqual(["plants", "get", false, 1]);
    // A rejection: the caller sees it, the timing says failed, and nothing is left unhandled.
    answer = () => Promise.reject(new StorageError("down"));
    await expect(plants.get!(1n)).rejects.toThrow("down");
    expect(last()).toEqual(["plants", "get", true, 2]);
    // Another thenable (a query builder runs its query on each `then`): asked once, its value handed on.
    let asked = 0;
    answer = () => ({
      then(ok: (v: unknown) => unknown) {
        asked++;
        return Promise.resolve(ok("built"));
      },
    });
    expect(await plants.get!(1n)).toBe("built");
    expect([asked, ...last()]).toEqual([1, "plants", "get", false, 3]);
    // A plain value and a synchronous throw.
    answer = () => "now";
    expect(plants.get!(1n)).toBe("now");
    expect(last()).toEqual(["plants", "get", false, 4]);
    answer = () => {
      throw new StorageError("sync");
    };
    expect(() => plants.get!(1n)).toThrow("sync");
    expect(last()).toEqual(["plants", "get", true, 5]);
  });

  it("a throwing observer never changes an answer", async () => {
    const { h, requests, storageCalls } = await observed({ throwing: true });
    const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    expect(res.status).toBe(200);
    expect(requests).toHaveLength(1);
    expect(storageCalls.length).toBeGreaterThan(0);
  });

  it("an async observer that rejects (a metrics push that fails) changes no answer and leaves no unhandled rejection, which ended a Node process", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const reports: string[] = [];
      const h = await harness({
        observer: {
          request: async (o) => {
            reports.push(`request ${o.status}`);
            throw new Error("metrics backend down");
          },
          storage: async (o) => {
            reports.push(`storage ${o.store}.${o.operation}`);
            throw new Error("metrics backend down");
          },
        },
      });
      reports.length = 0;
      const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
      expect(res.status).toBe(200);
      await new Promise((r) => setTimeout(r, 20));
      expect(reports).toContain("request 200");
      expect(reports).toContain("storage clients.get");
      // Until 2026-12-02 each report's rejection was left unhandled (a throw was caught, a rejection not).
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});

describe("route templates under a base path", () => {
  it("include the base path, in the span and in the observation", async () => {
    const requests: RequestObservation[] = [];
    const h = await harness({ basePath: "/auth", tracer: provider.getTracer("t"), observer: { request: (o) => requests.push(o) } });
    exporter.reset();
    const res = await h.app.fetch(
      new Request(`${BASE}/auth/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) },
        body: "grant_type=client_credentials",
      }),
    );
    expect(res.status).toBe(200);
    const server = byName(exporter.getFinishedSpans(), "POST /auth/UserService/connect/token");
    expect(server.attributes["http.route"]).toBe("/auth/UserService/connect/token");
    expect(requests.map((o) => [o.route, o.grantType, o.result])).toEqual([["/auth/UserService/connect/token", "client_credentials", "success"]]);
  });
});

describe("url.path: a route's own path, never what a request put in it", () => {
  const W = "/.well-known/oauth-authorization-server";
  const T = "eyJhbGciOiJFUzI1NiJ9.c2VjcmV0.c2ln"; // what a client might send in a path by mistake
  /** Each request's status, server span name, `url.path` and `http.route`. */
  async function spansOf(basePath: string, requests: [method: string, path: string][]) {
    const h = await harness({ basePath: basePath || undefined, docs: TEST_PAGE, console: { enabled: true, page: TEST_PAGE }, tracer: provider.getTracer("t") });
    const seen: unknown[] = [];
    for (const [method, path] of requests) {
      exporter.reset();
      const res = await h.app.fetch(new Request(`${BASE}${path}`, { method }));
      const servers = exporter.getFinishedSpans().filter((s) => s.kind === SERVER);
      expect(servers).toHaveLength(1);
      seen.push([method, path, res.status, servers[0]!.name, servers[0]!.attributes["url.path"], servers[0]!.attributes["http.route"]]);
    }
    return seen;
  }
  /** The requests of one base path, each with what its span must show. */
  function table(b: string): [method: string, path: string, status: number, name: string, urlPath: string, route: string | undefined][] {
    return [
      // Every route outside the mounts: fixed text only, so the path itself.
      ["POST", `${b}/UserService/connect/token`, 400, `POST ${b}/UserService/connect/token`, `${b}/UserService/connect/token`, `${b}/UserService/connect/token`],
      ["POST", `${b}/UserService/connect/revocation`, 400, `POST ${b}/UserService/connect/revocation`, `${b}/UserService/connect/revocation`, `${b}/UserService/connect/revocation`],
      ["POST", `${b}/UserService/connect/introspect`, 400, `POST ${b}/UserService/connect/introspect`, `${b}/UserService/connect/introspect`, `${b}/UserService/connect/introspect`],
      ["POST", `${b}/plants`, 401, `POST ${b}/plants`, `${b}/plants`, `${b}/plants`],
      ["GET", `${b}/rbac/ServerCommand/GetAccountList`, 401, `GET ${b}/rbac/ServerCommand/GetAccountList`, `${b}/rbac/ServerCommand/GetAccountList`, `${b}/rbac/ServerCommand/GetAccountList`],
      ["GET", `${b}/.well-known/jwks.json`, 200, `GET ${b}/.well-known/jwks.json`, `${b}/.well-known/jwks.json`, `${b}/.well-known/jwks.json`],
      ["GET", `${b}${W}`, 200, `GET ${b}${W}`, `${b}${W}`, `${b}${W}`],
      ["GET", `${b}/openapi.json`, 200, `GET ${b}/openapi.json`, `${b}/openapi.json`, `${b}/openapi.json`],
      // The mounts: the page and its files are fixed text; a console route's parameters are what
      // the request put there (a percent-encoded `?` too); a path a mount does not answer is its template.
      ["GET", `${b}/docs`, 200, `GET ${b}/docs`, `${b}/docs`, `${b}/docs`],
      ["GET", `${b}/docs/assets/app.js`, 200, `GET ${b}/docs`, `${b}/docs/assets/app.js`, `${b}/docs`],
      ["GET", `${b}/docs/assets/${T}`, 404, `GET ${b}/docs`, `${b}/docs`, `${b}/docs`],
      ["GET", `${b}/console`, 200, `GET ${b}/console`, `${b}/console`, `${b}/console`],
      ["GET", `${b}/console/`, 200, `GET ${b}/console`, `${b}/console/`, `${b}/console`],
      ["GET", `${b}/console/assets/app.css`, 200, `GET ${b}/console`, `${b}/console/assets/app.css`, `${b}/console`],
      ["GET", `${b}/console/api/session`, 401, `GET ${b}/console`, `${b}/console/api/session`, `${b}/console`],
      ["POST", `${b}/console/api/signing-keys/reencrypt`, 401, `POST ${b}/console`, `${b}/console/api/signing-keys/reencrypt`, `${b}/console`],
      ["DELETE", `${b}/console/api/signing-keys/${T}`, 401, `DELETE ${b}/console`, `${b}/console/api/signing-keys/REDACTED`, `${b}/console`],
      ["DELETE", `${b}/console/api/clients/app-1/secrets/${T}`, 401, `DELETE ${b}/console`, `${b}/console/api/clients/REDACTED/secrets/REDACTED`, `${b}/console`],
      ["POST", `${b}/console/api/accounts/x%3Faccess_token=${T}/disable`, 401, `POST ${b}/console`, `${b}/console/api/accounts/REDACTED/disable`, `${b}/console`],
      ["GET", `${b}/console/api/${T}`, 404, `GET ${b}/console`, `${b}/console`, `${b}/console`],
      ["GET", `${b}/console/assets/${T}`, 404, `GET ${b}/console`, `${b}/console`, `${b}/console`],
      // No route: REDACTED, whatever the path holds.
      ["GET", `${b}/plants/${T}`, 404, "GET", "REDACTED", undefined],
      ["GET", `${b}/plants/`, 404, "GET", "REDACTED", undefined],
      ["GET", `${b}/rbac/ServerCommand/GetAccountList;access_token=${T}`, 404, "GET", "REDACTED", undefined],
      ["GET", `${b}/rbac/ServerCommand/GetAccountList%3Faccess_token=${T}`, 404, "GET", "REDACTED", undefined],
      ["POST", `${b}/UserService/connect/token/${T}`, 404, "POST", "REDACTED", undefined],
      ["GET", `${b}/${T}`, 404, "GET", "REDACTED", undefined],
    ];
  }

  it("the table covers every route", () => {
    const covered = new Set(table("").map(([, path]) => path));
    expect(ROUTE_PATHS.filter((p) => !covered.has(p))).toEqual([]);
  });

  it("without a base path", async () => {
    const rows = table("");
    expect(await spansOf("", rows.map(([m, p]) => [m, p]))).toEqual(rows);
  });

  it("under a base path (as the Express and Node adapters mount it), the RFC 8414 §3.1 metadata path with it inserted, and a path outside it", async () => {
    const rows = [
      ...table("/auth"),
      ["GET", `${W}/auth`, 200, `GET ${W}/auth`, `${W}/auth`, `${W}/auth`],
      ["POST", "/UserService/connect/token", 404, "POST", "REDACTED", undefined],
      ["GET", "/auth", 404, "GET", "REDACTED", undefined],
    ] as ReturnType<typeof table>;
    expect(await spansOf("/auth", rows.map(([m, p]) => [m, p]))).toEqual(rows);
  });
});

describe("the RFC 8414 §3.1 metadata paths", () => {
  /** Each metadata URL's answer, span name, http.route and observed route. */
  async function routesOf(options: Parameters<typeof harness>[0], paths: string[]) {
    const requests: RequestObservation[] = [];
    const h = await harness({ ...options, tracer: provider.getTracer("t"), observer: { request: (o) => requests.push(o) } });
    const seen: unknown[] = [];
    for (const path of paths) {
      exporter.reset();
      requests.length = 0;
      const res = await h.app.fetch(new Request(`${BASE}${path}`));
      const [server] = exporter.getFinishedSpans().filter((s) => s.kind === SERVER);
      seen.push([path, res.status, server!.name, server!.attributes["http.route"], requests.map((o) => o.route)]);
    }
    return seen;
  }

  it("the well-known path with the base path or the issuer's path inserted has a route of its own, the path it matches (until 2026-12-02 the base path's template)", async () => {
    const w = "/.well-known/oauth-authorization-server";
    expect(await routesOf({ basePath: "/auth" }, [`/auth${w}`, `${w}/auth`])).toEqual([
      [`/auth${w}`, 200, `GET /auth${w}`, `/auth${w}`, [`/auth${w}`]],
      [`${w}/auth`, 200, `GET ${w}/auth`, `${w}/auth`, [`${w}/auth`]],
    ]);
    // An issuer whose path is another than the base path's: three URLs, three routes.
    expect(await routesOf({ basePath: "/auth", issuer: "https://as.example.test/tenant-a" }, [`/auth${w}`, `${w}/auth`, `${w}/tenant-a`])).toEqual([
      [`/auth${w}`, 200, `GET /auth${w}`, `/auth${w}`, [`/auth${w}`]],
      [`${w}/auth`, 200, `GET ${w}/auth`, `${w}/auth`, [`${w}/auth`]],
      [`${w}/tenant-a`, 200, `GET ${w}/tenant-a`, `${w}/tenant-a`, [`${w}/tenant-a`]],
    ]);
    // An issuer without a path beside a base path: the root well-known path is its own route.
    expect(await routesOf({ basePath: "/auth", issuer: "https://as.example.test" }, [w])).toEqual([[w, 200, `GET ${w}`, w, [w]]]);
    // Without a base path, an issuer's path.
    expect(await routesOf({ issuer: "https://as.example.test/tenant-a" }, [w, `${w}/tenant-a`])).toEqual([
      [w, 200, `GET ${w}`, w, [w]],
      [`${w}/tenant-a`, 200, `GET ${w}/tenant-a`, `${w}/tenant-a`, [`${w}/tenant-a`]],
    ]);
  });
});

describe("the logger as core calls it", () => {
  it("a line without context reaches the logger with one argument (console.warn(message, undefined) printed a trailing 'undefined'); one with context with two", async () => {
    const calls: { level: string; args: unknown[] }[] = [];
    const storage = createMemoryStorage();
    const h = await harness({
      storage,
      logger: {
        error(...args: unknown[]) {
          calls.push({ level: "error", args });
        },
        warn(...args: unknown[]) {
          calls.push({ level: "warn", args });
        },
      },
    });
    // The first request says it came with no client address (the harness passes none), no issuer
    // is set and the keys are stored in clear: lines without context.
    expect((await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) })).status).toBe(200);
    expect(calls).toEqual([
      { level: "warn", args: [expect.stringMatching(/^plantgate: a request came with no client address \(the adapter passed no clientIp; /)] },
      { level: "warn", args: [expect.stringMatching(/^plantgate: neither issuer nor baseUrl is configured, /)] },
      { level: "warn", args: [expect.stringMatching(/^signing keys are stored in clear: /)] },
    ]);
    calls.length = 0;
    // A storage failure: an error line with its context.
    storage.clients.get = async () => {
      throw new StorageError("database unreachable");
    };
    expect((await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) })).status).toBe(503);
    // Exactly one line, at error level, its context naming the failure (until 2026-11-30 this only
    // checked that every line had two arguments: a warn, or a context holding anything, passed).
    expect(calls).toEqual([{ level: "error", args: ["storage unavailable", { name: "StorageError", message: "database unreachable" }] }]);
  });
});
