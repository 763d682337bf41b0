// In-process microbenchmark of app.handle() with a minimal request (no HTTP): relative costs of core code.
// npx tsx /work/briefs/micro.ts [cc|list|plants] [memory|sqlite]
import { createMemoryStorage, createPlantgate } from "@plantgate/core";
import { nodeCrypto } from "@plantgate/node";
import { openSqlStorage } from "@plantgate/storage-sql";
const [workload = "cc", store = "memory"] = process.argv.slice(2);
const storage = store === "memory" ? createMemoryStorage() : await openSqlStorage(`/tmp/micro-${process.pid}.db`);
const BASE = "http://127.0.0.1:3000";
const app = createPlantgate({ storage, issuer: BASE, baseUrl: BASE, passwordHashIterations: 1000, crypto: nodeCrypto() });
const SECRET = "bench-secret-3f9c2a7d1e8b4c6a9f0e2d4b6a8c0e1f";
await app.admin.ensureClient("bench-client", SECRET);
await app.admin.ensureAccount("bench-user", "bench-password-1");
const enc = new TextEncoder();
function req(method: string, path: string, headers: Record<string, string>, body?: string): Request {
  const h = new Headers(headers);
  const bytes = body === undefined ? undefined : enc.encode(body);
  return { method, url: BASE + path, headers: h, body: null, [Symbol.for("plantgate.read-body")]: async () => bytes ?? new Uint8Array(0) } as unknown as Request;
}
const basic = "Basic " + Buffer.from(`bench-client:${SECRET}`).toString("base64");
const form = "application/x-www-form-urlencoded";
const tok = await app.handle(req("POST", "/UserService/connect/token", { authorization: basic, "content-type": form }, "grant_type=password&username=bench-user&password=bench-password-1&scope=Platform_UserAPIs"));
const access = JSON.parse(new TextDecoder().decode(tok.body!)).access_token;
let id = 1_000_000;
const make = (): Request => {
  if (workload === "cc") return req("POST", "/UserService/connect/token", { authorization: basic, "content-type": form }, "grant_type=client_credentials");
  if (workload === "list") return req("GET", "/rbac/ServerCommand/GetAccountList?page=1&pageSize=20", { authorization: "Bearer " + access });
  return req("POST", "/plants", { authorization: "Bearer " + access, "content-type": "application/json" }, JSON.stringify({ id: id++, name: "Monstera", tag: "bench" }));
};
const info = { clientIp: "127.0.0.1" };
for (let i = 0; i < 3000; i++) { const r = await app.handle(make(), info); if (r.status !== 200) throw new Error(String(r.status) + new TextDecoder().decode(r.body!)); }
for (let round = 0; round < 3; round++) {
  const N = 10000;
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await app.handle(make(), info);
  console.log(`${workload} ${store}: ${(Number(process.hrtime.bigint() - t) / N / 1000).toFixed(1)} µs/call`);
}
