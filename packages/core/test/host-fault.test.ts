/**
 * An adapter's HostFaultError while plantgate reads the body (through `info.readBody` or the
 * Request's own stream) is the host's fault: plantgate's 500, logged and observed as a 500. Any
 * other failure to read stays the client's 400.
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { HostFaultError, type RequestObservation } from "../src/index.js";
import { BASE, basic, harness } from "./helpers.js";

class ParserTookIt extends HostFaultError {
  override readonly name = "ParserTookIt";
}

/** A body stream that fails with `error` when read. */
function failing(error: unknown): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({ pull: (controller) => controller.error(error) }, { highWaterMark: 0 });
}

async function observed() {
  const requests: RequestObservation[] = [];
  const logged: unknown[] = [];
  const h = await harness({ observer: { request: (o) => void requests.push(o) }, logger: { error: (m, c) => void logged.push([m, c]), warn() {} } });
  const auth = basic(h.clientId, h.clientSecret);
  const token = (body: ReadableStream<Uint8Array> | null, readBody?: () => Promise<Uint8Array | null>) =>
    h.app.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: auth },
        body,
        duplex: "half",
      } as RequestInit),
      readBody ? { readBody } : undefined,
    );
  return { requests, logged, token, app: h.app };
}

const SERVER_ERROR = '{"error":"server_error","error_description":"The server encountered an unexpected error."}';
const UNREADABLE = '{"error":"invalid_request","error_description":"The request body could not be read."}';

