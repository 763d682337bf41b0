import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, isoTimestamp } from "../src/index.js";
import { BASE } from "./helpers.js";

// GetAccountList formats createdAt without Date#toISOString; it must give exactly the same text.
describe("isoTimestamp", () => {
  it("equals Date#toISOString on every day from 1970 to 9999 and at the edges", () => {
    const mismatches: number[] = [];
    const check = (ms: number) => {
      if (isoTimestamp(ms) !== new Date(ms).toISOString()) mismatches.push(ms);
    };
    for (let day = 0; day < 2_932_897; day += 7) check(day * 86_400_000 + ((day * 7_919_993) % 86_400_000));
    for (const ms of [0, 1, 999, 1000, 59_999, 86_399_999, 86_400_000, 951_782_400_000, 951_868_800_000, 4_107_542_400_000, 253_402_300_799_999]) check(ms);
    let seed = 20261123;
    for (let i = 0; i < 100_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      check(Math.floor((seed / 2_147_483_648) * 253_402_300_800_000));
    }
    expect(mismatches).toEqual([]);
  });

  it("falls back to Date outside 1970-9999 and for fractional values", () => {
    for (const ms of [-1, -62_198_755_200_000, 253_402_300_800_000, 1.5, 8.64e15, -8.64e15]) expect(isoTimestamp(ms)).toBe(new Date(ms).toISOString());
    expect(isoTimestamp(951_782_400_000)).toBe("2000-02-29T00:00:00.000Z");
  });

  it("never throws: a time past what a Date holds is the end of its range, one that is no number the epoch (a RangeError until 2026-12-03)", () => {
    for (const ms of [8.64e15 + 1, 9e15, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE, Infinity]) expect(isoTimestamp(ms)).toBe("+275760-09-13T00:00:00.000Z");
    for (const ms of [-8.64e15 - 1, -9e15, Number.MIN_SAFE_INTEGER, -Infinity]) expect(isoTimestamp(ms)).toBe("-271821-04-20T00:00:00.000Z");
    expect(isoTimestamp(Number.NaN)).toBe("1970-01-01T00:00:00.000Z");
  });
});

describe("a stored time past what a Date holds", () => {
  it("GetAccountList shows such an account (200, its createdAt the end of the range) and so does admin.listAccounts: a 500 for every page holding it until 2026-12-03", async () => {
    let now = Date.UTC(2026, 0, 1);
    const storage = createMemoryStorage();
    const app = createPlantgate({ storage, clock: () => now, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const { clientSecret } = await app.admin.createClient({ clientId: "reader", scopes: ["Platform_AllAppsServerCommands"] });
    await app.admin.createAccount({ username: "alice", password: "wonderland-42" });
    // A clock that answered a time past what a Date holds, once (or a row written so by hand).
    now = 9e15;
    await app.admin.createAccount({ username: "bob", password: "wonderland-42" });
    now = Date.UTC(2026, 0, 1);
    const res = await app.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`reader:${clientSecret}`) },
        body: "grant_type=client_credentials&scope=Platform_AllAppsServerCommands",
      }),
    );
    expect(res.status).toBe(200);
    const { access_token } = (await res.json()) as { access_token: string };
    const list = await app.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList?page=1&pageSize=10`, { headers: { authorization: `Bearer ${access_token}` } }));
    expect(list.status).toBe(200);
    const body = (await list.json()) as { accounts: { username: string; createdAt: string }[]; total: number };
    expect(body.total).toBe(2);
    expect(body.accounts.map((a) => [a.username, a.createdAt])).toEqual([
      ["alice", "2026-01-01T00:00:00.000Z"],
      ["bob", "+275760-09-13T00:00:00.000Z"],
    ]);
    expect((await app.admin.listAccounts()).map((a) => [a.username, a.createdAt])).toEqual([
      ["alice", "2026-01-01T00:00:00.000Z"],
      ["bob", "+275760-09-13T00:00:00.000Z"],
    ]);
  });
});
