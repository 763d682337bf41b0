/**
 * The servers the console's browser test runs against, both started as a user would:
 * - the example node server (`startConsoleServer`: `startServer` in process, memory store), as every
 *   console browser test starts it;
 * - the example Worker under `wrangler dev --local` (workerd + a local D1 database in a fresh
 *   `--persist-to` directory), with the console turned on by `PLANTGATE_BOOTSTRAP_ADMIN=1` given as
 *   `--var`, as README "Cloudflare Workers" documents. The extra accounts the paging test needs are
 *   written into that D1 database beforehand through wrangler's own `getPlatformProxy` (the same
 *   persisted database `wrangler dev` then opens), with plantgate's D1 storage and admin API.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createMemoryStorage, createPlantgate, type PlantgateOptions, type Storage } from "@plantgate/core";
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { serverLines, type ServerLines } from "@plantgate/http-suite-tests/server-lines";
import { createD1Storage, type D1DatabaseLike } from "@plantgate/storage-sql/d1";

/** A running server the browser test talks to. */
export interface Target {
  url: string;
  consoleUrl: string;
  close(): Promise<void>;
}

export interface Seed {
  admin: { username: string; password: string };
  client: { id: string; secret: string };
  /** Accounts besides the admin, for the paging test. */
  accounts: { username: string; password: string; displayName: string; email: string }[];
  passwordHashIterations: number;
}

/** What differs between the console tests' example node servers; the rest is the same for all. */
export interface ConsoleServerOptions {
  /** The bootstrap account, made an admin (`PLANTGATE_BOOTSTRAP_ADMIN=1`, which turns the console on). */
  admin: { username: string; password: string };
  /** The bootstrap client; none when left out. */
  client?: { id: string; secret: string };
  /** The server's store. */
  storage: Storage;
  /** Where the server's JSON lines go; the test checks them once it has closed the server. */
  lines: ServerLines;
  /** `PLANTGATE_PASSWORD_HASH_ITERATIONS`: 2000 unless given. */
  passwordHashIterations?: number;
  /** More environment (brute-force limits, keys...), over the above. */
  env?: Record<string, string>;
  /** More plantgate options (page sizes...), over the store and the silenced logger. */
  options?: PlantgateOptions;
}

/**
 * The example node server (`startServer`, in process) as every console browser test starts it: on a
 * free port, its bootstrap admin (and client) set, its logger silenced, its lines into `lines`.
 */
export function startConsoleServer({ admin, client, storage, lines, passwordHashIterations = 2000, env, options }: ConsoleServerOptions): Promise<RunningServer> {
  return startServer(
    {
      PORT: "0",
      PLANTGATE_BOOTSTRAP_ADMIN: "1",
      PLANTGATE_BOOTSTRAP_USERNAME: admin.username,
      PLANTGATE_BOOTSTRAP_PASSWORD: admin.password,
      ...(client ? { PLANTGATE_BOOTSTRAP_CLIENT_ID: client.id, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: client.secret } : {}),
      PLANTGATE_PASSWORD_HASH_ITERATIONS: String(passwordHashIterations),
      ...env,
    },
    { storage, logger: { error() {}, warn() {} }, ...options },
    { destination: lines.destination },
  );
}

export async function startNodeTarget(seed: Seed): Promise<Target> {
  const lines = serverLines();
  const server = await startConsoleServer({ admin: seed.admin, client: seed.client, storage: createMemoryStorage(), lines, passwordHashIterations: seed.passwordHashIterations });
  await server.app.admin.importAccounts(seed.accounts);
  const close = async () => {
    await server.close();
    lines.check([seed.admin.password, seed.client.secret, ...seed.accounts.map((a) => a.password)]);
  };
  return { url: server.url, consoleUrl: server.consoleUrl!, close };
}

const require = createRequire(import.meta.url);
/** examples/cloudflare-worker, where wrangler.toml is. */
const WORKER_DIR = dirname(require.resolve("cloudflare-worker/package.json"));
const WRANGLER = join(dirname(require.resolve("wrangler/package.json")), "bin", "wrangler.js");

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

async function seedD1(persistDir: string, seed: Seed): Promise<void> {
  const { getPlatformProxy } = (await import("wrangler")) as typeof import("wrangler");
  // `wrangler dev --persist-to X` keeps its state in X/v3, getPlatformProxy in the path it is given.
  const proxy = await getPlatformProxy<{ DB: D1DatabaseLike }>({ configPath: join(WORKER_DIR, "wrangler.toml"), persist: { path: join(persistDir, "v3") }, remoteBindings: false });
  try {
    const storage = createD1Storage(proxy.env.DB);
    await storage.migrate();
    const app = createPlantgate({ storage, passwordHashIterations: seed.passwordHashIterations, logger: { error() {}, warn() {} } });
    await app.admin.importAccounts(seed.accounts);
  } finally {
    await proxy.dispose();
  }
}

export async function startWorkerTarget(seed: Seed): Promise<Target> {
  const persistDir = await mkdtemp(join(tmpdir(), "plantgate-console-worker-"));
  await seedD1(persistDir, seed);
  const port = await freePort();
  const inspectorPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const vars = {
    PLANTGATE_BOOTSTRAP_ADMIN: "1",
    PLANTGATE_BOOTSTRAP_USERNAME: seed.admin.username,
    PLANTGATE_BOOTSTRAP_PASSWORD: seed.admin.password,
    PLANTGATE_BOOTSTRAP_CLIENT_ID: seed.client.id,
    PLANTGATE_BOOTSTRAP_CLIENT_SECRET: seed.client.secret,
    PLANTGATE_PASSWORD_HASH_ITERATIONS: String(seed.passwordHashIterations),
  };
  let output = "";
  const child: ChildProcess = spawn(
    process.execPath,
    [
      WRANGLER,
      "dev",
      "--local",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(inspectorPort),
      "--persist-to",
      persistDir,
      "--show-interactive-dev-session=false",
      ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
    ],
    { cwd: WORKER_DIR, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" } },
  );
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const close = async () => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }, 5_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(persistDir, { recursive: true, force: true });
  };
  // Ready when the console page is served (the Worker's first request also applies the migrations
  // and the bootstrap: the client, and the admin with the admin role).
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      await close();
      throw new Error(`wrangler dev exited (${child.exitCode}):\n${output}`);
    }
    try {
      const res = await fetch(`${url}/console`, { signal: AbortSignal.timeout(5_000) });
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await close();
      throw new Error(`wrangler dev did not serve ${url}/console within 60 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, consoleUrl: `${url}/console`, close };
}
