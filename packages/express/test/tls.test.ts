/**
 * The middleware behind `node:https`: Express's `req.protocol` is `https` on a TLS socket, and an
 * absolute-form target naming `http` gets the listener's 421 on a path plantgate answers, as
 * `https://...` does over plain TCP (methods.test.ts; RFC 9110 §7.4). The certificate is
 * @plantgate/node's test-only one, for localhost and 127.0.0.1.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { connect } from "node:tls";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { plantgate } from "../src/index.js";
import { plantgateApp } from "./support.js";

const fixtures = new URL("../../node/test/fixtures/", import.meta.url);
const key = readFileSync(new URL("test-only-localhost.key.pem", fixtures));
const cert = readFileSync(new URL("test-only-localhost.cert.pem", fixtures));

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))));
});

/** One raw request over TLS (the test certificate verified); the whole answer until the server closes (Connection: close). */
async function rawTls(port: number, request: string): Promise<string> {
  const socket = connect({ port, host: "127.0.0.1", servername: "localhost", ca: cert });
  try {
    return await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      socket.on("error", reject);
      socket.on("end", () => resolve(Buffer.concat(chunks).toString("latin1")));
      socket.once("secureConnect", () => {
        if (!socket.authorized) reject(new Error(`TLS not authorized: ${String(socket.authorizationError)}`));
        socket.write(request);
      });
    });
  } finally {
    socket.destroy();
  }
}

describe("plantgate() over TLS (node:https)", () => {
  it("an absolute-form `http://` target -> the listener's 421 on a path plantgate answers; an `https://` one is served with an https issuer; the host app's own paths go on", async () => {
    const misdirected = '{"error":"invalid_request","error_description":"The request\'s target is not served on this connection."}';
    const app = express();
    app.use("/auth", plantgate(await plantgateApp()));
    app.use((_req, res) => void res.status(404).type("text").send("host app"));
    const server = createServer({ key, cert }, app);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const ask = async (target: string) => {
      const [head, body] = (await rawTls(port, `GET ${target} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n`)).split("\r\n\r\n");
      const lines = head!.split("\r\n");
      const header = (name: string) => lines.find((line) => line.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim();
      return { status: lines[0], contentType: header("content-type"), cacheControl: header("cache-control"), body: body! };
    };
    const metadata = "/auth/.well-known/oauth-authorization-server";
    for (const target of [`http://localhost${metadata}`, `HTTP://localhost:443${metadata}`]) {
      expect([target, await ask(target)]).toEqual([
        target,
        { status: "HTTP/1.1 421 Misdirected Request", contentType: "application/json", cacheControl: "no-store", body: misdirected },
      ]);
    }
    const served = await ask(`https://auth.example.com:443${metadata}`);
    expect([served.status, (JSON.parse(served.body) as { issuer: string }).issuer]).toEqual(["HTTP/1.1 200 OK", "https://auth.example.com/auth"]);
    const originForm = await ask(metadata);
    expect([originForm.status, (JSON.parse(originForm.body) as { issuer: string }).issuer]).toEqual(["HTTP/1.1 200 OK", "https://localhost/auth"]);
    expect((await ask("http://localhost/elsewhere")).body).toBe("host app");
  });
});
