/**
 * A client deleted on A and re-created under its id at once (there is no update API: narrowing a
 * client's scopes, grant types or accessTokenTtl means delete + create, typically one script).
 * Expected: the old incarnation's access token is not the new client's anywhere (README: a client
 * re-created is a new client; introspection answers active only for the calling client's tokens).
 */
import { createPlantgate } from "@plantgate/core";
import { openSqlStorage } from "../src/index.js";
import { expect, it } from "vitest";
import { connectPoster, sqliteEngine } from "./support.js";

const BASE = "https://as.example.test";
const engine = sqliteEngine();
const post = connectPoster(BASE);

it("the old incarnation's access token introspects inactive for a client re-created in the same second, on the other instance", async () => {
  const db = await engine.fresh();
  const sa = await openSqlStorage(db.url);
  const sb = await openSqlStorage(db.url, { migrate: false });
  try {
    // A fixed clock in the middle of a second, so the whole sequence falls in one second.
    const t0 = Math.floor(Date.now() / 1000) * 1000 + 100;
    const clock = () => t0;
    const logger = { error() {}, warn() {} };
    const A = createPlantgate({ storage: sa, issuer: BASE, passwordHashIterations: 1000, logger, clock });
    const B = createPlantgate({ storage: sb, issuer: BASE, passwordHashIterations: 1000, logger, clock: () => t0 + 200 });
    const old: [string, string] = ["svc", (await A.admin.createClient({ clientId: "svc" })).clientSecret];
    const token = (await post(B, "token", old, { grant_type: "client_credentials" })).body.access_token as string;
    await A.admin.deleteClient("svc");
    const fresh: [string, string] = ["svc", (await A.admin.createClient({ clientId: "svc", scopes: ["Platform_UserAPIs"] })).clientSecret];
    const seen = await post(B, "introspect", fresh, { token });
    expect(seen.body.active, JSON.stringify(seen.body)).toBe(false);
  } finally {
    await sa.close();
    await sb.close();
    await db.drop();
  }
});
