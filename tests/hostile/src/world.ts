/**
 * The world every property attacks: a real `createPlantgate` on the memory store (wrapped by the
 * recording storage), with known clients, accounts, tokens and keys, so an oracle can decide what
 * a request *should* get without asking the server. With `HOSTILE_RUNTIME=workerd` the requests go
 * to `@plantgate/cloudflare`'s Worker in workerd on D1 instead (src/workerd.ts), the same setup made
 * from Node on the same database.
 *
 * Password hashing uses 1,000 PBKDF2 iterations instead of 600,000 so ten thousand password-grant
 * requests take seconds, not hours; the algorithm and the code path are the production ones.
 */
import { createMemoryStorage, createPlantgate, redactConnectionUrl, refreshTokenKey, sha256, type Plantgate, type SecurityEvent, type PlantgateOptions, type RefreshTokenRecord, type Storage } from "@plantgate/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { coreLogger, createLog, createMetrics, eventLogger } from "@plantgate/observability";
import { openSqlStorage } from "@plantgate/storage-sql";
import { redisHotStores } from "@plantgate/storage-redis";
import mysql from "mysql2/promise";
import pg from "pg";
import { createClient } from "redis";
import { createRecordingStorage, snapshot, type RecordingStorage, type StoreSnapshot } from "./snapshot.js";
import { startWorkerd, type WorkerdRuntime } from "./workerd.js";

/**
 * Where the generated requests are answered, `HOSTILE_RUNTIME`: unset or empty, in this process
 * (`app.fetch` of a `createPlantgate` on the store below, with a clock that stands still at
 * {@link NOW}); `workerd`: by `@plantgate/cloudflare`'s Worker in workerd (Miniflare) on a real D1
 * database (src/workerd.ts), with the machine's real time on both sides (see {@link World.clock}).
 * Not with `HOSTILE_STORE` or `HOSTILE_REDIS`: the Worker's store is D1.
 */
export const RUNTIME = process.env.HOSTILE_RUNTIME ?? "";
if (RUNTIME !== "" && RUNTIME !== "workerd") throw new Error(`HOSTILE_RUNTIME must be unset or workerd, got ${JSON.stringify(RUNTIME)}`);
/** Whether the worlds run the Worker (`HOSTILE_RUNTIME=workerd`). */
export const ON_WORKERD = RUNTIME === "workerd";

/**
 * The store every world runs on, `HOSTILE_STORE`: `memory` (default, what `pnpm test` runs),
 * `sqlite` (a fresh in-memory SQLite database per world), `postgres` (a fresh schema per world
 * on `PLANTGATE_TEST_POSTGRES_URL`, default the machine's `postgres://postgres@127.0.0.1:5432/test`,
 * dropped when the world closes) or `mysql` (a fresh database per world on the MySQL/MariaDB
 * server of `PLANTGATE_TEST_MYSQL_URL`, default `mysql://root@127.0.0.1:3306/test`, dropped when the
 * world closes). An unreachable server fails the run, whatever `CI` says: the store was asked for.
 * The SQL stores answer a value they cannot hold (U+0000 on PostgreSQL, a lone surrogate anywhere)
 * with an error, which the memory store would keep: a `pnpm hostile` run on them finds a 500 where
 * input reaches storage unchecked.
 */
export const STORE = process.env.HOSTILE_STORE ?? "memory";
/**
 * `HOSTILE_REDIS`: unset or empty, the store above holds everything; `1` (the machine's
 * `redis://127.0.0.1:6379`) or a `redis://` URL: the Redis hot stores (`@plantgate/storage-redis`:
 * attempts, revoked jtis, console sessions, used assertion jtis) are spread over it, as a deployment
 * composes them, under a fresh key prefix per world, deleted when the world closes. An unreachable
 * server fails the run.
 */
