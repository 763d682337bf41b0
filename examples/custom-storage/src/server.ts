/**
 * plantgate on node:http over the JSON file store: `pnpm --filter @plantgate/example-custom-storage start`.
 * Data lives in ./data/plantgate.json (relative to the working directory) and survives restarts.
 */
import { createPlantgate } from "@plantgate/core";
import { serve } from "@plantgate/node";
import { createJsonFileStorage } from "./json-file-storage.js";

const storage = await createJsonFileStorage(process.env.PLANTGATE_JSON_FILE || "./data/plantgate.json");
const app = createPlantgate({ storage });

// Like examples/node-server: ensure one client exists (all grants, all scopes); an existing one is left as it is.
const clientId = process.env.PLANTGATE_BOOTSTRAP_CLIENT_ID;
const clientSecret = process.env.PLANTGATE_BOOTSTRAP_CLIENT_SECRET;
if (Boolean(clientId) !== Boolean(clientSecret)) {
  console.error("PLANTGATE_BOOTSTRAP_CLIENT_ID and PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be set together");
  process.exit(1);
}
if (clientId && clientSecret) {
  const outcome = await app.admin.ensureClient(clientId, clientSecret);
  console.log(`bootstrap client ${clientId}: ${outcome}`);
}

const server = await serve(app, { port: Number(process.env.PORT || 3000), host: process.env.HOST || "127.0.0.1" });
console.log(`plantgate listening on ${server.url} (store: ${storage.path})`);

const stop = () => {
  server.close().then(
    () => storage.flush().then(() => process.exit(0)),
    () => process.exit(1),
  );
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
