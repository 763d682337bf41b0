/**
 * Periodic housekeeping for a long-running Node server: calls `admin.prune()` every interval,
 * never two runs at once, logging counts only.
 */
import { callHost } from "./host-callback.js";

/** What the scheduler needs of plantgate's admin (structural, so this package needs no core import). */
export interface Prunable {
  /** Resolves to the counts per aggregate (logged as they are). */
  prune(): Promise<object>;
}

/** Where the scheduler reports: one line per run (counts and duration), or the error's message. */
export interface PruneLogger {
  info(message: string, fields: Record<string, unknown>): void;
  error(message: string, fields: Record<string, unknown>): void;
}

/** Options of {@link schedulePrune}. */
export interface SchedulePruneOptions {
  /** Seconds between the end of one run and the start of the next; 0 turns pruning off. */
  intervalSeconds: number;
  /** Default: one JSON line per run on stdout (stderr for failures). A logger that throws is ignored: the schedule goes on. */
  logger?: PruneLogger;
}

/** A running schedule. */
export interface PruneSchedule {
  /** Whether runs are scheduled (false with interval 0, and after `stop`). */
  readonly active: boolean;
  /** Cancels the next run and waits for a run in progress to finish. Idempotent. */
  stop(): Promise<void>;
}

const jsonLines: PruneLogger = {
  info: (message, fields) => console.log(JSON.stringify({ message, ...fields })),
  error: (message, fields) => console.error(JSON.stringify({ message, ...fields })),
};

/**
 * Runs `admin.prune()` every `intervalSeconds`. The timer is armed again only after a run has
 * finished, so runs never overlap however long one takes (several instances may still prune at
 * once: `prune` is safe for that). The timer is unref'd: it never keeps the process alive. A failed
 * run (e.g. the database is down) is logged with its message and the schedule goes on.
 *
 * @example
 * const schedule = schedulePrune(app.admin, { intervalSeconds: pruneIntervalFromEnv(process.env) });
 * // on shutdown, before closing the storage:
 * await schedule.stop();
 */
export function schedulePrune(admin: Prunable, options: SchedulePruneOptions): PruneSchedule {
  const { intervalSeconds, logger = jsonLines } = options;
  if (!(Number.isFinite(intervalSeconds) && intervalSeconds >= 0)) throw new TypeError("intervalSeconds must be a non-negative number");
  const intervalMs = Math.round(intervalSeconds * 1000);
  if (intervalMs > 2_147_483_647) throw new TypeError("intervalSeconds must be at most 2147483 (a timer's limit)");
  let stopped = intervalMs === 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;

  const run = async () => {
    const started = performance.now();
    let counts: object;
    try {
      counts = await admin.prune();
    } catch (error) {
      report(() => logger.error("plantgate prune failed", { error: describe(error) }));
      return;
    }
    report(() => logger.info("plantgate prune", { ...counts, durationMs: Math.round(performance.now() - started) }));
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
      await running;
    },
  };
}

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
