import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { applyBootstrap, bootstrapFromEnv, checkBootstrap, ConfigError, consoleSettingsFromEnv, createPlantgate, describeError, optionsFromEnv, pruneIntervalFromEnv, unavailableResponse, type Plantgate, type PlantgateOptions } from "@plantgate/core";
import { plantgate } from "@plantgate/express";
import { answerMalformedRequests, closeGracefully, listeningUrl, nodeCrypto, schedulePrune, SERVE_DEFAULTS } from "@plantgate/node";
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

/** The environment the Express example reads: node-server's variables plus `PLANTGATE_MOUNT_PATH`. */
export interface ExpressServerEnv {
  HOST?: string;
  PORT?: string;
  /** Where plantgate is mounted in the Express app; default `/auth`. */
  PLANTGATE_MOUNT_PATH?: string;
  PLANTGATE_ISSUER?: string;
  PLANTGATE_SCOPE_PREFIX?: string;
  PLANTGATE_SIGNING_KEY?: string;
  PLANTGATE_BOOTSTRAP_CLIENT_ID?: string;
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET?: string;
  PLANTGATE_BOOTSTRAP_USERNAME?: string;
  PLANTGATE_BOOTSTRAP_PASSWORD?: string;
  PLANTGATE_PASSWORD_HASH_ITERATIONS?: string;
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

/** A running Express example server. */
export interface RunningExpressServer {
  /** Listening origin, e.g. `http://127.0.0.1:3000` (no trailing slash). */
  url: string;
  /** Mount path of plantgate, e.g. `/auth`. */
  mountPath: string;
  /** `url` + `mountPath`: the base of every plantgate route. */
  baseUrl: string;
  /** Where the data lives (password-free), e.g. "SQLite /path/data/plantgate.db". */
  store: string;
  app: Plantgate;
  /** The management console's page (under the mount path), or null when it is off. */
  consoleUrl: string | null;
  /** The Prometheus metrics URL (`PLANTGATE_METRICS_PORT`), or null when metrics are off. */
  metricsUrl: string | null;
  /** Credentials created for the demo (only when nothing was configured and the store was empty). */
  demo: { clientId: string; clientSecret: string; username: string; password: string } | null;
  close(): Promise<void>;
}

/**
 * A configuration mistake found here (PORT, a mount path): a ConfigError whose message names the
 * variable first, as every other variable's (until 2026-11-30 these alone were prefixed
 * "configuration: ").
 */
function fail(message: string): never {
  throw new ConfigError(message);
}

function port(value: string | undefined): number {
  if (value === undefined || value === "") return 3000;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) fail(`PORT must be 0-65535, got "${value}"`);
  return Number(value);
}

function mountPath(value: string | undefined): string {
  if (value === undefined || value === "") return "/auth";
  if (!/^\/[A-Za-z0-9._~\/-]*$/.test(value)) fail(`PLANTGATE_MOUNT_PATH must be a path like /auth, got "${value}"`);
  // The URL parser removes such segments from every request's path: core refused the base path
  // after the store was opened, naming its option (until 2026-12-01).
  if (/\/\.{1,2}(?=\/|$)/.test(value)) fail(`PLANTGATE_MOUNT_PATH must not have '.' or '..' segments, got "${value}"`);
  const trimmed = value.replace(/\/+$/, "");
  return trimmed;
}

/**
 * Starts an Express 5 app with plantgate mounted at `PLANTGATE_MOUNT_PATH` (default `/auth`)
 * and one route of its own (`GET /health` -> `{"ok":true}`), on the store the environment names
 * (as `startServer` of the node-server example: `PLANTGATE_DATABASE_URL`, else the SQLite file
 * `PLANTGATE_DB`; `overrides.storage` wins), provisioning the bootstrap client and account or,
 * with none configured and an empty store, a demo client and user.
 *
 * @example
 * const server = await startExpressServer({ PORT: "0", PLANTGATE_DB: ":memory:" });
 * console.log(`${server.baseUrl}/UserService/connect/token`);
 * await server.close();
 */
