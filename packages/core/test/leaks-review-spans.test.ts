/**
 * Review (leaks): what a span carries of a request. README "Tracing": "No span carries a secret, a
 * token or a query string." `url.path` was the path as sent (until 2026-12-02), so a token or secret a client put in
 * the path (a token appended to a route, a `;access_token=` matrix parameter, a `?` percent-encoded)
 * was exported with every such request's span.
 */
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { BASE, basic, clientToken, harness } from "./helpers.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => void context.setGlobalContextManager(contextManager.enable()));
afterAll(() => context.disable());
beforeEach(() => exporter.reset());

describe("review: spans carry no token or secret a request put in its path", () => {
  it.each([
    ["a token appended to a route", (t: string) => `/plants/${t}`],
    ["a matrix parameter", (t: string) => `/rbac/ServerCommand/GetAccountList;access_token=${t}`],
    ["a percent-encoded query", (t: string) => `/rbac/ServerCommand/GetAccountList%3Faccess_token=${t}`],
  ])("%s", async (_what, pathOf) => {
    const h = await harness({ tracer: provider.getTracer("t") });
    const token = await clientToken(h);
    exporter.reset();
    const res = await h.app.fetch(new Request(BASE + pathOf(token), { headers: { authorization: basic(h.clientId, h.clientSecret) } }));
    expect(res.status).toBe(404);
    const text = JSON.stringify(exporter.getFinishedSpans().map((s) => [s.name, s.attributes, s.events]));
    expect(text).not.toContain(token);
  });

  it("a client secret sent as a path segment of the token endpoint", async () => {
    const h = await harness({ tracer: provider.getTracer("t") });
    exporter.reset();
    const res = await h.app.fetch(new Request(`${BASE}/UserService/connect/token/${encodeURIComponent(h.clientSecret)}`, { method: "POST" }));
    expect(res.status).toBe(404);
    const text = JSON.stringify(exporter.getFinishedSpans().map((s) => [s.name, s.attributes, s.events]));
    expect(text).not.toContain(encodeURIComponent(h.clientSecret));
  });
});
