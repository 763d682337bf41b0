/**
 * The HTTP conformance suite against the Express example server (`startExpressServer`), plantgate
 * mounted at the default `/auth`, over a real socket.
 */
import { startExpressServer } from "@plantgate/example-express-server";
import { createWalkers, suiteBootstrap } from "../src/bootstrap.js";
import { describeHttpSuite } from "../src/suite.js";
import { describeOversizedUploads } from "../src/oversized-uploads.js";
import { serverLines } from "../src/server-lines.js";

/** Error-level log entries mean a 500 or 503 somewhere: the suite's inputs must never cause one. */
const errors: unknown[] = [];
const logger = { error: (message: string, context?: unknown) => void errors.push({ message, context }), warn: () => {} };

describeHttpSuite("express (mounted at /auth)", {
  // The adapter's documented default (`notFound: "next"`) hands unknown paths to Express.
  unknownPaths: "host",
  // Oversized uploads over raw sockets, 20 of 20 each, also under CPU load; no reset accepted.
  moreTests: describeOversizedUploads,
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
