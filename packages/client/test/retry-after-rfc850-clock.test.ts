/**
 * An answer whose `Date` is in the obsolete RFC 850 form (`Thursday, 01-Jun-90 00:00:00 GMT`), with an
 * IMF-fixdate `Retry-After` 120 s after it: the two-digit year is read within 50 years of the
 * client's `clock` (RFC 9110 §5.6.7), as everything else of the client's time is, not of the host's
 * `Date.now()`. Until 2026-12-02 it was read against `Date.now()`: a client whose clock is set
 * decades away from the host's (a test's) read the `Date` a century off, so the `Retry-After` was a
 * century long (held 300 s) or long past (retryAfter 0, no hold), depending on the real year.
 * From a real HTTP server on a socket (node:http, through the global fetch): plantgate itself sends
 * IMF-fixdate only.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError, createClient, OAuthError, TOKEN_PATH } from "../src/index.js";
import { manualClock, rejectionOf } from "./support.js";

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
/** RFC 850's form of an HTTP-date: a two-digit year. */
const rfc850 = (ms: number) => {
  const [, day, month, year, time] = /^\w+, (\d\d) (\w+) \d\d(\d\d) (\S+) GMT$/.exec(new Date(ms).toUTCString())!;
  return `${WEEKDAYS[new Date(ms).getUTCDay()]}, ${day}-${month}-${year} ${time} GMT`;
};

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/**
 * A server whose clock reads `now`: its first token request and every API request are answered 503
 * with `Date` in RFC 850 form and `Retry-After` 120 s later as an IMF-fixdate; later token
 * requests get a token.
 */
async function busyServer(now: number) {
  const state = { tokenRequests: 0 };
  const headers = { "content-type": "application/json", date: rfc850(now), "retry-after": new Date(now + 120_000).toUTCString() };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path === TOKEN_PATH) {
        state.tokenRequests++;
        if (state.tokenRequests === 1) res.writeHead(503, headers).end(JSON.stringify({ error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." }));
        else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: "at-1", token_type: "Bearer", expires_in: 3600, scope: "Platform_UserAPIs" }));
        return;
      }
      res.writeHead(503, headers).end(JSON.stringify({ error: 1503, message: "The service is temporarily unavailable." }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return { state, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe("an RFC 850 Date's two-digit year is read against the client's clock", () => {
  it.each([
    // Against a host clock before 2040 "90" read as 1990: the Retry-After a century on.
    ["2090", Date.UTC(2090, 5, 1)],
    // Against a host clock from 2025 on "75" read as 2075: the Retry-After a century past.
    ["1975", Date.UTC(1975, 5, 1)],
  ])("a client whose clock reads %s: Retry-After 120 s, on the token endpoint and on an API", async (_year, now) => {
    const s = await busyServer(now);
    const clock = manualClock(now);
    const client = createClient({ baseUrl: s.baseUrl, clientId: "third-party", clientSecret: "a-client-secret-0123456789", scope: "Platform_UserAPIs", clock: clock.now });
    const first = await rejectionOf(client.getAccessToken());
    expect(first).toBeInstanceOf(OAuthError);
    expect(first).toMatchObject({ status: 503, error: "temporarily_unavailable", grantType: "client_credentials", retryAfter: 120 });
    // Held for the 120 s: nothing sent, the seconds left.
    clock.advance(60);
    const held = await rejectionOf(client.getAccessToken());
    expect(held).toMatchObject({ status: 503, error: "temporarily_unavailable", retryAfter: 60, cause: first });
    expect(s.state.tokenRequests).toBe(1);
    clock.advance(60);
    // The API's answer: its retryAfter read the same way.
    const api = await rejectionOf(client.listAccounts());
    expect(api).toBeInstanceOf(ApiError);
    expect(api).toMatchObject({ status: 503, error: 1503, message: "The service is temporarily unavailable.", body: { error: 1503, message: "The service is temporarily unavailable." }, retryAfter: 120 });
    expect(s.state.tokenRequests).toBe(2);
  });
});
