/**
 * `pnpm start` behind one cloud load balancer: `PLANTGATE_TRUSTED_PROXIES=1` (a hop count) makes the
 * example server (`startServer`, over a real socket) take the rightmost X-Forwarded-For entry as the
 * client, whatever the peer's address, ignoring what the client prepended. Until 2026-12-02 the
 * variable took addresses only ("1" stopped the start), and `0.0.0.0/0` took the client-written left end.
 */
import { randomBytes } from "node:crypto";
import type { SecurityEvent } from "@plantgate/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { TOKEN_PATH } from "./helpers.js";

const CLIENT_ID = "hops-client";
const CLIENT_SECRET = randomBytes(24).toString("hex");
const received: SecurityEvent[] = [];
let server: RunningServer;

beforeAll(async () => {
  server = await startServer(
    {
      PORT: "0",
      PLANTGATE_DB: ":memory:",
      PLANTGATE_TRUSTED_PROXIES: "1",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
    },
    { onEvent: (event) => void received.push(event) },
    { destination: { write() {} } },
  );
});
afterAll(async () => {
  await server?.close();
});

it("PLANTGATE_TRUSTED_PROXIES=1: the client is the rightmost X-Forwarded-For entry", async () => {
  for (const xff of ["6.6.6.6, 198.51.100.7", "198.51.100.8"]) {
    const res = await fetch(`${server.url}${TOKEN_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CLIENT_ID}:${CLIENT_SECRET}`)}`, "x-forwarded-for": xff },
      body: "grant_type=client_credentials",
    });
    expect(res.status).toBe(200);
  }
  await expect.poll(() => received.filter((e) => e.type === "token.issued").map((e) => (e as { client_ip?: unknown }).client_ip)).toEqual(["198.51.100.7", "198.51.100.8"]);
});
