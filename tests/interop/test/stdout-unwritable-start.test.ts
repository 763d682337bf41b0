/**
 * What `pnpm start` runs (and the Express example's start), with a stdout that cannot take a byte
 * from the start (`/dev/full`: every write ENOSPC). Before 2026-11-29 the start lines' console.log
 * ended the process (an unhandled 'error' on process.stdout) with the server already listening;
 * now the loss is said once on stderr and the server answers, and stops cleanly on SIGTERM, saying
 * how many log lines were lost.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, expect, it } from "vitest";
import { killGroup, TOKEN_PATH, until } from "./helpers.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const tsx = join(repoRoot, "node_modules/.bin/tsx");
const workDir = mkdtempSync(join(tmpdir(), "plantgate-dev-full-"));

let child: ChildProcess | undefined;
afterEach(async () => {
  await killGroup(child);
  child = undefined;
});
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** A port nothing listens on now (the server's start lines, which would name it, are lost). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const LOST = "plantgate: writing the start lines to stdout failed (ENOSPC); they are lost, the server runs on\n";
const LOG_FAILED = "plantgate: writing log lines to stdout failed (ENOSPC); they are dropped, and counted, until a write works again (tried after 1 s, then at most every 30 s)\n";

for (const example of [
  { name: "node-server", entry: "examples/node-server/src/main.ts", base: "" },
  { name: "express-server", entry: "examples/express-server/src/main.ts", base: "/auth" },
]) {
  it(`${example.name} with stdout on /dev/full: the lost start lines are said once on stderr, the server answers and stops with 0`, { timeout: 60_000 }, async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(workDir, `${example.name}-`));
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of Object.keys(env)) if (name.startsWith("PLANTGATE_") || name === "HOST") delete env[name];
    Object.assign(env, {
      PORT: String(port),
      PLANTGATE_LOG_LEVEL: "info",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: "full-client",
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "full-secret-0b2d4f6a8c1e3a5c7e9b",
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
    });
    const full = openSync("/dev/full", "w");
    let proc: ChildProcess;
    try {
      proc = spawn(tsx, [join(repoRoot, example.entry)], { cwd: dir, env, stdio: ["ignore", full, "pipe"], detached: true });
    } finally {
      closeSync(full);
    }
    child = proc;
    let err = "";
    proc.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
    let exit: string | undefined;
    proc.once("exit", (code, signal) => (exit = `exited with ${code ?? signal}`));
    const output = () => `--- stderr ---\n${err}${exit === undefined ? "" : `\n--- ${exit} ---`}`;
    const url = `http://127.0.0.1:${port}${example.base}`;

    // Served: a token for the bootstrap client (its token.issued line is dropped, not a crash).
    // The server listens before its start-up provisioning ends and answers the documented 503
    // meanwhile (exactly that, with Retry-After: 1; a loaded machine meets it): asked again then,
    // as a client would. Its start lines, which would say when it is ready, are what is lost here.
    const deadline = Date.now() + 40_000;
    let response: Response | undefined;
    let body: Record<string, unknown> | undefined;
    while (body === undefined) {
      if (exit !== undefined) throw new Error(`the server ended before answering\n${output()}`);
      if (Date.now() > deadline) throw new Error(`the server did not answer within 40 s\n${output()}`);
      response = await fetch(url + TOKEN_PATH, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "client_credentials", client_id: "full-client", client_secret: "full-secret-0b2d4f6a8c1e3a5c7e9b" }),
      }).catch(() => undefined);
      if (response === undefined) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      const answered = (await response.json()) as Record<string, unknown>;
      if (response.status !== 503) {
        body = answered;
        continue;
      }
      expect([response.headers.get("retry-after"), answered], output()).toEqual(["1", { error: "temporarily_unavailable", error_description: "The server is starting; retry shortly." }]);
      await new Promise((r) => setTimeout(r, 1000));
    }
    expect([response!.status, body.token_type, typeof body.access_token], output()).toEqual([200, "Bearer", "string"]);

    // Both failures are said on stderr, once each, and nothing else is there (no stack trace).
    await until("both stderr lines", () => (err.includes(LOST) && err.includes(LOG_FAILED) ? true : undefined), output);
    expect(err.split("\n").filter(Boolean).sort(), output()).toEqual([LOST, LOG_FAILED].map((l) => l.trimEnd()).sort());

    proc.kill("SIGTERM");
    const code = await new Promise((resolve) => (proc.exitCode !== null ? resolve(proc.exitCode) : proc.once("exit", resolve)));
    expect(code, output()).toBe(0);
    // At exit, stdout still failing: the count of the log lines lost, after the two lines above.
    const lines = err.split("\n");
    expect([lines.length, lines.at(-1)], output()).toEqual([4, ""]);
    expect(lines[2], output()).toMatch(/^plantgate: exiting with stdout still failing \(ENOSPC\): [1-9]\d* log lines? dropped since \d{4}-\d\d-\d\dT[\d:.]+Z (is|are) lost$/);
  });
}