const REDIS = process.env.HOSTILE_REDIS ?? "";
export const REDIS_URL = REDIS === "" ? null : REDIS === "1" ? "redis://127.0.0.1:6379" : REDIS;
/**
 * The store's name in a replay line: `HOSTILE_STORE=... HOSTILE_REDIS=...` as `env` has them, a
 * Redis URL's password shown as `***` (the line goes to the test output; until 2026-11-30 it held
 * the password).
 */
export const replayStoreEnv = (env: Record<string, string | undefined>): string => {
  const store = env.HOSTILE_STORE ?? "memory";
  const redis = env.HOSTILE_REDIS ?? "";
  const runtime = env.HOSTILE_RUNTIME ?? "";
  return `${runtime === "" ? "" : ` HOSTILE_RUNTIME=${runtime}`}${store === "memory" ? "" : ` HOSTILE_STORE=${store}`}${redis === "" ? "" : ` HOSTILE_REDIS=${redis === "1" ? redis : redactConnectionUrl(redis)}`}`;
};
export const STORE_ENV = replayStoreEnv(process.env);
export const POSTGRES_URL = process.env.PLANTGATE_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const MYSQL_URL = process.env.PLANTGATE_TEST_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test";

/** How the names of a world's database, schema or Redis keys begin: its chunk seed. */
export const isolatedPrefix = (seed: number) => `hostile_${(seed >>> 0).toString(16)}_`;
/** A world's database or schema name: its chunk seed, then random (two runs may share a seed). */
const isolatedName = (seed: number) => `${isolatedPrefix(seed)}${Math.random().toString(16).slice(2, 10)}`;

type OpenStore = { storage: Storage; close(): Promise<void> };

/**
 * The store `HOSTILE_STORE` names ({@link openBaseStore}), with the Redis hot stores over it when
 * `HOSTILE_REDIS` asks; `clock` is the app's (Redis expiries are counted from it).
 */
