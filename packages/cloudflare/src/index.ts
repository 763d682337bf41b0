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
 *
 * Every answer waits until the request body has been read to its end (see {@link readUploadToEnd}):
 * workerd closes a connection whose body was left unread, and the client then gets a reset instead
 * of the answer.
 * `scheduled()` is the housekeeping: give the Worker a cron trigger (`[triggers] crons = ["0 * * * *"]`
 * in wrangler.toml) and each run calls `admin.prune()`, at most `pruneMaxBatches` batches (default 20,
 * under D1's 50 queries per invocation on the Free plan), and logs the counts.
 */
import { AdminConflictError, AdminError, AdminNotFoundError, applyBootstrap, auditFromEnv, bootstrapFromEnv, checkBootstrap, ConfigError, consoleSettingsFromEnv, createPlantgate, describeError, guardedLogger, isIpAddress, isThenable, LATE, optionsFromEnv, PRUNE_STORES, StorageError, unavailableResponse, waitAtMost, type EnvVars, type Logger, type Plantgate, type PlantgateOptions, type PruneCounts } from "@plantgate/core";
import { createD1Storage, SchemaTooNewError, type D1DatabaseLike } from "@plantgate/storage-sql/d1";

/** workerd's PBKDF2 implementation refuses more than 100 000 iterations. */
export const WORKERS_MAX_PASSWORD_HASH_ITERATIONS = 100_000;

/** The Worker's default `signingKeyLoadTimeoutMs`: a request waits at most this long for a load of the signing keys. */
export const WORKER_SIGNING_KEY_LOAD_TIMEOUT_MS = 10_000;

/**
 * The default of {@link CreateWorkerOptions.d1TimeoutMs}: over `signingKeyLoadTimeoutMs` (10 s), so
 * a slow key reload still serves the keys loaded before; under D1's own 30 s limit on a query, and
 * under the 30 s refresh grace window, so a client retrying a refresh whose rotation was given up on
 * but committed late gets the rotation's answer.
 */
export const WORKER_D1_TIMEOUT_MS = 15_000;

/**
 * How long (ms) an isolate keeps a start that found the D1 schema newer than its code (a Worker
 * rolled back, or an older version running beside a newer one that migrated, in a gradual
 * deployment) before the next request starts again: meanwhile every request is answered the 503
 * at once, without touching D1. Retried at all because the schema can become one this code knows
 * while the isolate lives (a D1 restored with Time Travel to before the newer migration).
 */
export const WORKER_SCHEMA_TOO_NEW_RETRY_MS = 10_000;

/** The default of {@link CreateWorkerOptions.startTimeoutMs}. */
export const WORKER_START_TIMEOUT_MS = 30_000;

/** The default of {@link CreateWorkerOptions.startRetryMs}. */
export const WORKER_START_RETRY_MS = 1_000;

/**
 * The default of {@link CreateWorkerOptions.scheduledEventsTimeoutMs}: as long as Cloudflare lets a
 * `fetch`'s `waitUntil` work run after its response.
 */
export const WORKER_SCHEDULED_EVENTS_TIMEOUT_MS = 30_000;

/**
 * The default of {@link CreateWorkerOptions.fetchEventsTimeoutMs}: under the 30 s Cloudflare lets a
 * `fetch`'s `waitUntil` work run after its response, so the wait's timer (in the request's context,
 * torn down at that limit with its timers) fires before the context goes, and the wait is forgotten.
 */
export const WORKER_FETCH_EVENTS_TIMEOUT_MS = 25_000;

/**
 * The default of {@link CreateWorkerOptions.pruneMaxBatches}: the most delete batches one cron run
 * makes. Cloudflare allows 50 D1 queries per Worker invocation on the Free plan (1000 on Paid). A
 * batch is one D1 statement, a refresh-token batch too (both of its rules in one statement; until
 * 2026-11-30 one that found fewer ended families' tokens than a batch holds was two, the unconsumed
 * ones past their sliding expiry following), and so is each signing key deleted (since 2026-12-02;
 * the keys take at most the budget less a batch per store); a run adds 2 (the clients' longest
 * token lifetime, the signing keys' list), and a fresh isolate's first run its start (12 with a
 * bootstrapped client and account and their audit writes). The costliest run measured in workerd
 * over a backlog made 34 (until 2026-11-30, 48), and 45 with all a start may also write to the keys:
 * a due rotation (5, and at most `ROTATION_KEY_DELETES` = 2 deletes) and keys stored in clear sealed
 * under a new key encryption key (at most `KEYS_SEALED_PER_LOAD` = 4, and a read);
 * `packages/cloudflare/test/prune-budget.test.ts` and `signing-keys-budget.test.ts` count them.
 * Until 2026-12-02 every prunable key was deleted outside the budget (59: 68 queries).
 */
export const WORKER_PRUNE_MAX_BATCHES = 20;

/**
 * A secret bound from Cloudflare's Secrets Store (`[[secrets_store_secrets]]` in wrangler.toml): its
 * value is `await get()`, not the binding itself.
 */
export interface SecretsStoreSecretLike {
  get(): Promise<string>;
}

/** The bindings the Worker reads; other entries are ignored. */
export interface PlantgateWorkerEnv {
  /** The D1 database binding (name configurable with `options.d1Binding`). */
  DB?: D1DatabaseLike;
  /** Any variable plantgate reads may be a Secrets Store binding instead of a secret or var. */
  PLANTGATE_SIGNING_KEY?: string | SecretsStoreSecretLike;
  PLANTGATE_ISSUER?: string | SecretsStoreSecretLike;
  PLANTGATE_SCOPE_PREFIX?: string | SecretsStoreSecretLike;
  /** Numbers and booleans too: wrangler passes an unquoted TOML value (`= 300`) as one, read as its text. */
  PLANTGATE_PASSWORD_HASH_ITERATIONS?: string | number | SecretsStoreSecretLike;
  PLANTGATE_ACCESS_TOKEN_TTL?: string | number | SecretsStoreSecretLike;
  PLANTGATE_BOOTSTRAP_CLIENT_ID?: string | SecretsStoreSecretLike;
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET?: string | SecretsStoreSecretLike;
  PLANTGATE_BOOTSTRAP_USERNAME?: string | SecretsStoreSecretLike;
  PLANTGATE_BOOTSTRAP_PASSWORD?: string | SecretsStoreSecretLike;
  PLANTGATE_AUDIT?: string | number | SecretsStoreSecretLike;
  PLANTGATE_AUDIT_RETENTION_DAYS?: string | number | SecretsStoreSecretLike;
  [binding: string]: unknown;
}

/** The part of the Workers `ExecutionContext` this entry uses: security events are delivered through `waitUntil`. */
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
  /**
   * The longest (ms) one storage operation on D1 may take (a client lookup, a refresh rotation's
   * batch: every D1 call it makes); past it the operation fails with `StorageError`, so the request
   * is answered 503 with `Retry-After` and an `error` line names the operation. Default 15 000
   * ({@link WORKER_D1_TIMEOUT_MS}), `0`: no bound. D1 cannot cancel a call: a write given up on may
   * still be done later (its outcome is unknown to the client, as with the SQL store's
   * `queryTimeoutMs`). The migrations at start are not bounded by it (`startTimeoutMs` is).
   */
  d1TimeoutMs?: number;
  /**
   * How many bytes of a request body plantgate did not need (an oversized upload, a body sent with
   * a refused request) are read and discarded before the answer is sent; default 104 857 600
   * (100 MiB, Cloudflare's request body limit on the Free and Pro plans). A longer upload is cut off.
   */
  uploadDiscardBytes?: number;
  /** How long (ms) discarding the rest of an upload may take before it is cut off; default 30 000. */
  uploadDiscardMs?: number;
  /**
   * The longest a request waits (ms) for the isolate's start (migrations, bootstrap, signing keys);
   * past it the request is answered 503 and the next request starts afresh; default 30 000, `0`: no
   * bound.
   */
  startTimeoutMs?: number;
  /**
   * How long (ms) an isolate keeps a start that failed on its storage (D1 unreachable or refusing,
   * a secret the Secrets Store does not hold) before a request starts again: meanwhile every request
   * is answered the 503 at once, without touching D1, and the failure is logged once. Default 1 000
   * ({@link WORKER_START_RETRY_MS}): during an outage each isolate tries D1 and logs a line about
   * once a second, not once per request (until 2026-12-01 every request after a failed start began
   * another, a line and D1 calls each). `0`: the next request starts again at once. A start given up
   * on after `startTimeoutMs` is not kept (its context may be gone, not D1).
   */
  startRetryMs?: number;
  /**
   * The longest `scheduled()` waits (ms), after its prune, for the security events still being
   * delivered (its own, and any earlier request's) to reach the `onEvent` hook and the audit store;
   * past it one line is logged and the run ends (ok, its counts reported). Default 30 000, `0`: no
   * bound. A hook whose call never settles (its request's context gone) would otherwise keep every
   * run from ending.
   */
  scheduledEventsTimeoutMs?: number;
  /**
   * The longest (ms) each request's `waitUntil` waits, after its answer, for the security events
   * still being delivered (its own, and any earlier request's) to reach the `onEvent` hook and the
   * audit store; past it the wait is forgotten, and one line is logged, naming how many batches of
   * events are unfinished, until they all are delivered. Default 25 000 (under Cloudflare's 30 s
   * `waitUntil` limit), `0`: no bound. A hook call that never settles (its request's context gone)
   * would otherwise hold every later request's context to Cloudflare's limit and keep a record of
   * each request's wait for the isolate's life.
   */
  fetchEventsTimeoutMs?: number;
  /**
   * The most delete batches (of 1000 rows) one scheduled prune makes (`admin.prune({ maxBatches })`):
   * the stores take turns, one batch each per round, so each gets one in every run however large
   * another's backlog, and a backlog past the budget is worked off over the next runs (the counts'
   * `complete` is `false` while work may be left). Default 20 ({@link WORKER_PRUNE_MAX_BATCHES}),
   * which keeps a run under the 50 D1 queries Cloudflare allows a Free-plan invocation; on the Paid
   * plan (1000) it may be raised, toward 950 (a run is at most its batches and 25 D1 queries, a
   * fresh isolate's first run at its costliest; each signing key it deletes is one of its batches).
   * At least 7
   * (`PRUNE_STORES`, one batch per store: a run in a new isolate starts its rounds at the first
   * store, so a smaller budget would never reach the last ones). `0`: no bound (each store drained
   * in one run, which a backlog of more than a few dozen batches makes fail on Cloudflare past the
   * limit).
   */
  pruneMaxBatches?: number;
  /**
   * Called with the counts of each scheduled prune; default: one JSON line with `console.log`. A
   * throw is logged (`plantgate onPrune hook failed`, with the counts) and does not fail the run.
   */
  onPrune?: (counts: PruneCounts, controller: WorkerScheduledController) => void;
}

