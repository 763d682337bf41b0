/**
 * The README's Hono and Fastify lines ("Writing an adapter"), run as printed: they are read out of
 * README.md and evaluated, so the test fails when the README changes without them working. Until
 * 2026-12-02 the Fastify lines called `fastify.removeAllContentTypeParsers()` on the whole instance
 * (every JSON route of the host lost its parsed body) and registered only `/auth/*`, so the RFC 8414
 * §3.1 metadata URL was Fastify's 404 (the Hono lines next to them serve it).
 */
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { createPlantgate } from "@plantgate/core";
import { serve as honoServe } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import Fastify from "fastify";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { readmeAdapter } from "./readme-adapter-code.js";

const app = createPlantgate({ basePath: "/auth", passwordHashIterations: 1000, logger: { error() {}, warn() {} } as unknown as Console });

// The README's node:http adapter (`handler`), as printed (readme-adapter.test.ts runs it whole).
const { handler } = readmeAdapter(app);

/** The lines of the README's adapter block from the one starting with `// ${name}` to the next blank line. */
function readmeLines(name: string): string {
  const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
  const block = readme.slice(readme.indexOf("// Bun\n"));
  const start = block.indexOf(`// ${name}`);
  const end = block.slice(start).search(/\n\n|\n```/);
  if (start < 0 || end < 0) throw new Error(`no ${name} lines in the README`);
  return block.slice(start, start + end);
}

/** Runs README lines with the names they use in scope (plain JavaScript: the lines carry no types). */
function runReadme(code: string, scope: Record<string, unknown>): void {
  new Function(...Object.keys(scope), code)(...Object.values(scope));
}

let plantSeq = 0;
async function walk(base: string, secret: string) {
  const token = await fetch(`${base}/auth/UserService/connect/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`fw:${secret}`)}` },
    body: "grant_type=client_credentials",
  });
  const tokenBody = (await token.json()) as { access_token: string; token_type: string };
  const id = `${9007199254740993n + BigInt(++plantSeq)}`;
  const plant = await fetch(`${base}/auth/plants`, {
    method: "POST",
    headers: { authorization: `Bearer ${tokenBody.access_token}`, "content-type": "application/json" },
    body: `{"id":${id},"name":"fern"}`,
  });
  const meta = await fetch(`${base}/.well-known/oauth-authorization-server/auth`);
  const metaBody = (await meta.json()) as { token_endpoint?: string };
  return {
    token: [token.status, tokenBody.token_type],
    plant: [plant.status, await plant.text()],
    meta: [meta.status, metaBody.token_endpoint],
    expected: {
      token: [200, "Bearer"],
      plant: [200, `{"id":${id},"name":"fern"}`],
      meta: [200, `${base}/auth/UserService/connect/token`],
    },
  };
}

async function secret(): Promise<string> {
  return (await app.admin.createClient({ clientId: "fw" }).catch(async () => app.admin.rotateClientSecret("fw"))).clientSecret;
}

describe("README framework lines, as printed", () => {
  it("Fastify: a token, an int64 plant and discovery; the host's own JSON route keeps its parsed body", async () => {
    const clientSecret = await secret();
    const fastify = Fastify();
    // The host's own routes, registered as usual, before and after the README's lines.
    fastify.post("/echo", async (req) => ({ got: req.body }));
    runReadme(readmeLines("Fastify"), { fastify, handler });
    fastify.post("/auth-like/echo", async (req) => ({ got: req.body }));
    await fastify.listen({ port: 0, host: "127.0.0.1" });
    const base = `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`;
    try {
      const r = await walk(base, clientSecret);
      expect({ token: r.token, plant: r.plant, meta: r.meta }).toEqual(r.expected);
      for (const path of ["/echo", "/auth-like/echo"]) {
        const echo = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"a":1}' });
        expect({ status: echo.status, body: await echo.json() }).toEqual({ status: 200, body: { got: { a: 1 } } });
      }
    } finally {
      await fastify.close();
    }
  });

  it("Hono: a token, an int64 plant and discovery", async () => {
    const clientSecret = await secret();
    const hono = new Hono();
    runReadme(readmeLines("Hono"), { hono, app, getConnInfo });
    const server = honoServe({ fetch: hono.fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise((r) => server.once("listening", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const r = await walk(base, clientSecret);
      expect({ token: r.token, plant: r.plant, meta: r.meta }).toEqual(r.expected);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
