/**
 * Something in the host server read the request body before plantgate (a body parser, a middleware
 * that drained the stream), on a real node:http server with a Connect-style chain of plain
 * middleware in front of createRequestListener: the bytes are gone, and plantgate answers its own
 * 500 (a host fault), logs it and counts it, instead of a 400 blaming the client for a form it never
 * saw. An empty body, an aborted upload and a body nobody touched are as before.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { createPlantgate, HostFaultError } from "@plantgate/core";
import { createMetrics } from "@plantgate/observability";
import { BODY_CONSUMED, createRequestListener, PlantgateBodyConsumedError } from "../src/index.js";
import { listenPlain, open, rawExchange, readResponse } from "./support.js";

type Next = () => void;
type Middleware = (req: IncomingMessage, res: ServerResponse, next: Next) => void;

/** body-parser's urlencoded() as it behaves: reads the whole body, sets req.body and req._body. */
const formParser: Middleware = (req, _res, next) => {
  const parts: Buffer[] = [];
  req.on("data", (chunk: Buffer) => parts.push(chunk));
  req.on("end", () => {
    const parsed = req as IncomingMessage & { body?: unknown; _body?: boolean };
    parsed.body = Object.fromEntries(new URLSearchParams(Buffer.concat(parts).toString()));
    parsed._body = true;
    next();
  });
};

/** A middleware that throws the body away (no 'data' listener) and goes on once it ended. */
const drain: Middleware = (req, _res, next) => {
  req.resume();
  req.once("end", next);
};

/** A drain that goes on whatever happens to the upload: after its end, or after the client left. */
const drainAnyway: Middleware = (req, _res, next) => {
  let done = false;
  const go = (): void => {
    if (done) return;
    done = true;
    next();
  };
  req.resume();
  req.once("end", go);
  req.once("close", go);
};

/** A middleware that does not touch the body (a request id header). */
const stamp: Middleware = (_req, res, next) => {
  res.setHeader("x-request-id", "r1");
  next();
};

const CLIENT_ID = "node-client";
const CLIENT_SECRET = "node-client-secret-0123456789";
const basic = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`;
const TOKEN = "/auth/UserService/connect/token";

/** plantgate (metrics, a recording logger) behind `chain` on a real port. */
async function hosted(...chain: Middleware[]) {
  const metrics = createMetrics({ processMetrics: false });
  const logged: unknown[] = [];
  const logger = { error: (message: string, context?: Record<string, unknown>) => void logged.push([message, context]), warn() {} };
  const pg = createPlantgate({ basePath: "/auth", passwordHashIterations: 1000, logger, observer: metrics.observer });
  await pg.admin.createClient({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
  const listener = createRequestListener(pg);
  const origin = await listenPlain((req, res) => {
    const step = (i: number): void => {
      const middleware = chain[i];
      if (middleware === undefined) listener(req, res);
      else middleware(req, res, () => step(i + 1));
    };
    step(0);
  });
  /** The `plantgate_http_requests_total` lines of the token endpoint. */
  const tokenLines = async (): Promise<string[]> =>
    (await metrics.text()).split("\n").filter((line) => line.startsWith(`plantgate_http_requests_total{route="${TOKEN}",`));
  return { origin, logged, tokenLines };
}

const tokenRequest = (origin: string): Promise<Response> =>
  fetch(`${origin}${TOKEN}`, { method: "POST", headers: { authorization: basic }, body: new URLSearchParams({ grant_type: "client_credentials" }) });

async function whole(res: Response) {
  return { status: res.status, contentType: res.headers.get("content-type"), cacheControl: res.headers.get("cache-control"), body: await res.text() };
}

const SERVER_ERROR = {
  status: 500,
  contentType: "application/json",
  cacheControl: "no-store",
  body: JSON.stringify({ error: "server_error", error_description: "The server encountered an unexpected error." }),
};
const HOST_FAULT_LOG = [
  "unexpected error at the token endpoint",
  {
    name: "PlantgateBodyConsumedError",
    message:
      "plantgate: something read the request body before plantgate (a body parser, a middleware that drained the stream); " +
      "mount plantgate before it (or mount it only on your own routes)",
  },
];
const NO_GRANT_TYPE = JSON.stringify({ error: "invalid_request", error_description: "The grant_type parameter is required." });

describe("a body the host read before plantgate: plantgate's 500, not the client's 400", () => {
  for (const [label, middleware] of [
    ["a form parser (req.body, req._body)", formParser],
    ["a drain (resume, no 'data' listener)", drain],
  ] as const) {
    it(`${label} first, a valid form token request: 500 server_error, logged, counted as a 500`, async () => {
      const { origin, logged, tokenLines } = await hosted(middleware);
      expect(await whole(await tokenRequest(origin))).toEqual(SERVER_ERROR);
      expect(logged).toEqual([HOST_FAULT_LOG]);
      expect(await tokenLines()).toEqual([`plantgate_http_requests_total{route="${TOKEN}",method="POST",status="500"} 1`]);
    });
  }

  it("a chunked body a parser read: the same 500", async () => {
    const { origin, logged } = await hosted(formParser);
    const form = "grant_type=client_credentials";
    const { status, body } = await rawExchange(
      origin,
      `POST ${TOKEN} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic}\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
        `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${form.length.toString(16)}\r\n${form}\r\n0\r\n\r\n`,
    );
    expect([status, body.toString()]).toEqual([500, SERVER_ERROR.body]);
    expect(logged).toEqual([HOST_FAULT_LOG]);
  });

  it("a logging middleware that attaches its 'data' listener and calls next() at once still takes the chunks that arrive before plantgate reads: the plant store's 500; skipping plantgate's paths keeps the body", async () => {
    // The README advised exactly this ("attaches its 'data' listener and calls next() at once") as
    // the way to log bodies in front of plantgate. The plant store checks the bearer token before
    // it reads the body; by then Node has emitted the chunks to the listener alone.
    const seen: string[] = [];
    const logBodies = (skipPlantgate: boolean): Middleware => (req, _res, next) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path === "/auth/plants" && !skipPlantgate) req.on("data", (chunk: Buffer) => void seen.push(chunk.toString()));
      next();
    };
    const plant = `{"id":9223372036854775807,"name":"Monstera"}`;
    const post = async (origin: string): Promise<[number, string]> => {
      const access = ((await (await tokenRequest(origin)).json()) as { access_token: string }).access_token;
      // Head and body in one write, as a small request arrives.
      const { status, body } = await rawExchange(
        origin,
        `POST /auth/plants HTTP/1.1\r\nHost: ${new URL(origin).host}\r\nAuthorization: Bearer ${access}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(plant)}\r\nConnection: close\r\n\r\n${plant}`,
      );
      return [status, body.toString()];
    };

    const logging = await hosted(logBodies(false));
    expect(await post(logging.origin)).toEqual([500, JSON.stringify({ error: 1500, message: "The server encountered an unexpected error." })]);
    expect(seen).toEqual([plant]);
    expect(logging.logged).toEqual([["unexpected error", HOST_FAULT_LOG[1]]]);

    const skipping = await hosted(logBodies(true));
    // The stored plant, its int64 id exact.
    expect(await post(skipping.origin)).toEqual([200, plant]);
    expect(skipping.logged).toEqual([]);
  });

  it("the error is @plantgate/node's PlantgateBodyConsumedError, a HostFaultError for core", () => {
    const error = new PlantgateBodyConsumedError();
    expect(error).toBeInstanceOf(HostFaultError);
    expect([error.name, error.code, error.status, error.expose]).toEqual(["PlantgateBodyConsumedError", BODY_CONSUMED, 500, false]);
  });
});

