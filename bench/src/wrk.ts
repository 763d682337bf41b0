import { execFile } from "node:child_process";
import { join } from "node:path";
import { BENCH_DIR, pinned } from "./proc.js";

/** What one wrk run reports (from lua/report.lua). */
export interface WrkResult {
  requests: number;
  duration_us: number;
  p50_us: number;
  p99_us: number;
  errors_status: number;
  errors_connect: number;
  errors_read: number;
  errors_write: number;
  errors_timeout: number;
  /** requests / duration. */
  rps: number;
}

/** Options of {@link runWrk}. */
export interface WrkRun {
  url: string;
  /** File name in bench/lua. */
  script: string;
  env: Record<string, string>;
  seconds: number;
  connections: number;
}

const LUA_DIR = join(BENCH_DIR, "lua");

/** Runs wrk pinned to CPU 1 with one thread (the lua scripts keep per-thread state). */
export function runWrk(run: WrkRun): Promise<WrkResult> {
  const [command, args] = pinned(1, "wrk", ["-t1", `-c${run.connections}`, `-d${run.seconds}s`, "--timeout", "10s", "-s", join(LUA_DIR, run.script), run.url]);
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { env: { ...process.env, BENCH_LUA_DIR: LUA_DIR, ...run.env }, maxBuffer: 16 * 1024 * 1024, timeout: (run.seconds + 120) * 1000 },
      (error, stdout, stderr) => {
        const line = stdout.split("\n").find((l) => l.startsWith("BENCH_RESULT "));
        if (error || !line) {
          reject(new Error(`wrk failed: ${error?.message ?? "no result line"}\n${stdout}\n${stderr}`));
          return;
        }
        const r = JSON.parse(line.slice("BENCH_RESULT ".length)) as Omit<WrkResult, "rps">;
        resolve({ ...r, rps: r.duration_us > 0 ? (r.requests * 1e6) / r.duration_us : 0 });
      },
    );
  });
}

/** Connection-level and non-2xx errors of a run. */
export function errorCount(r: WrkResult): number {
  return r.errors_status + r.errors_connect + r.errors_read + r.errors_write + r.errors_timeout;
}
