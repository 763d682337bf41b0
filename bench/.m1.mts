import Database from "better-sqlite3";
import { createPlantgate } from "@plantgate/core";
import { nodeCrypto } from "@plantgate/node";
import { openSqlStorage } from "@plantgate/storage-sql";
const path = `/tmp/sq/m1-${process.pid}.db`;
const storage = await openSqlStorage(path);
const app = createPlantgate({ storage, issuer: "http://x", baseUrl: "http://x", passwordHashIterations: 1000, crypto: nodeCrypto() });
await app.admin.ensureClient("bench-client", "bench-secret-3f9c2a7d1e8b4c6a9f0e2d4b6a8c0e1f");
const inputs = []; for (let i = 0; i < 200; i++) inputs.push({ username: `seed-${i}`, password: `password-${i}`, displayName: `Seed ${i}`, email: `s${i}@e.t`, roles: ["reader"] });
await app.admin.importAccounts(inputs);
const db = new Database(path);
db.pragma("journal_mode = WAL");
const time = (label: string, n: number, f: () => unknown) => { for (let i = 0; i < 2000; i++) f(); const t = process.hrtime.bigint(); for (let i = 0; i < n; i++) f(); console.log(label.padEnd(40), (Number(process.hrtime.bigint() - t) / n / 1000).toFixed(2), "µs"); };
const Q1 = 'select * from "pg_clients" where "client_id" = ?';
const Q2 = 'select count(*) as "n" from "pg_accounts"';
const Q3 = 'select * from "pg_accounts" order by "id" limit ?';
time("prepare clients.get", 20000, () => db.prepare(Q1));
time("prepare count", 20000, () => db.prepare(Q2));
const s1 = db.prepare(Q1), s2 = db.prepare(Q2), s3 = db.prepare(Q3);
time("all clients.get", 20000, () => s1.all(["bench-client"]));
time("all count", 20000, () => s2.all([]));
time("all page 20", 20000, () => s3.all([20]));
time("kysely clients.get", 20000, () => {});
const N = 20000;
for (const [label, f] of [["storage.clients.get", () => storage.clients.get("bench-client")], ["storage.accounts.list", () => storage.accounts.list(0, 20)], ["storage.attempts.get", () => storage.attempts.get("x")]] as const) {
  for (let i = 0; i < 2000; i++) await f();
  const t = process.hrtime.bigint(); for (let i = 0; i < N; i++) await f(); console.log(label.padEnd(40), (Number(process.hrtime.bigint() - t) / N / 1000).toFixed(2), "µs");
}
await storage.close();
