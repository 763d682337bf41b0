// In-process cost of one request through `app.handle` (no sockets, no HTTP parser): client
// credentials on the memory store, 32 requests in flight as wrk keeps them, CPU µs per request.
// Two apps in one process, measured in alternating rounds: plain, and with events, JSON-line logs
// (to stdout, as the example servers write them: run it with stdout to /dev/null; figures go to stderr) and metrics on as BENCH_OBSERVE runs them; so their ratio holds up on a busy
// machine. For quick A/Bs of core changes; the figures that count are `pnpm bench`'s. Usage:
//   tsx bench/src/inproc.ts [requests per round = 10000] [rounds = 7] > /dev/null
// INPROC_PART=observer|events|noop|none (or empty, as none): only the metrics observer, only the event hook (logs), a no-op hook, or nothing (A/A).
import { createMemoryStorage, createPlantgate, type Plantgate } from "@plantgate/core";
import { nodeCrypto } from "@plantgate/node";
import { setupObservability } from "@plantgate/observability";
import { BASIC_AUTH, CLIENT_ID, CLIENT_SECRET, observabilityParts } from "./shared.js";

const perRound = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 7);

async function app(observe: boolean): Promise<Plantgate> {
  const observability = observe ? setupObservability({ logLevel: "info", metricsPort: 0 }) : null;
  const created = createPlantgate({
    storage: createMemoryStorage(),
    issuer: "http://127.0.0.1:1",
    baseUrl: "http://127.0.0.1:1",
    crypto: nodeCrypto({ batchSignatures: true }),
    ...(observability ? observabilityParts(observability.options, process.env.INPROC_PART === "" ? "none" : process.env.INPROC_PART) : {}),
  });
  await created.admin.ensureClient(CLIENT_ID, CLIENT_SECRET);
  await created.jwks();
  return created;
}

const body = new TextEncoder().encode("grant_type=client_credentials");
const headers = new Headers({ authorization: BASIC_AUTH, "content-type": "application/x-www-form-urlencoded", "content-length": String(body.length) });
const info = { clientIp: "127.0.0.1", readBody: async () => body };
// The Request is built once: plantgate reads the body through info.readBody, never request.body.
const request = new Request("http://127.0.0.1:1/UserService/connect/token", { method: "POST", headers });

async function round(target: Plantgate, n: number): Promise<number> {
  let left = n;
  const started = process.cpuUsage();
  const worker = async () => {
    while (left-- > 0) {
      const answer = await target.handle(request, info);
      if (answer.status !== 200) throw new Error(`status ${answer.status}`);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  const used = process.cpuUsage(started);
  return (used.user + used.system) / n;
}

const apps = { plain: await app(false), observed: await app(true) };
const figures: Record<keyof typeof apps, number[]> = { plain: [], observed: [] };
for (const name of ["plain", "observed"] as const) await round(apps[name], perRound); // warm-up
for (let i = 0; i < rounds; i++) {
  for (const name of ["plain", "observed"] as const) figures[name].push(await round(apps[name], perRound));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const name of ["plain", "observed"] as const) {
  console.error(`client credentials in process, ${name}: median ${median(figures[name]).toFixed(1)} µs CPU/request (${figures[name].map((f) => f.toFixed(0)).join(" ")})`);
}
const ratios = figures.plain.map((p, i) => p / figures.observed[i]!);
console.error(`observed / plain throughput (per-round CPU ratio, median): ${median(ratios).toFixed(3)}x`);
