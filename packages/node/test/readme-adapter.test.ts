/**
 * The README's "Writing an adapter" contract, proved by the adapter it prints: a node:http server
 * written only against `app.handle(request, info)` and `HandleInfo` (clientIp, readBody), with no
 * help from @plantgate/node. If this stops working, the README is wrong.
 */
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { createPlantgate } from "@plantgate/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readmeAdapter } from "./readme-adapter-code.js";

const app = createPlantgate({ passwordHashIterations: 1000, logger: { error() {}, warn() {} } });

const { handler } = readmeAdapter(app);

let server: Server;
let base: string;
let clientSecret: string;

beforeAll(async () => {
  ({ clientSecret } = await app.admin.createClient({ clientId: "readme", grantTypes: ["client_credentials"] }));
  server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("the README's node:http adapter", () => {
  it("answers a client-credentials token request, a plant POST with that token, and a 404", async () => {
    const token = await fetch(`${base}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`readme:${clientSecret}`)}` },
      body: "grant_type=client_credentials",
    });
    expect(token.status).toBe(200);
    expect(token.headers.get("cache-control")).toBe("no-store");
    expect(token.headers.get("pragma")).toBe("no-cache");
    const tokenBody = (await token.json()) as Record<string, unknown>;
    expect(Object.keys(tokenBody).sort()).toEqual(["access_token", "expires_in", "scope", "token_type"]);
    expect(tokenBody).toMatchObject({ token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" });

    const plant = await fetch(`${base}/plants`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${tokenBody.access_token as string}` },
      body: '{"id":9223372036854775807,"name":"Monstera","tag":"indoor"}',
    });
    expect(plant.status).toBe(200);
    expect(plant.headers.get("content-type")).toBe("application/json");
    expect(await plant.text()).toBe('{"id":9223372036854775807,"name":"Monstera","tag":"indoor"}');

    const missing = await fetch(`${base}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 1404, message: "Not found." });
  });

  it("readBody's null (past maxBytes) becomes plantgate's documented too-large answer", async () => {
    const big = await fetch(`${base}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      // Chunked, so no Content-Length lets plantgate refuse before reading.
      body: new Blob(["grant_type=client_credentials&x=" + "a".repeat(70_000)]).stream(),
      duplex: "half",
    } as RequestInit);
    expect(big.status).toBe(400);
    expect(await big.json()).toEqual({ error: "invalid_request", error_description: "The request body exceeds 65536 bytes." });
  });

  it("a Host no URL can hold, or a method no Request carries, is answered 400 (it threw in the handler, and the rejection ended the process)", async () => {
    for (const head of ["GET / HTTP/1.1\r\nHost: [\r\n", "TRACE / HTTP/1.1\r\nHost: a\r\n"]) {
      const socket = connect({ host: "127.0.0.1", port: Number(new URL(base).port) });
      const received: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => received.push(chunk));
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.write(`${head}Connection: close\r\n\r\n`);
      await closed;
      const text = Buffer.concat(received).toString("latin1");
      // Chunked (the adapter sets no Content-Length): one chunk of 0x52 bytes, then the last.
      expect([head, text.split("\r\n")[0], text.slice(text.indexOf("\r\n\r\n") + 4)]).toEqual([head, "HTTP/1.1 400 Bad Request", '52\r\n{"error":"invalid_request","error_description":"The request cannot be processed."}\r\n0\r\n\r\n']);
    }
  });
});
