/**
 * The metrics' labels stay within small fixed sets whatever the clients send: the example server
 * (`startServer`, as `pnpm start` runs it) with PLANTGATE_METRICS_PORT, over real sockets, gets
 * two rounds of traffic that differs in everything a client controls (paths, queries, methods,
 * client ids, usernames, grant types, forwarded addresses); the second round adds no series, and
 * no label holds anything the requests carried.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { TOKEN_PATH, ACCOUNTS_PATH } from "./helpers.js";

const CLIENT_ID = "cardinality-client";
const CLIENT_SECRET = randomBytes(32).toString("hex");
let server: RunningServer;

beforeAll(async () => {
  server = await startServer(
    {
      PORT: "0",
      PLANTGATE_METRICS_PORT: "0",
      PLANTGATE_DB: ":memory:",
      PLANTGATE_CONSOLE: "1",
      PLANTGATE_TRUSTED_PROXIES: "127.0.0.1",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
      // Enough that the unknown usernames are refused, never locked out (a lock is a label value too, but one of four).
      PLANTGATE_BRUTE_FORCE_MAX_FAILURES: "1000",
      // Nor refused as busy (429, result="temporarily_unavailable": fixed label values, but present in one round and not the other).
      PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS: "1000",
    },
    {},
    { destination: { write() {} } },
  );
});
afterAll(async () => {
  await server?.close();
});

/** What one round sends that a label must never hold. */
async function round(): Promise<string[]> {
  const carried: string[] = [];
  const word = () => {
    const value = `u${randomBytes(6).toString("hex")}`;
    carried.push(value);
    return value;
  };
  const ip = () => {
    const value = `198.51.100.${1 + randomBytes(1)[0]! % 254}`;
    carried.push(value);
    return value;
  };
  const requests: Array<Promise<Response>> = [];
  for (let i = 0; i < 40; i++) {
    const headers = { "x-forwarded-for": ip() };
    requests.push(fetch(`${server.url}/${word()}/${word()}?${word()}=${word()}`, { headers }));
    requests.push(fetch(`${server.url}/console/${word()}`, { headers }));
    requests.push(fetch(`${server.url}/docs/${word()}`, { headers }));
    requests.push(fetch(`${server.url}${ACCOUNTS_PATH}?page=${word()}`, { headers: { ...headers, authorization: `Bearer ${word()}` } }));
    requests.push(fetch(`${server.url}/${word()}`, { method: ["PROPFIND", "MKCOL", "PURGE", "LOCK", "SEARCH", "PATCH"][i % 6]!, headers }));
    const form = (fields: Record<string, string>) =>
      fetch(server.url + TOKEN_PATH, { method: "POST", headers: { ...headers, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields) });
    requests.push(form({ grant_type: "client_credentials", client_id: word(), client_secret: word() }));
    requests.push(form({ grant_type: word(), client_id: CLIENT_ID, client_secret: CLIENT_SECRET }));
    requests.push(form({ grant_type: "password", client_id: CLIENT_ID, client_secret: CLIENT_SECRET, username: word(), password: word() }));
    requests.push(form({ grant_type: "refresh_token", client_id: CLIENT_ID, client_secret: CLIENT_SECRET, refresh_token: word() }));
  }
  const answers = await Promise.all(requests);
  for (const answer of answers) {
    await answer.arrayBuffer();
    expect(answer.status).toBeLessThan(500);
  }
  return carried;
}

/** plantgate's own samples: one line per series. */
async function series(): Promise<string[]> {
  const text = await (await fetch(server.metricsUrl!)).text();
  return text.split("\n").filter((line) => line.startsWith("plantgate_"));
}

it("a second round of all-new paths, methods, clients, usernames, grant types and addresses adds no series, and no label holds what a request carried", { timeout: 60_000 }, async () => {
  const first = await round();
  const afterFirst = await series();
  const second = await round();
  const afterSecond = await series();
  // The same series, only their counts moved.
  const names = (lines: string[]) => lines.map((line) => line.slice(0, line.lastIndexOf(" "))).sort();
  expect(names(afterSecond)).toEqual(names(afterFirst));
  const requests = afterSecond.filter((line) => line.startsWith("plantgate_http_requests_total{"));
  const routes = [...new Set(requests.map((line) => /route="([^"]*)"/.exec(line)![1]))].sort();
  expect(routes).toEqual(["/UserService/connect/token", "/console", "/docs", "/rbac/ServerCommand/GetAccountList", "unmatched"]);
  const methods = [...new Set(requests.map((line) => /method="([^"]*)"/.exec(line)![1]))].sort();
  expect(methods).toEqual(["GET", "PATCH", "POST", "_OTHER"]);
  const grants = [...new Set(afterSecond.filter((l) => l.startsWith("plantgate_token_requests_total{")).map((line) => /grant_type="([^"]*)"/.exec(line)![1]))].sort();
  expect(grants).toEqual(["client_credentials", "password", "refresh_token", "unsupported"]);
  const all = afterSecond.join("\n");
  for (const value of [...first, ...second, CLIENT_ID, "127.0.0.1"]) expect(all).not.toContain(value);
});
