import fetch from "node-fetch";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createRequestListener, type FetchApp } from "../src/index.js";
import { start } from "./support.js";

const SERVER_ERROR =
  '{"error":"server_error","error_description":"The server encountered an unexpected error."}';

async function expectServerError(url: string): Promise<void> {
  const response = await fetch(`${url}/boom`, { method: "POST", body: "x" });
  expect(response.status).toBe(500);
  expect(response.headers.get("content-type")).toBe("application/json");
  expect(response.headers.get("cache-control")).toBe("no-store");
  expect(await response.text()).toBe(SERVER_ERROR);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("createRequestListener", () => {
  it("answers 500 with the fixed body when app.fetch throws synchronously", async () => {
    const errors: unknown[] = [];
    const secret = new Error("db password is hunter2");
    const app: FetchApp = {
      fetch() {
        throw secret;
      },
    };
    const { url } = await start(app, { onError: (error) => errors.push(error) });
    await expectServerError(url);
    expect(errors).toEqual([secret]);
  });

  it("answers 500 when app.fetch rejects, and keeps serving", async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const { url } = await start(
      {
        async fetch() {
          calls++;
          if (calls === 1) throw new RangeError("nope");
          return new Response("fine");
        },
      },
      { onError: (error) => errors.push(error) },
    );
    await expectServerError(url);
    expect(await (await fetch(url)).text()).toBe("fine");
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(RangeError);
  });

  it("answers 500 when app.fetch resolves to something that is not a Response", async () => {
    const errors: unknown[] = [];
    const app = { fetch: async () => ({ status: 200 }) } as unknown as FetchApp;
    const { url } = await start(app, { onError: (error) => errors.push(error) });
    await expectServerError(url);
    expect((errors[0] as Error).name).toBe("TypeError");
  });

  it("answers 500 when the response body is already used", async () => {
    const errors: unknown[] = [];
    const { url } = await start(
      {
        async fetch() {
          const response = new Response("used", { headers: { "set-cookie": "session=leak" } });
          await response.text();
          return response;
        },
      },
      { onError: (error) => errors.push(error) },
    );
    const response = await fetch(url);
    expect(response.status).toBe(500);
    expect(response.headers.get("set-cookie")).toBeNull();
    expect(await response.text()).toBe(SERVER_ERROR);
    expect(errors).toHaveLength(1);
  });

  it("by default logs only the error's name and message", async () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const error = Object.assign(new Error("lookup failed"), { token: "secret-token-value" });
    error.stack = "Error: lookup failed\n    at secret/path.ts:1:1";
    const { url } = await start(
      {
        async fetch() {
          throw error;
        },
      },
      { onError: undefined },
    );
    await expectServerError(url);
    expect(log.mock.calls).toEqual([["[@plantgate/node] unhandled error: Error: lookup failed"]]);
  });

  it("does not log the content of non-Error throws", async () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const { url } = await start(
      {
        async fetch() {
          throw "secret-string";
        },
      },
      { onError: undefined },
    );
    await expectServerError(url);
    expect(log.mock.calls).toEqual([["[@plantgate/node] unhandled error: non-Error value (string)"]]);
  });

  it("survives an onError callback that throws", async () => {
    const { url } = await start(
      {
        async fetch() {
          throw new Error("first");
        },
      },
      {
        onError: () => {
          throw new Error("logger down");
        },
      },
    );
    await expectServerError(url);
    await expectServerError(url);
  });

  it("survives an async onError that rejects (an error tracker whose send fails): no unhandled rejection, the next request answered", async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => void rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    try {
      const { url } = await start(
        {
          async fetch() {
            throw new Error("first");
          },
        },
        {
          onError: (async () => {
            throw new Error("tracker down");
          }) as () => void,
        },
      );
      await expectServerError(url);
      await expectServerError(url);
      await new Promise((r) => setTimeout(r, 20));
      // Until 2026-12-02 the rejection was unhandled: the first 500 ended the process.
      expect(rejections).toEqual([]);
    } finally {
      process.off("unhandledRejection", onRejection);
    }
  });

  it("rejects an invalid origin up front", () => {
    const app: FetchApp = { fetch: async () => new Response() };
    expect(() => createRequestListener(app, { origin: "not a url" })).toThrow(TypeError);
    expect(() => createRequestListener(app, { origin: "ftp://example.com" })).toThrow(TypeError);
  });
});
