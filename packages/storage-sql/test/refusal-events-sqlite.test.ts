/**
 * The bounded-storage review's two findings on a real store (SQLite, the audit trail on): one
 * address sending distinct client ids leaves at most the address budget's counter rows, and a
 * flood at a locked client or username leaves O(log n) audit rows (the 1st, 2nd, 4th, ... refusal
 * of a lock makes an event), where each refused request was a row kept for 90 days.
 */
import { createPlantgate, type Plantgate } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";

const BASE = "https://as.example.test";
const N = 2000;
const basic = (id: string, secret: string) => "Basic " + btoa(`${id}:${secret}`);
const token = (app: Plantgate, form: Record<string, string>, authorization: string, ip: string) =>
  app.fetch(new Request(`${BASE}/UserService/connect/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization }, body: new URLSearchParams(form).toString() }), { clientIp: ip });

describe("sqlite: counter and audit rows under a flood from one address", () => {
  let storage: SqlStorage | undefined;
  afterEach(async () => {
    await storage?.close();
    storage = undefined;
  });

  it("2000 distinct client ids, 2000 refusals of a locked client, 2000 of a locked username: bounded counter and audit rows", async () => {
    const store = (storage = await openSqlStorage(":memory:", { audit: true }));
    let now = Date.UTC(2026, 0, 1);
    const app = createPlantgate({ storage: store, clock: () => now, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, bruteForce: { maxFailures: 10, windowSeconds: 900 } });
    const { clientSecret } = await app.admin.createClient({ clientId: "app-1", grantTypes: ["client_credentials", "password"] });
    await app.admin.createClient({ clientId: "locked", grantTypes: ["client_credentials"] });
    await app.admin.createAccount({ username: "alice", password: "wonderland-42" });
    /** Every request's status, then the counter and audit rows it left (both deleted for the next phase). */
    const phase = async (send: (i: number) => Promise<Response>) => {
      await app.flushEvents();
      await store.audit!.deleteExpired(Number.MAX_SAFE_INTEGER);
      const statuses: Record<number, number> = {};
      for (let i = 0; i < N; i++, now += 50) {
        const { status } = await send(i);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
      await app.flushEvents();
      return { statuses, counters: await store.attempts.deleteExpired(Number.MAX_SAFE_INTEGER), audit: await store.audit!.deleteExpired(Number.MAX_SAFE_INTEGER) };
    };
    // Distinct unknown client ids: 100 failures (the address's budget, 10 × maxFailures), then
    // refusals: 2 × 100 + 1 counter rows (each id's own counter and its share of the budget, then
    // the budget); 100 failure events and 11 refusal events (1, 2, ..., 1024 of 1900).
    expect(await phase((i) => token(app, { grant_type: "client_credentials" }, basic(`nope-${i}`, "x"), "198.51.100.7"))).toEqual({ statuses: { 401: 100, 429: 1900 }, counters: 201, audit: 111 });
    // One locked client: its counter, its share of its address's budget and the budget; 10 failures and 11 refusal events.
    expect(await phase(() => token(app, { grant_type: "client_credentials" }, basic("locked", "wrong"), "198.51.100.8"))).toEqual({ statuses: { 401: 10, 429: 1990 }, counters: 3, audit: 21 });
    // One locked username: username + address, username, the client's budget; 10 failures, the lock-out, 11 refusal events.
    expect(await phase((i) => token(app, { grant_type: "password", username: "alice", password: `guess-${i}` }, basic("app-1", clientSecret), "198.51.100.9"))).toEqual({ statuses: { 400: 10, 429: 1990 }, counters: 3, audit: 22 });
  }, 120_000);
});
