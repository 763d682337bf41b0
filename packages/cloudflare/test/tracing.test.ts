/**
 * Traces in workerd (issue 21: "works in workerd"): the real `createWorker()` entry on a D1
 * database in Miniflare, given an OpenTelemetry tracer from the SDK (`@opentelemetry/sdk-trace-base`
 * with its in-memory exporter, bundled into the Worker as a Worker's own OpenTelemetry setup would
 * be) and a context manager on workerd's `AsyncLocalStorage` (the `nodejs_als` flag), as
 * OpenTelemetry setups for Workers register one. The Worker serves its finished spans at a test
 * path; the test reads them over HTTP. Until 2026-12-03 tracing was tested in Node only, and the
 * README's "it runs unchanged in workerd" rested on the core importing nothing of Node's.
 */
import { build } from "esbuild";
import { dirname } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CapturedLog, captureStdio, COMPATIBILITY_DATE } from "./support.js";

const here = dirname(fileURLToPath(import.meta.url));
const CLIENT = { id: "traced-app", secret: "traced-app-secret-0123456789abcdef" };
const USER = { username: "operator", password: "operator-password-1" };

/**
 * The Worker: `createWorker({ tracer })` behind a path serving the exporter's finished spans (and
 * one resetting them). The context manager (registered when `withContextManager`) is the smallest one OpenTelemetry's API accepts, on
 * workerd's AsyncLocalStorage.
 */
const entry = (withContextManager: boolean) => `
import { AsyncLocalStorage } from "node:async_hooks";
import { context, ROOT_CONTEXT } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { createWorker } from "../src/index.ts";

const storage = new AsyncLocalStorage();
if (${withContextManager}) context.setGlobalContextManager({
  active: () => storage.getStore() ?? ROOT_CONTEXT,
  with: (ctx, fn, thisArg, ...args) => storage.run(ctx, () => fn.call(thisArg, ...args)),
  bind: (ctx, target) => (typeof target === "function" ? (...args) => storage.run(ctx, () => target(...args)) : target),
  enable() { return this; },
  disable() { return this; },
});
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const worker = createWorker({ tracer: provider.getTracer("workerd-test") });

export default {
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/__spans") {
      return Response.json(exporter.getFinishedSpans().map((s) => ({
        name: s.name,
        kind: s.kind,
        trace: s.spanContext().traceId,
        id: s.spanContext().spanId,
        parent: s.parentSpanContext?.spanId ?? null,
        attributes: s.attributes,
        status: s.status.code,
      })));
    }
    if (path === "/__reset") {
      exporter.reset();
      return new Response(null, { status: 204 });
    }
    return worker.fetch(request, env, ctx);
  },
  scheduled: (controller, env, ctx) => worker.scheduled(controller, env, ctx),
};
`;

interface ExportedSpan {
  name: string;
  kind: number;
  trace: string;
  id: string;
  parent: string | null;
  attributes: Record<string, unknown>;
  status: number;
}

const SERVER = 1;
const INTERNAL = 0;
const DB_CLIENT = 2;

let mf: Miniflare | undefined;
let base = "";
const log = new CapturedLog();

/** The entry, bundled as the Worker tests' entries are (Workers conditions, ESM, browser platform), with the runtime's node:async_hooks left to workerd. */
async function bundled(withContextManager: boolean): Promise<string> {
  const result = await build({
    stdin: { contents: entry(withContextManager), resolveDir: here, loader: "ts" },
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    target: "es2022",
    external: ["cloudflare:*", "node:async_hooks"],
    write: false,
    logLevel: "silent",
  });
  return result.outputFiles[0]!.text;
}

function miniflare(script: string): Miniflare {
  return new Miniflare({
    modules: true,
    script,
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: ["nodejs_als"],
    d1Databases: ["DB"],
    bindings: {
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT.id,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT.secret,
      PLANTGATE_BOOTSTRAP_USERNAME: USER.username,
      PLANTGATE_BOOTSTRAP_PASSWORD: USER.password,
    },
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => captureStdio(stdout, stderr, log.onLog),
  });
}

beforeAll(async () => {
  mf = miniflare(await bundled(true));
  base = (await mf.ready).origin;
}, 60_000);

afterAll(async () => {
  await mf?.dispose();
});

async function spans(at = base): Promise<ExportedSpan[]> {
  const res = await fetch(`${at}/__spans`);
  expect(res.status).toBe(200);
  return (await res.json()) as ExportedSpan[];
}

/**
 * The spans once `appends` audit-trail writes after the answers (the Worker's waitUntil work) have
 * ended too: a busy machine reads them before they did (a whole-suite run saw none yet), or, read
 * after a reset, sees a late one of the requests before it. At most 10 s.
 */
async function spansAfterAudit(at = base, appends = 1): Promise<ExportedSpan[]> {
  for (let i = 0; ; i++) {
    const all = await spans(at);
    if (all.filter((s) => s.name === "plantgate.storage audit.append").length >= appends || i === 100) return all;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function reset(): Promise<void> {
  expect((await fetch(`${base}/__reset`)).status).toBe(204);
}

function token(form: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/UserService/connect/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CLIENT.id}:${CLIENT.secret}`)}`, ...headers },
    body: new URLSearchParams(form).toString(),
  });
}

