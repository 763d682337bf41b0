/**
 * The two multi-instance client-generation scenarios (README, "Revocation and introspection") on
 * D1 in Miniflare, as two Worker isolates over one database (two storages over the binding):
 * a client created on an instance whose clock runs 2 s ahead is its own tokens' client everywhere,
 * and a client re-created within one second does not take the old one's access token.
 */
import { createPlantgate } from "@plantgate/core";
import { expect, it } from "vitest";
import { createD1Storage, type D1Storage } from "../src/d1.js";
import { miniflareD1, type TestD1 } from "./miniflare-d1.js";
import { connectPoster } from "./support.js";

const BASE = "https://as.example.test";
const logger = { error() {}, warn() {} };
let binding: TestD1;
miniflareD1("plantgate-generation", (b) => (binding = b));

async function twoIsolates(): Promise<[D1Storage, D1Storage]> {
  const { results } = await binding.prepare("select name from sqlite_master where type = 'table' and name like 'pg\\_%' escape '\\'").all();
  for (const { name } of results) await binding.prepare(`drop table if exists "${String(name)}"`).run();
  const first = createD1Storage(binding);
  await first.migrate();
  return [first, createD1Storage(binding)];
}

const post = connectPoster(BASE);

it("a client created on the isolate 2 s ahead, used at once on the other: its refresh token refreshes, its access token introspects active and is revocable", async () => {
  const [sa, sb] = await twoIsolates();
  const t0 = Date.UTC(2026, 11, 2, 8, 0, 0, 500);
  const a = createPlantgate({ storage: sa, issuer: BASE, passwordHashIterations: 1000, logger, clock: () => t0 });
  const b = createPlantgate({ storage: sb, issuer: BASE, passwordHashIterations: 1000, logger, clock: () => t0 + 2000 });
  await a.admin.createAccount({ username: "alice", password: "alice-password-1" });
  const auth: [string, string] = ["fresh-app", (await b.admin.createClient({ clientId: "fresh-app" })).clientSecret!];
  const grant = await post(a, "token", auth, { grant_type: "password", username: "alice", password: "alice-password-1", scope: "Platform_UserAPIs offline_access" });
  expect(grant.status).toBe(200);
  const access = grant.body.access_token as string;
  expect((await post(b, "introspect", auth, { token: access })).body.active).toBe(true);
  expect((await post(a, "token", auth, { grant_type: "refresh_token", refresh_token: grant.body.refresh_token as string })).status).toBe(200);
  expect(await post(b, "revocation", auth, { token: access, token_type_hint: "access_token" })).toEqual({ status: 200, body: {} });
  expect((await post(a, "introspect", auth, { token: access })).body).toEqual({ active: false });
  await sa.close();
  await sb.close();
});

it("a client re-created within the same second does not take the old one's access token, on the other isolate", async () => {
  const [sa, sb] = await twoIsolates();
  const t0 = Date.UTC(2026, 11, 2, 8, 0, 0, 100);
  const A = createPlantgate({ storage: sa, issuer: BASE, passwordHashIterations: 1000, logger, clock: () => t0 });
  const B = createPlantgate({ storage: sb, issuer: BASE, passwordHashIterations: 1000, logger, clock: () => t0 + 200 });
  const old: [string, string] = ["svc", (await A.admin.createClient({ clientId: "svc" })).clientSecret!];
  const token = (await post(B, "token", old, { grant_type: "client_credentials" })).body.access_token as string;
  await A.admin.deleteClient("svc");
  const fresh: [string, string] = ["svc", (await A.admin.createClient({ clientId: "svc", scopes: ["Platform_UserAPIs"] })).clientSecret!];
  expect((await post(B, "introspect", fresh, { token })).body).toEqual({ active: false });
  expect(await post(B, "revocation", fresh, { token })).toEqual({ status: 400, body: { error: "invalid_request", error_description: "The token was not issued to this client." } });
  await sa.close();
  await sb.close();
});
