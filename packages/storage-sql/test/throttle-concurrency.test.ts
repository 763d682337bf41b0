/**
 * The brute-force throttle over SQLite: the password grant counts every attempt with the store's
 * atomic increment before it checks the password, so a burst of concurrent guesses cannot all be
 * evaluated before the lock applies (the memory-store twin is in core's brute-force.test.ts).
 */
import { createPlantgate } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";

const BASE = "https://as.example.test";
const quiet = { error() {}, warn() {} };

describe("sqlite: concurrent password guesses against the lock-out", () => {
  const open: SqlStorage[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });

  it("50 concurrent wrong guesses with maxFailures 3: exactly 3 evaluated (400 invalid_grant), 47 answered 429", async () => {
    const storage = await openSqlStorage(":memory:");
    open.push(storage);
    // The per-instance cap on concurrent password checks (core's brute-force.test.ts) is lifted:
    // this is about the counters, and every 429 here is the lock-out's.
    const options = { storage, passwordHashIterations: 1000, logger: quiet, bruteForce: { maxFailures: 3, windowSeconds: 60 }, maxConcurrentPasswordChecks: 100 };
    const app = createPlantgate(options);
    // A second instance over the same database, as another server process would be.
    const sibling = createPlantgate(options);
    await app.admin.createAccount({ username: "alice", password: "alice-password-1" });
    const { client, clientSecret } = await app.admin.createClient({ clientId: "app-1", grantTypes: ["password"] });
    const authorization = "Basic " + btoa(`${client.clientId}:${clientSecret}`);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (i % 2 ? sibling : app).fetch(
          new Request(`${BASE}/UserService/connect/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded", authorization },
            body: new URLSearchParams({ grant_type: "password", username: "alice", password: `wrong-${i}` }).toString(),
          }),
          { clientIp: "198.51.100.20" },
        ),
      ),
    );
    const bodies = await Promise.all(results.map(async (r) => JSON.stringify({ status: r.status, body: await r.json() })));
    const tally: Record<string, number> = {};
    for (const b of bodies) tally[b] = (tally[b] ?? 0) + 1;
    expect(tally).toEqual({
      [JSON.stringify({ status: 400, body: { error: "invalid_grant", error_description: "The username or password is incorrect." } })]: 3,
      [JSON.stringify({
        status: 429,
        body: { error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." },
      })]: 47,
    });
  });
});
