/**
 * A clock with a fraction of a millisecond (`performance.timeOrigin + performance.now()`, a
 * common choice for a monotonic-ish clock) given to the core: the stores keep whole epoch ms, so
 * the core cuts the clock once for every store. Before 2026-11-29 SQLite's client rows were
 * written with fractional times and every later token request was a 500 (CorruptRowError).
 */
import { createPlantgate } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";

const BASE = "https://as.example.test";
const quiet = { error() {}, warn() {} };

describe("sqlite: a fractional clock given to the core", () => {
  const open: SqlStorage[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });

  it("client credentials, a wrong and a right password, and a refresh all answer as with a whole-ms clock", async () => {
    const storage = await openSqlStorage(":memory:");
    open.push(storage);
    let now = Date.UTC(2026, 10, 29) + 0.625;
    const app = createPlantgate({ storage, clock: () => now, passwordHashIterations: 1000, logger: quiet });
    await app.admin.createAccount({ username: "alice", password: "alice-password-1" });
    const { clientSecret } = await app.admin.createClient({ clientId: "app-1", grantTypes: ["client_credentials", "password", "refresh_token"] });
    const token = (body: Record<string, string>) =>
      app.fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`app-1:${clientSecret}`) },
          body: new URLSearchParams(body).toString(),
        }),
      );
    now += 1000.375;
    const cc = await token({ grant_type: "client_credentials" });
    expect(cc.status).toBe(200);
    now += 0.5;
    const wrong = await token({ grant_type: "password", username: "alice", password: "nope" });
    expect({ status: wrong.status, body: await wrong.json() }).toEqual({ status: 400, body: { error: "invalid_grant", error_description: "The username or password is incorrect." } });
    const right = await token({ grant_type: "password", username: "alice", password: "alice-password-1", scope: "Platform_UserAPIs offline_access" });
    expect(right.status).toBe(200);
    const { refresh_token } = (await right.json()) as { refresh_token: string };
    now += 60_000.125;
    const refreshed = await token({ grant_type: "refresh_token", refresh_token });
    expect(refreshed.status).toBe(200);
    // What the stores hold are whole milliseconds.
    const client = await storage.clients.get("app-1");
    expect(Number.isInteger(client!.createdAt)).toBe(true);
    for (const s of client!.secrets) expect(Number.isInteger(s.createdAt)).toBe(true);
  });
});
