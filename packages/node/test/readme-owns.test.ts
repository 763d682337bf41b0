/**
 * The README's "plantgate beside your own routes on one node:http server" lines (Embedding), read out
 * of README.md and run as printed: `pg.owns(path)` hands plantgate's paths to its listener and the
 * rest to the host's own routes. Only the imports are bound to this repository's modules and
 * `listen(3000)` to a free loopback port.
 */
import { readFileSync } from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as core from "@plantgate/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRequestListener } from "../src/index.js";
import { rawExchange } from "./support.js";

const MARK = "// plantgate beside your own routes on one node:http server\n";

function readmeBlock(): string {
  const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
  const start = readme.indexOf(MARK);
  if (start < 0) throw new Error("the README has no such lines");
  return readme.slice(start, readme.indexOf("\n```", start));
}

let server: http.Server;
let pg: core.Plantgate;
let base: string;

beforeAll(async () => {
  const code = readmeBlock();
  const imports = [...code.matchAll(/^import .*$/gm)].map((m) => m[0]);
  expect(imports).toEqual([
    'import { createServer } from "node:http";',
    'import { createPlantgate } from "@plantgate/core";',
    'import { createRequestListener } from "@plantgate/node";',
  ]);
  const body = code.replace(/^import .*$/gm, "");
  const listening = new Promise<void>((resolve) => {
    const createServer = (listener: http.RequestListener) => {
      server = http.createServer(listener);
      // listen(3000) as printed, on a free loopback port here.
      return { listen: () => server.listen(0, "127.0.0.1", resolve) };
    };
    const createPlantgate = (options: core.PlantgateOptions) => (pg = core.createPlantgate({ ...options, passwordHashIterations: 1000, logger: { error() {}, warn() {} } }));
    new Function("createServer", "createPlantgate", "createRequestListener", body)(createServer, createPlantgate, createRequestListener);
  });
  await listening;
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function get(path: string): Promise<{ status: number; type: string | null; body: string }> {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, type: res.headers.get("content-type"), body: await res.text() };
}

describe("README: plantgate beside the host's routes through pg.owns()", () => {
  it("plantgate's paths go to its listener: a token, the metadata URL, a wrong method", async () => {
    const { clientSecret } = await pg.admin.createClient({ clientId: "host" });
    const token = await fetch(`${base}/auth/UserService/connect/token`, {
      method: "POST",
      headers: { authorization: `Basic ${btoa(`host:${clientSecret}`)}` },
      body: new URLSearchParams({ grant_type: "client_credentials" }),
    });
    expect({ status: token.status, type: ((await token.json()) as { token_type: string }).token_type }).toEqual({ status: 200, type: "Bearer" });
    const meta = await get("/.well-known/oauth-authorization-server/auth?x=1");
    expect({ status: meta.status, token_endpoint: (JSON.parse(meta.body) as { token_endpoint: string }).token_endpoint }).toEqual({
      status: 200,
      token_endpoint: `${base}/auth/UserService/connect/token`,
    });
    const wrongMethod = await get("/auth/UserService/connect/token");
    expect(wrongMethod.status).toBe(405);
  });

  it("the host's own routes and its 404 answer every other path", async () => {
    expect(await get("/health")).toEqual({ status: 200, type: "application/json", body: '{"ok":true}' });
    expect(await get("/health?verbose=1")).toEqual({ status: 200, type: "application/json", body: '{"ok":true}' });
    expect(await get("/nope")).toEqual({ status: 404, type: "text/plain", body: "Not found" });
    // Not a plantgate route, though under basePath: plantgate's 404 is never sent.
    expect(await get("/auth/nope")).toEqual({ status: 404, type: "text/plain", body: "Not found" });
  });

  it("a path with a dot segment or a backslash reaches the host's routes, as without plantgate", async () => {
    for (const target of ["/auth/x/../UserService/connect/token", "/auth\\.well-known/jwks.json", "/auth/%2e/.well-known/jwks.json"]) {
      const { status, headers, body } = await rawExchange(base, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect({ status, type: headers.find(([name]) => name === "content-type")?.[1], body: body.toString() }).toEqual({ status: 404, type: "text/plain", body: "Not found" });
    }
  });
});
