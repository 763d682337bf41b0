/**
 * A dot segment that ends right before the query or fragment is resolved by the URL parser like any
 * other (`/auth/console/api/session/..?x` is `/auth/console/api/`): refused as the others are. The
 * first form of the check (27a2882) wanted `/` or the end of the target after the dots, so such a
 * target was served as the resolved path (the diff review's finding, from 100,000 random targets
 * compared with the URL parser).
 */
import { createPlantgate } from "@plantgate/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { serve, type ServeResult } from "../src/index.js";
import { hasAmbiguousPath } from "../src/incoming.js";
import { rawExchange } from "./support.js";

const pg = createPlantgate({ basePath: "/auth", console: { enabled: true }, logger: { error() {}, warn() {} } as unknown as Console });
let served: ServeResult;
beforeAll(async () => { served = await serve(pg, { port: 0 }); });
afterAll(async () => { await served.close(); });

it("hasAmbiguousPath agrees with the URL parser for a dot segment before `?` or `#`", () => {
  const targets = ["/auth/console/api/session/..?x=1", "/auth/x/.?", "/auth/x/%2e%2e#f", "http://h.example/auth/x/..?y"];
  const got = targets.map((t) => [t, hasAmbiguousPath(t), new URL(t, "http://h.example").pathname]);
  expect(got).toEqual(targets.map((t) => [t, true, new URL(t, "http://h.example").pathname]));
});

it("serve() refuses GET /auth/console/api/session/..?x=1 with the documented 400", async () => {
  const { status, body } = await rawExchange(served.url, "GET /auth/console/api/session/..?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  expect({ status, body: body.toString() }).toEqual({
    status: 400,
    body: '{"error":"invalid_request","error_description":"The request target\'s path holds a dot segment or a backslash; send the path resolved."}',
  });
});
