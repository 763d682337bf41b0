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
 * One plantgate instance per isolate (cached per `env` object). Before it answers its first request
 * it applies the D1 migrations (`storage.migrate()`, idempotent) unless `migrate: false`.
 *
 * `scheduled()` is the housekeeping: give the Worker a cron trigger (`[triggers] crons = ["0 * * * *"]`
 * in wrangler.toml) and each run calls `admin.prune()` and logs the counts.
 */
import { applyBootstrap, bootstrapFromEnv, createPlantgate, optionsFromEnv, type EnvVars, type Plantgate, type PlantgateOptions, type PruneCounts } from "@plantgate/core";
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

/** The part of a Workers `ScheduledController` (cron event) this entry reads. */
export interface WorkerScheduledController {
  readonly cron: string;
  readonly scheduledTime: number;
}

/** Options of {@link createWorker}: plantgate options (storage comes from D1) plus Worker ones. */
export interface CreateWorkerOptions extends Omit<PlantgateOptions, "storage"> {
  /** Name of the D1 binding in `env`; default `"DB"`. */
  d1Binding?: string;
  /** Apply the D1 migrations before the first request of each isolate; default `true`. */
  migrate?: boolean;
  /** Called with the counts of each scheduled prune; default: one JSON line with `console.log`. */
  onPrune?: (counts: PruneCounts, controller: WorkerScheduledController) => void;
}

/** A Worker module: `export default createWorker()`. */
export interface PlantgateWorker {
  fetch(request: Request, env: PlantgateWorkerEnv, ctx?: WorkerExecutionContext): Promise<Response>;
  /**
   * The cron trigger's handler: prunes (`admin.prune()`, bounded batches) and reports the counts.
   * A failure (no D1 binding, D1 down) is logged and rethrown, so the run shows as failed.
   */
  scheduled(controller: WorkerScheduledController, env: PlantgateWorkerEnv, ctx?: WorkerExecutionContext): Promise<void>;
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
  const app = createPlantgate({
    passwordHashIterations: WORKERS_MAX_PASSWORD_HASH_ITERATIONS,
    ...rest,
    ...optionsFromEnv(vars),
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
 * // src/worker.ts
 * import { createWorker } from "@plantgate/cloudflare";
 * export default createWorker();
 */
export function createWorker(options: CreateWorkerOptions = {}): PlantgateWorker {
  const instances = new WeakMap<object, Promise<Plantgate>>();
  const logger = options.logger ?? console;
  const { onPrune = (counts: PruneCounts) => console.log(JSON.stringify({ message: "plantgate prune", ...counts })), ...appOptions } = options;
  const instanceFor = (env: PlantgateWorkerEnv): Promise<Plantgate> => {
    let instance = instances.get(env);
    if (!instance) {
      instance = start(appOptions, env);
      instances.set(env, instance);
      // A failed start is not cached: the next request tries again.
      instance.catch(() => instances.delete(env));
    }
    return instance;
  };
  return {
    async scheduled(controller, env) {
      try {
        const app = await instanceFor(env);
        onPrune(await app.admin.prune(), controller);
      } catch (error) {
        logger.error("plantgate scheduled prune failed", { error: error instanceof Error ? error.message : String(error) });
        throw error;
      }
    },
    async fetch(request, env) {
      const instance = instanceFor(env);
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
