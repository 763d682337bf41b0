// The in-process driver of `bench/src/count.ts`: requests through `app.handle` (no sockets), 32 in
// flight, a warm-up and then a counted part, so that callgrind's instruction totals of two runs
// with different counts give the instructions per request. Arguments: workload (cc | refresh),
// variant, warm-up requests, counted requests.
//   cc:      plain | observed | events | observer | noop | none | sqlite
// (`none`: the observability set up, its process metrics collecting, nothing handed to the app)
//   refresh: memory | sqlite
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMemoryStorage, createPlantgate, type PlantgateOptions } from "@plantgate/core";
import { nodeCrypto } from "@plantgate/node";
import { setupObservability } from "@plantgate/observability";
import { openSqlStorage } from "@plantgate/storage-sql";
import { BASIC_AUTH, CLIENT_ID, CLIENT_SECRET, observabilityParts, PASSWORD, username } from "../shared.js";

const [workload, variant, warmArg, countArg] = process.argv.slice(2);
const warm = Number(warmArg);
const counted = Number(countArg);
const CC_VARIANTS = ["plain", "observed", "events", "observer", "noop", "none", "sqlite"];
const REFRESH_VARIANTS = ["memory", "sqlite"];
if (!((workload === "cc" && CC_VARIANTS.includes(variant!)) || (workload === "refresh" && REFRESH_VARIANTS.includes(variant!))) || !(warm >= 0) || !(counted >= 0)) {
  process.stderr.write(`usage: count-driver.mjs cc ${CC_VARIANTS.join("|")} | refresh ${REFRESH_VARIANTS.join("|")} <warm-up> <counted>\n`);
  process.exit(2);
}

const file = join(tmpdir(), `plantgate-count-${process.pid}.db`);
const sqlite = variant === "sqlite";
const storage = sqlite ? await openSqlStorage(file) : createMemoryStorage();
const observability = workload === "cc" && !["plain", "sqlite"].includes(variant!) ? setupObservability({ logLevel: "info", metricsPort: 0 }) : null;
// `observed` is all of it; the other cc variants name one part.
const parts: Partial<PlantgateOptions> = observability ? observabilityParts(observability.options, variant === "observed" ? undefined : variant) : {};
const app = createPlantgate({
  storage,
  issuer: "http://127.0.0.1:1",
  baseUrl: "http://127.0.0.1:1",
  passwordHashIterations: 1000,
  maxConcurrentPasswordChecks: 64,
  crypto: nodeCrypto({ batchSignatures: true }),
  ...parts,
});
await app.admin.ensureClient(CLIENT_ID, CLIENT_SECRET);
for (let i = 0; i < 32; i++) await app.admin.ensureAccount(username(i), PASSWORD);
await app.jwks();

const request = new Request("http://127.0.0.1:1/UserService/connect/token", {
  method: "POST",
  headers: { authorization: BASIC_AUTH, "content-type": "application/x-www-form-urlencoded" },
});
const encoder = new TextEncoder();
const decoder = new TextDecoder();
async function post(body: string): Promise<Record<string, unknown>> {
  const bytes = encoder.encode(body);
  const answer = await app.handle(request, { clientIp: "127.0.0.1", readBody: async () => bytes });
  const text = answer.body instanceof Uint8Array ? decoder.decode(answer.body) : "";
  if (answer.status !== 200) throw new Error(`status ${answer.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

// Refresh: one rotation chain per account, each token spent exactly once.
const chains: string[] = [];
if (workload === "refresh") {
  for (let i = 0; i < 32; i++) {
    const answer = await post(`grant_type=password&username=${username(i)}&password=${PASSWORD}&scope=Platform_UserAPIs%20offline_access`);
    chains.push(String(answer.refresh_token));
  }
}

async function run(count: number): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: 32 }, async (_, i) => {
      while (left-- > 0) {
        if (workload === "cc") await post("grant_type=client_credentials");
        else chains[i] = String((await post(`grant_type=refresh_token&refresh_token=${chains[i]}`)).refresh_token);
      }
    }),
  );
}

await run(warm);
await run(counted);
await app.flushEvents();
await (storage as { close?: () => Promise<void> }).close?.();
if (sqlite) for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
// The log lines held for up to 10 ms are written at exit.
process.exit(0);
