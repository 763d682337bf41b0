/**
 * The start lines of the real entries (`src/main.ts` of examples/node-server and
 * examples/express-server) with the console on: both name its page (`  console:         URL`), the
 * URL answers with the console's page, and with the console off no such line is printed. Until
 * 2026-12-02 the Express example printed none: the console was on with nothing saying where.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect, it } from "vitest";
import { ENTRIES, killRunning, spawnEntry, type Entry } from "./entries.js";
import { until } from "./helpers.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const running = new Set<ChildProcess>();
afterEach(() => killRunning(running));

const BOOTSTRAP = {
  PLANTGATE_BOOTSTRAP_CLIENT_ID: "start-line-client",
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "start-line-secret-0123456789abcdef",
  PLANTGATE_BOOTSTRAP_USERNAME: "admin",
  PLANTGATE_BOOTSTRAP_PASSWORD: "start-line-password-0123",
};

/** Starts the entry, waits for its start lines, stops it (SIGTERM, exit 0) and gives back the lines that are not JSON, with its URL. */
async function startLines(entry: Entry, vars: Record<string, string>) {
  const cwd = mkdtempSync(join(tmpdir(), "plantgate-start-line-"));
  dirs.push(cwd);
  const run = spawnEntry(entry, cwd, { ...BOOTSTRAP, ...vars }, running);
  const output = () => `--- stdout ---\n${run.stdout()}\n--- stderr ---\n${run.stderr()}`;
  const url = await until("the listening line", () => ENTRIES[entry].listening.exec(run.stdout())?.[1], output);
  // The last start line of each: the Express example's own route, the Node example's metadata or console.
  await until("the last start line", () => (/^ {2}(own route|console|metadata): .*\n/m.test(run.stdout()) && /^ {2}metadata: /m.test(run.stdout()) ? true : undefined), output);
  const page = vars.PLANTGATE_BOOTSTRAP_ADMIN === "1" ? await fetch(`${url}${entry === "express" ? "/auth" : ""}/console`) : null;
  const console = page === null ? null : { status: page.status, type: page.headers.get("content-type"), html: (await page.text()).startsWith("<!doctype html>") };
  run.child.kill("SIGTERM");
  expect(await run.exited, output()).toEqual({ code: 0, signal: null });
  expect(run.stderr()).toBe("");
  return { url, console, lines: run.stdout().split("\n").filter((line) => line !== "" && !line.startsWith("{")) };
}

it("with the console on, the Node example's start lines name the console's page, which answers", { timeout: 60_000 }, async () => {
  const { url, console, lines } = await startLines("node", { PLANTGATE_BOOTSTRAP_ADMIN: "1" });
  expect(lines).toEqual([
    `plantgate listening on ${url}`,
    expect.stringMatching(/^ {2}store: +SQLite /),
    `  token endpoint:  POST ${url}/UserService/connect/token`,
    `  metadata:        GET  ${url}/.well-known/oauth-authorization-server`,
    `  console:         ${url}/console`,
  ]);
  expect(console).toEqual({ status: 200, type: "text/html; charset=utf-8", html: true });
});

it("with the console on, the Express example's start lines name the console's page under the mount path, as the Node example's do (they named none)", { timeout: 60_000 }, async () => {
  const { url, console, lines } = await startLines("express", { PLANTGATE_BOOTSTRAP_ADMIN: "1" });
  expect(lines).toEqual([
    `plantgate (Express) listening on ${url}, mounted at /auth`,
    expect.stringMatching(/^ {2}store: +SQLite /),
    `  token endpoint:  POST ${url}/auth/UserService/connect/token`,
    `  metadata:        GET  ${url}/auth/.well-known/oauth-authorization-server`,
    `  console:         ${url}/auth/console`,
    `  own route:       GET  ${url}/health`,
  ]);
  expect(console).toEqual({ status: 200, type: "text/html; charset=utf-8", html: true });
});

it("with the console off, the Express example prints no console line", { timeout: 60_000 }, async () => {
  const { url, lines } = await startLines("express", {});
  expect(lines).toEqual([
    `plantgate (Express) listening on ${url}, mounted at /auth`,
    expect.stringMatching(/^ {2}store: +SQLite /),
    `  token endpoint:  POST ${url}/auth/UserService/connect/token`,
    `  metadata:        GET  ${url}/auth/.well-known/oauth-authorization-server`,
    `  own route:       GET  ${url}/health`,
  ]);
});