export async function startExpressServer(
  env: ExpressServerEnv,
  overrides: PlantgateOptions = {},
  logging: ServerLogging = {},
  hooks: DemoHooks = {},
): Promise<RunningExpressServer> {
  const host = env.HOST || "127.0.0.1";
  const listenPort = port(env.PORT);
  const mount = mountPath(env.PLANTGATE_MOUNT_PATH);
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

  // The issuer defaults to the listening URL, known only after listen (PORT=0 picks one), and
  // provisioning needs the app, so plantgate is mounted only once both are ready: until then
  // requests under the mount path (and for its RFC 8414 metadata URL) are answered 503.
  let handler: ReturnType<typeof plantgate> | null = null;
  const metadataPath = `/.well-known/oauth-authorization-server${mount}`;
  const plantgatePath = (path: string) => mount === "" || path === mount || path.startsWith(`${mount}/`) || path === metadataPath;
  const expressApp = express();
  expressApp.disable("x-powered-by");
  // plantgate first: it reads the raw body itself, so no body parser may run before it. At the
  // root, so that it also answers the RFC 8414 §3.1 metadata URL outside the mount path; the paths
  // it does not own go on to the routes below.
  expressApp.use((req, res, next) => {
    if (handler) return handler(req, res, next);
    const path = req.originalUrl.split("?")[0]!;
    if (!plantgatePath(path)) return next();
    // In the shape of the request's endpoint: OAuth's on the token, revocation and introspection paths.
    const answer = unavailableResponse(path, "The server is starting; retry shortly.", 1);
    res.status(answer.status).set(answer.headers).end(answer.body === null ? undefined : Buffer.from(answer.body));
  });
  // The app's own routes; a body parser here is fine because plantgate is mounted before it.
  expressApp.use(express.json());
  expressApp.get("/health", (_req, res) => {
    res.json({ ok: true });
  });
  // Last: the host's own error answer. Express's built-in one would print the error to stderr
  // with the request body attached (a password or secret sent as malformed JSON to any path
  // plantgate passes on), and outside production send a stack trace back.
  expressApp.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    const { status, type } = (typeof error === "object" && error !== null ? error : {}) as { status?: unknown; type?: unknown };
    const code = typeof status === "number" && status >= 400 && status < 500 ? status : 500;
    if (code === 500) observability.log.error({ type: typeof type === "string" ? type : error instanceof Error ? error.name : typeof error }, "unexpected error reached the final error handler (a host route, or plantgate's next(err))");
    if (res.headersSent) return void res.end();
    const [apiCode, message] =
      code === 413 ? [1007, "The body is larger than the limit."]
      : code === 415 ? [1008, "The body's encoding or charset is not supported."]
      : code === 500 ? [1500, "The server encountered an unexpected error."]
      : [1001, "The body is not valid JSON."];
    res.status(code).set("cache-control", "no-store").json({ error: apiCode, message });
  });

  // Not expressApp.listen(), which keeps Node's looser limits (headers 60 s, a whole request
  // 300 s, no connection cap, a connection that stops reading held for good): the same limits
  // as @plantgate/node's serve() (SERVE_DEFAULTS).
  const server = createServer(
    {
      headersTimeout: SERVE_DEFAULTS.headersTimeout,
      requestTimeout: SERVE_DEFAULTS.requestTimeout,
      keepAliveTimeout: SERVE_DEFAULTS.keepAliveTimeout,
      connectionsCheckingInterval: 1_000,
    },
    (req, res) => {
      // Express's router hands a target it cannot read the fast way to url.parse, and for an
      // absolute-form target with a broken authority (`GET http://[::1/auth/...`) Node then prints
      // DEP0170 on stderr with the whole target, its query included (a client_secret a client put
      // there; until 2026-11-29, then Express's HTML 404). Such a target, and `OPTIONS *`, get the
      // 400 the Node listener gives, and Express never sees them.
      const target = req.url ?? "";
      if (target.startsWith("/") || URL.canParse(target)) return void expressApp(req, res);
      const body = '{"error":"invalid_request","error_description":"The request cannot be processed."}';
      res.shouldKeepAlive = false;
      res.writeHead(400, { "content-type": "application/json", "content-length": Buffer.byteLength(body), "cache-control": "no-store" }).end(body);
    },
  );
  server.maxConnections = SERVE_DEFAULTS.maxConnections;
  server.setTimeout(SERVE_DEFAULTS.socketTimeout);
  answerMalformedRequests(server);
  server.listen(listenPort, host);
  // expressApp.listen() returns at once; wait for the bind (or its error).
  try {
    await new Promise<void>((resolve, reject) => {
      if (server.listening) return resolve();
      server.once("listening", () => {
        server.off("error", reject);
        resolve();
      });
      server.once("error", reject);
    });
  } catch (error) {
    await closeStorage();
    // Naming PORT: Node's "listen EADDRINUSE: address already in use 127.0.0.1:3000" did not say
    // which of the server's ports it was (until 2026-11-30); HOST for an address that does not
    // resolve or is not this machine's (it said PORT until 2026-12-01).
    const reason = error instanceof Error ? error.message : String(error);
    const code = (error as { code?: unknown } | null)?.code;
    const what = code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EADDRNOTAVAIL" ? `HOST ${host}` : `PORT ${listenPort}`;
    throw new Error(`${what}: the server could not listen (${reason})`, { cause: error });
  }
  const address = server.address() as AddressInfo;
  // A wildcard HOST (0.0.0.0, ::) is named by its loopback address, as serve()'s url: the issuer
  // and the metadata's endpoints default to this URL (they named 0.0.0.0 until 2026-12-01).
  const url = listeningUrl(address);
  // As serve()'s close(): the answers in flight go out whole (Connection: close), idle connections
  // close at once, and whatever is still open after SERVE_DEFAULTS.closeTimeout is cut off. Before
  // 2026-11-29 closeAllConnections() cut a request in flight off unanswered, and its handler ran on
  // against the store closed below.
  const closeServer = () => closeGracefully(server, SERVE_DEFAULTS.closeTimeout).catch(() => {});

  let metrics: MetricsListener | null = null;
  try {
    // Never on the public port: a listener of its own, on the same host.
    metrics = await observability.serveMetrics(host);
    const options: PlantgateOptions = {
      issuer: url + mount,
      ...(fromEnv.issuer ? {} : { baseUrl: url + mount }),
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
      ...(mount ? { basePath: mount } : {}),
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
    handler = plantgate(created);
    return {
      url,
      mountPath: mount || "/",
      baseUrl: url + mount,
      store: opened ? `${opened.display}${hot ? `; hot state in Redis ${hot.display}` : ""}` : "custom storage",
      app: created,
      // As the Node example's (the start lines name it; until 2026-12-02 this example had none).
      consoleUrl: options.console?.enabled ? `${options.baseUrl ?? url + mount}/console` : null,
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
          await closeServer();
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
    await closeServer();
    await closeStorage();
    throw error;
  }
}

