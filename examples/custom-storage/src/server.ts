/**
 * plantgate on node:http over the JSON file store: `pnpm --filter @plantgate/example-custom-storage start`.
 * Data lives in ./data/plantgate.json (relative to the working directory) and survives restarts.
 * The same PLANTGATE_* variables as the node-server example configure plantgate itself (token
 * lifetimes, PLANTGATE_KEY_ENCRYPTION_KEY for the signing keys at rest, ...), and housekeeping
 * runs every PLANTGATE_PRUNE_INTERVAL_SECONDS (default 3600): without it nothing would delete
 * expired refresh tokens, and every write rewrites the whole file.
 */

// A module (for the top-level awaits) that imports nothing statically: see below.
export {};

// SIGINT/SIGTERM during the start end it once it is done (then the server and the file close), as
// in examples/node-server: set before anything is opened.
let stopRequested = false;
let stopServer: (() => void) | null = null;
const onStopSignal = () => {
  if (stopServer) stopServer();
  else stopRequested = true;
};
process.once("SIGINT", onStopSignal);
process.once("SIGTERM", onStopSignal);

// plantgate and the store load only now, with the handlers above set: until 2026-12-02 they were
// static imports, loaded before any line here ran (seconds under tsx on a loaded machine), and a
// signal meanwhile ended the process by the default action, exit 143. Now: exit 0, nothing opened.
const [{ applyBootstrap, bootstrapFromEnv, checkBootstrap, ConfigError, createPlantgate, optionsFromEnv, pruneIntervalFromEnv }, { schedulePrune, serve }, { createJsonFileStorage }] = await Promise.all([
  import("@plantgate/core"),
  import("@plantgate/node"),
  import("./json-file-storage.js"),
]);
if (stopRequested) process.exit(0);

// PORT and HOST as examples/node-server reads them, checked before the file is opened: a PORT that
// is no port number ended the start with Node's RangeError and a stack trace (until 2026-11-30).
const listenOn = (() => {
  const raw = process.env.PORT || "3000";
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) {
    console.error(`PORT must be 0-65535, got ${JSON.stringify(raw)}`);
    process.exit(1);
  }
  return { port: Number(raw), host: process.env.HOST || "127.0.0.1" };
})();

const storage = await createJsonFileStorage(process.env.PLANTGATE_JSON_FILE || "./data/plantgate.json").catch((error: unknown) => {
  // Another process holds the file, or it is not a valid store: one line, not a stack trace.
  console.error(`plantgate: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});

/** A start that cannot go on: one line (a ConfigError names the variable, never a value), the file closed, exit 1. */
async function refuse(error: unknown): Promise<never> {
  console.error(error instanceof ConfigError ? error.message : `plantgate: ${error instanceof Error ? error.message : String(error)}`);
  await storage.close().catch(() => {});
  process.exit(1);
}

// Like examples/node-server (see the README, "Bootstrap values"): PLANTGATE_BOOTSTRAP_CLIENT_ID/_SECRET
// and _USERNAME/_PASSWORD (and _ADMIN) are checked before anything is created or the port is bound;
// a value a stored client or account leaves unused is a warning. The signing keys are loaded
// before the bootstrap, so a key that does not import provisions nothing. Until 2026-11-30 this
// example read only the client pair and ended a refused value with a stack trace naming the option.
const app = await (async () => {
  try {
    const plan = bootstrapFromEnv(process.env);
    for (const warning of await checkBootstrap(plan, storage)) console.warn(`plantgate: ${warning}`);
    const created = createPlantgate({ ...optionsFromEnv(process.env), storage });
    await created.jwks();
    await applyBootstrap(created.admin, plan);
    return created;
  } catch (error) {
    return refuse(error);
  }
})();

const pruning = schedulePrune(app.admin, { intervalSeconds: pruneIntervalFromEnv(process.env) });
// A port in use or a host it cannot bind: one line, the file closed, exit 1.
const server = await serve(app, listenOn).catch(refuse);
console.log(`plantgate listening on ${server.url} (store: ${storage.path})`);

stopServer = () => {
  // At once, side by side: the listener stops accepting and drains while the prune run in progress
  // ends at its next batch (until 2026-12-02 the listener waited for the whole run).
  const pruneEnded = pruning.stop();
  server
    .close()
    .then(() => pruneEnded)
    // Every queued write on disk and the lock released, so the next start opens the file at once;
    // never under a prune still running (its warn line says so): the next start takes over the lock
    // an exited process left.
    .then((ended) => (ended ? storage.close() : console.warn("plantgate: closing: the store is left open, a prune run is still under way")))
    .then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`plantgate: closing failed: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      },
    );
};
if (stopRequested) stopServer();