describe("what stays as it was", () => {
  it("an empty body read to its end (no Content-Length, Content-Length: 0, an empty chunked body) is the client's 400", async () => {
    const { origin, logged, tokenLines } = await hosted(formParser);
    const head = `POST ${TOKEN} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic}\r\nContent-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n`;
    for (const framing of ["", "Content-Length: 0\r\n", "Transfer-Encoding: chunked\r\n"]) {
      const { status, body } = await rawExchange(origin, `${head}${framing}\r\n${framing.startsWith("Transfer") ? "0\r\n\r\n" : ""}`);
      expect([framing, status, body.toString()]).toEqual([framing, 400, NO_GRANT_TYPE]);
    }
    expect(logged).toEqual([]);
    expect(await tokenLines()).toEqual([`plantgate_http_requests_total{route="${TOKEN}",method="POST",status="400"} 3`]);
  });

  it("an empty form POST through fetch behind a drain: the client's 400", async () => {
    const { origin, logged } = await hosted(drain);
    const res = await fetch(`${origin}${TOKEN}`, { method: "POST", headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" } });
    expect([res.status, await res.text()]).toEqual([400, NO_GRANT_TYPE]);
    expect(logged).toEqual([]);
  });

  it("an upload the client aborted after a middleware read part of it stays the client's failure (a 400), not a host fault", async () => {
    const { origin, logged, tokenLines } = await hosted(drainAnyway);
    const socket = await open(origin);
    socket.write(
      `POST ${TOKEN} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=cli`,
    );
    // Let the middleware read the first bytes before the client goes.
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    let lines: string[] = [];
    for (let i = 0; i < 100 && lines.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      lines = await tokenLines();
    }
    expect(lines).toEqual([`plantgate_http_requests_total{route="${TOKEN}",method="POST",status="400"} 1`]);
    expect(logged).toEqual([]);
  });

  it("a body nobody touched: the token, as without the chain", async () => {
    const { origin, logged } = await hosted(stamp);
    const res = await tokenRequest(origin);
    expect([res.status, res.headers.get("x-request-id")]).toEqual([200, "r1"]);
    expect(((await res.json()) as { token_type: string }).token_type).toBe("Bearer");
    // And a keep-alive connection carries a second request through the chain.
    const socket = await open(origin);
    try {
      const form = "grant_type=client_credentials";
      const request = `POST ${TOKEN} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\n\r\n${form}`;
      for (let i = 0; i < 2; i++) {
        const response = readResponse(socket);
        socket.write(request);
        expect((await response).status).toBe(200);
      }
    } finally {
      socket.destroy();
    }
    expect(logged).toEqual([]);
  });
});