/** A Worker module: `export default createWorker()`. */
export interface PlantgateWorker {
  fetch(request: Request, env: PlantgateWorkerEnv, ctx?: WorkerExecutionContext): Promise<Response>;
  /**
   * The cron trigger's handler: prunes (`admin.prune({ maxBatches: pruneMaxBatches })`: at most that
   * many batches, the stores taking turns) and reports the counts (`complete: false` when work was left).
   * A failure (no D1 binding, D1 down) is logged (`plantgate scheduled prune failed`, with the D1
   * error under it) and rethrown, so the run shows as failed; a store that fails does not keep the
   * others from being pruned first (core logs `prune: some stores failed; the others were pruned`,
   * naming the failed stores, with the counts). An `onPrune` that throws is logged
   * (`plantgate onPrune hook failed`, with the counts) and the run stands: the prune was done. Then it
   * waits at most `scheduledEventsTimeoutMs` for the security events still being delivered.
   */
  scheduled(controller: WorkerScheduledController, env: PlantgateWorkerEnv, ctx?: WorkerExecutionContext): Promise<void>;
}

/**
 * The names core's readers (`auditFromEnv`, `optionsFromEnv` with the options it is given at the
 * start, `bootstrapFromEnv`) ask `vars` for, each reader run on its own (one that refuses a value
 * stops its own reads only; the start runs them again and fails there).
 */
