/**
 * The HTTP conformance suite against `@plantgate/cloudflare` running in workerd (Miniflare) on a
 * real D1 database. The Worker is the full entry (`createWorker` with `swaggerUi()` and
 * `consolePage()`), bundled here with
 * esbuild for the Workers runtime; the bundle must contain no `node:*` import. Its size (raw and
 * gzipped) is printed. The extra accounts are created from Node on the same D1 database.
 */
import { createPlantgate } from "@plantgate/core";
import { createD1Storage } from "@plantgate/storage-sql/d1";
import { Miniflare } from "miniflare";
import { connectD1Bridge, d1BridgeWorker } from "../../../packages/storage-sql/test/d1-bridge.js";
import { createWalkers, suiteBootstrap } from "../src/bootstrap.js";
import { describeHttpSuite } from "../src/suite.js";
import { bundleWorker, sizeLine } from "../src/bundle-worker.js";
import { describeOversizedUploads } from "../src/oversized-uploads.js";
import { describeHalfClosedRequests } from "../src/half-closed.js";

describeHttpSuite("workerd + D1 (@plantgate/cloudflare in Miniflare)", {
  // No PLANTGATE_ISSUER: URLs come from the request.
  baseUrlConfigured: false,
  // Oversized uploads over raw sockets, 20 of 20 each, also under CPU load; no reset accepted.
  moreTests: (srv) => {
    describeOversizedUploads(srv);
    describeHalfClosedRequests(srv);
  },
  async start({ accounts }) {
    const { identity, env } = suiteBootstrap();
    // The full Worker (with /docs and the console page), so the suite's /docs checks run on workerd too.
    const bundle = await bundleWorker("full");
    console.log(sizeLine("full", bundle));
    const mf = new Miniflare({
      workers: [
        {
          name: "plantgate",
          modules: true,
          script: bundle.script,
          d1Databases: ["DB"],
          bindings: env,
        },
        // The same D1 database, reached from Node over the bridge Worker (see storage-sql's d1-bridge.ts).
        d1BridgeWorker("DB"),
      ],
    });
    try {
      // No PLANTGATE_ISSUER: the core derives issuer and URLs from the request (Miniflare's URL).
      const baseUrl = (await mf.ready).origin;
      // The first request makes the Worker migrate D1 and ensure the bootstrap client and account.
      const first = await fetch(`${baseUrl}/.well-known/jwks.json`);
      await first.arrayBuffer();
      if (first.status !== 200) throw new Error(`the Worker did not start: ${first.status}`);
      const bridge = await connectD1Bridge(mf);
      try {
        await createWalkers(createPlantgate({ storage: createD1Storage(bridge.database), passwordHashIterations: 1000 }).admin, accounts);
      } finally {
        await bridge.close();
      }
      return { baseUrl, ...identity, close: () => mf.dispose() };
    } catch (error) {
      await mf.dispose();
      throw error;
    }
  },
});
