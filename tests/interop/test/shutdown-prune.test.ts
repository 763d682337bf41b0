/**
 * Stopping an example server while a housekeeping run works off a backlog. `close()` (what SIGTERM
 * runs) closes the listener and starts the drain at once, and the prune run ends at its next batch
 * boundary; the store closes only after the run has ended. Until 2026-12-02 `close()` began with
 * `await pruning.stop()`, which waited for the whole run (batches of 1000 until every store was
 * empty): the server went on accepting and answering new connections after SIGTERM, and a backlog
 * of 2,000,000 expired revoked entries held the exit 16 s (a bigger one, past a container's grace
 * period, got SIGKILL and lost the graceful drain).
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createMemoryStorage } from "@plantgate/core";
import { startServer } from "@plantgate/example-node-server";
import { afterAll, afterEach, expect, it } from "vitest";
import { ENTRIES, killRunning, spawnEntry, type EntryProcess } from "./entries.js";

const hex = (n: number) => randomBytes(n).toString("hex");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const running = new Set<ChildProcess>();
afterEach(() => killRunning(running));

it("close() during a long prune run (a backlog of expired refresh tokens) stops listening at once, ends the run at the next batch and resolves promptly", async () => {
  const storage = createMemoryStorage();
  // A backlog: every batch comes back full (1000 rows), 20 ms each, until `backlog` is false.
  let backlog = true;
  let batches = 0;
  let pruneStarted!: () => void;
  const started = new Promise<void>((resolve) => (pruneStarted = resolve));
  const deleteExpired = storage.refreshTokens.deleteExpired.bind(storage.refreshTokens);
  storage.refreshTokens.deleteExpired = async (now: number, limit: number) => {
    if (!backlog) return deleteExpired(now, limit);
    batches++;
    pruneStarted();
    await sleep(20);
    return limit;
  };
  const lines: string[] = [];
  const server = await startServer(
    {
      PORT: "0",
      PLANTGATE_PRUNE_INTERVAL_SECONDS: "1",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: `sd-${hex(4)}`,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: hex(16),
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
    },
    { storage },
    { destination: { write: (line: string) => void lines.push(line) } },
  );
  try {
    await started;
    let closed = false;
    let closedAt = 0;
    const t0 = Date.now();
    const closing = server.close().then(() => {
      closed = true;
      closedAt = Date.now();
    });
    const atClose = batches;
    await sleep(1500);
    const batchesSinceClose = batches - atClose;
    // A new connection 1.5 s after close() was called: the listener is closed (refused).
    const answer = await fetch(`${server.url}/.well-known/oauth-authorization-server`).then(
      (res) => `served ${res.status}`,
      () => "refused",
    );
    expect({ answer, closed, batchesSinceClose: batchesSinceClose > 1 ? "the prune went on" : "stopped" }).toEqual({ answer: "refused", closed: true, batchesSinceClose: "stopped" });
    await closing;
    // A batch (20 ms), the listener and the flush: nothing waits for the backlog.
    expect(closedAt - t0).toBeLessThan(1000);
    // The run's line: what it deleted before the stop, and that work is left.
    const prune = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === "plantgate prune");
    expect(prune).toHaveLength(1);
    expect(prune[0]).toEqual({
      level: "info",
      time: expect.any(String),
      msg: "plantgate prune",
      ...{ refreshTokens: batches * 1000, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 0 },
      complete: false,
      stopped: true,
      durationMs: expect.any(Number),
    });
  } finally {
    backlog = false;
    await server.close();
  }
}, 30_000);

/**
 * The real entries (`node --import tsx examples/node-server/src/main.ts`, the Express example's) on SQLite with 600,000
 * expired revoked-token entries (some 5 s of prune on this machine): SIGTERM while the run works
 * them off refuses new connections at once and exits 0 within a second or two, the rest of the
 * backlog left to the next start's run.
 */
it.each(["node", "express"] as const)("SIGTERM to the %s example during a long prune run on SQLite: new connections refused at once, exit 0 promptly, the rest left for the next run", async (entry) => {
  const cwd = mkdtempSync(join(tmpdir(), "plantgate-shutdown-prune-"));
  dirs.push(cwd);
  const vars = { PLANTGATE_BOOTSTRAP_CLIENT_ID: "sdclient", PLANTGATE_BOOTSTRAP_CLIENT_SECRET: hex(16) };
  // A first start makes and migrates the store; it is stopped at once.
  let run = spawnEntry(entry, cwd, vars, running);
  await until("the first start", run, () => /listening on/.test(run.stdout()));
  run.child.kill("SIGTERM");
  expect(await run.exited).toEqual({ code: 0, signal: null });

  const Database = createRequire(fileURLToPath(new URL("../../../packages/storage-sql/package.json", import.meta.url)))("better-sqlite3");
  const file = join(cwd, "data", "plantgate.db");
  const rows = 600_000;
  const db = new Database(file);
  const insert = db.prepare("insert into pg_revoked_tokens (jti, expires_at) values (?, ?)");
  db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run(`j${i}`, 1000);
  })();
  const left = () => (db.prepare("select count(*) as n from pg_revoked_tokens").get() as { n: number }).n;

  try {
    run = spawnEntry(entry, cwd, { ...vars, PLANTGATE_PRUNE_INTERVAL_SECONDS: "1" }, running);
    await until("listening", run, () => /listening on/.test(run.stdout()));
    const url = ENTRIES[entry].listening.exec(run.stdout())![1]!;
    // The run is under way once some rows are gone (and far from done).
    await until("the prune run's start", run, () => left() < rows);
    const t0 = Date.now();
    run.child.kill("SIGTERM");
    await sleep(500);
    const answer = await fetch(`${url}/.well-known/oauth-authorization-server`).then(
      (res) => `served ${res.status}`,
      (error: { cause?: { code?: string } }) => error.cause?.code ?? "failed",
    );
    const exit = await run.exited;
    const took = Date.now() - t0;
    expect({ answer, exit, stderr: run.stderr() }).toEqual({ answer: "ECONNREFUSED", exit: { code: 0, signal: null }, stderr: "" });
    expect(took).toBeLessThan(3000);
    const prune = run
      .stdout()
      .split("\n")
      .filter((line) => line.includes('"plantgate prune"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(prune).toHaveLength(1);
    expect(prune[0]).toMatchObject({ stopped: true, complete: false });
    expect(left()).toBeGreaterThan(0);
    expect(left()).toBe(rows - (prune[0]!.revokedTokens as number));
  } finally {
    db.close();
  }
}, 60_000);

async function until(what: string, run: EntryProcess, ready: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 20 s\n--- stdout ---\n${run.stdout()}\n--- stderr ---\n${run.stderr()}`);
    await sleep(5);
  }
}
