/**
 * The HTTP conformance suite against the Express example server (`startExpressServer`), plantgate
 * mounted at the default `/auth`, over a real socket.
 */
import { randomBytes } from "node:crypto";
import { startExpressServer } from "@plantgate/example-express-server";
import { describeHttpSuite } from "../src/suite.js";
import { describeOversizedUploads } from "../src/oversized-uploads.js";
import { serverLines } from "../src/server-lines.js";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

/** Error-level log entries mean a 500 or 503 somewhere: the suite's inputs must never cause one. */
const errors: unknown[] = [];
const logger = { error: (message: string, context?: unknown) => void errors.push({ message, context }), warn: () => {} };

describeHttpSuite("express (mounted at /auth)", {
  // The adapter's documented default (`notFound: "next"`) hands unknown paths to Express.
  unknownPaths: "host",
  // Oversized uploads over raw sockets, 20 of 20 each, also under CPU load; no reset accepted.
  moreTests: describeOversizedUploads,
  async start({ accounts }) {
    const clientId = `suite-${hex(4)}`;
    const clientSecret = hex(32);
    const username = `alice-${hex(4)}`;
    const password = hex(16);
    const lines = serverLines();
    const server = await startExpressServer({
      PORT: "0",
      PLANTGATE_DB: ":memory:",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: clientId,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: clientSecret,
      PLANTGATE_BOOTSTRAP_USERNAME: username,
      PLANTGATE_BOOTSTRAP_PASSWORD: password,
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
      // The bootstrap account is an administrator and the console is on (the suite's console tests).
      PLANTGATE_BOOTSTRAP_ADMIN: "1",
    }, { logger }, { destination: lines.destination });
    try {
      if (server.mountPath !== "/auth" || server.baseUrl !== `${server.url}/auth`) {
        throw new Error(`unexpected mount: ${server.mountPath} ${server.baseUrl}`);
      }
      for (let i = 0; i < accounts; i++) {
        await server.app.admin.createAccount({ username: `walker-${String(i).padStart(2, "0")}-${hex(3)}`, password: hex(16) });
      }
    } catch (error) {
      await server.close();
      throw error;
    }
    return { baseUrl: server.baseUrl, clientId, clientSecret, username, password, close: async () => {
        await server.close();
        if (errors.length > 0) throw new Error(`the server logged errors: ${JSON.stringify(errors)}`);
        lines.check([clientSecret, password]);
      },
    };
  },
});
