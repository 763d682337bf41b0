/**
 * Shared helpers: a fresh PostgreSQL schema per suite (selected with `?options=-c search_path=...`,
 * like packages/storage-sql/test/support.ts), spawning the real entry (tsx
 * examples/node-server/src/main.ts) in its own process group, and small HTTP helpers.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createClient } from "redis";
import { describe, it } from "vitest";

export const IN_CI = process.env.CI === "true";
export const POSTGRES_URL = process.env.PLANTGATE_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
export const tsx = fileURLToPath(new URL("node_modules/.bin/tsx", `file://${repoRoot}`));
export const entry = fileURLToPath(new URL("examples/node-server/src/main.ts", `file://${repoRoot}`));

export const TOKEN_PATH = "/UserService/connect/token";
export const ISSUER = "http://plantgate.test";
export const CLIENT_ID = "multi-client";
export const CLIENT_SECRET = "multi-client-secret-0123456789";
export const USERNAME = "multi-user";
export const PASSWORD = "multi-user-password";

export const REDIS_URL = process.env.PLANTGATE_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** The URL with any password replaced, for test names and messages. */
export const redact = (url: string): string => url.replace(/\/\/([^:/@]*):[^@/]*@/, "//$1:***@");

export async function probePostgres(): Promise<string | null> {
  try {
    const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
    await client.connect();
    await client.end();
    return null;
  } catch (e) {
    return (e as Error)?.message || String(e);
  }
}

/** A connected Redis client that fails at once instead of retrying; the caller destroys it. */
const createRedisClient = () => createClient({ url: REDIS_URL, disableOfflineQueue: true, socket: { connectTimeout: 3000, reconnectStrategy: false } });

export async function connectRedis(): Promise<ReturnType<typeof createRedisClient>> {
  const client = createRedisClient();
  client.on("error", () => {});
  await client.connect();
  return client;
}

export async function probeRedis(): Promise<string | null> {
  try {
    (await connectRedis()).destroy();
    return null;
  } catch (e) {
    return (e as Error)?.message || String(e);
  }
}

/** Registers `body` when PostgreSQL answered; else a loudly named skip, or a failing test under CI=true. */
export function describeIfPostgres(label: string, problem: string | null, body: () => void): void {
  describeIfService(label, "PostgreSQL", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", problem, body);
}

/** As {@link describeIfPostgres}, for any service: `problem` is null when it answered. */
export function describeIfService(label: string, service: string, url: string, envVar: string, problem: string | null, body: () => void): void {
  if (problem === null) {
    describe(label, body);
    return;
  }
  const reason = `${label} (${service} unreachable at ${redact(url)}: set ${envVar})`;
  if (IN_CI) {
    describe(reason, () => {
      it(`${service} is reachable (required when CI=true)`, () => {
        throw new Error(`${service} is unreachable at ${redact(url)}: ${problem}`);
      });
    });
  } else {
    describe.skip(reason, () => {
      it(`skipped: ${problem}`, () => {});
    });
  }
}

export function withQuery(url: string, params: Record<string, string>): string {
  const q = new URLSearchParams(params).toString().replace(/\+/g, "%20");
  return url + (url.includes("?") ? "&" : "?") + q;
}

/** A fresh, empty schema; `urlFor(base)` selects it on any base URL (e.g. a proxy's). */
export interface FreshSchema {
  name: string;
  url: string;
  urlFor(base: string): string;
  drop(): Promise<void>;
}

export async function freshSchema(): Promise<FreshSchema> {
  // Not "pg_…": PostgreSQL reserves schema names with that prefix.
  const name = `plantgate_mi_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5000 });
  await admin.connect();
  try {
    await admin.query(`create schema "${name}"`);
  } finally {
    await admin.end();
  }
  const urlFor = (base: string) => withQuery(base, { options: `-c search_path=${name}`, application_name: name });
  return {
    name,
    url: urlFor(POSTGRES_URL),
    urlFor,
    async drop() {
      const c = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 5000 });
      await c.connect();
      try {
        await c.query(`drop schema if exists "${name}" cascade`);
      } finally {
        await c.end();
      }
    },
  };
}

/** The environment of a spawned server: ours minus any PLANTGATE_ variable and HOST, plus `extra`. */
export function serverEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith("PLANTGATE_") || name === "HOST") delete env[name];
  return { ...env, ...extra };
}

export interface Spawned {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code and signal (at once if it has already exited). */
  exited(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILLs the whole process group (tsx runs the entry in a grandchild), if still running. */
  kill(): void;
}

export function spawnEntry(env: NodeJS.ProcessEnv, cwd: string): Spawned {
  // detached: its own process group, so it can be cleaned up completely.
  const proc = spawn(tsx, [entry], { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  let err = "";
  proc.stdout!.setEncoding("utf8");
  proc.stderr!.setEncoding("utf8");
  proc.stdout!.on("data", (chunk: string) => (out += chunk));
  proc.stderr!.on("data", (chunk: string) => (err += chunk));
  let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exitPromise = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.once("exit", (code, signal) => resolve((exit = { code, signal })));
  });
  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    exited(timeoutMs) {
      if (exit) return Promise.resolve(exit);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`still running after ${timeoutMs} ms\n--- stdout ---\n${out}\n--- stderr ---\n${err}`)), timeoutMs);
        void exitPromise.then((e) => {
          clearTimeout(timer);
          resolve(e);
        });
      });
    },
    kill() {
      if (proc.pid === undefined || exit) return;
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        proc.kill("SIGKILL");
      }
    },
  };
}

/** Waits until the spawned server printed its URL and store line; returns the URL. */
export function waitForListening(s: Spawned, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      clearInterval(poll);
      reject(new Error(`${why}\n--- stdout ---\n${s.stdout()}\n--- stderr ---\n${s.stderr()}`));
    };
    const timer = setTimeout(() => fail(`no start-up output within ${timeoutMs} ms`), timeoutMs);
    s.proc.once("exit", (code, signal) => fail(`exited early (code ${code}, signal ${signal})`));
    const poll = setInterval(() => {
      const out = s.stdout();
      const url = /^plantgate listening on (http:\/\/127\.0\.0\.1:[1-9]\d*)$/m.exec(out);
      if (url && /^ {2}store: +.+$/m.test(out)) {
        clearTimeout(timer);
        clearInterval(poll);
        resolve(url[1]!);
      }
    }, 20);
  });
}

export interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** POSTs a form to the token endpoint (client_secret_post unless `basic`). */
export async function token(base: string, params: Record<string, string>): Promise<TokenAnswer> {
  const response = await fetch(base + TOKEN_PATH, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params),
  });
  const text = await response.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { raw: text };
  }
  return { status: response.status, body, headers: response.headers };
}

export const clientCredentials = (base: string, clientId = CLIENT_ID, clientSecret = CLIENT_SECRET) =>
  token(base, { grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret });

export const passwordGrant = (base: string) =>
  token(base, {
    grant_type: "password",
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    username: USERNAME,
    password: PASSWORD,
    scope: "Platform_UserAPIs offline_access",
  });

/** Shared env for every server of a suite. */
export function baseServerEnv(databaseUrl: string): Record<string, string> {
  return {
    PORT: "0",
    PLANTGATE_DATABASE_URL: databaseUrl,
    PLANTGATE_ISSUER: ISSUER,
    PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID,
    PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
    PLANTGATE_BOOTSTRAP_USERNAME: USERNAME,
    PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD,
    PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
  };
}
