/**
 * The client SDK (`@plantgate/client`) in a Worker, in workerd (Miniflare), against plantgate's own
 * Worker (`createWorker()` on D1, a 5 s refresh grace window) behind a service binding: a refresh
 * whose answer was lost is presented again by the SDK on a timer, 1 s later. workerd runs no timer
 * of a request once its response is sent unless the work is registered with `waitUntil`: without
 * the SDK's `waitUntil` option the retry never runs, and the next call, after the grace window,
 * presents the replaced refresh token (reuse: the family revoked, the user signed out); with
 * `waitUntil` from `cloudflare:workers` it runs after the response, and the session lives.
 */
import { describe, expect, it } from "vitest";
import { bundle, COMPATIBILITY_DATE } from "./support.js";
import { get, IDS, OUTCOME, plantgateWorker, sleep, workersPerTest } from "./sdk-workers.js";

const GRACE_SECONDS = 5;

/**
 * The app Worker: one client per isolate (as the README advises), its clock moved by hand
 * (`/advance?s=`), its fetch to plantgate through the binding; `/lose` makes the next refresh lose
 * its answer after plantgate has carried it out (the connection reset as the answer came back).
 */
const APP = (options: string) => `
import { createClient } from "../../client/src/index.ts";
import { waitUntil } from "cloudflare:workers";
let now = Date.now();
let lose = 0;
const sent = [];
let client;
const make = (env) => createClient({
  baseUrl: "http://plantgate.internal",
  clientId: env.PLANTGATE_BOOTSTRAP_CLIENT_ID,
  clientSecret: env.PLANTGATE_BOOTSTRAP_CLIENT_SECRET,
  scope: "Platform_UserAPIs offline_access",
  credentials: { username: env.PLANTGATE_BOOTSTRAP_USERNAME, password: env.PLANTGATE_BOOTSTRAP_PASSWORD },
  keepCredentials: false,
  clock: () => now,
  fetch: async (url, init) => {
    const grant = init.body === undefined ? "" : " " + new URLSearchParams(init.body).get("grant_type");
    sent.push(init.method + " " + new URL(url).pathname + grant);
    const response = await env.PLANTGATE.fetch(url, init);
    if (grant === " refresh_token" && lose > 0) {
      lose--;
      await response.text();
      sent.push("(answer lost)");
      throw new TypeError("fetch failed");
    }
    return response;
  },
  ...${options},
});
${OUTCOME}
export default {
  async fetch(request, env) {
    client ??= make(env);
    const url = new URL(request.url);
    if (url.pathname === "/advance") now += Number(url.searchParams.get("s")) * 1000;
    else if (url.pathname === "/lose") {
      lose = 1;
      return Response.json(await outcome(client.getAccessToken().then(() => "token")));
    } else if (url.pathname === "/accounts") return Response.json(await outcome(client.listAccounts().then((page) => page.total)));
    else if (url.pathname === "/sent") return Response.json(sent);
    return Response.json("ok");
  },
};
`;

const startWorkers = workersPerTest();

/** plantgate's Worker and the app Worker with these `createClient` options (a JS object literal); the app's origin. */
async function start(options: string): Promise<string> {
  return startWorkers([
    { name: "app", modules: true, script: await bundle(APP(options)), compatibilityDate: COMPATIBILITY_DATE, bindings: IDS, serviceBindings: { PLANTGATE: "plantgate" } },
    await plantgateWorker({ PLANTGATE_REFRESH_GRACE_SECONDS: String(GRACE_SECONDS) }),
  ]);
}


/** Signs in, then a refresh (the token due by the app's clock) loses its answer; then, past the grace window, one more call. */
async function loseThenCallAfterTheWindow(base: string): Promise<{ lost: unknown; after: unknown; sent: unknown }> {
  expect(await get(base, "/accounts")).toBe(1);
  await get(base, "/advance?s=7200");
  const lost = await get(base, "/lose");
  await sleep((GRACE_SECONDS + 1.5) * 1000);
  const after = await get(base, "/accounts");
  return { lost, after, sent: await get(base, "/sent") };
}

const TOKEN = "POST /UserService/connect/token";
const ACCOUNTS = "GET /rbac/ServerCommand/GetAccountList";
const LOST = "NetworkError: POST /UserService/connect/token failed: fetch failed";

describe("the SDK's background retry of a refresh whose answer was lost, in workerd", () => {
  it("without waitUntil: the timer never runs once the response is sent, and the call after the grace window is signed out", async () => {
    const base = await start("{}");
    expect(await loseThenCallAfterTheWindow(base)).toEqual({
      lost: LOST,
      after: "OAuthError: invalid_grant: The refresh token is invalid, expired or revoked.",
      sent: [`${TOKEN} password`, ACCOUNTS, `${TOKEN} refresh_token`, "(answer lost)", `${TOKEN} refresh_token`],
    });
  }, 60_000);

  it("with waitUntil from cloudflare:workers: the retry runs 0.5 to 1 s after the response and gets the lost answer again; the call after the window has a session", async () => {
    const base = await start("{ waitUntil }");
    expect(await loseThenCallAfterTheWindow(base)).toEqual({
      lost: LOST,
      after: 1,
      sent: [`${TOKEN} password`, ACCOUNTS, `${TOKEN} refresh_token`, "(answer lost)", `${TOKEN} refresh_token`, ACCOUNTS],
    });
  }, 60_000);
});