describe("HostFaultError while reading the body", () => {
  for (const via of ["info.readBody", "request.body"] as const) {
    it(`through ${via}: plantgate's 500, logged and observed as a 500; another failure stays the client's 400`, async () => {
      const { requests, logged, token } = await observed();
      const send = (error: unknown) => (via === "info.readBody" ? token(null, () => Promise.reject(error)) : token(failing(error)));

      const host = await send(new ParserTookIt("the framework read the body first"));
      expect([host.status, host.headers.get("cache-control"), await host.text()]).toEqual([500, "no-store", SERVER_ERROR]);
      const broken = await send(new TypeError("terminated"));
      expect([broken.status, await broken.text()]).toEqual([400, UNREADABLE]);

      expect(requests.map((r) => [r.status, r.result])).toEqual([
        [500, "server_error"],
        [400, "invalid_request"],
      ]);
      expect(logged).toEqual([["unexpected error at the token endpoint", { name: "ParserTookIt", message: "the framework read the body first" }]]);
    });
  }

  it("an error marked Symbol.for(\"plantgate.hostFault\") (an adapter that does not depend on core) is one too; instanceof a subclass is not widened", async () => {
    class Marked extends Error {
      override readonly name = "Marked";
      readonly code = "MARKED_FAULT";
    }
    Object.defineProperty(Marked.prototype, Symbol.for("plantgate.hostFault"), { value: true });
    const marked = new Marked("the host took the body");
    expect(marked).toBeInstanceOf(HostFaultError);
    expect(marked).not.toBeInstanceOf(ParserTookIt);
    expect(new HostFaultError("x")).not.toBeInstanceOf(ParserTookIt);
    // Only `true` marks: a truthy value a foreign object happens to carry does not.
    expect({ [Symbol.for("plantgate.hostFault")]: 1 }).not.toBeInstanceOf(HostFaultError);
    expect(null).not.toBeInstanceOf(HostFaultError);

    const { requests, logged, token } = await observed();
    const host = await token(null, () => Promise.reject(marked));
    expect([host.status, await host.text()]).toEqual([500, SERVER_ERROR]);
    const streamed = await token(failing(new Marked("through the stream")));
    expect([streamed.status, await streamed.text()]).toEqual([500, SERVER_ERROR]);
    expect(requests.map((r) => [r.status, r.result])).toEqual([
      [500, "server_error"],
      [500, "server_error"],
    ]);
    expect(logged).toEqual([
      ["unexpected error at the token endpoint", { name: "Marked", message: "the host took the body" }],
      ["unexpected error at the token endpoint", { name: "Marked", message: "through the stream" }],
    ]);
  });

  it("a subclass with a private or protected constructor (made by a factory) works with instanceof, in TypeScript too", async () => {
    // `x instanceof Taken` did not compile (TS2860) while HostFaultError's Symbol.hasInstance
    // required a public constructor as its `this`: `pnpm typecheck` is what fails without the fix.
    class Taken extends HostFaultError {
      override readonly name = "Taken";
      private constructor(readonly by: string) {
        super(`${by} read the body first`);
      }
      static by(reader: string): Taken {
        return new Taken(reader);
      }
    }
    abstract class Framework extends HostFaultError {
      protected constructor(message: string) {
        super(message);
      }
    }
    class Koa extends Framework {
      constructor() {
        super("koa-body read the body first");
      }
    }
    const taken: unknown = Taken.by("a logger");
    const koa: unknown = new Koa();
    expect([taken instanceof Taken, taken instanceof HostFaultError, taken instanceof Framework]).toEqual([true, true, false]);
    expect([koa instanceof Framework, koa instanceof Koa, koa instanceof Taken, koa instanceof HostFaultError]).toEqual([true, true, false, true]);
    if (!(taken instanceof Taken)) throw new Error("not narrowed");
    expect(taken.by).toBe("a logger");

    const { logged, token } = await observed();
    const host = await token(null, () => Promise.reject(taken));
    expect([host.status, await host.text()]).toEqual([500, SERVER_ERROR]);
    expect(logged).toEqual([["unexpected error at the token endpoint", { name: "Taken", message: "a logger read the body first" }]]);
  });

  it("a Request whose body the host already read (bodyUsed) is plantgate's 500 on the token endpoint and the JSON API, unless it declared no bytes", async () => {
    const { requests, logged } = await observed();
    const exporter = new InMemorySpanExporter();
    const h = await harness({
      tracer: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer("host-fault"),
      observer: { request: (o) => void requests.push(o) },
      logger: { error: (m, c) => void logged.push([m, c]), warn() {} },
    });
    const used = async (url: string, init: RequestInit) => {
      const request = new Request(url, init);
      await request.text(); // what a host's middleware did before handing the request over
      expect(request.bodyUsed).toBe(true);
      return h.app.fetch(request);
    };
    const auth = basic(h.clientId, h.clientSecret);
    const form = { "content-type": "application/x-www-form-urlencoded", authorization: auth };
    const token = await used(`${BASE}/UserService/connect/token`, { method: "POST", headers: form, body: "grant_type=client_credentials" });
    expect([token.status, token.headers.get("cache-control"), await token.text()]).toEqual([500, "no-store", SERVER_ERROR]);

    const bearer = `Bearer ${(await (await h.app.fetch(new Request(`${BASE}/UserService/connect/token`, { method: "POST", headers: form, body: "grant_type=client_credentials" }))).json() as { access_token: string }).access_token}`;
    const plant = await used(`${BASE}/plants`, { method: "POST", headers: { "content-type": "application/json", authorization: bearer }, body: '{"id":1,"name":"fern"}' });
    expect([plant.status, await plant.text()]).toEqual([500, '{"error":1500,"message":"The server encountered an unexpected error."}']);
    expect(await h.app.storage.plants.get(1n)).toBeNull();

    // Content-Length: 0 held no bytes, whoever read them: the answer an unread empty body gets.
    const unread = await h.app.fetch(new Request(`${BASE}/UserService/connect/token`, { method: "POST", headers: { ...form, "content-length": "0" }, body: "" }));
    const empty = await used(`${BASE}/UserService/connect/token`, { method: "POST", headers: { ...form, "content-length": "0" }, body: "" });
    expect(unread.status).toBe(400);
    expect([empty.status, await empty.text()]).toEqual([unread.status, await unread.text()]);

    expect(requests.map((r) => [r.status, r.result])).toEqual([
      [500, "server_error"],
      [200, "success"],
      [500, undefined],
      [400, "invalid_request"],
      [400, "invalid_request"],
    ]);
    // The server spans: the two 500s carry the error's code as `error.type` (a 4xx carries none).
    const servers = exporter.getFinishedSpans().filter((span) => span.attributes["http.response.status_code"] !== undefined);
    expect(servers.map((span) => [span.name, span.attributes["http.response.status_code"], span.attributes["error.type"]])).toEqual([
      ["POST /UserService/connect/token", 500, "PLANTGATE_BODY_USED"],
      ["POST /UserService/connect/token", 200, undefined],
      ["POST /plants", 500, "PLANTGATE_BODY_USED"],
      ["POST /UserService/connect/token", 400, undefined],
      ["POST /UserService/connect/token", 400, undefined],
    ]);
    const message = "the request's body was already read before plantgate got the request (bodyUsed, or its stream locked by a reader); hand plantgate the Request before anything reads its body, or a clone";
    expect(logged).toEqual([
      ["unexpected error at the token endpoint", { name: "BodyAlreadyUsedError", message }],
      [expect.any(String), { name: "BodyAlreadyUsedError", message }],
    ]);
  });

  it("a Request whose body stream a reader holds (locked, nothing read yet) is the host's 500 too", async () => {
    const { requests, logged, app } = await observed();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("grant_type=client_credentials"));
        controller.close();
      },
    });
    const request = new Request(`${BASE}/UserService/connect/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body, duplex: "half" } as RequestInit);
    request.body!.getReader(); // a host's reader, left holding the stream
    expect([request.bodyUsed, request.body!.locked]).toEqual([false, true]);
    const res = await app.fetch(request);
    expect([res.status, await res.text()]).toEqual([500, SERVER_ERROR]);
    expect(requests.map((r) => [r.status, r.result])).toEqual([[500, "server_error"]]);
    expect(logged).toEqual([["unexpected error at the token endpoint", { name: "BodyAlreadyUsedError", message: expect.stringContaining("(bodyUsed, or its stream locked by a reader)") }]]);
  });
});