export async function openStore(seed: number, clock: () => number): Promise<OpenStore> {
  const base = await openBaseStore(seed);
  if (REDIS_URL === null) return base;
  const client = createClient({ url: REDIS_URL, disableOfflineQueue: true, socket: { connectTimeout: 3000, reconnectStrategy: false } });
  client.on("error", () => {}); // failures reach the caller as rejections
  try {
    await client.connect();
  } catch (e) {
    await base.close();
    throw new Error(`HOSTILE_REDIS: no Redis server at ${redactConnectionUrl(REDIS_URL)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const prefix = `${isolatedName(seed)}:`;
  return {
    storage: { ...base.storage, ...redisHotStores(client, { keyPrefix: prefix, clock }) },
    close: async () => {
      try {
        const keys: string[] = [];
        for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) keys.push(...batch);
        if (keys.length > 0) await client.del(keys);
      } finally {
        client.destroy();
        await base.close();
      }
    },
  };
}

async function openBaseStore(seed: number): Promise<OpenStore> {
  if (STORE === "memory") return { storage: createMemoryStorage({ audit: true }), close: async () => {} };
  if (STORE === "sqlite") {
    const storage = await openSqlStorage("sqlite::memory:", { audit: true });
    return { storage, close: () => storage.close() };
  }
  if (STORE === "postgres") return openPostgresSchema(POSTGRES_URL, isolatedName(seed));
  if (STORE === "mysql") return openMysqlDatabase(MYSQL_URL, isolatedName(seed));
  throw new Error(`HOSTILE_STORE must be memory, sqlite, postgres or mysql, got ${JSON.stringify(STORE)}`);
}

/**
 * Runs `first`, then `then` whether `first` failed or not (an admin connection is ended on every
 * path: until 2026-11-30 a failed statement left it open); `first`'s value, or the failure of
 * either, both as one AggregateError.
 */
async function alwaysThen<T>(first: () => Promise<T>, then: () => Promise<unknown>): Promise<T> {
  const failures: unknown[] = [];
  const result = await first().catch((e: unknown) => void failures.push(e));
  await then().catch((e: unknown) => void failures.push(e));
  if (failures.length === 2) throw new AggregateError(failures, `${String(failures[0])}; and then: ${String(failures[1])}`);
  if (failures.length === 1) throw failures[0];
  return result as T;
}

/**
 * A store on a new PostgreSQL schema `schema` of the database at `serverUrl`, made by an admin
 * connection of its own, which drops the schema when the store closes; the connection is ended
 * whatever fails (test/store-admin-connection.test.ts).
 */
export async function openPostgresSchema(serverUrl: string, schema: string): Promise<OpenStore> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create schema "${schema}"`).catch((e: unknown) => alwaysThen(() => Promise.reject(e), () => admin.end()));
  const url = new URL(serverUrl);
  url.searchParams.set("options", `-c search_path=${schema}`);
  const dropSchema = () => alwaysThen(() => admin.query(`drop schema "${schema}" cascade`), () => admin.end());
  const storage = await openSqlStorage(url.toString(), { audit: true }).catch((e: unknown) => alwaysThen(() => Promise.reject(e), dropSchema));
  return { storage, close: () => alwaysThen(() => storage.close(), dropSchema) };
}

/**
 * A store on a new MySQL/MariaDB database `database` of the server at `serverUrl`, made by an
 * admin connection of its own, which drops the database when the store closes; the connection is
 * ended whatever fails (test/store-admin-connection.test.ts).
 */
export async function openMysqlDatabase(serverUrl: string, database: string): Promise<OpenStore> {
  const adminUrl = serverUrl.replace(/^mariadb:/i, "mysql:");
  const admin = await mysql.createConnection({ uri: adminUrl, connectTimeout: 5000 }).catch((e: unknown) => {
    throw new Error(`HOSTILE_STORE=mysql: no MySQL/MariaDB server at ${redactConnectionUrl(serverUrl)} (set PLANTGATE_TEST_MYSQL_URL): ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  });
  await admin.query(`create database \`${database}\``).catch((e: unknown) => alwaysThen(() => Promise.reject(e), () => admin.end()));
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  const dropDatabase = () => alwaysThen(() => admin.query(`drop database if exists \`${database}\``), () => admin.end());
  const storage = await openSqlStorage(url.toString(), { audit: true }).catch((e: unknown) => alwaysThen(() => Promise.reject(e), dropDatabase));
  return { storage, close: () => alwaysThen(() => storage.close(), dropDatabase) };
}

export const ISSUER = "https://as.example";
export const OTHER_ISSUER = "https://other.example";
export const TOKEN_PATH = "/UserService/connect/token";
export const REVOCATION_PATH = "/UserService/connect/revocation";
export const INTROSPECTION_PATH = "/UserService/connect/introspect";
export const LIST_PATH = "/rbac/ServerCommand/GetAccountList";
export const USER_APIS = "Platform_UserAPIs";
export const SERVER_COMMANDS = "Platform_AllAppsServerCommands";
export const OFFLINE = "offline_access";
/** The id of the plant every world starts with. */
export const KNOWN_PLANT_ID = 42n;
/**
 * Fixed "now" of every in-process world: tokens minted before it can be expired on purpose. A
 * workerd world's clock is the machine's (the Worker's cannot be set from here): read
 * {@link World.clock}, not this, for the time a request is answered at.
 */
export const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);

export interface ClientFixture {
  id: string;
  secret: string;
  grants: ("client_credentials" | "password" | "refresh_token")[];
  scopes: string[];
}

export interface AccountFixture {
  username: string;
  password: string;
  enabled: boolean;
  id: string;
}

/** Clients; ids and secrets include characters that RFC 6749 App. B encoding must carry through Basic. */
export const CLIENTS: ClientFixture[] = [
  { id: "cc-client", secret: "cc-secret-0123456789abcdef", grants: ["client_credentials"], scopes: [USER_APIS, SERVER_COMMANDS] },
  { id: "pw-client", secret: "pw-secret-0123456789abcdef", grants: ["password", "refresh_token"], scopes: [USER_APIS, SERVER_COMMANDS, OFFLINE] },
  // Client ids are printable ASCII; the secret may be anything, so it gets the non-ASCII.
  { id: "odd:client%+", secret: "odd secret:%+&=ü-0123456789", grants: ["client_credentials", "password", "refresh_token"], scopes: [USER_APIS, OFFLINE] },
];

export const ACCOUNTS_INPUT = [
  { username: "alice", password: "correct horse ✓ battery", enabled: true },
  { username: "carol:+%", password: "pa:ss+word%20&x=1", enabled: true },
  { username: "bob", password: "bob-password-disabled", enabled: false },
];

/** Seeded PRNG (mulberry32): refresh tokens, jtis, ids and salts are reproducible per seed. */
export function seededBytes(seed: number): (n: number) => Uint8Array {
  let a = seed >>> 0;
  return (n) => {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      out[i] = ((t ^ (t >>> 14)) >>> 0) & 0xff;
    }
    return out;
  };
}

export interface LogEntry {
  level: "error" | "warn";
  message: string;
  context: string;
}

export interface World {
  app: Plantgate;
  rec: RecordingStorage;
  storage: Storage;
  /**
   * The time the server answers at. In process: {@link NOW}, standing still. On workerd: the
   * machine's real time (`Date.now()`, the Worker's clock too), moving: a time the Worker stamps
   * (a revoked family's `revokedAt`) is only known to lie between the readings before and after
   * its request (see `withStoreCheck`).
   */
  clock: { readonly now: number };
  /** Whether the clock is the machine's (workerd), not one standing still. */
  realTime: boolean;
  /**
   * On workerd: adds every key stored in D1 to `rec.known`, so snapshots see rows the Worker wrote
   * (the recording storage only sees Node's writes). In process: nothing to do.
   */
  learnKeys(): Promise<void>;
  /** The store's snapshot for `withStoreCheck` (src/snapshot.ts; on workerd, read from D1 in one batch). */
  snapshot(): Promise<StoreSnapshot>;
  /** The ids of the stored plants (on workerd, read from D1 in one query, the Worker's plants too). */
  storedPlantIds(): Promise<Set<bigint>>;
  clients: ClientFixture[];
  accounts: AccountFixture[];
  logs: LogEntry[];
  /** Every security event (`onEvent`) since the last check, as its JSON line. */
  events: string[];
  /** Access tokens minted at setup. */
  tokens: {
    cc: string;
    alice: string;
    /** scope `offline_access` only: valid, but no API scope. */
    noApiScope: string;
    /** iat = NOW - 3 h, TTL 2 h. */
    expired: string;
    /** Issued by another plantgate (other issuer and audience) over the same keys. */
    otherAudience: string;
    /** A client-credentials token revoked at the revocation endpoint. */
    revoked: string;
  };
  refresh: {
    /** Exchanged once (its successor lives): presenting it again revokes the family (RFC 9700 §4.14.2). */
    consumed: string;
    /** Its family was revoked. */
    revoked: string;
    /** Issued NOW - 8 days: past the 7-day sliding lifetime. */
    expired: string;
    /** A live token of the odd client; presented by pw-client it is someone else's. */
    otherClient: string;
  };
  /** A live refresh token of pw-client for alice (re-minted when a request spent it). */
  liveRefresh(): Promise<string>;
  /** The real signing key (private), and its public forms for algorithm-confusion attacks. */
  keys: { kid: string; privateKey: CryptoKey; publicJwkText: string; publicJwk: JsonWebKey; pem: string };
  /** Every secret and password of the world; none may ever appear in a log line. */
  secrets: string[];
  /**
   * What the server "logs" as the example servers would: the JSON lines of its events and errors
   * (through @plantgate/observability's pino logger), and its Prometheus metrics text; in a world
   * made with `tracing`, also each span's name, attributes and events (JSON).
   */
  output(): Promise<string>;
  /**
   * Every secret, password and token a request of this world carried or an answer issued (at least
   * 8 characters long), for the check that none of them reaches {@link World.output}.
   */
  carried: Set<string>;
  /** Whether a stored refresh token would be honoured for `clientId` right now. */
  refreshIsLive(token: string, clientId: string): Promise<boolean>;
  /** The stored record of a refresh token, read directly. */
  refreshRecord(token: string): Promise<RefreshTokenRecord | null>;
  /** Closes the world's store (a SQL store's connections; a PostgreSQL schema or MySQL database is dropped). */
  close(): Promise<void>;
}

export const basicHeader = (id: string, secret: string) => "Basic " + b64(utf8(`${formEncode(id)}:${formEncode(secret)}`));

export const utf8 = (s: string) => new TextEncoder().encode(s);

export function b64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

export const b64url = (bytes: Uint8Array) => b64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/**
 * application/x-www-form-urlencoded encoding of one component, as the WHATWG URL standard's
 * serializer does it (space as '+'; a lone surrogate becomes U+FFFD, as UTF-8 cannot carry it).
 */
export function formEncode(s: string): string {
  let out = "";
  for (const b of utf8(s)) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9*\-._]/.test(c) ? c : b === 0x20 ? "+" : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

export function formBody(params: [string, string][]): string {
  return params.map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`).join("&");
}

let setupLogs: LogEntry[] = [];

async function tokenCall(app: Plantgate, client: ClientFixture, params: [string, string][]): Promise<Record<string, unknown>> {
  const res = await app.fetch(
    new Request(ISSUER + TOKEN_PATH, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basicHeader(client.id, client.secret) },
      body: formBody(params),
    }),
  );
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) {
    throw new Error(`world setup: token request failed: ${res.status} ${JSON.stringify(body)}; logged: ${setupLogs.map((l) => `${l.message} ${l.context}`).join("; ")}`);
  }
  return body;
}

function pemOf(spki: ArrayBuffer): string {
  const b = b64(new Uint8Array(spki));
  return `-----BEGIN PUBLIC KEY-----\n${b.match(/.{1,64}/g)!.join("\n")}\n-----END PUBLIC KEY-----\n`;
}

/** Extra options for a world (e.g. a strict brute-force limit, the management console). */
export type WorldOptions = Pick<PlantgateOptions, "bruteForce" | "console"> & {
  /**
   * Runs as setup's last step, every setup write made, with the world's store (on workerd: D1,
   * through the bridge); a rejection fails the setup. For test/world-setup.test.ts, which shows
   * that a failed setup leaves nothing behind.
   */
  atSetupEnd?: (storage: Storage) => Promise<void>;
  /**
   * Gives the world's app an OpenTelemetry tracer (the SDK's, into an in-memory exporter), whose
   * spans {@link World.output} then holds: what a span carries is checked as the logs are. In
   * process only: on workerd the Worker answers the requests, with no tracer.
   */
  tracing?: boolean;
};

/**
 * Builds a fresh world. `seed` pins every random value the server draws.
 *
 * @example
 * const world = await createWorld(42);
 * const res = await world.app.fetch(new Request(ISSUER + "/.well-known/jwks.json"));
 */
export async function createWorld(seed: number, options: WorldOptions = {}): Promise<World> {
  // Setup mints tokens in the past (`ago` ms before now); the requests then run at now.
  let ago = 0;
  const clock = { get now() { return (ON_WORKERD ? Date.now() : NOW) - ago; } };
  const logs: LogEntry[] = [];
  const events: string[] = [];
  setupLogs = logs;
  const bruteForce = options.bruteForce ?? { maxFailures: 1_000_000_000, windowSeconds: 60 };
  let worker: WorkerdRuntime | null = null;
  if (ON_WORKERD) {
    if (STORE !== "memory" || REDIS_URL !== null) throw new Error("HOSTILE_RUNTIME=workerd runs on D1: unset HOSTILE_STORE and HOSTILE_REDIS");
    // The console world runs the full Worker with PLANTGATE_CONSOLE=1: the console's defaults and
    // @plantgate/console's page (the full Worker's), which the world's own app should then be given too.
    if (options.console !== undefined && (options.console.enabled !== true || Object.keys(options.console).some((k) => k !== "enabled" && k !== "page"))) {
      throw new Error("HOSTILE_RUNTIME=workerd: a console world is { enabled: true, page?: consolePage() } (PLANTGATE_CONSOLE=1)");
    }
    if (bruteForce === false) throw new Error("HOSTILE_RUNTIME=workerd: the Worker's brute-force defence cannot be turned off");
    worker = await startWorkerd(
      { issuer: ISSUER, bruteForce, console: options.console !== undefined },
      { onLog: (level, message, context) => logs.push({ level, message, context }), onEvent: (json) => events.push(json) },
    );
  }
  const store: OpenStore = worker ?? (await openStore(seed, () => clock.now));
  try {
    const rec = createRecordingStorage(store.storage);
    // The example servers' logs and metrics, writing into memory: every level, every event.
    const lines: string[] = [];
    const log = createLog({ level: "trace", destination: { write: (line: string) => void lines.push(line) } });
    const serverLog = coreLogger(log);
    const metrics = createMetrics({ processMetrics: false });
    const logEvent = eventLogger(log);
    const logger = {
      error: (message: string, context?: Record<string, unknown>) => {
        logs.push({ level: "error", message, context: JSON.stringify(context ?? {}) });
        serverLog.error(message, context);
      },
      warn: (message: string, context?: Record<string, unknown>) => {
        logs.push({ level: "warn", message, context: JSON.stringify(context ?? {}) });
        serverLog.warn(message, context);
      },
    };
    const random = seededBytes(seed);
    const observability = {
      observer: metrics.observer,
      onEvent: (event: SecurityEvent) => {
        events.push(JSON.stringify(event));
        metrics.countEvent(event);
        logEvent(event);
      },
    };
    const common: PlantgateOptions = {
      storage: rec.storage,
      clock: () => clock.now,
      passwordHashIterations: 1000,
      randomBytes: random,
      logger,
      ...observability,
      // Strict one-time refresh tokens: the oracle (refreshIsLive) models a consumed token as dead.
      // The grace window has its own tests (core, conformance kit, HTTP suite).
      refreshGraceSeconds: 0,
      // The brute-force defence stays on (its code runs on every failure) but, unless a world asks
      // for a strict limit, never locks: otherwise the thousands of deliberate failures would lock
      // the known clients and users and the valid requests could no longer be told apart.
      bruteForce,
    };
    const spans = new InMemorySpanExporter();
    const tracer = options.tracing ? new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer("hostile") : undefined;
    const app = createPlantgate({ ...common, issuer: ISSUER, baseUrl: ISSUER, ...(options.console ? { console: options.console } : {}), ...(tracer ? { tracer } : {}) });
    // Every token an answer issues is something a later line must not hold.
    const carried = new Set<string>();
    // Setup's requests go to this app; on workerd, the world's requests then go to the Worker.
    let appFetch: Plantgate["fetch"] = app.fetch.bind(app);
    app.fetch = async (request, info) => {
      const response = await appFetch(request, info);
      // Keys of rows the Worker wrote, so the next snapshot reads them too.
      if (worker !== null) await worker.learnKeys(rec.known);
      if (response.status === 200 && (response.headers.get("content-type") ?? "").startsWith("application/json")) {
        const text = await response.clone().text();
        for (const m of text.matchAll(/"(?:access_token|refresh_token)":"([^"\\]{8,})"/g)) carried.add(m[1]!);
      }
      return response;
    };
    const other = createPlantgate({ ...common, issuer: OTHER_ISSUER, baseUrl: OTHER_ISSUER });
    // The clients exist from well before the expired tokens below are minted: a token issued before
    // its client was created is not that client's (a re-created client inherits nothing).
    ago = 30 * 24 * 3600_000;
    for (const c of CLIENTS) await app.admin.createClient({ clientId: c.id, clientSecret: c.secret, grantTypes: c.grants, scopes: c.scopes });
    ago = 0;
    const accounts: AccountFixture[] = [];
    for (const a of ACCOUNTS_INPUT) {
      const view = await app.admin.createAccount({ username: a.username, password: a.password, enabled: a.enabled, roles: ["user"] });
      accounts.push({ ...a, id: view.id });
    }
    // More accounts, so paging has pages to walk; names and fields a JSON encoder must escape.
    await app.admin.importAccounts(
      Array.from({ length: 23 }, (_, i) => ({
        username: i % 5 === 0 ? `user-${i}-"quoted"\\` : i % 5 === 1 ? `ユーザー${i}` : i % 5 === 2 ? `emoji-${i}-🌱` : `user-${i}`,
        password: `password-${i}-0123`,
        displayName: i % 3 === 0 ? null : `Display </script> ${i}`,
        email: i % 2 === 0 ? `u${i}@example.com` : null,
        roles: i % 4 === 0 ? [] : ["reader", "writer"].slice(0, (i % 2) + 1),
      })),
    );
    const [cc, pw, odd] = [CLIENTS[0]!, CLIENTS[1]!, CLIENTS[CLIENTS.length - 1]!];
    const alice = ACCOUNTS_INPUT[0]!;
    const passwordParams = (scope: string): [string, string][] => [
      ["grant_type", "password"],
      ["username", alice.username],
      ["password", alice.password],
      ["scope", scope],
    ];
    const refreshOf = async (client: ClientFixture) => (await tokenCall(app, client, passwordParams(`${USER_APIS} ${OFFLINE}`))).refresh_token as string;
    const rotate = async (client: ClientFixture, token: string) =>
      (await tokenCall(app, client, [["grant_type", "refresh_token"], ["refresh_token", token]])).refresh_token as string;

    const ccToken = (await tokenCall(app, cc, [["grant_type", "client_credentials"]])).access_token as string;
    const aliceToken = (await tokenCall(app, pw, passwordParams(USER_APIS))).access_token as string;
    const noApiScope = (await tokenCall(app, pw, passwordParams(OFFLINE))).access_token as string;
    const otherAudience = (await tokenCall(other, cc, [["grant_type", "client_credentials"]])).access_token as string;

    ago = 3 * 3600_000;
    const expired = (await tokenCall(app, cc, [["grant_type", "client_credentials"]])).access_token as string;
    ago = 8 * 24 * 3600_000;
    const expiredRefresh = await refreshOf(pw);
    ago = 0;

    const consumed = await refreshOf(pw);
    await rotate(pw, consumed);
    const revokedFirst = await refreshOf(pw);
    const revoked = await rotate(pw, revokedFirst);
    // Presenting the spent first token again revokes the family, `revoked` included.
    const replay = await app.fetch(
      new Request(ISSUER + TOKEN_PATH, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basicHeader(pw.id, pw.secret) },
        body: formBody([["grant_type", "refresh_token"], ["refresh_token", revokedFirst]]),
      }),
    );
    if (replay.status !== 400) throw new Error(`world setup: replay was not refused (${replay.status})`);
    const otherClient = await refreshOf(odd);

    const refreshRecord = async (token: string) => rec.storage.refreshTokens.findByHash(await refreshTokenKey(sha256, token));
    const refreshIsLive = async (token: string, clientId: string) => {
      const r = await refreshRecord(token);
      if (!r || r.clientId !== clientId || r.consumedAt !== null || r.revokedAt !== null) return false;
      if (clock.now >= r.expiresAt || clock.now >= r.familyExpiresAt) return false;
      const account = await rec.storage.accounts.get(r.accountId);
      return account !== null && account.enabled;
    };
    // An access token revoked through RFC 7009 revocation: the bearer check must refuse it.
    const revokedAccess = (await tokenCall(app, cc, [["grant_type", "client_credentials"]])).access_token as string;
    const revocation = await app.fetch(
      new Request(ISSUER + REVOCATION_PATH, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basicHeader(cc.id, cc.secret) },
        body: formBody([["token", revokedAccess]]),
      }),
    );
    if (revocation.status !== 200) throw new Error(`world setup: revocation failed: ${revocation.status} ${await revocation.text()}`);
    // One stored plant, so duplicate ids can be generated.
    const seeded = await app.fetch(
      new Request(ISSUER + "/plants", {
        method: "POST",
        headers: { authorization: `Bearer ${ccToken}`, "content-type": "application/json" },
        body: `{"id":${KNOWN_PLANT_ID},"name":"seed plant","tag":"seed"}`,
      }),
    );
    if (seeded.status !== 200) throw new Error(`world setup: seeding a plant failed: ${seeded.status} ${await seeded.text()}`);
    let live = await refreshOf(pw);
    const keyRecord = (await rec.storage.signingKeys.list())[0]!;
    const privateJwk = JSON.parse(keyRecord.privateJwk) as JsonWebKey;
    const publicJwk = JSON.parse(keyRecord.publicJwk) as JsonWebKey;
    const privateKey = await crypto.subtle.importKey("jwk", privateJwk, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
    const publicKey = await crypto.subtle.importKey("jwk", { ...publicJwk, key_ops: ["verify"] }, { name: "ECDSA", namedCurve: "P-256" }, true, ["verify"]);
    const pem = pemOf(await crypto.subtle.exportKey("spki", publicKey));
    rec.takeWrites();
    if (worker !== null) appFetch = worker.fetch;
    for (const t of [ccToken, aliceToken, noApiScope, expired, otherAudience, revokedAccess, consumed, revoked, expiredRefresh, otherClient, live]) carried.add(t);
    const secrets = [...CLIENTS.map((c) => c.secret), ...ACCOUNTS_INPUT.map((a) => a.password)];
    for (const secret of secrets) carried.add(secret);
    await options.atSetupEnd?.(store.storage);

    return {
      app,
      rec,
      storage: rec.storage,
      clock,
      realTime: ON_WORKERD,
      learnKeys: async () => {
        if (worker !== null) await worker.learnKeys(rec.known);
      },
      snapshot: () => (worker !== null ? worker.snapshot(rec.storage) : snapshot(rec.storage, rec.known)),
      storedPlantIds: async () => {
        if (worker !== null) return new Set((await worker.snapshot(rec.storage)).plants.map((p) => (p as { id: bigint }).id));
        const ids = [...rec.known.plantIds];
        const found = await Promise.all(ids.map((id) => rec.storage.plants.get(id)));
        return new Set(ids.filter((_, i) => found[i] !== null));
      },
      clients: CLIENTS,
      accounts,
      logs,
      events,
      tokens: { cc: ccToken, alice: aliceToken, noApiScope, expired, otherAudience, revoked: revokedAccess },
      refresh: { consumed, revoked, expired: expiredRefresh, otherClient },
      async liveRefresh() {
        if (!(await refreshIsLive(live, pw.id))) {
          try {
            live = await refreshOf(pw);
          } catch (e) {
            // Under a strict lock-out world the user may be locked: keep the spent token then.
            if (!(e instanceof Error && / 429 /.test(e.message))) throw e;
          }
          rec.takeWrites();
        }
        return live;
      },
      keys: { kid: keyRecord.kid, privateKey, publicJwkText: keyRecord.publicJwk, publicJwk, pem },
      secrets,
      carried,
      // On workerd, also all the Worker printed (its marked log and event lines among it).
      output: async () =>
        lines.join("") +
        (await metrics.text()) +
        spans.getFinishedSpans().map((span) => JSON.stringify({ span: span.name, attributes: span.attributes, events: span.events }) + "\n").join("") +
        (worker === null ? "" : await worker.output()),
      refreshIsLive,
      refreshRecord,
      close: () => store.close(),
    };
  } catch (error) {
    // A setup that fails leaves nothing behind: the schema or database dropped, the Redis prefix
    // emptied, the Miniflare instance (workerd) disposed, as a closed world's are.
    await store.close().catch((closeError: unknown) => {
      throw new AggregateError([error, closeError], `world setup failed, and closing its store failed too: ${String(closeError)}`);
    });
    throw error;
  }
}
