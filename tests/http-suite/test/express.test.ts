/**
 * The HTTP conformance suite against the Express example server (`startExpressServer`), plantgate
 * mounted at the default `/auth`, over a real socket.
 */
import { describe, expect, it, vi } from "vitest";
import { connect } from "node:net";
import { startExpressServer } from "@plantgate/example-express-server";
import { createWalkers, suiteBootstrap } from "../src/bootstrap.js";
import { describeHttpSuite } from "../src/suite.js";
import { describeOversizedUploads } from "../src/oversized-uploads.js";
import { describeHalfClosedRequests } from "../src/half-closed.js";
import { serverLines } from "../src/server-lines.js";

/** Error-level log entries mean a 500 or 503 somewhere: the suite's inputs must never cause one. */
const errors: unknown[] = [];
const logger = { error: (message: string, context?: unknown) => void errors.push({ message, context }), warn: () => {} };

describeHttpSuite("express (mounted at /auth)", {
  // The adapter's documented default (`notFound: "next"`) hands unknown paths to Express.
  unknownPaths: "host",
  // Oversized uploads over raw sockets, 20 of 20 each, also under CPU load; no reset accepted.
  moreTests: (srv) => {
    describeOversizedUploads(srv);
    describeHalfClosedRequests(srv);
  },
  async start({ accounts }) {
    const { identity, env } = suiteBootstrap();
    const lines = serverLines();
    const server = await startExpressServer({
      PORT: "0",
      PLANTGATE_DB: ":memory:",
      ...env,
    }, { logger }, { destination: lines.destination });
    try {
      if (server.mountPath !== "/auth" || server.baseUrl !== `${server.url}/auth`) {
        throw new Error(`unexpected mount: ${server.mountPath} ${server.baseUrl}`);
      }
      await createWalkers(server.app.admin, accounts);
    } catch (error) {
      await server.close();
      throw error;
    }
    return { baseUrl: server.baseUrl, ...identity, close: async () => {
        await server.close();
        if (errors.length > 0) throw new Error(`the server logged errors: ${JSON.stringify(errors)}`);
        lines.check([identity.clientSecret, identity.password]);
      },
    };
  },
});

describe("express example: serve()'s limits, not Node's", () => {
  it("headers that do not arrive within 10 s (Node's own default: 60 s) get 408 and the connection is closed", async () => {
    const server = await startExpressServer({ PORT: "0", PLANTGATE_DB: ":memory:" }, {}, { destination: { write: () => {} } });
    try {
      const { hostname, port } = new URL(server.url);
      const socket = connect({ host: hostname, port: Number(port) });
      await new Promise((resolve) => socket.once("connect", resolve));
      const startedAt = Date.now();
      const received: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => received.push(chunk));
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.write("GET /health HTTP/1.1\r\nhost: x\r\n");
      await closed;
      expect(Buffer.concat(received).toString("latin1")).toMatch(/^HTTP\/1\.1 408 /);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(9_000);
      expect(Date.now() - startedAt).toBeLessThan(13_000);
    } finally {
      await server.close();
    }
  }, 20_000);
});

describe("express example: the host's own error answer", () => {
  it("a malformed JSON body outside plantgate is answered 400 JSON, and nothing of it is printed", async () => {
    const printed: unknown[] = [];
    const consoleError = vi.spyOn(console, "error").mockImplementation((...args) => void printed.push(args));
    const lines: string[] = [];
    const server = await startExpressServer({ PORT: "0", PLANTGATE_DB: ":memory:" }, {}, { destination: { write: (line) => void lines.push(line) } });
    try {
      const secret = "client_secret=AnotherSecret777";
      for (const path of ["/health", "/auth/UserService/connect/token/"]) {
        const res = await fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: secret });
        expect(res.status, path).toBe(400);
        expect(res.headers.get("content-type"), path).toMatch(/^application\/json/);
        expect(await res.json(), path).toEqual({ error: 1001, message: "The body is not valid JSON." });
      }
      const big = await fetch(`${server.url}/health`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ password: "x".repeat(200_000) }) });
      expect(big.status).toBe(413);
      expect(await big.json()).toEqual({ error: 1007, message: "The body is larger than the limit." });
      expect(printed, "Express's own handler prints the error with the body").toEqual([]);
      expect(lines.join("")).not.toContain("AnotherSecret777");
    } finally {
      consoleError.mockRestore();
      await server.close();
    }
  });
});
