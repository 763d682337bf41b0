/**
 * A host's own `onEvent` given to the example server (`startServer(env, { onEvent })`) receives every
 * security event beside the server's own hook, not in its place: the events' JSON lines and the
 * lock-out counter go on. Until 2026-12-01 the override replaced the server's hook, and both stopped
 * without a word.
 */
import { randomBytes } from "node:crypto";
import type { SecurityEvent } from "@plantgate/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { TOKEN_PATH } from "./helpers.js";

const CLIENT_ID = "hook-client";
const CLIENT_SECRET = randomBytes(24).toString("hex");
const USERNAME = "hook-user";
const PASSWORD = randomBytes(12).toString("hex");
const received: SecurityEvent[] = [];
const lines: string[] = [];
let server: RunningServer;

beforeAll(async () => {
  server = await startServer(
    {
      PORT: "0",
      PLANTGATE_METRICS_PORT: "0",
      PLANTGATE_DB: ":memory:",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
      PLANTGATE_BOOTSTRAP_USERNAME: USERNAME,
      PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD,
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
      PLANTGATE_BRUTE_FORCE_MAX_FAILURES: "2",
    },
    { onEvent: (event) => void received.push(event) },
    { destination: { write: (line: string) => void lines.push(line) } },
  );
});
afterAll(async () => {
  await server?.close();
});

const token = (form: Record<string, string>) =>
  fetch(`${server.url}${TOKEN_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CLIENT_ID}:${CLIENT_SECRET}`)}` },
    body: new URLSearchParams(form),
  });

it("a host's onEvent override gets the events, and the server's JSON lines and lock-out counter still do", async () => {
  expect((await token({ grant_type: "client_credentials" })).status).toBe(200);
  for (let i = 0; i < 2; i++) expect((await token({ grant_type: "password", username: USERNAME, password: "wrong-password" })).status).toBe(400);
  // The third is the first one the lock refuses.
  const locked = await token({ grant_type: "password", username: USERNAME, password: "wrong-password" });
  expect([locked.status, await locked.json(), locked.headers.get("retry-after")]).toEqual([
    429,
    { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." },
    "900",
  ]);
  // The hook is not awaited on the request path: the events land within a moment.
  // (The bootstrap's client.created and account.created come first.)
  await expect.poll(() => received.map((e) => e.type)).toEqual(["client.created", "account.created", "token.issued", "account.login_failed", "account.login_failed", "account.locked_out", "account.login_failed"]);
  const logged = lines.map((line) => (JSON.parse(line) as { event?: string }).event).filter((event) => event !== undefined);
  expect(logged).toEqual(expect.arrayContaining(["token.issued", "account.login_failed", "account.locked_out"]));
  expect(logged.filter((event) => event === "account.login_failed")).toHaveLength(3);
  const metrics = await (await fetch(server.metricsUrl!)).text();
  expect(metrics).toMatch(/^plantgate_lockouts_total\{lock="username_address"\} 1$/m);
});
