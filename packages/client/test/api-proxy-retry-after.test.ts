/**
 * A proxy or load balancer in front of the API routes answering with its own 429 or 503 (nginx's
 * HTML page, an empty body, a gateway's JSON) and a Retry-After: the call rejects with a
 * NetworkError of the reason it always had (`not_json`, `unexpected_response`) and the answer's
 * status, and now carries the answer's Retry-After as `retryAfter`, so the caller can back off as
 * it would on an ApiError. Until 2026-12-02 its retryAfter was null. The token comes from the real
 * example server over a socket; the proxy's answer is given by the transport for the API paths.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { createClient, TOKEN_PATH, type FetchLike } from "../src/index.js";
import { manualClock, rejectionOf, startTarget, type ServerTarget } from "./support.js";

let t: ServerTarget;
beforeEach(async () => {
  t = await startTarget({ clock: manualClock(Date.now()) });
});
afterEach(async () => {
  await t.close();
});

const NGINX_503 = "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

interface ProxyAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The global fetch to the target, but the API paths answered with `answer()` (its `Date` the real server's clock). */
function proxied(answer: () => ProxyAnswer) {
  const sent: string[] = [];
  const fetch: FetchLike = async (url, init) => {
    const path = new URL(url).pathname;
    sent.push(path === TOKEN_PATH ? "token" : `${init.method} ${path}`);
    if (path === TOKEN_PATH) return globalThis.fetch(url, init);
    const { status, headers, body } = answer();
    // null for an empty body: a string one would get a text/plain content-type.
    return new Response(body === "" ? null : body, { status, headers: { date: new Date(t.clock.now()).toUTCString(), ...headers } });
  };
  return { fetch, sent };
}

/** What a rejection says, whole. */
function summary(e: unknown) {
  const error = e as Error & { reason?: string; status?: number | null; retryAfter?: number | null };
  return { name: error.name, reason: error.reason, status: error.status, retryAfter: error.retryAfter, message: error.message, cause: error.cause };
}

it("a proxy's 429 or 503 on an API call, whatever its body, carries the answer's Retry-After (delta-seconds or an HTTP date) with its status; without a usable one, or on another status, retryAfter is null", async () => {
  const at = (seconds: number) => new Date(t.clock.now() + seconds * 1000).toUTCString();
  const cases: [string, ProxyAnswer][] = [
    ["nginx's 503 page, Retry-After 30", { status: 503, headers: { "content-type": "text/html", "retry-after": "30" }, body: NGINX_503 }],
    ["a load balancer's 429, empty body, Retry-After 30", { status: 429, headers: { "retry-after": "30" }, body: "" }],
    ["a gateway's 503 JSON, Retry-After 30", { status: 503, headers: { "content-type": "application/json", "retry-after": "30" }, body: '{"message":"Service Unavailable"}' }],
    ["nginx's 503 page, Retry-After an HTTP date 120 s on", { status: 503, headers: { "content-type": "text/html", "retry-after": at(120) }, body: NGINX_503 }],
    ["nginx's 503 page, no Retry-After", { status: 503, headers: { "content-type": "text/html" }, body: NGINX_503 }],
    ["nginx's 503 page, Retry-After 1.5 (not a Retry-After)", { status: 503, headers: { "content-type": "text/html", "retry-after": "1.5" }, body: NGINX_503 }],
    ["nginx's 502 page, Retry-After 30 (only 429 and 503 say when)", { status: 502, headers: { "content-type": "text/html", "retry-after": "30" }, body: "<h1>502 Bad Gateway</h1>" }],
  ];
  const results: Record<string, unknown> = {};
  for (const [what, answer] of cases) {
    const { fetch, sent } = proxied(() => answer);
    const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: "Platform_UserAPIs", clock: t.clock.now, fetch });
    results[what] = {
      list: summary(await rejectionOf(client.listAccounts())),
      create: summary(await rejectionOf(client.createPlant({ id: 1n, name: "Monstera" }))),
      sent,
    };
  }
  const html = " with a body that is not JSON (text/html)";
  const expected = (reason: string, status: number, retryAfter: number | null, detail: string) => ({
    list: { name: "NetworkError", reason, status, retryAfter, message: `GetAccountList: HTTP ${status}${detail}`, cause: undefined },
    create: { name: "NetworkError", reason, status, retryAfter, message: `POST /plants: HTTP ${status}${detail}`, cause: undefined },
    sent: ["token", "GET /rbac/ServerCommand/GetAccountList", "POST /plants"],
  });
  expect(results).toEqual({
    "nginx's 503 page, Retry-After 30": expected("not_json", 503, 30, html),
    "a load balancer's 429, empty body, Retry-After 30": expected("not_json", 429, 30, " with a body that is not JSON"),
    "a gateway's 503 JSON, Retry-After 30": expected("unexpected_response", 503, 30, ", an error body without the {error: int32, message} shape"),
    "nginx's 503 page, Retry-After an HTTP date 120 s on": expected("not_json", 503, 120, html),
    "nginx's 503 page, no Retry-After": expected("not_json", 503, null, html),
    "nginx's 503 page, Retry-After 1.5 (not a Retry-After)": expected("not_json", 503, null, html),
    "nginx's 502 page, Retry-After 30 (only 429 and 503 say when)": expected("not_json", 502, null, html),
  });
});

it("a proxy's 503 page over maxResponseBytes on an API call carries its Retry-After too (from the head; the body is not read)", async () => {
  const page = `<html><body>${"x".repeat(4000)}</body></html>`;
  const { fetch } = proxied(() => ({ status: 503, headers: { "content-type": "text/html", "retry-after": "30" }, body: page }));
  const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: "Platform_UserAPIs", clock: t.clock.now, fetch, maxResponseBytes: 1024 });
  expect(summary(await rejectionOf(client.listAccounts()))).toEqual({
    name: "NetworkError",
    reason: "response_too_large",
    status: 503,
    retryAfter: 30,
    message: "GET /rbac/ServerCommand/GetAccountList answered HTTP 503 with a body over 1024 bytes (maxResponseBytes); it was not read further",
    cause: undefined,
  });
});