describe("tracing in workerd", () => {
  it("a token request is one server span with the HTTP attributes (client.address from CF-Connecting-IP) and its client-authentication, grant, signing and D1 storage spans nested under it", async () => {
    // The first request starts the Worker (migrations, bootstrap): its spans are set-up's.
    expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
    // ... and its two events' audit writes (client.created, account.created), after its answer.
    await spansAfterAudit(base, 2);
    await reset();

    const res = await token({ grant_type: "client_credentials" }, { "cf-connecting-ip": "198.51.100.23" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string };
    const all = await spansAfterAudit();
    const named = (name: string) => {
      const found = all.filter((s) => s.name === name);
      expect(found.map((s) => s.name)).toEqual([name]);
      return found[0]!;
    };
    const server = named("POST /UserService/connect/token");
    expect(server).toMatchObject({ kind: SERVER, parent: null, status: 0 });
    expect(server.attributes).toEqual({
      "http.request.method": "POST",
      "url.path": "/UserService/connect/token",
      "url.scheme": "http",
      "server.address": new URL(base).hostname,
      "server.port": Number(new URL(base).port),
      "client.address": "198.51.100.23",
      "http.route": "/UserService/connect/token",
      "http.response.status_code": 200,
      "plantgate.grant_type": "client_credentials",
    });
    const auth = named("plantgate.client_authentication");
    const grant = named("plantgate.grant");
    const sign = named("plantgate.sign");
    expect([auth.kind, grant.kind, sign.kind]).toEqual([INTERNAL, INTERNAL, INTERNAL]);
    // Nested through the context manager, across D1's awaits.
    expect([auth.parent, grant.parent, sign.parent]).toEqual([server.id, server.id, grant.id]);
    expect(grant.attributes).toEqual({ "plantgate.grant_type": "client_credentials" });
    const clientsGet = named("plantgate.storage clients.get");
    expect(clientsGet).toMatchObject({ kind: DB_CLIENT, parent: auth.id, status: 0 });
    expect(clientsGet.attributes).toEqual({ "db.collection.name": "clients", "db.operation.name": "get" });
    // One trace, but for the audit trail's write (the Worker keeps one by default), which runs
    // after the answer: a root of its own trace, not a child of the ended server span.
    const append = named("plantgate.storage audit.append");
    expect(append).toMatchObject({ kind: DB_CLIENT, parent: null, status: 0 });
    expect(append.trace).not.toBe(server.trace);
    expect(new Set(all.filter((s) => s !== append).map((s) => s.trace))).toEqual(new Set([server.trace]));
    expect(all.filter((s) => s !== append && s !== server).every((s) => s.parent !== null)).toBe(true);
    // Nothing of the secret or the token in any span.
    const text = JSON.stringify(all);
    expect(text).not.toContain(CLIENT.secret);
    expect(text).not.toContain(body.access_token);
   }, 60_000);

  it("a wrong secret marks the client-authentication span as an error with error.type invalid_client; the 401 server span is not one; a path no route matches is REDACTED", async () => {
    await reset();
    const wrong = await fetch(`${base}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CLIENT.id}:not-the-secret`)}` },
      body: "grant_type=client_credentials",
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ error: "invalid_client", error_description: "Client authentication failed." });
    const lost = await fetch(`${base}/plants/${CLIENT.secret}`);
    expect(lost.status).toBe(404);
    await lost.text();
    const all = await spans();
    const servers = all.filter((s) => s.kind === SERVER);
    expect(servers.map((s) => [s.name, s.attributes["http.response.status_code"], s.attributes["url.path"], s.status])).toEqual([
      ["POST /UserService/connect/token", 401, "/UserService/connect/token", 0],
      ["GET", 404, "REDACTED", 0],
    ]);
    // Miniflare sets CF-Connecting-IP to the peer's address on what reaches its socket without one
    // (the first case's was the client's own, which Miniflare keeps; Cloudflare's edge overwrites it).
    expect(servers.map((s) => s.attributes["client.address"])).toEqual(["127.0.0.1", "127.0.0.1"]);
    const auth = all.filter((s) => s.name === "plantgate.client_authentication");
    expect(auth.map((s) => [s.status, s.attributes["error.type"], s.parent])).toEqual([[2, "invalid_client", servers[0]!.id]]);
    expect(JSON.stringify(all)).not.toContain(CLIENT.secret);
  }, 60_000);

  it("without a context manager registered the same spans are made, each a root of its own trace (README: what a Worker whose OpenTelemetry setup registers none gets)", async () => {
    const bare = miniflare(await bundled(false));
    try {
      const at = (await bare.ready).origin;
      expect((await fetch(`${at}/.well-known/jwks.json`)).status).toBe(200);
      await spansAfterAudit(at, 2);
      expect((await fetch(`${at}/__reset`)).status).toBe(204);
      const res = await fetch(`${at}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CLIENT.id}:${CLIENT.secret}`)}` },
        body: "grant_type=client_credentials",
      });
      expect(res.status).toBe(200);
      await res.text();
      const all = await spansAfterAudit(at);
      expect(all.map((s) => s.name).sort()).toEqual(
        [
          "POST /UserService/connect/token",
          "plantgate.client_authentication",
          "plantgate.grant",
          "plantgate.sign",
          "plantgate.storage attempts.get",
          "plantgate.storage attempts.get",
          "plantgate.storage audit.append",
          "plantgate.storage clients.get",
          "plantgate.storage clients.touchSecret",
        ].sort(),
      );
      expect(all.map((s) => s.parent)).toEqual(all.map(() => null));
      expect(new Set(all.map((s) => s.trace)).size).toBe(all.length);
    } finally {
      await bare.dispose();
    }
   }, 120_000);
});
