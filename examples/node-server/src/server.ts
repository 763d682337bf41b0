import {
  applyBootstrap,
  bootstrapFromEnv,
  checkBootstrap,
  ConfigError,
  consoleSettingsFromEnv,
  createPlantgate,
  describeError,
  optionsFromEnv,
  pruneIntervalFromEnv,
  unavailableResponse,
  type PlainResponse,
  type Plantgate,
  type PlantgateOptions,
} from "@plantgate/core";
import { nodeCrypto, schedulePrune, serve, type HandleInfo } from "@plantgate/node";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";
import { consolePage } from "@plantgate/console";
import { swaggerUi } from "@plantgate/docs";
import { openRedisHotStoresFromEnv } from "@plantgate/storage-redis/env";
import { eventHooks, observabilityFromEnv, observers, setupObservability, type MetricsListener } from "@plantgate/observability";

/** How long `close()` waits for the security events still being delivered before the store closes. */
export const CLOSE_EVENTS_TIMEOUT_MS = 10_000;

/**
 * What the start does around the demo client and user (made only with nothing configured and an
 * empty store): `beforeDemo` is awaited once one is to be made, before anything is stored, and a
 * throw there fails the start with nothing made (`src/main.ts` makes sure it can write the
 * credentials file there).
 */
export interface DemoHooks {
  beforeDemo?: () => void | Promise<void>;
}

/** Where the server's JSON-line logs go: stdout unless a destination (anything with `write(line)`) is given, e.g. in tests. */
export interface ServerLogging {
  destination?: { write(line: string): void };
}

/** The environment the example server reads (see the README's configuration table). */
export interface ServerEnv {
  HOST?: string;
  PORT?: string;
  PLANTGATE_ISSUER?: string;
  PLANTGATE_SCOPE_PREFIX?: string;
  PLANTGATE_SIGNING_KEY?: string;
  PLANTGATE_BOOTSTRAP_CLIENT_ID?: string;
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET?: string;
  PLANTGATE_BOOTSTRAP_USERNAME?: string;
  PLANTGATE_BOOTSTRAP_PASSWORD?: string;
  PLANTGATE_PASSWORD_HASH_ITERATIONS?: string;
  /** `1`: serve the management console at /console. */
  PLANTGATE_CONSOLE?: string;
  /** `1`: the bootstrap (or demo) user gets the `admin` role, and the console is on. */
  PLANTGATE_BOOTSTRAP_ADMIN?: string;
  PLANTGATE_CONSOLE_SESSION_TTL?: string;
  PLANTGATE_CONSOLE_IDLE_TIMEOUT?: string;
  PLANTGATE_DB?: string;
  PLANTGATE_DATABASE_URL?: string;
  /** `redis://…`: throttle counters, revoked jtis and console sessions in Redis beside the store. */
  PLANTGATE_REDIS_URL?: string;
  PLANTGATE_REDIS_KEY_PREFIX?: string;
  /** Seconds between housekeeping runs (`admin.prune()`); default 3600, `0` off. */
  PLANTGATE_PRUNE_INTERVAL_SECONDS?: string;
  /** trace, debug, info (default), warn, error, fatal or silent: the JSON-line logs on stdout. */
  PLANTGATE_LOG_LEVEL?: string;
  /** A port: Prometheus metrics at `http://HOST:PORT/metrics` on a listener of their own; unset = none. */
  PLANTGATE_METRICS_PORT?: string;
  [name: string]: string | undefined;
}

/** A running example server. */
export interface RunningServer {
  url: string;
  /** Where the data lives (password-free), e.g. "SQLite /path/data/plantgate.db". */
  store: string;
  app: Plantgate;
  /** The management console's page, or null when it is off. */
  consoleUrl: string | null;
  /** The Prometheus metrics URL (`PLANTGATE_METRICS_PORT`), or null when metrics are off. */
  metricsUrl: string | null;
  /** Credentials created for the demo (only when nothing was configured and the store was empty). */
  demo: { clientId: string; clientSecret: string; username: string; password: string } | null;
  close(): Promise<void>;
}

/** The answer while start-up provisioning is still running (a few milliseconds), in the shape of the request's endpoint. */
function startingResponse(request: Request): PlainResponse {
  return unavailableResponse(new URL(request.url).pathname, "The server is starting; retry shortly.", 1);
}

/**
 * A configuration mistake found here (PORT): a ConfigError whose message names the
 * variable first, as every other variable's (until 2026-11-30 these alone were prefixed
 * "configuration: ").
 */