function namesAsked(vars: EnvVars, given: Pick<PlantgateOptions, "maxScopeLength" | "signingKeyActivationDelaySeconds"> = {}): Set<string> {
  const asked = new Set<string>();
  const probe = new Proxy(vars, {
    get: (target, key) => (typeof key === "string" ? (asked.add(key), target[key]) : undefined),
    has: (target, key) => (typeof key === "string" && asked.add(key), key in target),
  });
  for (const reader of [auditFromEnv, (env: EnvVars) => optionsFromEnv(env, given), bootstrapFromEnv]) {
    try {
      reader(probe);
    } catch {
      // Refused here, refused at the start: that is where it is reported.
    }
  }
  return asked;
}

/**
 * The names plantgate reads from `env` as variables over an empty environment (each reader reads
 * every name it knows when none is set), so a variable core adds is one here too. A name a reader
 * asks for only while another is set is found by {@link stringEntries}, which asks again over the
 * values it has read (`packages/cloudflare/test/variables.test.ts` holds both to the README's list).
 */
const VARIABLES: ReadonlySet<string> = namesAsked({});

/**
 * The Worker's variables as text. wrangler passes an unquoted TOML value (`PLANTGATE_ACCESS_TOKEN_TTL
 * = 300`, `PLANTGATE_CONSOLE = true`) as a number or a boolean: taken as its text (until 2026-11-29
 * it was dropped, and the default applied without a word). Objects are bindings (D1, KV, services,
 * whatever their names), not variables, and are left out, except under a `PLANTGATE_` name a JSON
 * value (`[vars]` array or table, or null: no function member), which is a `ConfigError`: it was
 * dropped too, and an issuer given as `{ url = "..." }` left `iss` to each request's Host. A binding
 * under the name of a variable plantgate reads with a `get` method is a Secrets Store secret
 * (`[[secrets_store_secrets]]`), read with `await get()`: until 2026-11-30 it was left out as any
 * binding, without a word, and a `PLANTGATE_SIGNING_KEY` kept there gave way to a key the Worker
 * made itself, a `PLANTGATE_KEY_ENCRYPTION_KEY` kept there left the signing keys in clear. A
 * `get()` that fails (the secret not in the store, the store unreachable) fails the start, retried
 * after `startRetryMs`; one that answers anything but text is a `ConfigError`. The names of numbers
 * under a `PLANTGATE_` name that are not safe integers go into `unsafeNumbers` (their text may have
 * changed: see {@link unsafeNumberError}).
 */
async function stringEntries(env: PlantgateWorkerEnv, unsafeNumbers?: string[], given: Pick<PlantgateOptions, "maxScopeLength" | "signingKeyActivationDelaySeconds"> = {}): Promise<EnvVars> {
  const out: EnvVars = {};
  // The other bindings under PLANTGATE_ names with a get(): Secrets Store secrets if plantgate reads the name.
  const secrets = new Map<string, SecretsStoreSecretLike>();
  for (const [key, value] of Object.entries(env)) {
    if (typeof value === "string") out[key] = value;
    else if (typeof value === "number" || typeof value === "boolean") {
      out[key] = String(value);
      // Its text may not be the one written: a TOML float 1.50 reaches JavaScript as 1.5, a
      // wrangler.json 12345678901234567890 as 12345678901234567000 (wrangler's TOML reader refuses
      // an integer past 2^53 itself); a bootstrap secret or username was changed without a word
      // until 2026-12-01. Refused by the caller once the variables' own checks have spoken (a
      // number setting refuses it in its own words, as on the Node servers).
      if (typeof value === "number" && key.startsWith("PLANTGATE_") && !Number.isSafeInteger(value)) unsafeNumbers?.push(key);
    }
    else if (key.startsWith("PLANTGATE_") && isJsonValue(value)) {
      throw new ConfigError(`${key} must be text (a quoted [vars] value), a number or a boolean; wrangler passed ${Array.isArray(value) ? "an array" : value === null ? "null" : "a table"}`);
    } else if (key.startsWith("PLANTGATE_") && typeof (value as { get?: unknown } | undefined)?.get === "function") {
      secrets.set(key, value as SecretsStoreSecretLike);
    }
  }
  // The names read over an empty environment first; then, their values in, the readers are asked
  // again, until they ask for no binding more: a name core reads only while another is set (or has
  // some value) is read too, where one probe over an empty environment would miss it without a word.
  let wanted = [...secrets.keys()].filter((key) => VARIABLES.has(key));
  while (wanted.length > 0) {
    // Read together; every get() is waited for, so a failure after another's is no unhandled rejection.
    const read = await Promise.allSettled(wanted.map(async (key) => void (out[key] = await readSecret(key, secrets.get(key)!))));
    const failed = read.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    for (const key of wanted) secrets.delete(key);
    const asked = namesAsked(out, given);
    wanted = [...secrets.keys()].filter((key) => asked.has(key));
  }
  return out;
}

