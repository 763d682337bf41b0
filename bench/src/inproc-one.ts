// One app, one mode, N requests after 2000 of warm-up: for instruction counts under callgrind
// (tsx src/inproc-one.ts <plain|observed|events|observer> <N>); see inproc.ts for the CPU-time A/B.
import { createMemoryStorage, createPlantgate } from "@plantgate/core";
import { nodeCrypto } from "@plantgate/node";
import { setupObservability } from "@plantgate/observability";
import { BASIC_AUTH, CLIENT_ID, CLIENT_SECRET } from "./shared.js";

const mode = process.argv[2] ?? "plain";
const n = Number(process.argv[3] ?? 2000);
const obs = mode === "plain" ? null : setupObservability({ logLevel: "info", metricsPort: 0 });
const app = createPlantgate({
  storage: createMemoryStorage(),
  issuer: "http://127.0.0.1:1",
  baseUrl: "http://127.0.0.1:1",
  crypto: nodeCrypto({ batchSignatures: true }),
  ...(mode === "observed" ? obs!.options : mode === "events" ? { onEvent: obs!.options.onEvent } : mode === "observer" ? { observer: obs!.options.observer } : mode === "noop" ? { onEvent: () => {} } : {}),
});
await app.admin.ensureClient(CLIENT_ID, CLIENT_SECRET);
await app.jwks();
const body = new TextEncoder().encode("grant_type=client_credentials");
const headers = new Headers({ authorization: BASIC_AUTH, "content-type": "application/x-www-form-urlencoded", "content-length": String(body.length) });
const info = { clientIp: "127.0.0.1", readBody: async () => body };
const request = new Request("http://127.0.0.1:1/UserService/connect/token", { method: "POST", headers });
async function run(count: number) {
  let left = count;
  const worker = async () => {
    while (left-- > 0) if ((await app.handle(request, info)).status !== 200) throw new Error("not 200");
  };
  await Promise.all(Array.from({ length: 32 }, worker));
}
await run(2000);
await run(n);
await new Promise((r) => setTimeout(r, 30));