function fail(message: string): never {
  throw new ConfigError(message);
}

/**
 * A bind failure of the public port, naming PORT: Node's "listen EADDRINUSE: address already in use
 * 127.0.0.1:3000" did not say which of the server's ports it was (until 2026-11-30). An address
 * that does not resolve or is not this machine's names HOST instead (it said PORT until 2026-12-01).
 */
function listenFailure(host: string, listenPort: number, error: unknown): Error {
  const reason = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const what = code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EADDRNOTAVAIL" ? `HOST ${host}` : `PORT ${listenPort}`;
  return new Error(`${what}: the server could not listen (${reason})`, { cause: error });
}

function port(value: string | undefined): number {
  if (value === undefined || value === "") return 3000;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) fail(`PORT must be 0-65535, got "${value}"`);
  return Number(value);
}

/**
 * Starts plantgate on node:http from environment variables, on the store they name
 * (`PLANTGATE_DATABASE_URL`, else the SQLite file `PLANTGATE_DB`, default `./data/plantgate.db`;
 * `overrides.storage` wins over both), provisioning the bootstrap client and
 * account (idempotently) or, with none configured and an empty store, a demo client and user.
 *
 * @example
 * const server = await startServer({ PORT: "0" });
 * console.log(server.url);
 * await server.close();
 */
