/**
 * A PgBouncer of the test's own, in front of the PostgreSQL the other tests use: started by
 * `startPgBouncer(mode)` on a free port with its own ini in a temp directory (auth_type trust, a
 * wildcard database entry, so every database of the server is reachable through it under its own
 * name), stopped by the returned `stop()`. `PGBOUNCER_MISSING` says why not, when `pgbouncer` is not
 * installed; `describeWithPgBouncer` then registers a skipped block whose name carries that reason,
 * or under CI=true (where .ci/run installs it) a failing one.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, it } from "vitest";
import { transactionPoolingEvidence } from "../src/pooler-probe.js";
import { IN_CI, POSTGRES_URL, probePostgres } from "./support.js";

/** The pgbouncer binary: on the PATH, or Debian's /usr/sbin/pgbouncer (not on a user's PATH). */
const PGBOUNCER_BIN: string | null = (() => {
  for (const bin of ["pgbouncer", "/usr/sbin/pgbouncer"]) {
    try {
      execFileSync(bin, ["--version"], { stdio: "ignore" });
      return bin;
    } catch {
      // Not this one.
    }
  }
  return null;
})();

export const PGBOUNCER_MISSING: string | null = PGBOUNCER_BIN === null ? "pgbouncer is not installed (apt-get install pgbouncer)" : null;

/** Why the PgBouncer tests cannot run here (pgbouncer missing, PostgreSQL unreachable), or null. */
export const PGBOUNCER_PROBLEM: string | null = PGBOUNCER_MISSING ?? (await probePostgres());

/**
 * `describe(label, body)` when pgbouncer is installed and PostgreSQL answers; otherwise a skipped
 * block whose name says why, or under CI=true a failing test (CI must never pass by skipping).
 */
export function describeWithPgBouncer(label: string, body: () => void): void {
  const problem = PGBOUNCER_PROBLEM;
  if (problem === null) describe(label, body);
  else if (IN_CI) {
    describe(`${label} (pgbouncer and PostgreSQL are required when CI=true)`, () => {
      it("pgbouncer is installed and PostgreSQL answers", () => {
        throw new Error(problem);
      });
    });
  } else {
    describe.skip(`${label} (skipped: ${problem})`, () => {
      it(`skipped: ${problem}`, () => {});
    });
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

export interface Bouncer {
  port: number;
  mode: "transaction" | "session";
  /** The URL of database `name` through this PgBouncer. */
  url(name: string): string;
  /** Its log so far. */
  log(): string;
  stop(): Promise<void>;
}

export async function startPgBouncer(mode: "transaction" | "session", extra = "", port?: number): Promise<Bouncer> {
  const dir = mkdtempSync(join(tmpdir(), "f-bouncer-pgb-"));
  chmodSync(dir, 0o777);
  port ??= await freePort();
  const target = new URL(POSTGRES_URL);
  const ini = join(dir, "pgbouncer.ini");
  writeFileSync(
    ini,
    `[databases]
* = host=${target.hostname} port=${target.port || 5432} user=${decodeURIComponent(target.username || "postgres")}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
auth_type = trust
auth_file = ${join(dir, "users.txt")}
pool_mode = ${mode}
max_client_conn = 500
default_pool_size = 20
logfile = ${join(dir, "pgbouncer.log")}
unix_socket_dir =
ignore_startup_parameters = extra_float_digits
${extra}
`,
  );
  writeFileSync(join(dir, "users.txt"), `"${decodeURIComponent(target.username || "postgres")}" ""\n`);
  chmodSync(ini, 0o644);
  chmodSync(join(dir, "users.txt"), 0o644);
  // PgBouncer refuses to run as root.
  const root = process.getuid?.() === 0;
  const ids = root ? { uid: Number(execFileSync("id", ["-u", "postgres"]).toString()), gid: Number(execFileSync("id", ["-g", "postgres"]).toString()) } : {};
  const child: ChildProcess = spawn(PGBOUNCER_BIN ?? "pgbouncer", [ini], { stdio: "ignore", ...ids });
  const user = decodeURIComponent(target.username || "postgres");
  const url = (name: string) => `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${name}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url(new URL(POSTGRES_URL).pathname.slice(1) || "postgres"), connectionTimeoutMillis: 1000 });
    try {
      await client.connect();
      await client.end();
      break;
    } catch (e) {
      await client.end().catch(() => {});
      if (Date.now() > deadline) {
        child.kill("SIGTERM");
        throw new Error(`pgbouncer did not start: ${String(e)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    port,
    mode,
    url,
    log: () => {
      try {
        return readFileSync(join(dir, "pgbouncer.log"), "utf8");
      } catch {
        return "";
      }
    },
    async stop() {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Direct (not through PgBouncer) admin access to the server: fresh databases for a test, dropped after. */
export function directDb() {
  const admin = new pg.Pool({ connectionString: POSTGRES_URL, max: 2 });
  const made: string[] = [];
  return {
    async fresh(): Promise<string> {
      const name = `f_bouncer_${randomBytes(5).toString("hex")}`;
      await admin.query(`create database "${name}"`);
      made.push(name);
      return name;
    },
    async query(name: string, text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
      const direct = new URL(POSTGRES_URL);
      direct.pathname = `/${name}`;
      const client = new pg.Client({ connectionString: direct.toString() });
      await client.connect();
      try {
        return (await client.query(text, values)).rows as Record<string, unknown>[];
      } finally {
        await client.end();
      }
    },
    async end() {
      for (const name of made) await admin.query(`drop database if exists "${name}" with (force)`).catch(() => {});
      await admin.end();
    },
  };
}

/** How many of `times` fresh pools (as a storage opens) through `url` found transaction pooling. */
export async function detections(url: string, times: number): Promise<number> {
  let found = 0;
  for (let i = 0; i < times; i++) {
    const pool = new pg.Pool({ connectionString: url });
    try {
      if ((await transactionPoolingEvidence(pool)) !== null) found++;
    } finally {
      await pool.end();
    }
  }
  return found;
}

/** Two server connections made and left idle in the pooler, as any earlier traffic leaves them. */
export async function warm(url: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    const [a, b] = [await pool.connect(), await pool.connect()];
    await Promise.all([a.query("select pg_sleep(0.05)"), b.query("select pg_sleep(0.05)")]);
    a.release();
    b.release();
  } finally {
    await pool.end();
  }
}

/** Inside a describe: a PgBouncer of its own (started before, stopped after) and fresh databases, dropped after. */
export function bouncerFixture(mode: "transaction" | "session", extra = ""): { bouncer: () => Bouncer; dbs: ReturnType<typeof directDb> } {
  let bouncer: Bouncer | undefined;
  const dbs = directDb();
  beforeAll(async () => {
    bouncer = await startPgBouncer(mode, extra);
  });
  afterAll(async () => {
    await bouncer?.stop();
    await dbs.end();
  });
  return { bouncer: () => bouncer!, dbs };
}
