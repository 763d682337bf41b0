/**
 * The request listener behind `node:https`: over TLS the connection's scheme is `https`, and an
 * absolute-form target naming `http` is the 421 that `https://...` gets over plain TCP (RFC 9110
 * §7.4; to-request.test.ts has that one). The certificate is a test-only one (fixtures/), for
 * localhost and 127.0.0.1.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { connect } from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { answerMalformedRequests, createRequestListener } from "../src/index.js";
import { echoApp, readResponse, type Echo, type ParsedResponse, type ReadOptions } from "./support.js";

const key = readFileSync(new URL("./fixtures/test-only-localhost.key.pem", import.meta.url));
const cert = readFileSync(new URL("./fixtures/test-only-localhost.cert.pem", import.meta.url));

const servers: Server[] = [];
const appErrors: unknown[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))));
  expect(appErrors.splice(0)).toEqual([]);
});

/** The request listener (and `answerMalformedRequests`, as a host would) on a `node:https` server; its port. */
async function listenTls(): Promise<number> {
  const server = createServer({ key, cert }, createRequestListener(echoApp, { onError: (error) => appErrors.push(error) }));
  answerMalformedRequests(server);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** Sends `data` over a fresh TLS connection (the test certificate verified) and reads the answer. */
async function tlsExchange(port: number, data: string, options: ReadOptions = {}): Promise<ParsedResponse> {
  const socket = connect({ port, host: "127.0.0.1", servername: "localhost", ca: cert });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", resolve);
      socket.once("error", reject);
    });
    expect(socket.authorized).toBe(true);
    const response = readResponse(socket, options);
    socket.write(data);
    return await response;
  } finally {
    socket.destroy();
  }
}

describe("request listener over TLS (node:https)", () => {
  it("answers 421 to an absolute-form `http://` target, with the body and headers of the plain-TCP `https://` case, and serves an `https://` one as https", async () => {
    const misdirected = '{"error":"invalid_request","error_description":"The request\'s target is not served on this connection."}';
    const port = await listenTls();
    for (const target of ["http://localhost/plants", "HTTP://localhost:443/plants", "http://localhost:80/plants?x=1"]) {
      const { status, statusText, headers, body } = await tlsExchange(port, `GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`, { untilClose: true });
      const header = Object.fromEntries(headers);
      expect([target, status, statusText, header["content-type"], header["cache-control"], header["content-length"], body.toString()]).toEqual([
        target,
        421,
        "Misdirected Request",
        "application/json",
        "no-store",
        String(misdirected.length),
        misdirected,
      ]);
    }
    for (const [target, served] of [
      ["https://localhost/plants", "https://localhost/plants"],
      ["https://localhost:443/plants?x=1", "https://localhost/plants?x=1"],
      ["HTTPS://other.example:8443/plants", "https://other.example:8443/plants"],
      ["/plants", "https://localhost/plants"],
    ]) {
      const { status, body } = await tlsExchange(port, `GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      expect([target, status, (JSON.parse(body.toString()) as Echo).url]).toEqual([target, 200, served]);
    }
  });
});
