/**
 * A proxy ACL or host guard matches the request target as sent; the WHATWG URL parser (every
 * `Request`, so plantgate's routing) reads `\` as `/` and resolves `.`/`..`/`%2e` segments. A console
 * that a proxy in front restricts by path prefix (`location /auth/console { deny all; }`; nginx does
 * not turn `\` into `/`) was reached as `/auth\console/api/session`, which no prefix rule for
 * `/auth/console` matches, and `/auth/x/../console/...` went past a host guard matching `req.url`.
 * The listener now refuses such a target with its 400 (README, error codes: "A request that never
 * reaches the app"), and `app.owns()` agrees that such a path is not plantgate's.
 */
import { createPlantgate } from "@plantgate/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serve, toRequest, AmbiguousPathError, type ServeResult } from "../src/index.js";
import { rawExchange } from "./support.js";
import { IncomingMessage } from "node:http";
import { Socket } from "node:net";

const REFUSAL = '{"error":"invalid_request","error_description":"The request target\'s path holds a dot segment or a backslash; send the path resolved."}';
const pg = createPlantgate({ basePath: "/auth", console: { enabled: true }, logger: { error() {}, warn() {} } as unknown as Console });
let served: ServeResult;

beforeAll(async () => {
  served = await serve(pg, { port: 0 });
});
afterAll(async () => {
  await served.close();
});

async function get(target: string, method = "GET"): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const { status, headers, body } = await rawExchange(served.url, `${method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, { head: method === "HEAD" });
  const named = Object.fromEntries(headers.filter(([name]) => name !== "date"));
  return { status, headers: named, body: body.toString() };
}

describe("serve(): targets whose path the URL parser reads as another path", () => {
  for (const target of [
    "/auth\\console/api/session",
    "/auth/x/../console/api/session",
    "/auth/x/%2e%2e/console/api/session",
    "/auth/x/.%2E/console/api/session",
    "/auth/console/./api/session",
    "/auth/console/%2e/api/session",
    "/auth/console/api/session/..",
    "/auth/console/api/session?next=1#/../x",
    "http://x/auth/x/../console/api/session",
    "http://x/auth\\console/api/session",
  ]) {
    it(`${JSON.stringify(target)} is refused 400, not answered as the console`, async () => {
      const answer = await get(target);
      // `#/../x` is a fragment (not part of the path): that target is the console's, 401 1301.
      if (target.includes("#")) {
        expect(answer.status).toBe(401);
        expect(JSON.parse(answer.body)).toMatchObject({ error: 1301 });
        return;
      }
      expect(answer).toEqual({
        status: 400,
        headers: { "content-type": "application/json", "content-length": String(REFUSAL.length), "cache-control": "no-store", connection: "close" },
        body: REFUSAL,
      });
    });
  }

  it("a HEAD gets the same status and headers, without the body", async () => {
    expect(await get("/auth/x/../console/api/session", "HEAD")).toEqual({
      status: 400,
      headers: { "content-type": "application/json", "content-length": String(REFUSAL.length), "cache-control": "no-store", connection: "close" },
      body: "",
    });
  });

  it("the resolved path itself is served, and so are a query holding `/../` or `\\` and a segment that only starts with dots", async () => {
    const session = await get("/auth/console/api/session?next=/../x\\y");
    expect(session.status).toBe(401);
    expect(JSON.parse(session.body)).toMatchObject({ error: 1301 });
    expect((await get("/.well-known/oauth-authorization-server/auth")).status).toBe(200);
    const dots = await get("/auth/plants/..x");
    expect({ status: dots.status, error: (JSON.parse(dots.body) as { error: number }).error }).toEqual({ status: 404, error: 1404 });
  });

  it("toRequest() throws the AmbiguousPathError (a TypeError) that refusedRequestAnswer answers", () => {
    const incoming = new IncomingMessage(new Socket());
    incoming.url = "/auth/x/../console";
    incoming.method = "GET";
    incoming.httpVersionMajor = 1;
    incoming.httpVersionMinor = 1;
    incoming.rawHeaders = ["Host", "x"];
    incoming.headers = { host: "x" };
    expect(() => toRequest(incoming)).toThrow(AmbiguousPathError);
    expect(() => toRequest(incoming)).toThrow(TypeError);
  });
});

describe("app.owns() on a path as sent", () => {
  it("is false for a path the URL parser reads as another, true for the path itself", () => {
    expect({
      resolved: pg.owns("/auth/console/api/session"),
      backslash: pg.owns("/auth\\console/api/session"),
      dotDot: pg.owns("/auth/x/../console/api/session"),
      // Owned until 2026-12-02, as a client id: the URL parser reads it as /auth/console/api.
      trailing: pg.owns("/auth/console/api/clients/.."),
      encoded: pg.owns("/auth/console/api/clients/%2E%2e"),
      dot: pg.owns("/auth/console/api/clients/."),
      notDots: pg.owns("/auth/console/api/clients/..x"),
    }).toEqual({ resolved: true, backslash: false, dotDot: false, trailing: false, encoded: false, dot: false, notDots: true });
  });
});
