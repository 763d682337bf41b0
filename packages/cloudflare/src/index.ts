/**
 * plantgate as a Cloudflare Worker: `export default createWorker()` binds the Worker's `env` into
 * plantgate options. Imports no `node:*` module, so it needs no `nodejs_compat` flag.
 *
 * - `env.DB`: the D1 binding, used through `@plantgate/storage-sql/d1`.
 * - `env.PLANTGATE_SIGNING_KEY` (secret), `env.PLANTGATE_ISSUER`, `env.PLANTGATE_SCOPE_PREFIX`,
 *   `env.PLANTGATE_PASSWORD_HASH_ITERATIONS`, `env.PLANTGATE_ACCESS_TOKEN_TTL` (vars): read by
 *   `optionsFromEnv` from the string-valued entries of `env`.
 * - `env.PLANTGATE_BOOTSTRAP_CLIENT_ID`/`_SECRET` and `env.PLANTGATE_BOOTSTRAP_USERNAME`/`_PASSWORD`:
 *   ensured (created if missing) before the first request.
 *
 * The Worker is minimal unless you add the opt-in pages: `createWorker()` serves the token endpoint,
 * revocation, introspection, the APIs, metadata, JWKS and `/openapi.json`;
 * `createWorker({ docs: swaggerUi(), console: { enabled: true, page: consolePage() } })` adds the
 * API reference page (`@plantgate/docs`) and the management console (`@plantgate/console`). Only
 * what the entry imports is bundled.
 *
 * One plantgate instance per isolate (cached per `env` object). Before it answers its first request
 * it applies the D1 migrations (`storage.migrate()`, idempotent) unless `migrate: false`.
 */
import { applyBootstrap, bootstrapFromEnv, createPlantgate, optionsFromEnv, type EnvVars, type Plantgate, type PlantgateOptions } from "@plantgate/core";
import { createD1Storage, type D1DatabaseLike } from "@plantgate/storage-sql/d1";

/** workerd's PBKDF2 implementation refuses more than 100 000 iterations. */
export const WORKERS_MAX_PASSWORD_HASH_ITERATIONS = 100_000;

/** The bindings the Worker reads; other entries are ignored. */
export interface PlantgateWorkerEnv {
  /** The D1 database binding (name configurable with `options.d1Binding`). */
  DB?: D1DatabaseLike;
  PLANTGATE_SIGNING_KEY?: string;
  PLANTGATE_ISSUER?: string;
  PLANTGATE_SCOPE_PREFIX?: string;
  PLANTGATE_PASSWORD_HASH_ITERATIONS?: string;
  PLANTGATE_ACCESS_TOKEN_TTL?: string;
  PLANTGATE_BOOTSTRAP_CLIENT_ID?: string;
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET?: string;
  PLANTGATE_BOOTSTRAP_USERNAME?: string;
  PLANTGATE_BOOTSTRAP_PASSWORD?: string;
  [binding: string]: unknown;
}

/** The part of the Workers `ExecutionContext` this entry accepts (it uses none of it). */
export interface WorkerExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
}

/** Options of {@link createWorker}: plantgate options (storage comes from D1) plus Worker ones. */
export interface CreateWorkerOptions extends Omit<PlantgateOptions, "storage"> {
  /** Name of the D1 binding in `env`; default `"DB"`. */
  d1Binding?: string;
  /** Apply the D1 migrations before the first request of each isolate; default `true`. */
  migrate?: boolean;
}

/** A Worker module: `export default createWorker()`. */
export interface PlantgateWorker {
  fetch(request: Request, env: PlantgateWorkerEnv, ctx?: WorkerExecutionContext): Promise<Response>;
}

function stringEntries(env: PlantgateWorkerEnv): EnvVars {
  const out: EnvVars = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === "string") out[key] = value;
  return out;
}

function isD1(value: unknown): value is D1DatabaseLike {
  return typeof value === "object" && value !== null && typeof (value as { prepare?: unknown }).prepare === "function";
}

async function start(options: CreateWorkerOptions, env: PlantgateWorkerEnv): Promise<Plantgate> {
  const { d1Binding = "DB", migrate = true, ...rest } = options;
  const database = env[d1Binding];
  if (!isD1(database)) throw new Error(`plantgate: env.${d1Binding} is not a D1 binding; add a [[d1_databases]] binding named ${d1Binding}`);
  const storage = createD1Storage(database);
  if (migrate) await storage.migrate();
  const vars = stringEntries(env);
  const fromEnv = optionsFromEnv(vars);
  const app = createPlantgate({
    passwordHashIterations: WORKERS_MAX_PASSWORD_HASH_ITERATIONS,
    ...rest,
    ...fromEnv,
    // PLANTGATE_CONSOLE=1 turns the console on; the page given in the options (if any) stays.
    ...(fromEnv.console ? { console: { ...rest.console, ...fromEnv.console } } : {}),
    storage,
  });
  await applyBootstrap(app.admin, bootstrapFromEnv(vars));
  return app;
}

/**
 * Creates the Worker. Configuration errors and a failed start-up (migration, bootstrap) answer 503
 * with plantgate's API error body and are retried on the next request.
 *
 * @example
 * // src/worker.ts: the minimal Worker
 * import { createWorker } from "@plantgate/cloudflare";
 * export default createWorker();
 *
 * @example
 * // src/worker.ts: with the API reference page and the console page (console on with PLANTGATE_CONSOLE=1)
 * import { createWorker } from "@plantgate/cloudflare";
 * import { consolePage } from "@plantgate/console";
 * import { swaggerUi } from "@plantgate/docs";
 * export default createWorker({ docs: swaggerUi(), console: { enabled: false, page: consolePage() } });
 */
export function createWorker(options: CreateWorkerOptions = {}): PlantgateWorker {
  const instances = new WeakMap<object, Promise<Plantgate>>();
  const logger = options.logger ?? console;
  return {
    async fetch(request, env) {
      let instance = instances.get(env);
      if (!instance) {
        instance = start(options, env);
        instances.set(env, instance);
        // A failed start is not cached: the next request tries again.
        instance.catch(() => instances.delete(env));
      }
      let app: Plantgate;
      try {
        app = await instance;
      } catch (error) {
        logger.error("plantgate worker failed to start", { error: error instanceof Error ? error.message : String(error) });
        return new Response(JSON.stringify({ error: 1503, message: "The service is temporarily unavailable; retry later." }), {
          status: 503,
          headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", "retry-after": "5" },
        });
      }
      // Cloudflare sets CF-Connecting-IP itself (a client cannot forge it on a Worker), so it plays
      // the socket address; forwarded headers still count only from configured trustedProxies.
      const clientIp = request.headers.get("cf-connecting-ip");
      return app.fetch(request, clientIp !== null ? { clientIp } : {});
    },
  };
}
