// In-process cost of one request through `app.handle` (no sockets, no HTTP parser): client
// credentials on the memory store, 32 requests in flight as wrk keeps them, CPU µs per request
// (median of rounds). For quick A/Bs of core changes while the machine is busy with other work;
// the figures that count are `pnpm bench`'s. Usage:
//   tsx bench/src/inproc.ts [requests per round = 20000] [rounds = 7]
// INPROC_OBSERVE=1 turns events, JSON-line logs (to /dev/null) and metrics on, as BENCH_OBSERVE does.
import { createWriteStream } from "node:fs";
import { createMemoryStorage, createPlantgate } from "@plantgate/core";
import { nodeCrypto } from "@plantgate/node";
import { setupObservability } from "@plantgate/observability";
import { BASIC_AUTH, CLIENT_ID, CLIENT_SECRET } from "./shared.js";

const perRound = Number(process.argv[2] ?? 20_000);
const rounds = Number(process.argv[3] ?? 7);
const observe = process.env.INPROC_OBSERVE === "1";
const observability = observe ? setupObservability({ logLevel: "info", metricsPort: 0 }, { destination: createWriteStream("/dev/null") }) : null;
const app = createPlantgate({
  storage: createMemoryStorage(),
  issuer: "http://127.0.0.1:1",
  baseUrl: "http://127.0.0.1:1",
  crypto: nodeCrypto({ batchSignatures: true }),
  ...observability?.options,
});
await app.admin.ensureClient(CLIENT_ID, CLIENT_SECRET);
await app.jwks();

const body = new TextEncoder().encode("grant_type=client_credentials");
const headers = { authorization: BASIC_AUTH, "content-type": "application/x-www-form-urlencoded", "content-length": String(body.length) };
const info = { clientIp: "127.0.0.1", readBody: async () => body };

async function one(): Promise<void> {
  const request = new Request("http://127.0.0.1:1/UserService/connect/token", { method: "POST", headers });
  const answer = await app.handle(request, info);
  if (answer.status !== 200) throw new Error(`status ${answer.status}`);
}

async function round(n: number): Promise<number> {
  let left = n;
  const started = process.cpuUsage();
  const worker = async () => {
    while (left-- > 0) await one();
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  const used = process.cpuUsage(started);
  return (used.user + used.system) / n;
}

await round(perRound); // warm-up
const figures: number[] = [];
for (let i = 0; i < rounds; i++) figures.push(await round(perRound));
figures.sort((a, b) => a - b);
console.log(`client credentials in process${observe ? " (observed)" : ""}: median ${figures[Math.floor(rounds / 2)]!.toFixed(1)} µs CPU/request (min ${figures[0]!.toFixed(1)}, max ${figures[rounds - 1]!.toFixed(1)})`);
