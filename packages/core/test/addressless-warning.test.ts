/**
 * A request with no client address shares the per-address brute-force budgets with every other
 * such request (one client-authentication budget across client ids, one console sign-in budget
 * across usernames): anyone sending wrong client ids then locks every client out for the window.
 * Until 2026-12-03 nothing said so: an adapter that passed no `clientIp`, or a Unix socket whose
 * `X-Forwarded-For` was not believed, left the lock-out one budget for everyone in silence. Now
 * the first such request of an app is a warn line naming the cause and the fix, once per app.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type PlantgateOptions } from "../src/index.js";
import type { HandleInfo } from "../src/http/handle-info.js";
import { basic } from "./helpers.js";

const BASE = "https://as.example.test";
const TAIL =
  "so it shares one client-authentication budget (across client ids) and one console sign-in budget (across usernames) with every other request without one, and the per-address lock-outs cannot tell such callers apart: anyone sending wrong client ids locks every client out of client authentication until the window ends";
const ADAPTER = `plantgate: a request came with no client address (the adapter passed no clientIp; on Cloudflare Workers, the request had no IP address in CF-Connecting-IP), ${TAIL}; pass the peer's address as clientIp (README, Embedding); on Cloudflare Workers only requests through Cloudflare's edge carry one (a service binding's or a test's do not). Said once.`;
const UNIX_UNTRUSTED = `plantgate: a request came with no client address (over a Unix socket, and trustedProxies neither lists "unix" nor is a hop count, so its X-Forwarded-For is not believed), ${TAIL}; list "unix" in trustedProxies if the proxy in front sets X-Forwarded-For (README, Client IP behind proxies). Said once.`;
const UNIX_NO_HEADER = `plantgate: a request came with no client address (over a trusted Unix socket, with no X-Forwarded-For or a malformed last entry), ${TAIL}; have the proxy in front set X-Forwarded-For (README, Client IP behind proxies). Said once.`;

async function setup(options: Omit<PlantgateOptions, "storage" | "logger"> = {}) {
  const warnings: string[] = [];
  // An issuer and a key encryption key: the app's other warnings (URLs from the Host, keys in clear) stay out of the way.
  const kek = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32)))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const app = createPlantgate({ issuer: BASE, keyEncryptionKeys: [kek], passwordHashIterations: 1000, ...options, storage: createMemoryStorage(), logger: { error() {}, warn: (message) => void warnings.push(message) } });
  const { clientSecret } = await app.admin.createClient({ clientId: "app-1", grantTypes: ["client_credentials"] });
  const token = (secret: string, info?: HandleInfo, headers: Record<string, string> = {}) =>
    app.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic("app-1", secret), ...headers },
        body: "grant_type=client_credentials",
      }),
      info,
    );
  const accounts = (info?: HandleInfo) => app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`), info);
  return { app, warnings, token, clientSecret, accounts };
}

describe("a request with no client address", () => {
  it("from an adapter that passed no clientIp: one warn line at the first such request of the app, naming the cause and the fix, and none after", async () => {
    const { warnings, token, clientSecret, accounts } = await setup();
    expect((await token(clientSecret, { clientIp: "203.0.113.9" })).status).toBe(200);
    expect(warnings).toEqual([]);
    expect((await token("wrong")).status).toBe(401);
    expect((await token(clientSecret)).status).toBe(200);
    expect((await accounts()).status).toBe(401);
    expect(warnings).toEqual([ADAPTER]);
  });

  it("any route counts, GetAccountList's included: the warning comes with the first request without an address", async () => {
    const { warnings, accounts } = await setup();
    expect((await accounts()).status).toBe(401);
    expect(warnings).toEqual([ADAPTER]);
  });

  it("over a Unix socket whose X-Forwarded-For is not believed (trustedProxies without \"unix\"): the warning says to list it", async () => {
    const { warnings, token, clientSecret } = await setup({ trustedProxies: ["10.0.0.0/8"] });
    expect((await token(clientSecret, { unixSocket: true }, { "x-forwarded-for": "198.51.100.7" })).status).toBe(200);
    expect((await token(clientSecret, { unixSocket: true }, { "x-forwarded-for": "198.51.100.7" })).status).toBe(200);
    expect(warnings).toEqual([UNIX_UNTRUSTED]);
  });

  it("over a trusted Unix socket: an X-Forwarded-For gives the address (no warning); a request without one is the warning, once", async () => {
    const { warnings, token, clientSecret } = await setup({ trustedProxies: ["unix"] });
    expect((await token(clientSecret, { unixSocket: true }, { "x-forwarded-for": "198.51.100.7" })).status).toBe(200);
    expect(warnings).toEqual([]);
    expect((await token(clientSecret, { unixSocket: true })).status).toBe(200);
    expect((await token(clientSecret, { unixSocket: true }, { "x-forwarded-for": "not an address" })).status).toBe(200);
    expect(warnings).toEqual([UNIX_NO_HEADER]);
  });

  it("console requests count too", async () => {
    const { app, warnings } = await setup({ console: { enabled: true } });
    const res = await app.fetch(new Request(`${BASE}/console/api/session`));
    expect(res.status).toBe(401);
    expect(warnings).toEqual([ADAPTER]);
  });

  it("with the brute-force defence off the budgets do not exist: no warning", async () => {
    const { warnings, token, clientSecret } = await setup({ bruteForce: false });
    expect((await token(clientSecret)).status).toBe(200);
    expect((await token("wrong")).status).toBe(401);
    expect(warnings).toEqual([]);
  });

  it("each app warns once for itself", async () => {
    const one = await setup();
    const two = await setup();
    await one.accounts();
    await one.accounts();
    await two.accounts();
    expect({ one: one.warnings, two: two.warnings }).toEqual({ one: [ADAPTER], two: [ADAPTER] });
  });

  it("a request whose client has gone (its signal aborted) is no warning: the peer, not the adapter, took its address away; the next one without an address is", async () => {
    const { app, warnings, accounts } = await setup();
    const gone = new AbortController();
    gone.abort();
    expect((await app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { signal: gone.signal }))).status).toBe(401);
    expect(warnings).toEqual([]);
    expect((await accounts()).status).toBe(401);
    expect(warnings).toEqual([ADAPTER]);
  });
});
