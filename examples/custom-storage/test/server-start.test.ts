/**
 * The example's start refuses what it cannot listen on in one line and exit 1, as examples/node-server
 * does: a PORT that is no port number (Node's RangeError and a stack trace until 2026-11-30), and a
 * port another listener holds.
 */
import { spawn } from "node:child_process";
import { access, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, expect, it } from "vitest";

const example = resolve(import.meta.dirname, "..");
const dir = await mkdtemp(join(tmpdir(), "plantgate-custom-start-"));
afterAll(() => rm(dir, { recursive: true, force: true }));

function start(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/server.ts"], { cwd: example, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", fail);
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

it("a PORT that is no port number: one line naming it, exit 1, the store file never opened", async () => {
  for (const port of ["abc", "70000", "-1", "80 80"]) {
    const file = join(dir, `never-${port.replace(/\W/g, "_")}.json`);
    const r = await start({ PORT: port, PLANTGATE_JSON_FILE: file });
    expect(r, port).toEqual({ code: 1, stdout: "", stderr: `PORT must be 0-65535, got ${JSON.stringify(port)}\n` });
    await expect(access(file), port).rejects.toMatchObject({ code: "ENOENT" });
  }
}, 60_000);

it("a port another listener holds: one line with the reason, exit 1 (no stack trace)", async () => {
  const holder = createServer();
  await new Promise<void>((ok) => holder.listen(0, "127.0.0.1", ok));
  const port = (holder.address() as { port: number }).port;
  try {
    const r = await start({ PORT: String(port), PLANTGATE_JSON_FILE: join(dir, "in-use.json") });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    const lines = r.stderr.trimEnd().split("\n").filter((l) => !l.startsWith("signing keys are stored in clear"));
    expect(lines).toEqual([`plantgate: listen EADDRINUSE: address already in use 127.0.0.1:${port}`]);
  } finally {
    holder.close();
  }
}, 60_000);
