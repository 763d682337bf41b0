// plantgate's Node server (@plantgate/node serve + @plantgate/core) on the store named by
// BENCH_STORE: "memory", or a SQL URL in BENCH_DB_URL (a SQLite file path or postgres://...);
// with BENCH_REDIS_URL, the hot stores go to Redis beside it (key prefix BENCH_REDIS_PREFIX).
import { createMemoryStorage, createPlantgate, type CreateAccountInput, type Plantgate, type Storage } from "@plantgate/core";
import { nodeCrypto, serve } from "@plantgate/node";
import { setupObservability } from "@plantgate/observability";
import { redisHotStores } from "@plantgate/storage-redis";
import { openSqlStorage } from "@plantgate/storage-sql";
import { createClient } from "redis";
import { announceReady, CLIENT_ID, CLIENT_SECRET, DEFAULT_BENCH_ITERATIONS, envInt, observabilityParts, PASSWORD, username, USERS } from "../shared.js";

const iterations = envInt("BENCH_ITERATIONS", DEFAULT_BENCH_ITERATIONS);
const seedAccounts = envInt("BENCH_SEED_ACCOUNTS", 0);
const url = process.env.BENCH_DB_URL;
const base: Storage = process.env.BENCH_STORE === "memory" || !url ? createMemoryStorage() : await openSqlStorage(url);
const redisUrl = process.env.BENCH_REDIS_URL;
// As examples/node-server does with PLANTGATE_REDIS_URL.
const storage: Storage = redisUrl
  ? { ...base, ...redisHotStores(await createClient({ url: redisUrl, disableOfflineQueue: true }).connect(), { keyPrefix: process.env.BENCH_REDIS_PREFIX ?? "plantgate-bench:" }) }
  : base;

let app: Plantgate | null = null;
// The issuer is the listening URL, known only after listen, as in examples/node-server.
// The wrapper forwards handle, what the Node listener calls (plain status/headers/bytes, as in examples/node-server).
const running = await serve(
  {
    handle: (request, info) => (app ? app.handle(request, info) : Promise.resolve({ status: 503, headers: {}, body: null })),
  },
  { port: 0 },
);
// BENCH_OBSERVE=1: events, JSON-line logs (info: a line per token) and Prometheus metrics on, as
// examples/node-server runs them with PLANTGATE_METRICS_PORT set (the metrics listener included).
const observability = process.env.BENCH_OBSERVE === "1" ? setupObservability({ logLevel: "info", metricsPort: 0 }) : null;
await observability?.serveMetrics("127.0.0.1");
// As the example server runs it: node:crypto in line instead of Web Crypto thread-pool jobs.
// maxConcurrentPasswordChecks: wrk keeps 32 connections busy and the bench measures how fast
// password grants are served; the default cap of 4 would answer most of them 429 at once.
const created = createPlantgate({
  storage,
  issuer: running.url,
  baseUrl: running.url,
  passwordHashIterations: iterations,
  maxConcurrentPasswordChecks: 64,
  crypto: nodeCrypto({ batchSignatures: process.env.BENCH_BATCH !== "0" }),
  // BENCH_OBSERVE_PART=events|observer|noop|none: one part of it, to find where its cost is.
  ...(observability ? observabilityParts(observability.options, process.env.BENCH_OBSERVE_PART || undefined) : {}),
});
await created.admin.ensureClient(CLIENT_ID, CLIENT_SECRET);
for (let i = 0; i < USERS; i++) await created.admin.ensureAccount(username(i), PASSWORD);
if (seedAccounts > 0) {
  const existing = (await storage.accounts.list(0, 1)).total;
  if (existing < seedAccounts + 1) {
    const inputs: CreateAccountInput[] = [];
    for (let i = existing; i <= seedAccounts; i++) {
      inputs.push({ username: `seed-${String(i).padStart(7, "0")}`, password: `seed-password-${i}`, displayName: `Seed ${i}`, email: `seed${i}@example.test`, roles: ["reader"] });
    }
    await created.admin.importAccounts(inputs);
  }
}
await created.jwks(); // create the signing key before the first request
app = created;
// BENCH_MEMLOG=<ms>: heap figures on stderr, to tell a leak from a heap that has not settled yet.
const memlog = envInt("BENCH_MEMLOG", 0);
if (memlog > 0) {
  setInterval(() => {
    const m = process.memoryUsage();
    const mb = (n: number) => (n / 1048576).toFixed(1);
    process.stderr.write(`MEM rss=${mb(m.rss)} heapUsed=${mb(m.heapUsed)} heapTotal=${mb(m.heapTotal)} external=${mb(m.external)} arrayBuffers=${mb(m.arrayBuffers)}\n`);
  }, memlog).unref();
}
// With --expose-gc (the memory check), SIGUSR2 reports the live heap after a full collection:
// RSS alone cannot tell a leak from a heap V8 has simply not shrunk yet.
const gc = (globalThis as { gc?: () => void }).gc;
if (gc) {
  process.on("SIGUSR2", () => {
    gc();
    process.stderr.write(`GC heapUsed=${process.memoryUsage().heapUsed}\n`);
  });
}
announceReady({ port: Number(new URL(running.url).port) });