/** `await secret.get()`, which must be text; a failure names the variable. */
async function readSecret(key: string, secret: SecretsStoreSecretLike): Promise<string> {
  let value: unknown;
  try {
    value = await secret.get();
  } catch (error) {
    // Not the configuration's for sure (the store may be out of reach): tried again after startRetryMs.
    throw new Error(`plantgate: ${key} is a Secrets Store binding whose get() failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (typeof value !== "string") throw new ConfigError(`${key} is a Secrets Store binding whose get() answered ${value === null ? "null" : typeof value}, not text`);
  return value;
}

/** An array, null, or an object of data only (what a JSON `[vars]` value arrives as), not a binding. */
function isJsonValue(value: unknown): boolean {
  if (value === null || Array.isArray(value)) return true;
  if (typeof value !== "object") return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return (proto === Object.prototype || proto === null) && !Object.values(value).some((v) => typeof v === "function");
}

function isD1(value: unknown): value is D1DatabaseLike {
  return typeof value === "object" && value !== null && typeof (value as { prepare?: unknown }).prepare === "function";
}

/**
 * The instance a start made before it failed, by the error it failed with: its security events (a
 * bootstrap client created before D1 refused the account; no later start makes that one again) are
 * still on their way to the hook and the audit store, and the request or cron run that gets the
 * failure waits for them (`waitUntil`) as for a served request's. Until 2026-11-30 nothing did:
 * the 503 ended the request's context, and a hook call or audit write still under way was cut off.
 */
const appOfFailedStart = new WeakMap<object, Plantgate>();

/**
 * The app a failed start made, handed out once: the request or scheduled run that gets it waits for
 * its events' flush, and a start the isolate keeps leaves nothing for later ones to wait for.
 */
function takeAppOfFailedStart(error: unknown): Plantgate | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const app = appOfFailedStart.get(error);
  appOfFailedStart.delete(error);
  return app;
}

/**
 * An unquoted [vars] number whose text JavaScript cannot keep, under a variable that took it (a
 * text one: a secret, a username, an issuer; a number setting refuses it first, in its own words).
 * The value is not named: it may be a secret.
 */
function unsafeNumberError(key: string): ConfigError {
  return new ConfigError(`${key} is a number wrangler passed (an unquoted [vars] value) that is not a whole number below 2^53, so its text may not be the one written (digits past 2^53 are lost, 1.50 reads 1.5): quote it`);
}

/** A password hash iteration count past what Cloudflare's Web Crypto takes. */
function workersIterationsError(iterations: number | string): ConfigError {
  return new ConfigError(`PLANTGATE_PASSWORD_HASH_ITERATIONS (passwordHashIterations) must be at most ${WORKERS_MAX_PASSWORD_HASH_ITERATIONS} on Workers (Cloudflare's PBKDF2 limit), got ${iterations}`);
}

async function start(options: CreateWorkerOptions, env: PlantgateWorkerEnv, logger: Pick<Logger, "warn">): Promise<Plantgate> {
  // The upload bounds are the entry's own; the rest are plantgate options.
  const { d1Binding = "DB", migrate = true, d1TimeoutMs = WORKER_D1_TIMEOUT_MS, uploadDiscardBytes: _bytes, uploadDiscardMs: _ms, startTimeoutMs: _start, startRetryMs: _retry, scheduledEventsTimeoutMs: _events, fetchEventsTimeoutMs: _fetchEvents, pruneMaxBatches: _prune, ...rest } = options;
  // Everything the environment decides is checked before D1 is touched: a bad setting is a
  // ConfigError, which the isolate keeps (its env cannot change) instead of retrying per request.
  const database = env[d1Binding];
  // Not a ConfigError: a missing binding is retried (a test harness, or a deploy that adds it).
  if (!isD1(database)) throw new Error(`plantgate: env.${d1Binding} is not a D1 binding; add a [[d1_databases]] binding named ${d1Binding}`);
  const unsafeNumbers: string[] = [];
  const vars = await stringEntries(env, unsafeNumbers, rest);
  // The audit trail is kept unless PLANTGATE_AUDIT=0: core's reader, the one the Node servers and
  // the CLI use (an unquoted boolean var arrives as true/false, which it takes).
  const audit = auditFromEnv(vars);
  // The Workers limit before core's own (10,000,000): a count past both was told the
  // larger limit first, then the smaller once lowered.
  const given = vars.PLANTGATE_PASSWORD_HASH_ITERATIONS;
  if (given !== undefined && /^\d+$/.test(given) && Number(given) > WORKERS_MAX_PASSWORD_HASH_ITERATIONS) throw workersIterationsError(given);
  // The options' maxScopeLength bounds PLANTGATE_SCOPE_PREFIX's scopes (the default otherwise).
  const fromEnv = optionsFromEnv(vars, rest);
  const bootstrap = bootstrapFromEnv(vars);
  if (unsafeNumbers.length > 0) throw unsafeNumberError(unsafeNumbers[0]!);
  // The Node servers make the demo user an administrator then; the Worker makes no demo user, so
  // the console was served with no administrator and nothing said (until 2026-12-01), and no CLI
  // reaches D1 to make one.
  if (bootstrap.admin && !bootstrap.account) {
    throw new ConfigError("PLANTGATE_BOOTSTRAP_ADMIN=1 needs PLANTGATE_BOOTSTRAP_USERNAME and PLANTGATE_BOOTSTRAP_PASSWORD on the Worker, which makes no demo user to be the administrator");
  }
  const iterations = fromEnv.passwordHashIterations ?? rest.passwordHashIterations ?? WORKERS_MAX_PASSWORD_HASH_ITERATIONS;
  // Cloudflare's Web Crypto refuses PBKDF2 above 100 000 rounds (local workerd does not, so no test
  // on wrangler dev would show it): every password check would fail there.
  if (iterations > WORKERS_MAX_PASSWORD_HASH_ITERATIONS) {
    throw workersIterationsError(iterations);
  }
  const storage = createD1Storage(database, { audit, operationTimeoutMs: d1TimeoutMs });
  // Made before D1 is touched: its option checks (an issuer with a query, a scope prefix with a
  // space) are the configuration's, kept by the isolate; before 2026-11-29 D1 was migrated first
  // and every request retried them.
  let app: Plantgate;
  try {
    app = createPlantgate({
      passwordHashIterations: WORKERS_MAX_PASSWORD_HASH_ITERATIONS,
      // A load of the keys runs in the context of the request that started it; should that context
      // go, the load never settles, and every request after it waited for it (see keys.ts).
      signingKeyLoadTimeoutMs: WORKER_SIGNING_KEY_LOAD_TIMEOUT_MS,
      ...rest,
      ...fromEnv,
      // PLANTGATE_CONSOLE=1 turns the console on; the page given in the options (if any) stays.
      // PLANTGATE_CONSOLE_SESSION_TTL and PLANTGATE_CONSOLE_IDLE_TIMEOUT win over the options' own
      // whenever the console is on, by the variable or by the options (until 2026-11-30 only by the
      // variable: a console the options turned on kept the options' values, or the defaults).
      ...(fromEnv.console ? { console: { ...rest.console, ...fromEnv.console } } : rest.console?.enabled ? { console: { ...rest.console, ...consoleSettingsFromEnv(vars) } } : {}),
      storage,
    });
  } catch (error) {
    throw error instanceof TypeError ? new ConfigError(`plantgate: ${error.message}`, { cause: error }) : error;
  }
  try {
    if (migrate) await storage.migrate();
    // As the Node servers: a bootstrap value that breaks a rule stops the start (a ConfigError, kept)
    // naming the variable, before anything is created; one a stored client or account leaves unused
    // is a warning, and the start goes on. Until 2026-11-30 the Worker said the option's name
    // (`plantgate: bootstrap: clientSecret must be ...`), and a valid client beside a refused
    // password had been created.
    for (const warning of await checkBootstrap(bootstrap, storage, { adminRole: app.admin.consoleAdminRole })) logger.warn(warning);
    // The signing keys, loaded now as the Node servers do: a PLANTGATE_SIGNING_KEY that does not
    // import, or keys stored under another PLANTGATE_KEY_ENCRYPTION_KEY, fail the start (503, kept),
    // not every token and JWKS request with a 500 (before 2026-11-29). A storage outage is retried.
    // Before the bootstrap: a start refused here leaves no bootstrap client or account in D1 (until
    // 2026-11-30 they were created first, and the start refused after). Loading may store keys (the
    // first one, the configured one, ones re-encrypted under the KEK), never anything else.
    try {
      await app.jwks();
    } catch (error) {
      if (error instanceof StorageError) throw error;
      throw new ConfigError(`plantgate: the signing keys cannot be loaded: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    try {
      await applyBootstrap(app.admin, bootstrap);
    } catch (error) {
      // A bootstrap value the admin checks refuse (a secret too short): the configuration's too. A
      // conflict (another isolate creating the same client) or an outage is retried.
      if (error instanceof AdminError && !(error instanceof AdminConflictError) && !(error instanceof AdminNotFoundError)) {
        throw new ConfigError(`plantgate: bootstrap: ${error.message}`, { cause: error });
      }
      throw error;
    }
  } catch (error) {
    // The events this start made before it failed (the bootstrap's client.created, then D1 refused
    // the account) are still being delivered: the request that gets the failure holds them.
    if (typeof error === "object" && error !== null) appOfFailedStart.set(error, app);
    throw error;
  }
  return app;
}

/**
 * `app.flushEvents(timeoutMs)` in this context. With a bound, its timer is this context's pending
 * I/O while it waits. With `0` (no bound) there is none, and workerd takes a context that waits on
 * another context's work (an earlier request's events, delivered in that request's context) with
 * nothing pending of its own for a hung one: it cancelled a cron run at once (exceededCpu) and a
 * request's waitUntil never ended, though the events were delivered 3 s later (until 2026-12-01).
 * A timer that never fires is kept pending until the flush settles.
 */
async function flushEvents(app: Plantgate, timeoutMs: number): Promise<number> {
  if (timeoutMs > 0) return app.flushEvents(timeoutMs);
  const pending = setTimeout(() => {}, 2_147_483_647);
  try {
    return await app.flushEvents(0);
  } finally {
    clearTimeout(pending);
  }
}

/**
 * Creates the Worker. A failed start-up answers 503 (in the shape of the request's endpoint): an
 * outage (migration, bootstrap, keys) is kept for `startRetryMs` (1 s), then retried by the next
 * request; a configuration error (a bad
 * option or env value, a bootstrap value the checks refuse, signing keys that cannot be loaded) is
 * kept by the isolate and logged once. A D1 schema newer than this code is kept for
 * {@link WORKER_SCHEMA_TOO_NEW_RETRY_MS} (10 s), then tried again.
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
  const instances = new WeakMap<object, Start>();
  const reported = new WeakSet<object>();
  // Through core's own guard (guardedLogger: "a logger that throws is ignored (the answer stands)"):
  // until 2026-11-29 the Worker's own lines were not, and a log sink that threw turned a failed
  // start's 503 into an uncaught exception (500, error 1101 on Cloudflare), a scheduled run whose
  // events were not all delivered into a failed run, and a stalled flush into a rejected waitUntil.
  const logger = guardedLogger(options.logger ?? console);
  const {
    onPrune = (counts: PruneCounts) => console.log(JSON.stringify({ message: "plantgate prune", ...counts })),
    uploadDiscardBytes: discardBytes = 100 * 1024 * 1024,
    uploadDiscardMs: discardMs = 30_000,
    startTimeoutMs = WORKER_START_TIMEOUT_MS,
    startRetryMs = WORKER_START_RETRY_MS,
    scheduledEventsTimeoutMs = WORKER_SCHEDULED_EVENTS_TIMEOUT_MS,
    fetchEventsTimeoutMs = WORKER_FETCH_EVENTS_TIMEOUT_MS,
    pruneMaxBatches = WORKER_PRUNE_MAX_BATCHES,
    ...appOptions
  } = options;
  // NaN would make the discard bound never hold (every comparison with it is false).
  // As @plantgate/node checks them; the timer's bound too (a longer one fires at once).
  if (!Number.isSafeInteger(discardBytes) || discardBytes < 0) throw new TypeError("uploadDiscardBytes must be a non-negative integer");
  checkTimerMs("uploadDiscardMs", discardMs, "0");
  checkTimerMs("startTimeoutMs", startTimeoutMs, "0 (no bound)");
  checkTimerMs("startRetryMs", startRetryMs, "0 (retried on the next request)");
  checkTimerMs("d1TimeoutMs", options.d1TimeoutMs ?? WORKER_D1_TIMEOUT_MS, "0 (no bound)");
  checkTimerMs("scheduledEventsTimeoutMs", scheduledEventsTimeoutMs, "0 (no bound)");
  checkTimerMs("fetchEventsTimeoutMs", fetchEventsTimeoutMs, "0 (no bound)");
  // A cron run may be a new isolate's first, whose rounds start at the first store: a budget below
  // one batch per store would then serve the same first stores in every run (core's rotation across
  // runs lives in the app instance). At least one round serves every store in every run.
  if (!Number.isSafeInteger(pruneMaxBatches) || (pruneMaxBatches !== 0 && pruneMaxBatches < PRUNE_STORES)) {
    throw new TypeError(`pruneMaxBatches must be 0 (no bound) or an integer of at least ${PRUNE_STORES} (a batch for every store in each run)`);
  }
  const pruneOptions = pruneMaxBatches === 0 ? {} : { maxBatches: pruneMaxBatches };
  // Compatibility dates before 2022-10-31 keep workerd's legacy URL parser, which throws on URLs
  // the standard one takes (`?q=%ZZ`): core parses request.url, and that would be a 500. Detected
  // once; only then is each request's URL checked first (a 400 instead).
  const legacyUrlParser = urlOf("http://localhost/?q=%ZZ") === null;
  const instanceFor = async (env: PlantgateWorkerEnv): Promise<Plantgate> => {
    let current = instances.get(env);
    // A start that failed on storage or found the schema too new is kept for a while, then tried again.
    if (current?.retryAt !== undefined && Date.now() >= current.retryAt) {
      instances.delete(env);
      current = undefined;
    }
    if (!current) {
      const started: Start = { app: start(appOptions, env, logger), late: new StorageError(`plantgate: the start did not finish within ${startTimeoutMs} ms`) };
      current = started;
      instances.set(env, started);
      // A failed start is kept for startRetryMs (D1 may be back by then: the next request after it
      // tries again; until 2026-12-01 the next request at once, so during an outage every request
      // began a start, with its D1 calls and its error line), or for good when the configuration is
      // at fault, which no retry in this isolate can change. A schema newer than this code is kept
      // for WORKER_SCHEMA_TOO_NEW_RETRY_MS: no request can fix it, but a D1 restored to an older
      // point can; until 2026-11-30 every request started again (two D1 reads, an error line, then
      // the 503).
      started.app.then(
        (app) => void (started.ready = app),
        (error: unknown) => {
          if (error instanceof ConfigError || instances.get(env) !== started) return;
          if (error instanceof SchemaTooNewError) started.retryAt = Date.now() + WORKER_SCHEMA_TOO_NEW_RETRY_MS;
          else if (startRetryMs > 0) started.retryAt = Date.now() + startRetryMs;
          else instances.delete(env);
        },
      );
    }
    // Started: no timer for the requests after (all but the first few of an isolate).
    if (current.ready !== undefined) return current.ready;
    if (startTimeoutMs === 0) return current.app;
    // Each request waits on a timer of its own context. The start runs in the context of the
    // request that began it; should that context go (cancelled, or found hung by workerd), the
    // start never settles, and without this every later request of the isolate waited on it.
    const app = await waitAtMost(current.app, startTimeoutMs);
    if (app !== LATE) return app;
    // Given up on: the next request starts another (migrations and bootstrap are safe to repeat).
    if (instances.get(env) === current) instances.delete(env);
    throw current.late;
  };
  // Each request's work runs under waitUntil: in production, a client that disconnects tears its
  // request's context down at once unless waitUntil holds it (workerd#5062; local workerd does not),
  // and work shared by later requests would never settle: the isolate's start, a key reload, the
  // count of password checks in flight (four such losses and every password grant is "busy").
  const answer = (request: Request, env: PlantgateWorkerEnv, executionCtx: WorkerExecutionContext | undefined): Promise<Response> => {
    const work = answerNow(request, env, executionCtx);
    executionCtx?.waitUntil(work.then(
      () => {},
      () => {},
    ));
    return work;
  };
  const answerNow = async (request: Request, env: PlantgateWorkerEnv, executionCtx: WorkerExecutionContext | undefined): Promise<Response> => {
    // RFC 9110 §10.1.1: an expectation other than 100-continue is 417, by Node's own rule (which
    // @plantgate/node and @plantgate/express keep): a value naming 100-continue anywhere in it is
    // served. workerd passes the header on, and until 2026-12-01 the Worker served such a request
    // (a token) where Node refused it. Node serves any Expect on an HTTP/1.0 request; a Worker's
    // Request carries no version, so there the Worker refuses it too (README).
    const expectation = request.headers.get("expect");
    if (expectation !== null && !CONTINUE.test(expectation)) {
      return new Response(JSON.stringify({ error: "invalid_request", error_description: "The Expect header's expectation is not supported." }), {
        status: 417,
        headers: { "content-type": "application/json", "cache-control": "no-store" },
      });
    }
    // RFC 9112 §6.1, §6.3: Content-Length beside Transfer-Encoding is ambiguous framing (the
    // request-smuggling shape), refused 400 as Node's parser refuses it (@plantgate/node). workerd
    // reads such a body as chunked and hands the Worker both headers; until 2026-12-01 the Worker
    // served it (a token). workerd then also serves the bytes after the chunked body as a request of
    // its own, which no Worker code can stop (README).
    // So is a Transfer-Encoding other than exactly `chunked` (since 2026-12-03): workerd served
    // `chunked, chunked` and two `Transfer-Encoding: chunked` lines (a token), which Node refuses
    // 400 and front ends may frame apart. (An empty line before `chunked` reaches the Worker as
    // `chunked` alone: served; Node answers 501.)
    const transferEncoding = request.headers.get("transfer-encoding");
    if (transferEncoding !== null && (request.headers.has("content-length") || transferEncoding.trim().toLowerCase() !== "chunked")) {
      return new Response(JSON.stringify({ error: "invalid_request", error_description: "The request cannot be processed." }), {
        status: 400,
        headers: { "content-type": "application/json", "cache-control": "no-store" },
      });
    }
    let app: Plantgate;
    try {
      app = await instanceFor(env);
    } catch (error) {
      // The message and its cause (a D1 error under a StorageError), never a request's content.
      // A failure the isolate keeps is logged once, not on each request it answers.
      if (!reported.has(error as object)) {
        if (typeof error === "object" && error !== null) reported.add(error);
        logger.error("plantgate worker failed to start", { error: describeFailure(error) });
      }
      // In the shape of the request's endpoint: OAuth's on the token, revocation and introspection paths.
      // Once per failed start, by the first request that gets it: its app serves nothing and makes no
      // event after that, so a start the isolate keeps (a configuration error, a schema too new) left
      // every later request a flush with nothing to wait for (until 2026-11-30, one per request).
      // Without an execution context (nothing to wait with) the app is left for a request that has one.
      const made = executionCtx !== undefined ? takeAppOfFailedStart(error) : undefined;
      if (made !== undefined) executionCtx!.waitUntil(flushAfterAnswer(made));
      const answer = unavailableResponse(urlOf(request.url)?.pathname ?? "", "The service is temporarily unavailable; retry later.");
      return new Response(answer.body as Uint8Array<ArrayBuffer>, { status: answer.status, headers: answer.headers });
    }
    if (legacyUrlParser && urlOf(request.url) === null) {
      // As @plantgate/node's listener answers a request a Web Request cannot carry, headers included
      // (until 2026-12-02 this one alone said `application/json; charset=utf-8`).
      return new Response(JSON.stringify({ error: "invalid_request", error_description: "The request cannot be processed." }), {
        status: 400,
        headers: { "content-type": "application/json", "cache-control": "no-store" },
      });
    }
    // Cloudflare sets CF-Connecting-IP itself at its edge (a client cannot forge it there), so it
    // plays the socket address; forwarded headers still count only from configured trustedProxies.
    // Only an IP address is taken: behind no edge (wrangler dev, a service binding, a Worker
    // calling this one) the caller writes it, and any other text would be a fresh identity per
    // request for the per-address brute-force counters.
    const header = request.headers.get("cf-connecting-ip");
    const clientIp = header !== null && isIpAddress(header) ? header.trim() : undefined;
    const response = await app.fetch(request, clientIp !== undefined ? { clientIp } : {});
    // The onEvent hook and the audit store run after the answer; the isolate must not stop them.
    executionCtx?.waitUntil(flushAfterAnswer(app));
    return response;
  };
  // The apps whose fetch flushes are giving up: logged once, until a flush sees every event delivered.
  const stalled = new WeakSet<Plantgate>();
  /**
   * `app.flushEvents(fetchEventsTimeoutMs)`, on a timer of this request's context. It waits for
   * every event still being delivered, an earlier request's too; a hook call made in a context that
   * is gone never settles, and until 2026-11-29 every later request's wait then stayed open until
   * Cloudflare cut it at 30 s, each leaving a waiter on that call's events for the isolate's life.
   * The bound is under those 30 s: the timer goes with the context, and must fire before it does.
   * Logged once per stall (not per request: every request's flush gives up while a call hangs),
   * naming the count of unfinished batches only, never an event's fields.
   */
  const flushAfterAnswer = async (app: Plantgate): Promise<void> => {
    const unfinished = await flushEvents(app, fetchEventsTimeoutMs);
    if (unfinished === 0) return void stalled.delete(app);
    if (stalled.has(app)) return;
    stalled.add(app);
    logger.warn(`plantgate fetch: ${unfinished} batches of security events not delivered within ${fetchEventsTimeoutMs} ms; requests stop waiting for them after that (not logged again until they are)`);
  };
  /**
   * `app.flushEvents(scheduledEventsTimeoutMs)` (on a timer of this run's context). It waits for
   * every event still being delivered, an earlier request's too; a hook call made in a context that
   * is gone never settles, and the run then never ended (workerd reported it as exceededCpu, the
   * prune done but the run failed).
   */
  const flushBounded = async (app: Plantgate): Promise<void> => {
    if ((await flushEvents(app, scheduledEventsTimeoutMs)) === 0) return;
    logger.warn(`plantgate scheduled: the security events were not all delivered within ${scheduledEventsTimeoutMs} ms; the run ends without waiting for the rest`);
  };
  return {
    async scheduled(controller, env) {
      let app: Plantgate | undefined;
      try {
        let counts: PruneCounts;
        try {
          app = await instanceFor(env);
          counts = await app.admin.prune(pruneOptions);
        } catch (error) {
          // The fields core logs for a StorageError on the fetch path: the D1 error under it too
          // (until 2026-11-30 only the message, which names the operation, not why D1 failed).
          logger.error("plantgate scheduled prune failed", describeError(error));
          // A start that failed after it made events: the run waits for them too (below).
          // Once per failed start, as fetch hands it (a kept start's later runs have nothing to wait for).
          app ??= takeAppOfFailedStart(error);
          throw error;
        }
        // The prune is done: a hook that throws is the hook's failure, logged as such, and the run
        // stands (as core treats a failing onEvent hook). Until 2026-11-30 it was logged as a
        // failed prune and rethrown, failing a run whose prune had succeeded.
        const hookFailed = (error: unknown) => logger.error("plantgate onPrune hook failed", { ...describeError(error), counts });
        try {
          // An async hook's rejection too (its type says void, but an async function fits it): it
          // was an unhandled rejection, unreported, until 2026-11-30. Not awaited, as before.
          const result: unknown = onPrune(counts, controller);
          if (isThenable(result)) result.then(undefined, hookFailed);
        } catch (error) {
          hookFailed(error);
        }
      } finally {
        // The events of this invocation (a first one also bootstraps: client.created, account.created)
        // reach the onEvent hook and the audit store before it ends, as fetch's waitUntil does.
        if (app !== undefined) await flushBounded(app);
      }
    },
    async fetch(request, env, executionCtx) {
      if (request.body === null) return answer(request, env, executionCtx);
      const upload = readUploadToEnd(request.body, discardBytes, discardMs);
      try {
        // A GET or HEAD may arrive with a body (a client or proxy that always sends Content-Length:
        // 0): no Request can be made with one (the constructor throws: a 500, error 1101 on
        // Cloudflare), and plantgate reads none, so it gets the request without, and the upload
        // is read to its end as any unread one is.
        const bodiless = request.method === "GET" || request.method === "HEAD";
        // duplex: a stream body needs it outside workerd (Node's undici), workerd ignores it.
        const forwarded = bodiless ? new Request(request.url, { method: request.method, headers: request.headers }) : new Request(request, { body: upload.body, duplex: "half" } as RequestInit);
        return await answer(forwarded, env, executionCtx);
      } finally {
        await upload.finish();
      }
    },
  };
}


/** Node's test of an `Expect` value asking for 100-continue (lib/_http_server.js). */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/** Refuses a timer option setTimeout cannot hold (past 2^31-1 ms a delay fires at once; NaN never compares). */
function checkTimerMs(name: string, value: number, zero: string): void {
  if (!Number.isSafeInteger(value) || value < 0 || value > 2_147_483_647) throw new TypeError(`${name} must be an integer from ${zero} to 2147483647`);
}

/** An isolate's start, and the one error its requests get when it is late (so it is logged once). */
interface Start {
  app: Promise<Plantgate>;
  late: StorageError;
  /** The app, once the start has finished. */
  ready?: Plantgate;
  /** When a start that failed on storage or found the schema too new is tried again (`Date.now()` ms). */
  retryAt?: number;
}

/** `new URL(url)`, or null when it does not parse (the legacy URL class, which has no `URL.canParse`, refuses some). */
function urlOf(url: string): URL | null {
  try {
    return new URL(url);
  } catch {
    return null;
  }
}


/** A start-up failure for the log: its message, and its cause's (a D1 error under a StorageError). */
function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // A ConfigError made from another error names it already: in its own words for checkBootstrap's
  // (`PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be ...` from the AdminError `clientSecret must be ...`).
  const restated = error instanceof ConfigError && error.cause instanceof AdminError;
  const cause = error.cause instanceof Error && !restated && !error.message.endsWith(error.cause.message) ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}

/**
 * Forwards `source` into the body plantgate reads, and reads the rest of `source` to its end when
 * plantgate does not want it: after plantgate cancels the body (it stops at `maxBodyBytes`, or
 * refuses a Content-Type), or when it answers without touching it (a refused token). `finish()`
 * resolves once `source` is read to its end, or after `maxBytes` discarded bytes or `maxMs`, when
 * `source` is cancelled. Nothing is buffered beyond a chunk.
 *
 * Why: workerd's HTTP server (kj `HttpServer`) closes the connection when a Worker answers without
 * having read the whole request body, unless the rest arrives within a grace of 64 KiB and 1 s
 * (`canceledUploadGraceBytes`, `canceledUploadGracePeriod`). A client still writing its upload then
 * gets a reset instead of the answer, and `wrangler dev`'s proxy, whose request to the Worker fails
 * that way, answers 503 "Your worker restarted mid-request" (nothing restarted).
 *
 * A TransformStream rather than `new ReadableStream()`: the latter needs the 2022-11-30
 * compatibility date, and a Worker may have an older one.
 */
function readUploadToEnd(source: ReadableStream<Uint8Array>, maxBytes: number, maxMs: number): { body: ReadableStream<Uint8Array>; finish(): Promise<void> } {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const reader = source.getReader();
  let forwarding = true;
  let discarded = 0;
  const pumped = (async () => {
    for (;;) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch (error) {
        // The upload broke off: plantgate's read fails the same way.
        await writer.abort(error).catch(() => {});
        return;
      }
      if (step.done) {
        await writer.close().catch(() => {});
        return;
      }
      if (forwarding) {
        // Rejects once the body was cancelled (by plantgate, or by finish() when plantgate never read
        // it): discard from here on.
        await writer.write(step.value).catch(() => (forwarding = false));
      } else if ((discarded += step.value.byteLength) > maxBytes) {
        await reader.cancel().catch(() => {});
        return;
      }
    }
  })();
  const finish = async (): Promise<void> => {
    // plantgate has answered. A body it never read is cancelled now, which (like its own cancel)
    // makes the pending write fail, so the pump discards the rest.
    if (!readable.locked) await readable.cancel().catch(() => {});
    if ((await waitAtMost(pumped, maxMs)) === LATE) await reader.cancel().catch(() => {});
  };
  return { body: readable, finish };
}
