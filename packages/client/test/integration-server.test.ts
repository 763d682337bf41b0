/**
 * The client against the real example Node server over a socket (`startServer` from
 * examples/node-server, port 0), once with the global fetch and once with node-fetch injected.
 */
import nodeFetch from "node-fetch";
import { describe, expect, it } from "vitest";
import { createMemoryStorage, StorageError } from "@plantgate/core";
import { ApiError, createClient, NetworkError, type FetchLike } from "../src/index.js";
import { manualClock, rejectionOf, startTarget } from "./support.js";
import { realServerSuite, type ManualClock } from "./real-suite.js";

/** The example server on `serverClock`, reached through `fetch`. */
async function serverTarget(serverClock: ManualClock, fetch: FetchLike) {
  return { ...(await startTarget({ clock: serverClock })), fetch };
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

    it("storage down: GetAccountList's 503 is an ApiError 1503 whose retryAfter is the server's Retry-After (5)", async () => {
      const storage = createMemoryStorage();
      let down = false;
      const list = storage.accounts.list.bind(storage.accounts);
      storage.accounts.list = (...args: Parameters<typeof list>) => (down ? Promise.reject(new StorageError("database unreachable")) : list(...args));
      const t = await startTarget({ storage });
      try {
        const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, ...(injected ? { fetch: injected } : {}) });
        expect((await client.listAccounts()).total).toBe(1);
        down = true;
        const error = await rejectionOf(client.listAccounts());
        expect(error).toBeInstanceOf(ApiError);
        expect(error).toMatchObject({ status: 503, error: 1503, retryAfter: 5 });
      } finally {
        await t.close();
      }
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
