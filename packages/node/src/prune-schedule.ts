/**
 * Periodic housekeeping for a long-running Node server: calls `admin.prune()` every interval,
 * never two runs at once, logging counts only.
 */
import { callHost } from "./host-callback.js";

/** What the scheduler needs of plantgate's admin (structural, so this package needs no core import). */
export interface Prunable {
  /**
   * Resolves to the counts per aggregate (logged as they are). `signal` is aborted by the
   * schedule's `stop()`: core's `admin.prune` then ends the run at its next batch boundary. A prune
   * that ignores it is waited for up to `stopTimeoutMs`.
   */
  prune(options?: { signal?: AbortSignal }): Promise<object>;
}

/** Where the scheduler reports: one line per run (counts and duration), or the error's message. */
export interface PruneLogger {
  info(message: string, fields: Record<string, unknown>): void;
  error(message: string, fields: Record<string, unknown>): void;
  /** A run that did not end within `stopTimeoutMs` of `stop()`; without it, that line goes to `error`. */
  warn?(message: string, fields: Record<string, unknown>): void;
}

/** Options of {@link schedulePrune}. */
export interface SchedulePruneOptions {
  /** Seconds between the end of one run and the start of the next; 0 turns pruning off. */
  intervalSeconds: number;
  /** Default: one JSON line per run on stdout (stderr for failures). A logger that throws is ignored: the schedule goes on. */
  logger?: PruneLogger;
  /**
   * How long `stop()` waits for the run in progress to end (at its next batch boundary; one batch
   * is one short statement), in ms: an integer 0-2147483647, default 5000 ({@link PRUNE_STOP_TIMEOUT_MS}).
   */
  stopTimeoutMs?: number;
}

/** Default of {@link SchedulePruneOptions.stopTimeoutMs}: 5 s. */
export const PRUNE_STOP_TIMEOUT_MS = 5000;

/** A running schedule. */
export interface PruneSchedule {
  /** Whether runs are scheduled (false with interval 0, and after `stop`). */
  readonly active: boolean;
  /**
   * Cancels the next run and ends the one in progress at its next batch boundary (aborts the
   * `signal` it passed to `prune`), waiting for it up to `stopTimeoutMs`. Resolves to `true` once
   * no run is in progress, `false` when the run had not ended by then (a warn line says so): it is
   * still under way, so close no store it uses. Idempotent: a later call waits again. Until
   * 2026-12-02 it waited for the run to drain every store (a backlog of millions: many seconds, in
   * which the example servers went on serving after SIGTERM).
   */
  stop(): Promise<boolean>;
}

const jsonLines: PruneLogger = {
  info: (message, fields) => console.log(JSON.stringify({ message, ...fields })),
  error: (message, fields) => console.error(JSON.stringify({ message, ...fields })),
  warn: (message, fields) => console.warn(JSON.stringify({ message, ...fields })),
};

/**
 * Runs `admin.prune()` every `intervalSeconds`. The timer is armed again only after a run has
 * finished, so runs never overlap however long one takes (several instances may still prune at
 * once: `prune` is safe for that). The timer is unref'd: it never keeps the process alive. A failed
 * run (e.g. the database is down) is logged with its message and the schedule goes on. `stop()`
 * ends a run in progress at its next batch (its line then says `"stopped": true`, `"complete": false`
 * when work was left for the next start).
 *
 * @example
 * const schedule = schedulePrune(app.admin, { intervalSeconds: pruneIntervalFromEnv(process.env) });
 * // on shutdown, beside closing the listener; the storage only once the run has ended:
 * if (await schedule.stop()) await storage.close();
 */
export function schedulePrune(admin: Prunable, options: SchedulePruneOptions): PruneSchedule {
  const { intervalSeconds, logger = jsonLines, stopTimeoutMs = PRUNE_STOP_TIMEOUT_MS } = options;
  if (!(Number.isFinite(intervalSeconds) && intervalSeconds >= 0)) throw new TypeError("intervalSeconds must be a non-negative number");
  const intervalMs = Math.round(intervalSeconds * 1000);
  if (intervalMs > 2_147_483_647) throw new TypeError("intervalSeconds must be at most 2147483 (a timer's limit)");
  if (!(Number.isSafeInteger(stopTimeoutMs) && stopTimeoutMs >= 0 && stopTimeoutMs <= 2_147_483_647)) throw new TypeError("stopTimeoutMs must be an integer 0-2147483647");
  let stopped = intervalMs === 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  // The run in progress's: aborted by stop().
  let abort: AbortController | undefined;
  let warned = false;

  const run = async () => {
    const started = performance.now();
    const controller = (abort = new AbortController());
    let counts: object;
    try {
      counts = await admin.prune({ signal: controller.signal });
    } catch (error) {
      report(() => logger.error("plantgate prune failed", { error: describe(error) }));
      return;
    }
    const stoppedEarly = controller.signal.aborted ? { stopped: true } : {};
    report(() => logger.info("plantgate prune", { ...counts, ...stoppedEarly, durationMs: Math.round(performance.now() - started) }));
  };
  const arm = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      running = run().finally(() => {
        running = undefined;
        arm();
      });
    }, intervalMs);
    timer.unref();
  };
  arm();

  return {
    get active() {
      return !stopped;
    },
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      const current = running;
      if (current === undefined) return true;
      abort?.abort();
      // Not unref'd: a shutdown waits for this answer even when nothing else keeps the process up.
      let bound: ReturnType<typeof setTimeout> | undefined;
      const ended = await Promise.race([current.then(() => true), new Promise<false>((resolve) => (bound = setTimeout(() => resolve(false), stopTimeoutMs)))]);
      clearTimeout(bound);
      if (!ended && !warned) {
        warned = true;
        const fields = { stopTimeoutMs };
        report(() => (logger.warn ? logger.warn(PRUNE_NOT_STOPPED, fields) : logger.error(PRUNE_NOT_STOPPED, fields)));
      }
      return ended;
    },
  };
}

const PRUNE_NOT_STOPPED = "plantgate prune: the run in progress did not end within stopTimeoutMs of stop(); it is still under way";

/**
 * Logs without letting the logger fail the run: its error would reject the timer's promise, which
 * nobody awaits, and an unhandled rejection ends the process (until 2026-11-30 a logger that threw,
 * on info and then on error, did so on every run; until 2026-12-02 an `async` one that rejected).
 */
const report = callHost;

function describe(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return "non-Error value";
  }
}
