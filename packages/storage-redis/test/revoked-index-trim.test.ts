/**
 * The revoked-token index `r:i` stays trimmed under refresh-token revocations (logouts), as this
 * package's README says: each revocation of a refresh family adds a `sid:` entry and sweeps the
 * expired ones. Until 2026-12-02 only an access token's revocation swept, so the index grew by one
 * entry per logout until `prune`.
 */
import { createPlantgate } from "@plantgate/core";
import { openSqlStorage } from "@plantgate/storage-sql";
import { afterAll, beforeAll, expect, it } from "vitest";
import { redisHotStores } from "../src/index.js";
import { connect, describeIfRedis, dropPrefix, freshPrefix, probeRedis, type TestClient } from "./support.js";

const problem = await probeRedis();
const BASE = "https://pg.test";

describeIfRedis("redis hot stores: the revoked-token index under logouts", problem, () => {
  let client: TestClient;
  const prefix = freshPrefix();
  beforeAll(async () => {
    client = await connect();
  });
  afterAll(async () => {
    await dropPrefix(client, prefix);
    client.destroy();
  });

  it("twenty logouts (RFC 7009 refresh-token revocations), three hours on (past the longest access-token lifetime, 2 h), one more: r:i holds only the last entry", async () => {
    const sql = await openSqlStorage(":memory:");
    let now = Date.now();
    const app = createPlantgate({ storage: { ...sql, ...redisHotStores(client, { keyPrefix: prefix, clock: () => now }) }, clock: () => now, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    try {
      const { clientSecret } = await app.admin.createClient({ clientId: "c" });
      await app.admin.createAccount({ username: "u", password: "a password 1" });
      const post = (path: string, p: Record<string, string>) =>
        app.fetch(new Request(`${BASE}${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ client_id: "c", client_secret: clientSecret, ...p }) }));
      const signInAndLogOut = async () => {
        const granted = (await (await post("/UserService/connect/token", { grant_type: "password", username: "u", password: "a password 1", scope: "Platform_UserAPIs offline_access" })).json()) as { refresh_token: string };
        const res = await post("/UserService/connect/revocation", { token: granted.refresh_token });
        expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: "" });
      };
      for (let i = 0; i < 20; i++) await signInAndLogOut();
      expect(await client.zCard(`${prefix}r:i`)).toBe(20);
      now += 3 * 3600_000;
      await signInAndLogOut();
      expect(await client.zCard(`${prefix}r:i`)).toBe(1);
    } finally {
      await sql.close();
    }
  });
});
