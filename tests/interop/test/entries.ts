/**
 * The example servers' real entries (`src/main.ts` of examples/node-server and
 * examples/express-server, `src/server.ts` of examples/custom-storage) as child processes, for the tests that start them (bootstrap values,
 * signals during the start). Not a test file itself (vitest only picks up `*.test.ts`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
// `node --import tsx` rather than the tsx command: what runs is the same entry, but the process is
// the server itself. The tsx command relays a SIGTERM to the entry it runs and, when the entry
// does not report it back within 30 ms (a loaded machine), kills it and exits 143. `pnpm start`
// runs `node --import tsx` too (start-entry.test.ts).
export const tsxLoader = new URL("node_modules/tsx/dist/loader.mjs", `file://${repoRoot}`).href;

export const ENTRIES = {
  node: { path: fileURLToPath(new URL("examples/node-server/src/main.ts", `file://${repoRoot}`)), listening: /^plantgate listening on (http:\/\/127\.0\.0\.1:\d+)$/m },
  express: { path: fileURLToPath(new URL("examples/express-server/src/main.ts", `file://${repoRoot}`)), listening: /^plantgate \(Express\) listening on (http:\/\/127\.0\.0\.1:\d+),/m },
  // The JSON file example (./data/plantgate.json of its working directory); no demo client.
  custom: { path: fileURLToPath(new URL("examples/custom-storage/src/server.ts", `file://${repoRoot}`)), listening: /^plantgate listening on (http:\/\/127\.0\.0\.1:\d+) \(store: /m },
};
export type Entry = keyof typeof ENTRIES;

export interface EntryProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `entry` in `cwd` as a process group of its own, added to `running`: no PLANTGATE_ variable
 * or HOST of this process, PORT 0, 1000 password hash iterations and no prune timer, then `vars`.
 */
export function spawnEntry(entry: Entry, cwd: string, vars: Record<string, string>, running: Set<ChildProcess>): EntryProcess {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith("PLANTGATE_") || name === "HOST") delete env[name];
  Object.assign(env, { PORT: "0", PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_PRUNE_INTERVAL_SECONDS: "0" }, vars);
  const child = spawn(process.execPath, ["--import", tsxLoader, ENTRIES[entry].path], { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  running.add(child);
  let out = "";
  let err = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** After a test that failed half-way: every process of `running` still alive goes, as a process group. */
export function killRunning(running: Set<ChildProcess>): void {
  for (const child of running) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }
  }
  running.clear();
}
