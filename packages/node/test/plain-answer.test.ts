import { createServer } from "node:http";
import { connect, type AddressInfo } from "node:net";
import fetch from "node-fetch";
import { describe, expect, it } from "vitest";
import { createRequestListener, type HandleApp, type HandleInfo, type PlainAnswer } from "../src/index.js";
import { deferred, portOf, rawExchange, start } from "./support.js";

// The listener's plain path: an app with `handle` is answered from status, headers and bytes
// without a Web Response, and reads bodies through `info.readBody` instead of a Web stream.

const readBody = (info: HandleInfo | undefined, maxBytes: number) => info!.readBody!(maxBytes);

const encoder = new TextEncoder();
function jsonAnswer(status: number, value: unknown, headers: Record<string, string> = {}): PlainAnswer {
  const body = encoder.encode(JSON.stringify(value));
  return { status, headers: { "content-type": "application/json", "content-length": String(body.byteLength), ...headers }, body };
}

const neverFetch = async (): Promise<Response> => {
  throw new Error("fetch must not be called when handle exists");
};

type App = HandleApp & { fetch: () => Promise<Response> };

describe("an app with handle()", () => {
  it("is answered from handle, not fetch: status, headers and body exactly", async () => {
    const app: App = { fetch: neverFetch, handle: async (request) => jsonAnswer(201, { method: request.method, url: request.url }, { "x-one": "1" }) };
    const { url } = await start(app);
    const response = await fetch(`${url}/p?q=1`, { method: "POST", body: "x" });
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ method: "POST", url: `${url}/p?q=1` });
    expect(response.headers.get("x-one")).toBe("1");
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("content-length")).toBe(String(JSON.stringify({ method: "POST", url: `${url}/p?q=1` }).length));
  });

  it("sends headers without the body for HEAD, and an empty body for body: null", async () => {
    const app: App = {
      fetch: neverFetch,
      handle: async (request) => (request.url.endsWith("/empty") ? { status: 204, headers: { "cache-control": "no-store" }, body: null } : jsonAnswer(200, { a: 1 })),
    };
    const { url } = await start(app);
    const head = await rawExchange(url, "HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", { head: true });
    expect(head.status).toBe(200);
    expect(head.headers).toContainEqual(["content-length", "7"]);
    expect(head.body.byteLength).toBe(0);
    const empty = await fetch(`${url}/empty`);
    expect(empty.status).toBe(204);
    expect(empty.headers.get("cache-control")).toBe("no-store");
    expect(await empty.text()).toBe("");
  });

  it("answers the fixed 500 when handle rejects or resolves to something that is not a plain answer", async () => {
    const errors: unknown[] = [];
    let n = 0;
    const app: App = {
      fetch: neverFetch,
      handle: async () => {
        n++;
        if (n === 1) throw new Error("secret detail");
        if (n === 2) return { status: 200, headers: {}, body: "not bytes" } as unknown as PlainAnswer;
        return { status: 200, headers: { "x-bad\n": "1" }, body: null };
      },
    };
    const { url } = await start(app, { onError: (e) => errors.push(e) });
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${url}/x`);
      expect(response.status).toBe(500);
      expect(await response.text()).toBe('{"error":"server_error","error_description":"The server encountered an unexpected error."}');
    }
    expect(errors.map((e) => (e as Error).name)).toEqual(["Error", "TypeError", "TypeError"]);
  });
});

describe("which apps get the plain path", () => {
  it("an app whose handle() answers a Response (Elysia's app.handle, itty-router's router.handle) has that Response written", async () => {
    const app = {
      fetch: neverFetch,
      handle: async () => new Response("from handle", { status: 201, headers: { "x-from": "handle" } }),
    };
    const { url } = await start(app);
    const response = await fetch(`${url}/x`);
    expect(response.status).toBe(201);
    expect(response.headers.get("x-from")).toBe("handle");
    expect(await response.text()).toBe("from handle");
  });

  it("an app with only fetch() is served through fetch, with the same info", async () => {
    const seen: string[] = [];
    const app = {
      async fetch(request: Request, info?: HandleInfo) {
        const bytes = await info!.readBody!(100);
        seen.push(`${request.method} ${new TextDecoder().decode(bytes!)}`);
        return new Response("from fetch", { status: 200 });
      },
    };
    const { url } = await start(app);
    const response = await fetch(`${url}/x`, { method: "POST", body: "hello" });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("from fetch");
    expect(seen).toEqual(["POST hello"]);
  });

  it("an empty 200 answer goes out with content-length: 0, not chunked", async () => {
    const app: App = { fetch: neverFetch, handle: async () => ({ status: 200, headers: { "cache-control": "no-store" }, body: null }) };
    const { url } = await start(app);
    const raw = await rawExchange(url, "POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    expect(raw.status).toBe(200);
    expect(raw.headers).toContainEqual(["content-length", "0"]);
    expect(raw.headers.find(([name]) => name === "transfer-encoding")).toBeUndefined();
    expect(raw.body.byteLength).toBe(0);
  });
});

describe("the request's direct body read", () => {
  it("returns the whole body, after which the body counts as used", async () => {
    const app: App = {
      fetch: neverFetch,
      async handle(request: Request, info?: HandleInfo) {
        const bytes = await readBody(info, 1024);
        let again: string;
        try {
          await readBody(info, 1024);
          again = "bytes";
        } catch (error) {
          again = (error as Error).name;
        }
        let text: string;
        try {
          text = await request.text();
        } catch (error) {
          text = (error as Error).name;
        }
        return jsonAnswer(200, { body: new TextDecoder().decode(bytes!), again, bodyUsed: request.bodyUsed, text });
      },
    };
    const { url } = await start(app);
    const big = "a".repeat(900);
    const response = await fetch(`${url}/r`, { method: "POST", body: big });
    expect(await response.json()).toEqual({ body: big, again: "TypeError", bodyUsed: true, text: "TypeError" });
  });

  it("reads a request an earlier handler paused", async () => {
    const app: App = {
      fetch: neverFetch,
      async handle(request: Request, info?: HandleInfo) {
        const bytes = await readBody(info, 1024);
        return jsonAnswer(200, { body: new TextDecoder().decode(bytes!) });
      },
    };
    const listener = createRequestListener(app);
    const server = createServer((req, res) => {
      req.pause();
      listener(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    try {
      const { port } = server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/p`, { method: "POST", body: "paused body" });
      expect(await response.json()).toEqual({ body: "paused body" });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("resolves null past maxBytes, discards the rest unread and still answers on the same connection", async () => {
    const seen: Array<number | null> = [];
    const app: App = {
      fetch: neverFetch,
      async handle(request: Request, info?: HandleInfo) {
        const bytes = await readBody(info, 10);
        seen.push(bytes === null ? null : bytes.byteLength);
        return jsonAnswer(bytes === null ? 413 : 200, { ok: bytes !== null });
      },
    };
    const { url } = await start(app);
    const body = "b".repeat(200_000);
    const first = await fetch(`${url}/big`, { method: "POST", body });
    expect(first.status).toBe(413);
    expect(await first.json()).toEqual({ ok: false });
    const second = await fetch(`${url}/small`, { method: "POST", body: "0123456789" });
    expect(second.status).toBe(200);
    expect(seen).toEqual([null, 10]);
  });

  it("rejects when the client disconnects mid-upload, and the request's signal aborts", async () => {
    const outcome = deferred<{ rejected: string; aborted: boolean }>();
    const app: App = {
      fetch: neverFetch,
      async handle(request: Request, info?: HandleInfo) {
        try {
          await readBody(info, 1_000_000);
          outcome.resolve({ rejected: "no", aborted: request.signal.aborted });
        } catch (error) {
          outcome.resolve({ rejected: (error as Error).name, aborted: request.signal.aborted });
        }
        return jsonAnswer(200, {});
      },
    };
    const { url } = await start(app);
    const socket = connect(portOf(url), "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write("POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + "c".repeat(100));
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    const result = await outcome.promise;
    expect(result.rejected).not.toBe("no");
    expect(result.aborted).toBe(true);
  });
});
