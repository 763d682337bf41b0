/** The HTTP conformance suite against the node:http example server (`startServer`), over a real socket. */
import { startServer } from "@plantgate/example-node-server";
import { createWalkers, suiteBootstrap } from "../src/bootstrap.js";
import { describeHttpSuite } from "../src/suite.js";
import { describeOversizedUploads } from "../src/oversized-uploads.js";
import { describeHalfClosedRequests } from "../src/half-closed.js";
import { serverLines } from "../src/server-lines.js";

/** Error-level log entries mean a 500 or 503 somewhere: the suite's inputs must never cause one. */
const errors: unknown[] = [];
const logger = { error: (message: string, context?: unknown) => void errors.push({ message, context }), warn: () => {} };

describeHttpSuite("node:http", {
  // Oversized uploads over raw sockets, 20 of 20 each, also under CPU load; no reset accepted.
  moreTests: (srv) => {
    describeOversizedUploads(srv);
    describeHalfClosedRequests(srv);
  },
  async start({ accounts }) {
    const { identity, env } = suiteBootstrap();
    const lines = serverLines();
    const server = await startServer({
      PORT: "0",
      PLANTGATE_DB: ":memory:",
      ...env,
    }, { logger }, { destination: lines.destination });
    try {
      await createWalkers(server.app.admin, accounts);
    } catch (error) {
      await server.close();
      throw error;
    }
    return { baseUrl: server.url, ...identity, close: async () => {
        await server.close();
        if (errors.length > 0) throw new Error(`the server logged errors: ${JSON.stringify(errors)}`);
        lines.check([identity.clientSecret, identity.password]);
      },
    };
  },
});
