/**
 * A body parser mounted before plantgate took a body plantgate needs: the client's 500 is what
 * plantgate's own metrics (prom-client, through @plantgate/observability), its server span
 * (OpenTelemetry SDK, in-memory exporter) and its log line record, not the 400 "could not be
 * read" core would give a client whose upload broke. A malformed body stays the client's 400.
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import express, { type RequestHandler } from "express";
import { beforeEach, describe, expect, it } from "vitest";
import { createMetrics } from "@plantgate/observability";
import { plantgate } from "../src/index.js";
import { basic, clientToken, listen, plantgateApp } from "./support.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeEach(() => exporter.reset());

const ERROR = 2;

/** An Express app with `parser` mounted before plantgate, plantgate observed by metrics, a tracer and a logger. */
async function observed(parser: RequestHandler | undefined) {
  const metrics = createMetrics({ processMetrics: false });
  const logged: { message: string; context: Record<string, unknown> | undefined }[] = [];
  const logger = { error: (message: string, context?: Record<string, unknown>) => void logged.push({ message, context }), warn() {} };
  const pg = await plantgateApp({ observer: metrics.observer, tracer: provider.getTracer("express-test"), logger });
  const host = express();
  if (parser) host.use(parser);
  host.use(plantgate(pg));
  const origin = await listen(host);
  return { metrics, logged, origin };
}

/** The server span of the one request to `route` (the set-up's token request has its own). */
function serverSpan(route: string): ReadableSpan {
  const spans = exporter.getFinishedSpans().filter((s) => s.attributes["http.route"] === route);
  expect(spans).toHaveLength(1);
  return spans[0]!;
}

/** The server span of `POST {route}`: the 500, an error, `error.type` the PlantgateBodyConsumedError's code. */
function expectHostFaultSpan(route: string): void {
  const span = serverSpan(route);
  expect([span.name, span.status.code, span.attributes["http.response.status_code"], span.attributes["error.type"]]).toEqual([
    `POST ${route}`,
    ERROR,
    500,
    "PLANTGATE_BODY_CONSUMED",
  ]);
}

/** The `plantgate_http_requests_total` lines of one route. */
async function requestLines(metrics: ReturnType<typeof createMetrics>, route: string): Promise<string[]> {
  return (await metrics.text()).split("\n").filter((line) => line.startsWith(`plantgate_http_requests_total{route="${route}",`));
}

/** POST /auth/plants with a client-credentials token (a form: express.json() leaves that request alone). */
async function postPlant(origin: string, body: string): Promise<Response> {
  const access = await clientToken(`${origin}/auth`);
  return fetch(`${origin}/auth/plants`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${access}` }, body });
}

async function whole(res: Response) {
  return { status: res.status, contentType: res.headers.get("content-type"), cacheControl: res.headers.get("cache-control"), body: await res.text() };
}

const HOST_FAULT_LOG = {
  name: "PlantgateBodyConsumedError",
  message:
    "plantgate: a body parser consumed the request body before plantgate; " +
    "mount plantgate before express.json()/express.urlencoded() (or mount those parsers only on your own routes)",
};

describe("a body a parser mounted before plantgate consumed: observed as the host's 500", () => {
  it("express.urlencoded() first, a valid form token request: the client's 500 server_error is the metrics' 500, the span's error", async () => {
    const { metrics, logged, origin } = await observed(express.urlencoded());
    const res = await fetch(`${origin}/auth/UserService/connect/token`, {
      method: "POST",
      headers: { authorization: basic() },
      body: new URLSearchParams({ grant_type: "client_credentials" }),
    });
    expect(await whole(res)).toEqual({
      status: 500,
      contentType: "application/json",
      cacheControl: "no-store",
      body: JSON.stringify({ error: "server_error", error_description: "The server encountered an unexpected error." }),
    });
    expect(res.headers.get("pragma")).toBe("no-cache");

    expect(await requestLines(metrics, "/auth/UserService/connect/token")).toEqual([
      'plantgate_http_requests_total{route="/auth/UserService/connect/token",method="POST",status="500"} 1',
    ]);
    // The form was never read: no grant type; the result is the answer's code.
    expect(await metrics.text()).toContain('plantgate_token_requests_total{grant_type="none",result="server_error"} 1');
    expectHostFaultSpan("/auth/UserService/connect/token");
    expect(logged).toEqual([{ message: "unexpected error at the token endpoint", context: HOST_FAULT_LOG }]);
  });

  it("express.json() first, a plant with a bearer token: the client's 500 1500 is the metrics' 500, the span's error", async () => {
    const { metrics, logged, origin } = await observed(express.json());
    const res = await postPlant(origin, `{"id":9223372036854775807,"name":"Monstera"}`);
    expect(await whole(res)).toEqual({
      status: 500,
      contentType: "application/json",
      cacheControl: "no-store",
      body: JSON.stringify({ error: 1500, message: "The server encountered an unexpected error." }),
    });

    expect(await requestLines(metrics, "/auth/plants")).toEqual(['plantgate_http_requests_total{route="/auth/plants",method="POST",status="500"} 1']);
    expectHostFaultSpan("/auth/plants");
    expect(logged).toEqual([{ message: "unexpected error", context: HOST_FAULT_LOG }]);
  });

  it("the client's own bad bodies stay 4xx in the answer, the metrics and the span (with and without the parser)", async () => {
    const { metrics, logged, origin } = await observed(undefined);
    const res = await postPlant(origin, `{"id":1,"name":`);
    expect(await whole(res)).toEqual({
      status: 400,
      contentType: "application/json",
      cacheControl: "no-store",
      body: JSON.stringify({ error: 1001, message: "The body is not valid JSON: unexpected end of JSON input." }),
    });
    expect(await requestLines(metrics, "/auth/plants")).toEqual(['plantgate_http_requests_total{route="/auth/plants",method="POST",status="400"} 1']);
    const span = serverSpan("/auth/plants");
    expect(span.status.code).toBe(0);
    expect(span.attributes["error.type"]).toBeUndefined();

    // The parser mounted first, a JSON body to the form-only token endpoint: refused unread, the client's 400.
    const parsed = await observed(express.json());
    exporter.reset();
    const json = await fetch(`${parsed.origin}/auth/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic() },
      body: `{"grant_type":"client_credentials"}`,
    });
    expect(await whole(json)).toEqual({
      status: 400,
      contentType: "application/json",
      cacheControl: "no-store",
      body: JSON.stringify({ error: "invalid_request", error_description: "The request body must be application/x-www-form-urlencoded." }),
    });
    expect(await requestLines(parsed.metrics, "/auth/UserService/connect/token")).toEqual([
      'plantgate_http_requests_total{route="/auth/UserService/connect/token",method="POST",status="400"} 1',
    ]);
    expect(serverSpan("/auth/UserService/connect/token").status.code).toBe(0);
    expect([...logged, ...parsed.logged]).toEqual([]);
  });
});
