/**
 * The Express example under a wildcard HOST (`0.0.0.0`, `::`: what the README says to use in a
 * container). Its issuer and `baseUrl` default to the listening URL, so that URL must be one a
 * client can dial, as `serve()`'s `url` is (`listeningUrl`: `0.0.0.0` names 127.0.0.1, `::` names
 * ::1). Until 2026-12-01 the Express example named the wildcard, in its metadata too.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startExpressServer, type RunningExpressServer } from "../../../examples/express-server/src/server.js";
import { startServer, type RunningServer } from "../../../examples/node-server/src/server.js";

const running: Array<RunningExpressServer | RunningServer> = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()));
});

const quiet = { destination: { write() {} } };
const env = (HOST: string) => ({ HOST, PORT: "0", PLANTGATE_DB: ":memory:", PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" });

/** The metadata document's issuer and token endpoint, fetched over loopback. */
async function metadata(url: string): Promise<[string, string]> {
  const doc = (await (await fetch(url)).json()) as { issuer: string; token_endpoint: string };
  return [doc.issuer, doc.token_endpoint];
}

describe("examples/express-server under a wildcard HOST", () => {
  for (const [host, loopback] of [["0.0.0.0", "127.0.0.1"], ["::", "[::1]"]] as const) {
    it(`HOST=${host}: the URL, the issuer and the metadata's endpoints name a dialable address (${loopback}), as the node example's do`, async () => {
      const express = await startExpressServer(env(host), {}, quiet);
      running.push(express);
      const node = await startServer(env(host), {}, quiet);
      running.push(node);
      const expressPort = new URL(express.url).port;
      const nodePort = new URL(node.url).port;
      // The node example (serve()'s url): the loopback address of the wildcard's family.
      expect([node.url, ...(await metadata(`${node.url}/.well-known/oauth-authorization-server`))]).toEqual([
        `http://${loopback}:${nodePort}`,
        `http://${loopback}:${nodePort}`,
        `http://${loopback}:${nodePort}/UserService/connect/token`,
      ]);
      // The Express example, fetched over the same loopback address.
      const base = `http://${loopback}:${expressPort}`;
      expect([express.url, express.baseUrl, ...(await metadata(`${base}/.well-known/oauth-authorization-server/auth`))]).toEqual([
        base,
        `${base}/auth`,
        `${base}/auth`,
        `${base}/auth/UserService/connect/token`,
      ]);
    });
  }
});
