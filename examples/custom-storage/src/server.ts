/**
 * plantgate on node:http over the JSON file store: `pnpm --filter @plantgate/example-custom-storage start`.
 * Data lives in ./data/plantgate.json (relative to the working directory) and survives restarts.
 * The same PLANTGATE_* variables as the node-server example configure plantgate itself (token
 * lifetimes, PLANTGATE_KEY_ENCRYPTION_KEY for the signing keys at rest, ...), and housekeeping
 * runs every PLANTGATE_PRUNE_INTERVAL_SECONDS (default 3600): without it nothing would delete
 * expired refresh tokens, and every write rewrites the whole file.
 */
import { createPlantgate, optionsFromEnv, pruneIntervalFromEnv } from "@plantgate/core";
import { schedulePrune, serve } from "@plantgate/node";
import { createJsonFileStorage } from "./json-file-storage.js";

const storage = await createJsonFileStorage(process.env.PLANTGATE_JSON_FILE || "./data/plantgate.json").catch((error: unknown) => {
  // Another process holds the file, or it is not a valid store: one line, not a stack trace.
  console.error(`plantgate: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
const app = createPlantgate({ ...optionsFromEnv(process.env), storage });

// Like examples/node-server: ensure one client exists (all grants, all scopes); an existing one is left as it is.
const clientId = process.env.PLANTGATE_BOOTSTRAP_CLIENT_ID;
const clientSecret = process.env.PLANTGATE_BOOTSTRAP_CLIENT_SECRET;
if (Boolean(clientId) !== Boolean(clientSecret)) {
  console.error("PLANTGATE_BOOTSTRAP_CLIENT_ID and PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be set together");
  await storage.close();
  process.exit(1);
}
if (clientId && clientSecret) {
  const outcome = await app.admin.ensureClient(clientId, clientSecret);
  console.log(`bootstrap client ${clientId}: ${outcome}`);
}

const pruning = schedulePrune(app.admin, { intervalSeconds: pruneIntervalFromEnv(process.env) });
const server = await serve(app, { port: Number(process.env.PORT || 3000), host: process.env.HOST || "127.0.0.1" });
console.log(`plantgate listening on ${server.url} (store: ${storage.path})`);

const stop = () => {
  pruning
    .stop()
    .then(() => server.close())
    // Every queued write on disk and the lock released, so the next start opens the file at once.
    .then(() => storage.close())
    .then(
      () => process.exit(0),
      () => process.exit(1),
    );
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
