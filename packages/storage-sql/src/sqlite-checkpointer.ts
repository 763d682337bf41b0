/**
 * WAL checkpoints of a SQLite file on a worker thread, off the event loop.
 *
 * In WAL mode every commit appends pages to `<file>-wal`; a checkpoint copies them back into the
 * database file and, at `synchronous = NORMAL`, fsyncs the WAL before and the database after. By
 * default the committing connection does that itself every 1000 pages (`wal_autocheckpoint`), so
 * the event loop of a busy server stops for the copy and for two disk flushes every few hundred
 * commits (under the bench's refresh load: about 15% of the time, the process idle but unable to
 * answer). Here a second connection on a worker thread runs `PRAGMA wal_checkpoint(PASSIVE)` every
 * `intervalMs`: PASSIVE never waits for, nor blocks, the writer or readers.
 *
 * The writing connection keeps a fallback: once the worker reports ready its own checkpoint
 * threshold goes up to `fallbackPages` (a passive checkpoint that overlaps commits cannot finish
 * the WAL, so the writer still restarts it now and then, cheaply: little is left to copy), and
 * back to SQLite's 1000 if the worker stops or fails. A worker that cannot start (no threads, a
 * driver that cannot load there) leaves the connection as SQLite runs it by default.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** The part of better-sqlite3's `Database` used here. */
export interface PragmaTarget {
  pragma(source: string): unknown;
}

export interface SqliteCheckpointerOptions {
  /** The database file (the same path the writing connection opened). */
  path: string;
  /** The writing connection: its `wal_autocheckpoint` is raised while the worker runs. */
  writer: PragmaTarget;
  /** Between two passive checkpoints. Default 100 ms. */
  intervalMs?: number;
  /** The writer's own threshold while the worker runs. Default 10000 pages (40 MiB at 4 KiB pages). */
  fallbackPages?: number;
  /** Told when the worker fails (it is then gone and the writer checkpoints as before). */
  onError?: (error: unknown) => void;
  /**
   * Told when a checkpoint fails with SQLITE_FULL or SQLITE_IOERR (a full disk, a failing write),
   * once per run of such failures: the worker goes on trying every `intervalMs`.
   */
  onFailing?: (failure: CheckpointFailure) => void;
  /** Told when a checkpoint works again after such a run of failures, with how many failed. */
  onRecovered?: (recovery: CheckpointRecovery) => void;
}

/** A checkpoint that failed with SQLITE_FULL or SQLITE_IOERR, the first of its run. */
export interface CheckpointFailure {
  /** SQLite's extended error code (`SQLITE_FULL`, `SQLITE_IOERR_WRITE`, ...). */
  code: string;
  /** SQLite's message (`database or disk is full`). */
  message: string;
}

/** The end of a run of failed checkpoints: the first that worked after them. */
export interface CheckpointRecovery {
  /** The code of the run's first failure. */
  code: string;
  /** How many checkpoints of the run failed. */
  failures: number;
  /** How long the run lasted: from its first failure to the checkpoint that worked, in ms. */
  durationMs: number;
}

export interface SqliteCheckpointer {
  /** Stops the worker after a last checkpoint and closes its connection; resolves once it has exited. Idempotent. */
  stop(): Promise<void>;
}

// The worker's code, run as a CommonJS script (`eval`), so it works the same from the sources, from
// the built package and from a bundle, none of which has to ship a separate file for it.
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
// The run of SQLITE_FULL / SQLITE_IOERR failures under way: told to the main thread at its first
// failure and at the checkpoint that ends it, nothing in between (a tick every 100 ms).
let failing;
const tick = () => {
  try {
    checkpoint.get();
    if (failing !== undefined) {
      parentPort.postMessage({ type: "recovered", code: failing.code, failures: failing.failures, durationMs: Date.now() - failing.since });
      failing = undefined;
    }
  } catch (error) {
    // SQLITE_BUSY (another checkpoint is running), SQLITE_FULL and SQLITE_IOERR (a full disk, a
    // write that failed: over once space is back; until 2026-12-02 they ended the worker for the
    // life of the process): the next tick tries again. Anything else ends the worker (its "error"
    // event puts the writer back on its own checkpoints).
    const code = error === null || typeof error !== "object" ? undefined : error.code;
    if (typeof code !== "string" || !/^SQLITE_(BUSY|FULL$|IOERR)/.test(code)) throw error;
    if (code.startsWith("SQLITE_BUSY")) return;
    // Told once per run (until 2026-12-02 never: a disk that stayed full went unreported).
    if (failing === undefined) {
      failing = { code, failures: 0, since: Date.now() };
      parentPort.postMessage({ type: "failing", code, message: typeof error.message === "string" ? error.message : "" });
    }
    failing.failures++;
  }
};
const timer = setInterval(tick, workerData.intervalMs);
parentPort.on("message", (message) => {
  if (message !== "stop") return;
  clearInterval(timer);
  tick();
  db.close();
  parentPort.close();
});
parentPort.postMessage("ready");
`;

const SQLITE_DEFAULT_AUTOCHECKPOINT = 1000;

/** Starts the checkpoint worker for the SQLite file at `options.path` (see the module comment). */
export function startSqliteCheckpointer(options: SqliteCheckpointerOptions): SqliteCheckpointer {
  const { writer } = options;
  const fallback = options.fallbackPages ?? 10_000;
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(WORKER, { eval: true, workerData: { driver, path: options.path, intervalMs: options.intervalMs ?? 100 } });
  // Never what keeps a process alive.
  worker.unref();
  let running = false;
  let stopping = false;
  const setWriter = (pages: number) => {
    try {
      writer.pragma(`wal_autocheckpoint = ${pages}`);
    } catch {
      // The writing connection is closed: nothing left to tune.
    }
  };
  worker.on("message", (message: unknown) => {
    if (message === "ready") {
      if (stopping) return;
      running = true;
      setWriter(fallback);
    } else if (typeof message === "object" && message !== null) {
      const report = message as ({ type: "failing" } & CheckpointFailure) | ({ type: "recovered" } & CheckpointRecovery);
      if (report.type === "failing") options.onFailing?.({ code: report.code, message: report.message });
      else options.onRecovered?.({ code: report.code, failures: report.failures, durationMs: report.durationMs });
    }
  });
  worker.on("error", (error) => {
    if (running) setWriter(SQLITE_DEFAULT_AUTOCHECKPOINT);
    running = false;
    options.onError?.(error);
  });
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  void exited.then(() => {
    if (running && !stopping) setWriter(SQLITE_DEFAULT_AUTOCHECKPOINT);
    running = false;
  });
  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stopped ??= (async () => {
        stopping = true;
        if (running) setWriter(SQLITE_DEFAULT_AUTOCHECKPOINT);
        // Its last checkpoint and close are waited for, also by a process that has nothing else to do.
        worker.ref();
        worker.postMessage("stop");
        // A worker stuck in its last checkpoint (a disk that does not answer) is not waited for forever.
        const timeout = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 5000).unref());
        if ((await Promise.race([exited, timeout])) === "timeout") await worker.terminate();
      })();
      return stopped;
    },
  };
}
