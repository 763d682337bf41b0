/**
 * The client against the real example Node server over a socket (`startServer` from
 * examples/node-server, port 0), once with the global fetch and once with node-fetch injected.
 */
import { randomBytes } from "node:crypto";
import { createMemoryStorage } from "@plantgate/core";
import nodeFetch from "node-fetch";
import { startServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { describe, expect, it } from "vitest";
import { createClient, NetworkError, type FetchLike } from "../src/index.js";
import { manualClock, rejectionOf } from "./support.js";
import { realServerSuite, recordingLogger, type ManualClock } from "./real-suite.js";

const hex = (n: number) => randomBytes(n).toString("hex");

async function serverTarget(serverClock: ManualClock, fetch: FetchLike) {
  const errors: unknown[] = [];
  const credentials = { clientId: `client-${hex(4)}`, clientSecret: hex(32), username: `user-${hex(4)}`, password: hex(16) };
  const lines = serverLines();
  const server = await startServer(
    {
      PORT: "0",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: credentials.clientId,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: credentials.clientSecret,
      PLANTGATE_BOOTSTRAP_USERNAME: credentials.username,
      PLANTGATE_BOOTSTRAP_PASSWORD: credentials.password,
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
    },
    // In-memory storage: the example server would otherwise open its default SQLite file in the cwd.
    { storage: createMemoryStorage(), clock: serverClock.now, logger: recordingLogger(errors) },
    { destination: lines.destination },
  );
  let closed = false;
  return {
    ...credentials,
    baseUrl: server.url,
    fetch,
    app: server.app,
    errors,
    close: async () => {
      if (closed) return;
      closed = true;
      await server.close();
      lines.check([credentials.clientSecret, credentials.password]);
    },
  };
}

const transports: [string, FetchLike | undefined][] = [
  ["global fetch", undefined],
  ["node-fetch 3", nodeFetch],
];

for (const [name, injected] of transports) {
  // `undefined` = what the client does by default: the global fetch.
  const fetch: FetchLike = injected ?? ((url, init) => globalThis.fetch(url, init));
  realServerSuite(`over a socket with ${name}`, (clock) => serverTarget(clock, fetch));

  describe(`over a socket with ${name}: transport failures`, () => {
    it("a server that is gone is a NetworkError (fetch_failed), not a protocol error", async () => {
      const t = await serverTarget(manualClock(Date.now()), fetch);
      const client = createClient({
        baseUrl: t.baseUrl,
        clientId: t.clientId,
        clientSecret: t.clientSecret,
        ...(injected ? { fetch: injected } : {}),
      });
      await client.listAccounts();
      await t.close();
      const error = await rejectionOf(client.listAccounts());
      expect(error).toBeInstanceOf(NetworkError);
      expect(error).toMatchObject({ reason: "fetch_failed", status: null });
      expect((error as Error).message).toMatch(/^GET \/rbac\/ServerCommand\/GetAccountList failed: /);
      expect(t.errors).toEqual([]);
    });

    it("the default fetch option really is the global fetch", async () => {
      const t = await serverTarget(manualClock(Date.now()), fetch);
      try {
        const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, ...(injected ? { fetch: injected } : {}) });
        expect((await client.listAccounts()).total).toBe(1);
      } finally {
        await t.close();
      }
    });
  });
}
