/**
 * A request Node's HTTP/1 parser reads with a major version other than 1 (a request line without a
 * version, which it takes for HTTP/0.9's; `HTTP/0.9`; `HTTP/2.0` in text framing) gets the Node
 * listener's 505 on a path plantgate answers, before the scheme's 421 or the Host is looked at, and
 * goes on with `next()` on the host app's own paths, as the 421 does. `HTTP/3.0`, which Node's parser
 * refuses itself, gets the same 505 from `answerMalformedRequests` (the Express example's server).
 */
import { createServer, IncomingMessage, type Server, type ServerOptions } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import express from "express";
import { answerMalformedRequests } from "@plantgate/node";
import { afterEach, describe, expect, it } from "vitest";
import { plantgate } from "../src/index.js";
import { plantgateApp } from "./support.js";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))));
});

/** One raw request; everything the server sends until it closes the connection (or "<still open>" after 2 s), Date lines left out. */
function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const done = (tail: string) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString("latin1").replace(/\r\nDate: [^\r]*/g, "") + tail);
    };
    const timer = setTimeout(() => done("<still open>"), 2_000);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => done(""));
    socket.write(request);
  });
}

/**
 * A real IncomingMessage subclass whose `httpVersionMajor` is `major` whatever Node's parser read,
 * as an IncomingMessage shim has it: serverless-http (Express on AWS Lambda) sets the string "1", a
 * hand-built `new IncomingMessage(socket)` leaves null.
 */
function withMajor(major: unknown): typeof IncomingMessage {
  return class ShimmedRequest extends IncomingMessage {
    constructor(socket: Socket) {
      super(socket);
      // Node's parser assigns its number after construction: this keeps the shim's value.
      Object.defineProperty(this, "httpVersionMajor", { get: () => major, set: () => {}, configurable: true });
    }
  };
}

describe("plantgate() and the request's HTTP version", { timeout: 15_000 }, () => {
  it("major version other than 1 -> the listener's 505 with Connection: close on a path plantgate answers (they were served); the host app's own paths go on; HTTP/1.0 without Host and HTTP/1.1 are served", async () => {
    const app = express();
    app.use("/auth", plantgate(await plantgateApp()));
    app.use((_req, res) => void res.status(404).type("text").send("host app"));
    const server = createServer(app);
    answerMalformedRequests(server);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;

    const body = '{"error":"invalid_request","error_description":"The request\'s HTTP version is not supported; send it as HTTP/1.1."}';
    // Written by plantgate through Express's response...
    const refused = (head = false) =>
      `HTTP/1.1 505 HTTP Version Not Supported\r\nX-Powered-By: Express\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${head ? "" : body}`;
    // ...and by answerMalformedRequests for the version Node's parser refuses.
    const refusedByParser = (head = false) =>
      `HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: application/json\r\ncache-control: no-store\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${head ? "" : body}`;
    const hostApp = "HTTP/1.1 404 Not Found\r\nX-Powered-By: Express\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 8\r\nETag: W/\"8-86RfE7MbpCcY2RA2dMGIiAvTdko\"\r\nConnection: close\r\n\r\nhost app";
    const metadata = "/auth/.well-known/oauth-authorization-server";
    const cases: Array<[string, string]> = [
      [`GET ${metadata}\r\n\r\n`, refused()],
      [`HEAD ${metadata}\r\n\r\n`, refused(true)],
      [`GET ${metadata} HTTP/0.9\r\n\r\n`, refused()],
      [`GET ${metadata} HTTP/2.0\r\nHost: x\r\n\r\n`, refused()],
      [`HEAD ${metadata} HTTP/2.0\r\nHost: x\r\n\r\n`, refused(true)],
      [`GET ${metadata} HTTP/2.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n`, refused()],
      // The version before the scheme (the 421) and the Host.
      [`GET https://x${metadata} HTTP/2.0\r\n\r\n`, refused()],
      [`GET ${metadata} HTTP/3.0\r\nHost: x\r\n\r\n`, refusedByParser()],
      [`HEAD ${metadata} HTTP/3.0\r\nHost: x\r\n\r\n`, refusedByParser(true)],
      // The host app's own paths are its business.
      ["GET /elsewhere\r\n\r\n", hostApp],
      ["GET /elsewhere HTTP/2.0\r\nHost: x\r\n\r\n", hostApp],
    ];
    const got = await Promise.all(cases.map(([request]) => raw(port, request)));
    expect(cases.map(([request], i) => [request, got[i]])).toEqual(cases);

    // HTTP/1.0 needs no Host (the issuer falls back to localhost); HTTP/1.1 is served as ever.
    const served = async (request: string) => {
      const [head, answer] = (await raw(port, request)).split("\r\n\r\n");
      return [head!.split("\r\n")[0], (JSON.parse(answer!) as { issuer: string }).issuer];
    };
    expect(await served(`GET ${metadata} HTTP/1.0\r\n\r\n`)).toEqual(["HTTP/1.1 200 OK", "http://localhost/auth"]);
    expect(await served(`GET ${metadata} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).toEqual(["HTTP/1.1 200 OK", "http://x/auth"]);
  });

  it("a request whose IncomingMessage subclass says its major version is the string \"1\" (serverless-http's) or null (a hand-built `new IncomingMessage(socket)`) is served as any: only a number other than 1 is Node's parser's other version (both were refused 505)", async () => {
    const app = express();
    app.use("/auth", plantgate(await plantgateApp()));
    const request = "GET /auth/.well-known/oauth-authorization-server HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    const answer = async (options: ServerOptions) => {
      const server = createServer(options, app);
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return raw((server.address() as AddressInfo).port, request);
    };
    // What a server with Node's own IncomingMessage answers.
    const served = await answer({});
    expect(served.startsWith("HTTP/1.1 200 OK\r\n")).toBe(true);
    const body = '{"error":"invalid_request","error_description":"The request\'s HTTP version is not supported; send it as HTTP/1.1."}';
    const refused = `HTTP/1.1 505 HTTP Version Not Supported\r\nX-Powered-By: Express\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${body}`;
    const majors = ["1", null, 2];
    const got = await Promise.all(majors.map((major) => answer({ IncomingMessage: withMajor(major) })));
    // Such a subclass's number other than 1 is still refused.
    expect(majors.map((major, i) => [major, got[i]])).toEqual([["1", served], [null, served], [2, refused]]);
  });
});
