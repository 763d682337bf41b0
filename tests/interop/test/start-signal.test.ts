/**
 * SIGTERM while an example server starts (the real entries, `node --import tsx` of main.ts, a fresh
 * SQLite store in a scratch directory): the start ends, the server closes and exits 0, and the demo
 * credentials made by that start are written. Until 2026-11-30 the entries set their SIGTERM handler
 * only after the demo credentials were written: a signal before that killed the process (signal
 * SIGTERM, the store not closed), and one after the demo client was made lost its credentials for
 * good (the next start, finding a client, makes no demo).
 *
 * Where the signal comes is made certain by Redis (PLANTGATE_REDIS_URL, the real one behind a
 * proxy of the test's): the proxy holds what the server sends until released, so the start is known
 * to be waiting on Redis, the store already open, when SIGTERM is sent.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ENTRIES, killRunning, spawnEntry, type Entry, type EntryProcess } from "./entries.js";
import { TOKEN_PATH } from "./helpers.js";

const RUN_TIMEOUT_MS = 20_000;
const REDIS = { host: "127.0.0.1", port: 6379 };

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const running = new Set<ChildProcess>();
const closing: (() => void)[] = [];
afterEach(() => {
  killRunning(running);
  for (const close of closing.splice(0)) close();
});

type Run = EntryProcess;

function start(entry: Entry, cwd: string, vars: Record<string, string>): Run {
  return spawnEntry(entry, cwd, vars, running);
}

async function until(what: string, run: Run, ready: () => boolean): Promise<void> {
  const deadline = Date.now() + RUN_TIMEOUT_MS;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${RUN_TIMEOUT_MS} ms\n--- stdout ---\n${run.stdout()}\n--- stderr ---\n${run.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

async function exitOf(run: Run) {
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([
    run.exited,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`still running after ${RUN_TIMEOUT_MS} ms\n${run.stdout()}\n${run.stderr()}`)), RUN_TIMEOUT_MS))),
  ]);
  clearTimeout(timer);
  return exit;
}

/**
 * A TCP proxy to the real Redis that holds what its clients send until `release()`; `connected`
 * resolves when the first client has connected.
 */
async function heldRedis(): Promise<{ url: string; connected: Promise<void>; release(): void }> {
  let held = true;
  const waiting: (() => void)[] = [];
  let seen!: () => void;
  const connected = new Promise<void>((resolve) => (seen = resolve));
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    seen();
    const upstream = connect(REDIS.port, REDIS.host);
    sockets.add(client).add(upstream);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    upstream.pipe(client);
    const forward = () => client.pipe(upstream);
    if (held) {
      client.pause();
      waiting.push(forward);
    } else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closing.push(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`,
    connected,
    release() {
      held = false;
      for (const forward of waiting.splice(0)) forward();
    },
  };
}

const credentialsOf = (cwd: string) =>
  Object.fromEntries(
    readFileSync(join(cwd, "data", "demo-credentials.txt"), "utf8")
      .trim()
      .split("\n")
      .map((line) => line.split("=") as [string, string]),
  );

/** A start in `cwd` with nothing configured: the store has a client, so no demo is made; the saved credentials get a token. */
async function credentialsWork(entry: Entry, cwd: string, credentials: Record<string, string>): Promise<void> {
  const run = start(entry, cwd, {});
  await until("listening", run, () => / {2}metadata: /.test(run.stdout()));
  const url = ENTRIES[entry].listening.exec(run.stdout())![1]!;
  const base = entry === "express" ? /metadata: +GET +(\S+)\/\.well-known/.exec(run.stdout())![1]! : url;
  const res = await fetch(base + TOKEN_PATH, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "password", client_id: credentials.client_id!, client_secret: credentials.client_secret!, username: credentials.username!, password: credentials.password! }),
  });
  expect(res.status).toBe(200);
  run.child.kill("SIGTERM");
  expect(await exitOf(run)).toEqual({ code: 0, signal: null });
  expect(run.stdout()).not.toContain("Created a demo");
}

describe.each(["node", "express"] as const)("SIGTERM during the start (%s)", (entry) => {
  it("while the start waits on Redis (the store open): the start ends, the demo credentials are written, the store is closed, exit 0", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "plantgate-signal-"));
    dirs.push(cwd);
    const redis = await heldRedis();
    const run = start(entry, cwd, { PLANTGATE_REDIS_URL: redis.url, PLANTGATE_REDIS_KEY_PREFIX: `signal-test-${randomBytes(6).toString("hex")}:` });
    await redis.connected;
    // The SQLite store is open (and migrated) before Redis is.
    expect(existsSync(join(cwd, "data", "plantgate.db"))).toBe(true);
    expect(run.child.kill("SIGTERM")).toBe(true);
    // The signal is handled while the start waits: nothing ends the process until Redis answers.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect([run.child.exitCode, run.child.signalCode]).toEqual([null, null]);
    redis.release();
    expect(await exitOf(run), run.stderr()).toEqual({ code: 0, signal: null });
    expect(run.stderr()).toBe("");
    expect(run.stdout()).toMatch(ENTRIES[entry].listening);
    expect(run.stdout()).toMatch(/^ {2}client_secret and password: \S+demo-credentials\.txt /m);
    // Closed: SQLite's last connection checkpoints and removes the -wal and -shm files.
    expect(readdirSync(join(cwd, "data")).sort()).toEqual(["demo-credentials.txt", "plantgate.db"]);
    await credentialsWork(entry, cwd, credentialsOf(cwd));
  }, 60_000);

  it("the moment the listening line is out (the demo client made, its credentials not yet written): they are written, exit 0", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "plantgate-signal-"));
    dirs.push(cwd);
    const run = start(entry, cwd, {});
    await until("listening line", run, () => ENTRIES[entry].listening.test(run.stdout()));
    run.child.kill("SIGTERM");
    expect(await exitOf(run), run.stderr()).toEqual({ code: 0, signal: null });
    expect(run.stdout()).toMatch(/^ {2}client_secret and password: \S+demo-credentials\.txt /m);
    expect(readdirSync(join(cwd, "data")).sort()).toEqual(["demo-credentials.txt", "plantgate.db"]);
    await credentialsWork(entry, cwd, credentialsOf(cwd));
  }, 60_000);
});
