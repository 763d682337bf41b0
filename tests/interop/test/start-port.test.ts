/**
 * The example servers' PORT, as `pnpm start` runs them (real processes, real sockets): a PORT in
 * use stops the start with one line naming the variable (Node's own "listen EADDRINUSE: address
 * already in use 127.0.0.1:N" did not say which of the server's ports it was), and a PORT that is
 * not a port is refused before the store is opened (no ./data/plantgate.db made for a start that
 * cannot run).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const tsx = join(repoRoot, "node_modules/.bin/tsx");
const SERVERS = [
  { name: "node", entry: join(repoRoot, "examples/node-server/src/main.ts") },
  { name: "Express", entry: join(repoRoot, "examples/express-server/src/main.ts") },
] as const;

const dirs: string[] = [];
const children: ChildProcess[] = [];
const held: Server[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }
  }
  for (const server of held.splice(0)) await new Promise((resolve) => server.close(resolve));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs an example server's entry in a new empty directory with `env` (no PLANTGATE_* of the caller's); its exit code and output. */
async function run(entry: string, env: Record<string, string>): Promise<{ code: number | null; out: string; err: string; cwd: string }> {
  const cwd = mkdtempSync(join(tmpdir(), "plantgate-port-"));
  dirs.push(cwd);
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(childEnv)) if (name.startsWith("PLANTGATE_") || name === "HOST" || name === "PORT") delete childEnv[name];
  Object.assign(childEnv, env);
  const proc = spawn(tsx, [entry], { cwd, env: childEnv, stdio: ["ignore", "pipe", "pipe"], detached: true });
  children.push(proc);
  let out = "";
  let err = "";
  proc.stdout!.setEncoding("utf8").on("data", (c: string) => (out += c));
  proc.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
  const code = await new Promise<number | null>((resolve) => proc.once("exit", resolve));
  return { code, out, err, cwd };
}

describe.each(SERVERS)("the $name example server's PORT", ({ entry }) => {
  it("a PORT in use: exit 1, one line naming PORT, nothing on stdout", { timeout: 60_000 }, async () => {
    const taken = createServer();
    held.push(taken);
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    const { code, out, err } = await run(entry, { PORT: String(port), PLANTGATE_DB: ":memory:" });
    expect([code, out, err]).toEqual([1, "", `PORT ${port}: the server could not listen (listen EADDRINUSE: address already in use 127.0.0.1:${port})\n`]);
  });

  it("a PORT that is not a port: exit 1, one line, and no store file made (checked before the store is opened)", { timeout: 60_000 }, async () => {
    const { code, out, err, cwd } = await run(entry, { PORT: "80a" });
    expect([code, out, err]).toEqual([1, "", 'PORT must be 0-65535, got "80a"\n']);
    expect(existsSync(join(cwd, "data", "plantgate.db"))).toBe(false);
  });
});
