/**
 * A request pipelined behind one whose answer is still to come, handed to the mounted app, whose
 * chunked upload Node's parser then refuses (a bad chunk size): `answerMalformedRequests` fails its
 * body for the app, and an app that lets that read's rejection through gets the 400 of the client's
 * bad input in its turn. Until 2026-12-01 the adapter took the failure for a client that went away
 * and wrote nothing: the connection held every answer after it until the socket timeout.
 */
import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import express from "express";
import { answerMalformedRequests, type FetchApp } from "@plantgate/node";
import { afterEach, describe, expect, it } from "vitest";
import { plantgate } from "../src/index.js";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))));
});

describe("plantgate() and an upload Node's parser refused after the app got its request", () => {
  it("an app that lets the read's failure through: the answer before it, then the 400 in its turn, then the close (nothing was written, and the connection hung)", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const fetchApp: FetchApp = {
      fetch: async (request) => (new URL(request.url).pathname === "/slow" ? (await held, new Response("slow answer")) : new Response(await request.text())),
    };
    const app = express();
    app.use(plantgate(fetchApp));
    const server = createServer(app);
    answerMalformedRequests(server);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
    const received: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => received.push(chunk));
    const closed = new Promise<string>((resolve) => socket.once("close", () => resolve("closed")));
    socket.write("GET /slow HTTP/1.1\r\nhost: x\r\n\r\nPOST /up HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n");
    await new Promise((resolve) => setTimeout(resolve, 150));
    release();
    const outcome = await Promise.race([closed, new Promise<string>((resolve) => setTimeout(() => resolve("still open after 3 s"), 3_000))]);
    socket.destroy();
    const text = Buffer.concat(received).toString("latin1").replace(/\r\nDate: [^\r]*/gi, "");
    const answers = text.split(/(?=HTTP\/1\.1 \d{3} )/);
    expect([outcome, answers.length, answers[0]!.startsWith("HTTP/1.1 200 OK\r\n"), answers[0]!.endsWith("\r\n\r\nb\r\nslow answer\r\n0\r\n\r\n")]).toEqual(["closed", 2, true, true]);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answers[1]!.slice(answers[1]!.indexOf("\r\n\r\n") + 4)).toBe('{"error":"invalid_request","error_description":"The request cannot be processed."}');
  });
});
