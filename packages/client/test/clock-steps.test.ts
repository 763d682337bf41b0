/**
 * The client's `clock` (default `Date.now`) is a wall clock, and a wall clock steps: an NTP
 * correction, a VM or laptop resumed from suspend, an operator setting the time. Against a real
 * HTTP server on a socket (node:http, through the global fetch) that plays the token endpoint and
 * GetAccountList, with the client's clock moved by hand while real time (the server's, and the
 * client's monotonic `performance.now()`) passes on its own:
 * - the backoff window after failed token requests and a `Retry-After` hold last their own length
 *   in real time, whatever the clock does: a clock stepped back neither stretches them (until
 *   2026-11-30 a step back of less than the time already waited added itself to the window) nor
 *   ends them early (until then a step back before the window's start ended it at once, and the
 *   next call sent its request into the server's Retry-After); a clock stepped forward ends them;
 * - a token is due, and expired, when its lifetime has passed in real time though the clock was
 *   stepped back (until then it was fresh by the clock for as long as the step, handed out after
 *   the server's expiry, and every API answered 401), and once seen due it stays due: a refresh
 *   whose answer was lost is presented again in the background though the clock went back.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, NetworkError, OAuthError, TOKEN_PATH, type FetchLike, type PlantgateClient } from "../src/index.js";
import { accountPage, manualClock, rejectionOf, startTarget, userProcess, type ServerTarget } from "./support.js";

type Mode = "reset" | "retry-after" | "ok";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The token endpoint: `mode` says how it answers ("retry-after": 503 temporarily_unavailable with
 * `Retry-After: retryAfter`); issued tokens expire `expiresIn` s of real time after they were
 * issued, and GetAccountList answers 401 to one past that, as a server with a correct clock does.
 */
