import { afterEach, expect, it } from "vitest";
import { createClient, TOKEN_PATH, type CachedToken, type FetchLike, type TokenCache } from "../src/index.js";
import { manualClock, startTarget, type ServerTarget } from "./support.js";
const OFFLINE = "Platform_UserAPIs offline_access";
let target: ServerTarget | null = null;
afterEach(async () => { await target?.close(); target = null; });

function proc(t: ServerTarget, tokenCache: TokenCache | undefined, fetch: FetchLike = (u, i) => globalThis.fetch(u, i)) {
  const clock = manualClock(t.clock.now());
  const client = createClient({ baseUrl: t.baseUrl, clientId: t.clientId, clientSecret: t.clientSecret, scope: OFFLINE, credentials: { username: t.username, password: t.password }, keepCredentials: false, tokenCache, clock: clock.now, fetch });
  return { client, clock };
}

it("stampede", async () => {
  target = await startTarget();
  const store = new Map<string, string>();
  const tokenCache: TokenCache = { get: async (k) => (store.has(k) ? (JSON.parse(store.get(k)!) as CachedToken) : null), set: async (k, v) => void store.set(k, JSON.stringify(v)) };
  const ps = Array.from({ length: 14 }, () => proc(target!, tokenCache));
  for (const p of ps) await p.client.getAccessToken();
  for (const c of [target.clock, ...ps.map((p) => p.clock)]) c.advance(7200);
  const r = await Promise.allSettled(ps.map((p) => p.client.listAccounts()));
  console.log("stampede", r.map((x) => x.status), (await target.events()).filter((e) => e.startsWith("refresh") || e.startsWith("token.ref")));
  for (const c of [target.clock, ...ps.map((p) => p.clock)]) c.advance(7200);
  const r2 = await Promise.allSettled(ps.map((p) => p.client.listAccounts()));
  console.log("after", r2.map((x) => x.status === "rejected" ? String((x as PromiseRejectedResult).reason) : "ok"));
});

it("evicted cache", async () => {
  target = await startTarget();
  const store = new Map<string, string>();
  const tokenCache: TokenCache = { get: async (k) => (store.has(k) ? (JSON.parse(store.get(k)!) as CachedToken) : null), set: async (k, v) => void store.set(k, JSON.stringify(v)) };
  const a = proc(target, tokenCache), b = proc(target, tokenCache);
  await a.client.getAccessToken(); await b.client.getAccessToken();
  for (const c of [target.clock, a.clock, b.clock]) c.advance(7200);
  await a.client.getAccessToken(); // rotates rt1->rt2 into cache
  for (const c of [target.clock, a.clock, b.clock]) c.advance(60);
  store.clear(); // cache restarted / evicted
  const e = await b.client.getAccessToken().catch((e) => String(e));
  console.log("evicted: b", e.slice(0, 40), (await target.events()).filter((e) => e.startsWith("refresh")));
  for (const c of [target.clock, a.clock, b.clock]) c.advance(7200);
  console.log("evicted: a", await a.client.getAccessToken().then(() => "ok", (e) => String(e)));
});

it("lost refresh answer", async () => {
  target = await startTarget();
  let lose = false;
  const fetch: FetchLike = async (u, i) => { const r = await globalThis.fetch(u, i); if (lose && u.endsWith(TOKEN_PATH)) { await r.text(); throw new TypeError("fetch failed (connection reset)"); } return r; };
  const a = proc(target, undefined, fetch);
  await a.client.getAccessToken();
  for (const c of [target.clock, a.clock]) c.advance(7200);
  lose = true;
  console.log("lost:", await a.client.getAccessToken().then(() => "ok", (e) => String(e)));
  lose = false;
  for (const c of [target.clock, a.clock]) c.advance(31);
  console.log("lost: next", await a.client.getAccessToken().then(() => "ok", (e) => String(e)), (await target.events()).filter((e) => e.startsWith("refresh")));
});
