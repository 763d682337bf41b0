import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ReadyMessage } from "./shared.js";

/** The bench package's directory (servers and lua scripts are found relative to it). */
export const BENCH_DIR = fileURLToPath(new URL("..", import.meta.url));

function has(command: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Whether wrk and taskset are installed. */
export const tools = { wrk: has("wrk"), taskset: has("taskset") && cpuCount() >= 2 };

function cpuCount(): number {
  try {
    return Number(execFileSync("nproc", { encoding: "utf8" }).trim()) || 1;
  } catch {
    return 1;
  }
}

/** Prefixes a command with `taskset -c <cpu>` when taskset is available. */
export function pinned(cpu: number, command: string, args: string[]): [string, string[]] {
  return tools.taskset ? ["taskset", ["-c", String(cpu), command, ...args]] : [command, args];
}

/** A contender's server, running as its own child process. */
export interface ServerProcess {
  pid: number;
  baseUrl: string;
  /** A /proc/<pid>/status field in kB, e.g. VmHWM (peak RSS) or VmRSS. */
  memoryKb(field: "VmHWM" | "VmRSS"): number;
  /** CPU time (user + system) the server has used so far, in ms (/proc/<pid>/stat, 10 ms ticks). */
  cpuMs(): number;
  /** What the server wrote on stderr (for failure messages). */
  stderr(): string;
  /** Live heap bytes after a forced full GC (servers started with --expose-gc that support it). */
  heapAfterGc(): Promise<number>;
  stop(): Promise<void>;
}

/** Drivers with native code or optional installs: loaded by node at run time, never bundled. */
const RUNTIME_EXTERNAL = new Set(["better-sqlite3", "pg", "pg-native", "mysql2"]);
const built = new Map<string, Promise<string>>();

/**
 * Bundles `src/servers/<entry>` with esbuild into `.build/<name>.mjs` (once per run), the way a
 * user's build (tsup, which is esbuild) ships plantgate: the workspace packages and their
 * dependencies inlined, no tsx in the process. Running the TypeScript through tsx instead adds
 * its keep-names helper to every function and closure, which showed up in profiles. The peers'
 * packages stay external and load from node_modules as published.
 */
export function buildServer(entry: string, benchDir = BENCH_DIR): Promise<string> {
  const key = join(benchDir, entry);
  let result = built.get(key);
  if (result === undefined) {
    const outfile = join(benchDir, ".build", entry.replace(/\.ts$/, ".mjs"));
    const serversDir = join(benchDir, "src");
    result = import("esbuild").then(async ({ build }) => {
      await build({
        entryPoints: [join(benchDir, "src", "servers", entry)],
        outfile,
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node20",
        logLevel: "error",
        // Bundled CommonJS dependencies call require(); give the ES module one.
        banner: { js: 'import { createRequire as __benchCreateRequire } from "node:module"; const require = __benchCreateRequire(import.meta.url);' },
        plugins: [
          {
            name: "bench-externals",
            setup(b) {
              b.onResolve({ filter: /^[^./]/ }, (args) => {
                if (args.path.startsWith("node:") || args.path.startsWith("@plantgate/")) return undefined;
                const name = args.path.startsWith("@") ? args.path.split("/").slice(0, 2).join("/") : args.path.split("/")[0]!;
                // Drivers, and whatever the bench's own servers import (the peers), load from node_modules.
                if (RUNTIME_EXTERNAL.has(name) || args.importer.startsWith(serversDir)) return { path: args.path, external: true };
                return undefined;
              });
            },
          },
        ],
      });
      return outfile;
    });
    built.set(key, result);
  }
  return result;
}

/**
 * Starts `src/servers/<entry>`, bundled by {@link buildServer}, with `node` pinned to CPU 0 (taskset execs node, so the
 * child's pid is the server's own and /proc/<pid>/status measures it alone) and waits for its
 * READY line. `benchDir` is another checkout's bench folder for baseline rows (BENCH_BASELINE).
 */
export async function startServer(
  entry: string,
  env: Record<string, string>,
  timeoutMs = 120_000,
  profileTag?: string,
  nodeFlags: string[] = [],
  benchDir = BENCH_DIR,
): Promise<ServerProcess> {
  // BENCH_CPU_PROF=<dir>: every server writes a V8 CPU profile to <dir>/<tag>/ when it stops.
  const profileDir = process.env.BENCH_CPU_PROF;
  const profile = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${join(profileDir, profileTag ?? entry.replace(/\.ts$/, ""))}`] : [];
  const script = await buildServer(entry, benchDir);
  const [command, args] = pinned(0, process.execPath, [...profile, ...nodeFlags, script]);
  // stdout goes to a file, never to a pipe this process drains: a server logging a JSON line per
  // request (the observed row) would otherwise have this process read megabytes a second beside
  // the server it measures, on one of the same two CPUs, and stall the server whenever the pipe is
  // full. A file is what a log collector leaves the server to pay: the write into the page cache.
  const outDir = mkdtempSync(join(tmpdir(), "plantgate-bench-stdout-"));
  const outPath = join(outDir, "stdout.log");
  const outFd = openSync(outPath, "w");
  const child: ChildProcess = spawn(command, args, {
    cwd: benchDir,
    env: { ...process.env, NODE_ENV: "production", ...env },
    stdio: ["ignore", outFd, "pipe"],
  });
  closeSync(outFd);
  let errText = "";
  let gcReports: number[] = [];
  child.stderr!.on("data", (chunk: Buffer) => {
    const text = chunk.toString("utf8");
    for (const m of text.matchAll(/GC heapUsed=(\d+)/g)) gcReports.push(Number(m[1]));
    errText = (errText + text).slice(-4000);
  });
  const ready = await new Promise<ReadyMessage>((resolve, reject) => {
    let poll: ReturnType<typeof setInterval> | undefined;
    const early = (code: number | null) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`${entry} exited with code ${code} before it was ready\n${readFileSync(outPath, "utf8").slice(-4000)}${errText}`));
    };
    const timer = setTimeout(() => {
      clearInterval(poll);
      child.off("exit", early);
      reject(new Error(`${entry} did not start within ${timeoutMs} ms\n${errText}`));
    }, timeoutMs);
    // The READY line is looked for in the file until it shows up whole (its newline written).
    poll = setInterval(() => {
      const line = /^READY (.*)\n/m.exec(readFileSync(outPath, "utf8"));
      if (!line) return;
      clearInterval(poll);
      clearTimeout(timer);
      child.off("exit", early);
      try {
        resolve(JSON.parse(line[1]!) as ReadyMessage);
      } catch (error) {
        reject(new Error(`${entry} wrote a READY line that is not JSON: ${(error as Error).message}`));
      }
    }, 25);
    child.once("exit", early);
  });
  const pid = child.pid!;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    pid,
    baseUrl: `http://127.0.0.1:${ready.port}`,
    memoryKb(field) {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
      return m ? Number(m[1]) : NaN;
    },
    cpuMs() {
      // Fields after the ")" that ends the command name: utime and stime are the 12th and 13th.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    },
    stderr: () => errText,
    async heapAfterGc() {
      // errText keeps only the tail of stderr, so wait for a report newer than the signal.
      let reports = 0;
      gcReports = [];
      child.kill("SIGUSR2");
      for (let i = 0; i < 200 && reports === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        reports = gcReports.length;
      }
      return gcReports.at(-1) ?? NaN;
    },
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
      rmSync(outDir, { recursive: true, force: true });
    },
  };
}