async function tokenServer() {
  const state = { mode: "ok" as Mode, expiresIn: 3600, retryAfter: 2, requests: 0, expiry: new Map<string, number>(), refused: [] as string[] };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === TOKEN_PATH) {
      state.requests++;
      req.resume();
      req.on("end", () => {
        if (state.mode === "reset") {
          req.socket.destroy();
        } else if (state.mode === "retry-after") {
          res
            .writeHead(503, { "content-type": "application/json", "retry-after": String(state.retryAfter) })
            .end(JSON.stringify({ error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." }));
        } else {
          const token = `at-${state.requests}`;
          state.expiry.set(token, performance.now() + state.expiresIn * 1000);
          res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify({ access_token: token, token_type: "Bearer", expires_in: state.expiresIn, scope: "Platform_UserAPIs" }));
        }
      });
      return;
    }
    if (path === "/rbac/ServerCommand/GetAccountList") {
      const token = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      if (!(performance.now() < (state.expiry.get(token) ?? -Infinity))) {
        state.refused.push(token);
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: 1202, message: "The access token is invalid or expired." }));
      } else {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(accountPage(1, 20, 1)));
      }
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { state, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

function clientOf(baseUrl: string, clock: ReturnType<typeof manualClock>): PlantgateClient {
  return createClient({ baseUrl, clientId: "third-party", clientSecret: "client-secret-that-is-long-enough", scope: "Platform_UserAPIs", clock: clock.now });
}

/** Two token requests in a row without an answer: a backoff window of 0.5 to 1 s opens (on both clocks). */
async function backedOff() {
  const clock = manualClock();
  const { state, baseUrl } = await tokenServer();
  const client = clientOf(baseUrl, clock);
  state.mode = "reset";
  expect(await rejectionOf(client.getAccessToken())).toMatchObject({ reason: "fetch_failed", retryAfter: null });
  expect(await rejectionOf(client.getAccessToken())).toMatchObject({ reason: "fetch_failed", retryAfter: null });
  const held = await rejectionOf(client.getAccessToken());
  expect(held).toBeInstanceOf(NetworkError);
  expect(held).toMatchObject({ reason: "fetch_failed", retryAfter: 1 });
  expect(state.requests).toBe(2);
  return { clock, state, client };
}

it("backoff: a clock stepped back by less than the time waited does not stretch the window; it ends after its own length in real time", async () => {
  const { clock, state, client } = await backedOff();
  // 0.4 s on the clock (still within the window, at least 0.5 s), then 1.1 s of real time, and the
  // clock is stepped back 0.3 s: it reads 0.1 s after the window opened. Until 2026-11-30 the window
  // went on until the clock had moved on again, here 0.4 to 0.9 s more (a step back of less than
  // the time waited added itself: a 300 s hold up to nearly 600 s, every call refused unsent).
  clock.advance(0.4);
  await sleep(1100);
  clock.advance(-0.3);
  state.mode = "ok";
  expect(await client.getAccessToken()).toBe("at-3");
  expect(state.requests).toBe(3);
});

it("backoff: a clock stepped back by an hour keeps the window to its real length: it does not end at once", async () => {
  const { clock, state, client } = await backedOff();
  clock.advance(-3600);
  state.mode = "ok";
  // Until 2026-11-30 a clock before the window's start ended it at once: this call sent a request.
  const held = await rejectionOf(client.getAccessToken());
  expect(held).toMatchObject({ reason: "fetch_failed", retryAfter: 1 });
  expect(state.requests).toBe(2);
  await sleep(1050);
  expect(await client.getAccessToken()).toBe("at-3");
  expect(state.requests).toBe(3);
});

it("backoff: a clock stepped forward ends the window (a resume from suspend, where the monotonic clock stood still)", async () => {
  const { clock, state, client } = await backedOff();
  clock.advance(3600);
  state.mode = "ok";
  expect(await client.getAccessToken()).toBe("at-3");
  expect(state.requests).toBe(3);
});

it("Retry-After: a clock stepped back during the hold neither stretches it nor ends it early; forward, it ends", async () => {
  const clock = manualClock();
  const { state, baseUrl } = await tokenServer();
  const client = clientOf(baseUrl, clock);
  state.mode = "retry-after";
  state.retryAfter = 2;
  const answer = await rejectionOf(client.getAccessToken());
  expect(answer).toBeInstanceOf(OAuthError);
  expect(answer).toMatchObject({ status: 503, error: "temporarily_unavailable", retryAfter: 2 });
  state.mode = "ok";
  // Stepped back an hour at once: still held, for the hold's own seconds (not 3602). Until
  // 2026-11-30 the step ended the hold, and this call sent its request into the Retry-After.
  clock.advance(-3600);
  const held = await rejectionOf(client.getAccessToken());
  expect(held).toBeInstanceOf(OAuthError);
  expect(held).toMatchObject({ status: 503, error: "temporarily_unavailable", retryAfter: 2 });
  expect((held as Error).cause).toBe(answer);
  expect(state.requests).toBe(1);
  // 1.5 s on the clock, then back 1 s (0.5 s after the hold began, by the clock), 2.1 s of real
  // time: the hold is over. Until 2026-11-30 it went on 1.5 s more.
  clock.advance(3600 + 1.5);
  clock.advance(-1);
  await sleep(2100);
  expect(await client.getAccessToken()).toBe("at-2");
  expect(state.requests).toBe(2);
  // Forward: a new hold of 300 s (refresh() asks for a new token at once) ends when the clock
  // jumps past it, as after a resume from suspend.
  state.mode = "retry-after";
  state.retryAfter = 300;
  expect(await rejectionOf(client.refresh())).toMatchObject({ status: 503, retryAfter: 300 });
  expect(await rejectionOf(client.refresh())).toMatchObject({ status: 503, retryAfter: 300 });
  expect(state.requests).toBe(3);
  state.mode = "ok";
  clock.advance(300);
  expect(await client.getAccessToken()).toBe("at-4");
  expect(state.requests).toBe(4);
});

it("a token is due, and then expired, after its lifetime in real time though the clock was stepped back: renewed, never handed out past the server's expiry", async () => {
  const clock = manualClock();
  const { state, baseUrl } = await tokenServer();
  const client = clientOf(baseUrl, clock);
  // 2 s tokens: due (refreshSkewSeconds capped at half the lifetime) 1 s after they were asked for.
  state.expiresIn = 2;
  expect(await client.getAccessToken()).toBe("at-1");
  clock.advance(-3600);
  expect(await client.getAccessToken()).toBe("at-1");
  await sleep(1100);
  // Due in real time: renewed. Until 2026-11-30 at-1 was fresh by the clock for an hour more.
  expect(await client.getAccessToken()).toBe("at-2");
  expect(state.requests).toBe(2);
  // The endpoint goes down while at-2 is due but still valid: handed out; once it has expired
  // (in real time) the calls fail, and no API request carries it.
  await sleep(1100);
  state.mode = "reset";
  expect((await client.listAccounts()).total).toBe(1);
  await sleep(1000);
  expect(await rejectionOf(client.listAccounts())).toMatchObject({ reason: "fetch_failed" });
  expect(await rejectionOf(client.getAccessToken())).toMatchObject({ reason: "fetch_failed" });
  expect(state.refused).toEqual([]);
});

describe("a refresh whose answer was lost, then the clock stepped back an hour", () => {
  let target: ServerTarget | null = null;
  afterEach(async () => {
    await target?.close();
    expect(target?.errors).toEqual([]);
    target = null;
  });

  it("is still presented again in the background (0.5 to 1 s later) within the server's grace window: the session lives", async () => {
    // The real example server (memory storage, its clock manual, 30 s refresh grace window).
    target = await startTarget();
    const t = target;
    const sent: string[] = [];
    let lose = 1;
    let answered = 0;
    // The server carries out the first refresh; its answer is lost on the way back.
    const losing: FetchLike = async (url, init) => {
      const grant = new URLSearchParams(init.body ?? "").get("grant_type");
      sent.push(grant ?? new URL(url).pathname);
      const response = await globalThis.fetch(url, init);
      if (grant === "refresh_token") answered++;
      if (grant === "refresh_token" && lose > 0) {
        lose--;
        await response.text();
        throw new TypeError("fetch failed", { cause: new Error("read ECONNRESET") });
      }
      return response;
    };
    const { client, clock } = userProcess(t, { fetch: losing });
    await client.getAccessToken();
    // Its 7200 s token is due (10 s left, on both clocks); the refresh's answer is lost.
    for (const c of [t.clock, clock]) c.advance(7190);
    expect(await client.getAccessToken().then(() => "token", (e: unknown) => (e as NetworkError).reason)).toBe("token");
    expect(sent).toEqual(["password", "refresh_token"]);
    // The client's clock is stepped back an hour (NTP). Until 2026-11-30 the token looked fresh by
    // it again: the background retry 1 s later sent nothing, and the first renewal after the grace
    // window presented the replaced refresh token (reuse: the family revoked, the user signed out).
    clock.advance(-3600);
    const end = performance.now() + 3000;
    while (answered < 2 && performance.now() < end) await sleep(20);
    expect(sent).toEqual(["password", "refresh_token", "refresh_token"]);
    // After the grace window and the old token's expiry (server's clock), the session goes on.
    t.clock.advance(60);
    clock.advance(60);
    expect((await client.listAccounts()).total).toBe(1);
    const events = await t.events();
    expect(events.filter((e) => e.startsWith("token.refreshed") || e === "refresh_token.reuse_detected")).toEqual(["token.refreshed", "token.refreshed"]);
  });
});
