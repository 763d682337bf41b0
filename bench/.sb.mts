// temp: storage-sql per-call costs (helper session; removed when done)
import { openSqlStorage } from "@plantgate/storage-sql";
const url = process.argv[2] ?? `/tmp/sq/sb-${process.pid}.db`;
const storage = await openSqlStorage(url);
const now = Date.now();
await storage.clients.create({ clientId: "bench-client", secretHash: "x".repeat(43), name: "b", grantTypes: ["client_credentials", "password", "refresh_token"], scopes: ["a", "b", "offline_access"], accessTokenTtl: null, refreshTokenTtl: null, refreshTokenAbsoluteTtl: null, createdAt: now, secretUpdatedAt: now });
const recs = []; for (let i = 0; i < 200; i++) recs.push({ id: `acc-${1e6 + i}-xxxxxxxxxxxx`, username: `seed-${i}`, displayName: `Seed ${i}`, email: `s${i}@e.t`, roles: ["reader"], enabled: true, createdAt: now, passwordHash: "pbkdf2$600000$" + "x".repeat(80) });
await storage.accounts.createMany(recs);
const rt = (h: string) => ({ tokenHash: h, familyId: "fam", clientId: "bench-client", accountId: recs[0]!.id, scope: ["a"], createdAt: now, expiresAt: now + 1e6, familyExpiresAt: now + 1e7, consumedAt: null, revokedAt: null });
await storage.refreshTokens.create(rt("h0"));
let n = 0, pid = BigInt(Date.now()) * 1000n;
const cases: Array<[string, () => Promise<unknown>]> = [
  ["clients.get", () => storage.clients.get("bench-client")],
  ["attempts.get (miss)", () => storage.attempts.get("client:bench-client")],
  ["revokedTokens.has", () => storage.revokedTokens.has("jti-1")],
  ["accounts.get", () => storage.accounts.get(recs[5]!.id)],
  ["accounts.list(0,20)", () => storage.accounts.list(0, 20)],
  ["refreshTokens.findByHash", () => storage.refreshTokens.findByHash("h0")],
  ["refreshTokens.consume", () => storage.refreshTokens.consume(`h${n}`, now, rt(`h${++n}`))],
  ["plants.create", () => storage.plants.create({ id: pid++, name: "Monstera", tag: "bench" })],
];
const only = process.env.ONLY;
for (const [label, f] of cases) {
  if (only && !label.startsWith(only)) continue;
  const N = 5000;
  for (let i = 0; i < 1000; i++) await f();
  let best = Infinity;
  for (let r = 0; r < 3; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < N; i++) await f();
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / N);
  }
  console.log(label.padEnd(28), best.toFixed(1), "µs cpu");
}
await storage.close();
