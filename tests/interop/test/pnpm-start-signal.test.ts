/**
 * `pnpm start`, run as the README says (pnpm itself, not the command behind it), stopped by a
 * SIGTERM or SIGINT sent to the pnpm process alone, as a process manager or `kill <pid>` does (a
 * terminal's Ctrl-C signals the whole process group instead): the server stops gracefully and pnpm
 * exits 0. pnpm relays the signal to the shell running the script; until 2026-11-30 that shell
 * died of it without passing it on, pnpm exited 143 (`ELIFECYCLE Command failed`), and the server
 * went on serving, orphaned, with the store open; now the script `exec`s node, so the signal
 * reaches the server's own process and pnpm waits for it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import fetch from "node-fetch";
import { afterEach, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const START_TIMEOUT_MS = 30_000;

let child: ChildProcess | undefined;
afterEach(() => {
  // A failed run: pnpm, the shell and the server are one process group (detached); all go.
  if (child?.pid !== undefined) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  child = undefined;
});

// The repository's `pnpm start`, and the Express example's own `start` script (run in its folder).
const STARTS = [
  { name: "pnpm start", cwd: repoRoot, listening: /^plantgate listening on (http:\/\/127\.0\.0\.1:\d+)$/m, probe: "/.well-known/oauth-authorization-server" },
  { name: "pnpm start (examples/express-server)", cwd: `${repoRoot}examples/express-server`, listening: /^plantgate \(Express\) listening on (http:\/\/127\.0\.0\.1:\d+),/m, probe: "/health" },
];
const CASES = STARTS.flatMap((start) => (["SIGTERM", "SIGINT"] as const).map((signal) => ({ ...start, signal })));

it.each(CASES)(
  "$signal to the pnpm process of `$name` stops the server, and pnpm exits 0",
  async ({ cwd, listening, probe, signal }) => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of Object.keys(env)) if (name.startsWith("PLANTGATE_") || name === "HOST" || name.startsWith("npm_")) delete env[name];
    // Nothing written into the repository: an in-memory store and a configured client (no demo file).
    Object.assign(env, {
      PORT: "0",
      PLANTGATE_DB: ":memory:",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: "pnpm-start",
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "pnpm-start-secret-0123456789",
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
      PLANTGATE_PRUNE_INTERVAL_SECONDS: "0",
      // stderr is compared whole: no "update available" notice from pnpm outside CI.
      npm_config_update_notifier: "false",
    });
    const proc = spawn("pnpm", ["start"], { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    child = proc;
    let out = "";
    let err = "";
    proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    proc.stderr!.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once("exit", (code, sig) => resolve({ code, signal: sig })));

    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start within ${START_TIMEOUT_MS} ms\n${out}\n${err}`)), START_TIMEOUT_MS);
      const check = () => {
        const found = listening.exec(out)?.[1];
        if (found && /^  metadata: /m.test(out)) {
          clearTimeout(timer);
          resolve(found);
        } else setTimeout(check, 20);
      };
      check();
    });
    const metadata = url + probe;
    expect((await fetch(metadata)).status).toBe(200);

    // To pnpm alone, not its process group.
    process.kill(proc.pid!, signal);
    let timer: NodeJS.Timeout | undefined;
    const exit = await Promise.race([
      exited,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`pnpm still running 15 s after ${signal}\n${out}\n${err}`)), 15_000))),
    ]).finally(() => clearTimeout(timer));
    expect({ exit, err }).toEqual({ exit: { code: 0, signal: null }, err: "" });
    // The server is gone with it, not left serving.
    await expect(fetch(metadata)).rejects.toThrow(/ECONNREFUSED/);
  },
  START_TIMEOUT_MS + 30_000,
);
