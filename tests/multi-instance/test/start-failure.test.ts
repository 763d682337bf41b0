/**
 * The real entry on a PostgreSQL URL nothing listens on: it exits 1 within seconds with one
 * clear line on stderr (no stack trace), and never prints the URL's password.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect, it } from "vitest";
import { baseServerEnv, serverEnv, spawnEntry, type Spawned } from "./support.js";

const EXIT_WITHIN_MS = 10_000;
const workDir = mkdtempSync(join(tmpdir(), "plantgate-unreachable-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

let child: Spawned | undefined;
afterEach(() => {
  child?.kill();
  child = undefined;
});

async function startOn(url: string) {
  child = spawnEntry(serverEnv(baseServerEnv(url)), workDir);
  const started = Date.now();
  const exit = await child.exited(EXIT_WITHIN_MS);
  return { exit, elapsed: Date.now() - started, stdout: child.stdout(), stderr: child.stderr() };
}

function expectOneClearLine(stderr: string) {
  const lines = stderr.trimEnd().split("\n");
  expect(lines, stderr).toHaveLength(1);
  expect(lines[0], stderr).toMatch(/^cannot open the store at postgres:\/\/\S+: \S/);
  expect(stderr).not.toMatch(/^\s+at /m);
  expect(stderr).not.toContain("Error:");
}

it("PLANTGATE_DATABASE_URL unreachable: exits 1 within seconds with one clear line on stderr", async () => {
  const r = await startOn("postgres://postgres@127.0.0.1:1/test");
  // Exit 1, as every failed start (README), not a signal: until 2026-11-30 any code but 0 passed.
  expect(r.exit, r.stderr).toEqual({ code: 1, signal: null });
  expect(r.elapsed).toBeLessThan(EXIT_WITHIN_MS);
  expectOneClearLine(r.stderr);
  expect(r.stderr).toContain("postgres://postgres@127.0.0.1:1/test");
  expect(r.stdout).not.toContain("plantgate listening");
});

it("the password in an unreachable PLANTGATE_DATABASE_URL is never printed", async () => {
  const secret = "Sup3rS3cretPw";
  const r = await startOn(`postgres://postgres:${secret}@127.0.0.1:1/test`);
  expect(r.exit, r.stderr).toEqual({ code: 1, signal: null });
  expectOneClearLine(r.stderr);
  expect(r.stderr + r.stdout).not.toContain(secret);
});