export async function startServer(env: ServerEnv, overrides: PlantgateOptions = {}, logging: ServerLogging = {}, hooks: DemoHooks = {}): Promise<RunningServer> {
  const host = env.HOST || "127.0.0.1";
  // Before the store is opened: a PORT that is not a port made ./data/plantgate.db for a start that
  // could not run (until 2026-11-30).
  const listenPort = port(env.PORT);
  const bootstrap = bootstrapFromEnv(env);
  // The overrides' maxScopeLength bounds PLANTGATE_SCOPE_PREFIX's scopes (the default otherwise).
  const fromEnv = optionsFromEnv(env, overrides);
  const consoleFromEnv = consoleSettingsFromEnv(env);
  const pruneIntervalSeconds = pruneIntervalFromEnv(env);
  // JSON-line logs (events, errors, housekeeping) and, with a metrics port, Prometheus metrics.
  const observability = setupObservability(observabilityFromEnv(env), logging);
  // A SQLite checkpoint worker that failed (and is started again) is a warn line of these logs.
  const onWarning = (message: string) => observability.options.logger.warn(message);
  const opened = overrides.storage ? null : await openStorageFromEnv(env, { cwd: process.cwd(), onWarning });
  // PLANTGATE_REDIS_URL: the hot state goes to Redis, the rest stays in the store above.
  let hot: Awaited<ReturnType<typeof openRedisHotStoresFromEnv>> = null;
  if (opened) {
    try {
      hot = await openRedisHotStoresFromEnv(env);
    } catch (error) {
      await opened.close();
      throw error;
    }
  }
  const storage = overrides.storage ?? { ...opened!, ...hot?.stores };
  // What the Redis server's settings put at risk (an evicting maxmemory-policy, no append-only file).
  for (const warning of hot?.warnings ?? []) observability.options.logger.warn(warning);
  const closeStorage = async () => {
    try {
      await hot?.close();
    } finally {
      await opened?.close();
    }
  };
  // Bootstrap values that break the admin checks stop the start here, before the port is bound,
  // naming the variable (until 2026-11-30 they failed after listen, naming the option, e.g.
  // `clientSecret`). Values a stored client or account leaves unused are a warning, as they start.
  try {
    // The console's admin role is the overrides' (the environment sets none): the role a stored
    // bootstrap account is warned about lacking, and the one applyBootstrap gives.
    for (const warning of await checkBootstrap(bootstrap, storage, { adminRole: overrides.console?.adminRole })) observability.options.logger.warn(warning);
  } catch (error) {
    await closeStorage();
    throw error;
  }

  // The issuer defaults to the listening URL, which is known only after listen (PORT=0 picks one),
  // so requests are routed through a holder that is filled right after.
  let app: Plantgate | null = null;
  let running: Awaited<ReturnType<typeof serve>>;
  let metrics: MetricsListener | null = null;
  try {
    running = await serve(
      {
        // What the Node listener calls: plain status/headers/bytes, no Web Response per request.
        handle: async (request: Request, info?: HandleInfo) => (app ? app.handle(request, info) : startingResponse(request)),
      },
      { port: listenPort, host },
    );
  } catch (error) {
    await closeStorage();
    throw listenFailure(host, listenPort, error);
  }
  try {
    // Never on the public port: a listener of its own, on the same host.
    metrics = await observability.serveMetrics(host);
    // The app's routes are under an override's basePath: the issuer and the endpoints the metadata
    // lists name it, as the Express example's mount path (until 2026-12-02 they named the bare
    // listening URL, and a discovering client posted to a 404).
    const base = running.url + (overrides.basePath ?? "");
    const options: PlantgateOptions = {
      issuer: base,
      ...(fromEnv.issuer ? {} : { baseUrl: base }),
      // node:crypto in line instead of Web Crypto's thread-pool jobs: same hashes and signatures, less CPU.
      crypto: nodeCrypto(),
      // The opt-in API reference page at /docs (from @plantgate/docs).
      docs: swaggerUi(),
      ...observability.options,
      ...fromEnv,
      ...overrides,
      // A hook of the host's own goes beside the event log lines and counters, not in their place.
      ...(overrides.onEvent ? { onEvent: eventHooks(observability.options.onEvent, overrides.onEvent) } : {}),
      // The same for an observer: until 2026-12-02 the host's replaced the metrics' (the request,
      // token and storage series stopped while /metrics still answered).
      ...(overrides.observer && observability.options.observer ? { observer: observers(observability.options.observer, overrides.observer) } : {}),
      storage,
    };
    // The console (PLANTGATE_CONSOLE=1, or an override) comes with its page unless one was given,
    // and, when on, with PLANTGATE_CONSOLE_SESSION_TTL and PLANTGATE_CONSOLE_IDLE_TIMEOUT unless the
    // overrides give their own (overrides win over the environment). Until 2026-11-30 a console
    // object from the overrides (with PLANTGATE_CONSOLE=1 or without) had neither: optionsFromEnv
    // puts them in the console it turns on, which the overrides' replaced.
    if (options.console) options.console = { page: consolePage(), ...(options.console.enabled ? consoleFromEnv : {}), ...options.console };
    const created = createPlantgate(options);
    // The signing keys are created or loaded before the first request, and before the bootstrap: a
    // PLANTGATE_SIGNING_KEY that does not import, or keys stored under another
    // PLANTGATE_KEY_ENCRYPTION_KEY, fails the start with no client or account provisioned (until
    // 2026-11-30 the bootstrap's, or the demo's, were stored first).
    await created.jwks();
    const demo = await applyBootstrap(created.admin, bootstrap, { demo: true, ...(hooks.beforeDemo ? { beforeDemo: hooks.beforeDemo } : {}) });
    // Housekeeping: expired tokens, sessions, counters and keys are deleted every interval.
    const pruning = schedulePrune(created.admin, { intervalSeconds: pruneIntervalSeconds, logger: observability.pruneLogger });
    app = created;
    return {
      url: running.url,
      store: opened ? `${opened.display}${hot ? `; hot state in Redis ${hot.display}` : ""}` : "custom storage",
      app: created,
      consoleUrl: options.console?.enabled ? `${options.baseUrl ?? `${running.url}${options.basePath ?? ""}`}/console` : null,
      metricsUrl: metrics?.url ?? null,
      demo,
      close: () =>
        (async () => {
          // At once, side by side: the listener stops accepting and drains while the prune run in
          // progress ends at its next batch. Until 2026-12-02 the close waited for the run first,
          // which drained every store: with a backlog the server went on accepting and answering
          // after SIGTERM (16 s for 2,000,000 expired revoked jtis), past a container's grace period.
          const pruneEnded = pruning.stop();
          await metrics?.close();
          await running.close();
          // The events of the last requests reach the hook and the audit store before the store closes
          // (before 2026-11-29 an audit append still under way met a closed store, and was lost).
          const unfinished = await created.flushEvents(CLOSE_EVENTS_TIMEOUT_MS);
          if (unfinished > 0) observability.options.logger.warn(`closing: ${unfinished} batches of security events not delivered within ${CLOSE_EVENTS_TIMEOUT_MS} ms; the store closes without them`);
          // Never under a delete still running: the store is left to the process's exit then.
          if (await pruneEnded) await closeStorage();
          else observability.options.logger.warn("closing: the store is left open, a prune run is still under way");
        })().catch((error: unknown) => {
          // Said before SIGTERM's exit 1 (name, message, cause; never a value): until 2026-12-02 without a word.
          observability.options.logger.error("closing failed", describeError(error));
          throw error;
        }),
    };
  } catch (error) {
    await metrics?.close();
    await running.close();
    await closeStorage();
    throw error;
  }
}
