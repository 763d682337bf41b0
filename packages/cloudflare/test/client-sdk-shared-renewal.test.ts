/**
 * The client SDK (`@plantgate/client`) shared across requests in one Worker isolate, in workerd
 * (Miniflare), against plantgate's Worker (`createWorker()` on D1) behind a slow hop (a Worker that
 * holds the token request for a while, as a slow token endpoint does): a call that gives up (its
 * signal aborted) while the token renewal it started is still on the way sends its response, and
 * the renewal goes on without it. The next requests' calls join that renewal (single flight).
 */
import { describe, expect, it } from "vitest";
import { bundle, COMPATIBILITY_DATE } from "./support.js";
import { get, IDS, OUTCOME, plantgateWorker, sleep, workersPerTest } from "./sdk-workers.js";


/** The slow hop: holds a request carrying x-hold-ms that long (its own timer, in its own request), then forwards it to plantgate. */
const SLOW = `
export default {
  async fetch(request, env) {
    const ms = Number(request.headers.get("x-hold-ms") ?? 0);
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
    return env.PLANTGATE.fetch(request);
  },
};
`;

/**
 * The app Worker: one client per isolate (module scope, as the README advises), its clock moved by
 * hand (`/advance?s=`), its fetch through the slow hop; `/give-up?hold=` makes the next token
 * request held that long and calls getAccessToken with a signal that gives up after 300 ms.
 */
const APP = (options: string) => `
import { createClient } from "../../client/src/index.ts";
import { waitUntil } from "cloudflare:workers";
let now = Date.now();
let hold = 0;
const sent = [];
let client;
const make = (env) => createClient({
  baseUrl: "http://plantgate.internal",
  clientId: env.PLANTGATE_BOOTSTRAP_CLIENT_ID,
  clientSecret: env.PLANTGATE_BOOTSTRAP_CLIENT_SECRET,
  scope: "Platform_UserAPIs offline_access",
  credentials: { username: env.PLANTGATE_BOOTSTRAP_USERNAME, password: env.PLANTGATE_BOOTSTRAP_PASSWORD },
  keepCredentials: false,
  timeoutMs: 4000,
  clock: () => now,
  fetch: async (url, init) => {
    const grant = init.body === undefined ? "" : " " + new URLSearchParams(init.body).get("grant_type");
    sent.push(init.method + " " + new URL(url).pathname + grant);
    const headers = { ...init.headers };
    if (grant !== "" && hold > 0) {
      headers["x-hold-ms"] = String(hold);
      hold = 0;
    }
    const response = await env.SLOW.fetch(url, { ...init, headers });
    if (grant !== "") sent.push("(answered " + response.status + ")");
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
    else if (url.pathname === "/give-up") {
      hold = Number(url.searchParams.get("hold"));
      return Response.json(await outcome(client.getAccessToken({ signal: AbortSignal.timeout(300) }).then(() => "token")));
    } else if (url.pathname === "/accounts") {
      const started = Date.now();
      const result = await outcome(client.listAccounts().then((page) => page.total));
      return Response.json({ result, ms: Date.now() - started });
    } else if (url.pathname === "/sent") return Response.json(sent);
    return Response.json("ok");
  },
};
`;

const startWorkers = workersPerTest();

async function start(options: string): Promise<string> {
  return startWorkers([
    { name: "app", modules: true, script: await bundle(APP(options)), compatibilityDate: COMPATIBILITY_DATE, bindings: IDS, serviceBindings: { SLOW: "slow" } },
    { name: "slow", modules: true, script: await bundle(SLOW), compatibilityDate: COMPATIBILITY_DATE, serviceBindings: { PLANTGATE: "plantgate" } },
    await plantgateWorker(),
  ]);
}


/** Signs in; the token due, a call gives up after 300 ms while its renewal is held 1.5 s; 2 s later (the renewal would have ended), a call. */
async function giveUpThenCall(base: string) {
  expect(await get(base, "/accounts")).toMatchObject({ result: 1 });
  await get(base, "/advance?s=7200");
  const gaveUp = await get(base, "/give-up?hold=1500");
  await sleep(2000);
  const next = (await get(base, "/accounts")) as { result: unknown; ms: number };
  return { gaveUp, next: next.result, quick: next.ms < 1000 };
}

const TOKEN = "POST /UserService/connect/token";
const ACCOUNTS = "GET /rbac/ServerCommand/GetAccountList";
const GAVE_UP = "TimeoutError: The operation was aborted due to timeout";

describe("a call that gave up while the shared renewal was on the way, in workerd", () => {
  it("with waitUntil: the renewal is registered when it starts, ends after the response is sent, and the next calls in the isolate have its token at once", async () => {
    const base = await start("{ waitUntil }");
    expect(await giveUpThenCall(base)).toEqual({ gaveUp: GAVE_UP, next: 1, quick: true });
    expect(await get(base, "/accounts")).toMatchObject({ result: 1 });
    expect(await get(base, "/sent")).toEqual([`${TOKEN} password`, "(answered 200)", ACCOUNTS, `${TOKEN} refresh_token`, "(answered 200)", ACCOUNTS, ACCOUNTS]);
  }, 60_000);

  it("without waitUntil: the renewal is cut off with the response and never settles; calls joining it fail at their own deadline until a whole timeoutMs past its request's, then a new renewal starts and the isolate has a session again", async () => {
    const base = await start("{}");
    expect(await giveUpThenCall(base)).toEqual({ gaveUp: GAVE_UP, next: "NetworkError: GET /rbac/ServerCommand/GetAccountList got no complete answer within 4000 ms (no access token yet)", quick: false });
    // The cut-off token request's deadline was 4 s after the give-up; 4 s (timeoutMs) more, and
    // it is left behind. Until 2026-11-30 every later call joined it and failed, for good.
    await sleep(2500);
    expect(await get(base, "/accounts")).toMatchObject({ result: 1 });
    expect(await get(base, "/accounts")).toMatchObject({ result: 1 });
    expect(await get(base, "/sent")).toEqual([`${TOKEN} password`, "(answered 200)", ACCOUNTS, `${TOKEN} refresh_token`, `${TOKEN} refresh_token`, "(answered 200)", ACCOUNTS, ACCOUNTS]);
  }, 60_000);
});
