/**
 * Bootstrap values that break the admin checks, given to the real entries (`src/main.ts` of
 * examples/node-server and examples/express-server) on a real port: the start stops before the port
 * is bound, exit 1, with one line on stderr naming the variable (never the secret's value), and
 * nothing is provisioned. A client or account already stored leaves such a value unused, as before
 * 2026-11-30: that start goes on, with a warning naming the variable.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fetch from "node-fetch";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ENTRIES, killRunning, spawnEntry, type Entry, type EntryProcess } from "./entries.js";
import { TOKEN_PATH } from "./helpers.js";

const RUN_TIMEOUT_MS = 20_000;
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "plantgate-bootstrap-"));
  dirs.push(dir);
  return dir;
};

const running = new Set<ChildProcess>();
// A test failed half-way: the server and anything it started go, as a process group.
afterEach(() => killRunning(running));

/** A port free right now (bound, read, released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Tries to connect to the port every millisecond until stopped; counts the connections accepted. */
function watchPort(port: number): { stop(): number } {
  let accepted = 0;
  let stopped = false;
  const attempt = () => {
    if (stopped) return;
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      accepted++;
      socket.destroy();
      setTimeout(attempt, 1);
    });
    socket.once("error", () => setTimeout(attempt, 1));
  };
  attempt();
  return {
    stop: () => {
      stopped = true;
      return accepted;
    },
  };
}

interface Run extends EntryProcess {
  port: number;
  watch: { stop(): number };
}

function start(entry: Entry, cwd: string, vars: Record<string, string>, port: number): Run {
  const watch = watchPort(port);
  return { ...spawnEntry(entry, cwd, { PORT: String(port), ...vars }, running), port, watch };
}

/** Runs the entry to its exit (it must exit on its own): exit status, output, connections the port accepted meanwhile. */
async function runToExit(entry: Entry, cwd: string, vars: Record<string, string>) {
  const run = start(entry, cwd, vars, await freePort());
  let timer: NodeJS.Timeout | undefined;
  const exit = await Promise.race([
    run.exited,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`still running after ${RUN_TIMEOUT_MS} ms\n${run.stdout()}\n${run.stderr()}`)), RUN_TIMEOUT_MS))),
  ]);
  clearTimeout(timer);
  return { exit, accepted: run.watch.stop(), stdout: run.stdout(), stderr: run.stderr() };
}

/** Waits for the entry's listening line; returns its URL. */
async function listening(entry: Entry, run: Run): Promise<string> {
  const deadline = Date.now() + RUN_TIMEOUT_MS;
  let done = false;
  void run.exited.then(() => (done = true));
  while (Date.now() < deadline) {
    const url = ENTRIES[entry].listening.exec(run.stdout())?.[1];
    if (url) return url;
    if (done) throw new Error(`exited before listening\n--- stdout ---\n${run.stdout()}\n--- stderr ---\n${run.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`not listening within ${RUN_TIMEOUT_MS} ms\n${run.stdout()}\n${run.stderr()}`);
}

async function stop(run: Run): Promise<void> {
  run.child.kill("SIGTERM");
  expect(await run.exited).toEqual({ code: 0, signal: null });
  run.watch.stop();
}

async function token(url: string, body: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url + TOKEN_PATH, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const CLIENT_ID = "boot-client";
const CLIENT_SECRET = "boot-client-secret-0123456789";
const USERNAME = "boot-admin";
const PASSWORD = "boot-admin-password";
const SHORT_SECRET = "Sh0rt-S3cr3t"; // 12 characters
const SHORT_PASSWORD = "pw-7chr";

const REFUSED: [Entry, string, Record<string, string>, string][] = [
  ["node", "a client secret under 16 characters", { PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: SHORT_SECRET }, "PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters"],
  ["node", "a client id with a space", { PLANTGATE_BOOTSTRAP_CLIENT_ID: "boot client", PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET }, "PLANTGATE_BOOTSTRAP_CLIENT_ID must be 1-200 printable ASCII characters without spaces"],
  ["node", "a username ending in a space", { PLANTGATE_BOOTSTRAP_USERNAME: `${USERNAME} `, PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD }, "PLANTGATE_BOOTSTRAP_USERNAME must not start or end with white space or an invisible character"],
  ["node", "a good client beside a 7-character password", { PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET, PLANTGATE_BOOTSTRAP_USERNAME: USERNAME, PLANTGATE_BOOTSTRAP_PASSWORD: SHORT_PASSWORD }, "PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters"],
  ["express", "a client secret under 16 characters", { PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: SHORT_SECRET }, "PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters"],
  ["express", "a good client beside a 7-character password", { PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET, PLANTGATE_BOOTSTRAP_USERNAME: USERNAME, PLANTGATE_BOOTSTRAP_PASSWORD: SHORT_PASSWORD }, "PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters"],
  // The JSON file example (until 2026-11-30: a stack trace naming clientSecret; the account pair not read).
  ["custom", "a client secret under 16 characters", { PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: SHORT_SECRET }, "PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters"],
  ["custom", "a username ending in a space", { PLANTGATE_BOOTSTRAP_USERNAME: `${USERNAME} `, PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD }, "PLANTGATE_BOOTSTRAP_USERNAME must not start or end with white space or an invisible character"],
];

describe("bootstrap values that break the rules, on an empty store", () => {
  it.each(REFUSED)("%s entry, %s: exit 1 before the port is bound, one line naming the variable, no value, nothing provisioned", async (entry, _what, vars, message) => {
    const cwd = scratch();
    const r = await runToExit(entry, cwd, vars);
    expect({ exit: r.exit, stderr: r.stderr, stdout: r.stdout, accepted: r.accepted }).toEqual({ exit: { code: 1, signal: null }, stderr: `${message}\n`, stdout: "", accepted: 0 });
    for (const value of [SHORT_SECRET, SHORT_PASSWORD, CLIENT_SECRET, PASSWORD]) expect(r.stderr + r.stdout).not.toContain(value);

    // Nothing was created, not even the good client beside the bad password (made, then the start
    // failed, until 2026-11-30): a start without bootstrap variables finds the store empty and makes
    // the demo client.
    if (!vars.PLANTGATE_BOOTSTRAP_CLIENT_ID || !vars.PLANTGATE_BOOTSTRAP_USERNAME || entry === "custom") return;
    const next = start(entry, cwd, {}, await freePort());
    await listening(entry, next);
    // The demo's last line: the demo client was made and its credentials written.
    await expect.poll(() => next.stdout(), { timeout: RUN_TIMEOUT_MS }).toMatch(/^  client_secret and password: \S+demo-credentials\.txt /m);
    expect(next.stdout()).toContain("Created a demo client and user");
    await stop(next);
  }, 60_000);
});

describe("bootstrap values that break the rules, for a client and an account already stored (SQLite)", () => {
  it("are left unused as before: the start goes on, the stored credentials work, one warning each names the variable", async () => {
    const cwd = scratch();
    const first = start("node", cwd, { PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET, PLANTGATE_BOOTSTRAP_USERNAME: USERNAME, PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD }, await freePort());
    await listening("node", first);
    await stop(first);

    const again = start("node", cwd, { PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: SHORT_SECRET, PLANTGATE_BOOTSTRAP_USERNAME: USERNAME, PLANTGATE_BOOTSTRAP_PASSWORD: SHORT_PASSWORD }, await freePort());
    const url = await listening("node", again);
    const stored = await token(url, { grant_type: "password", client_id: CLIENT_ID, client_secret: CLIENT_SECRET, username: USERNAME, password: PASSWORD });
    expect(stored.status, JSON.stringify(stored.body)).toBe(200);
    expect(stored.body).toMatchObject({ token_type: "Bearer", expires_in: 7200 });
    const unused = await token(url, { grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: SHORT_SECRET });
    expect(unused).toEqual({ status: 401, body: { error: "invalid_client", error_description: "Client authentication failed." } });
    await stop(again);
    // The watch does see a listening port (the refusals' 0 above is not for want of trying).
    expect(again.watch.stop()).toBeGreaterThan(0);
    const warnings = again
      .stdout()
      .split("\n")
      .filter((line) => line.includes('"level":"warn"') && line.includes("PLANTGATE_BOOTSTRAP_"))
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(warnings).toEqual([
      "PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters; ignored, as the bootstrap client exists and is left as it is",
      "PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters; ignored, as the bootstrap account exists and is left as it is",
    ]);
    expect(again.stderr()).toBe("");
    for (const value of [SHORT_SECRET, SHORT_PASSWORD]) expect(again.stdout()).not.toContain(value);
  }, 60_000);

  it("PLANTGATE_BOOTSTRAP_ADMIN=1 with a stored account: its password is checked all the same (as before), now before the port is bound", async () => {
    const cwd = scratch();
    const first = start("node", cwd, { PLANTGATE_BOOTSTRAP_ADMIN: "1", PLANTGATE_BOOTSTRAP_USERNAME: USERNAME, PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD }, await freePort());
    await listening("node", first);
    await stop(first);
    const r = await runToExit("node", cwd, { PLANTGATE_BOOTSTRAP_ADMIN: "1", PLANTGATE_BOOTSTRAP_USERNAME: USERNAME, PLANTGATE_BOOTSTRAP_PASSWORD: SHORT_PASSWORD });
    expect({ exit: r.exit, stderr: r.stderr, stdout: r.stdout, accepted: r.accepted }).toEqual({ exit: { code: 1, signal: null }, stderr: "PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters\n", stdout: "", accepted: 0 });
  }, 60_000);
});

describe("the JSON file example (custom-storage) reads the whole bootstrap", () => {
  it("a client and an account from the variables, both usable; a start with a good client beside a 7-character password stores neither", async () => {
    const refusedDir = scratch();
    const r = await runToExit("custom", refusedDir, { PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET, PLANTGATE_BOOTSTRAP_USERNAME: USERNAME, PLANTGATE_BOOTSTRAP_PASSWORD: SHORT_PASSWORD });
    expect({ exit: r.exit, stderr: r.stderr, stdout: r.stdout, accepted: r.accepted }).toEqual({ exit: { code: 1, signal: null }, stderr: "PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters\n", stdout: "", accepted: 0 });
    // Started again without the account pair: the client is made now (it was not before).
    const cwd = scratch();
    const run = start("custom", cwd, { PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET, PLANTGATE_BOOTSTRAP_USERNAME: USERNAME, PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD }, await freePort());
    const url = await listening("custom", run);
    const issued = await token(url, { grant_type: "password", client_id: CLIENT_ID, client_secret: CLIENT_SECRET, username: USERNAME, password: PASSWORD });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    expect(issued.body).toMatchObject({ token_type: "Bearer", expires_in: 7200 });
    await stop(run);
    // Its only stderr line: the default logger's warning, as no PLANTGATE_KEY_ENCRYPTION_KEY is set.
    expect(run.stderr()).toBe("signing keys are stored in clear: anyone who can read the store can sign tokens; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys) to encrypt them at rest\n");
    const restarted = start("custom", refusedDir, {}, await freePort());
    const refusedUrl = await listening("custom", restarted);
    // The refused start made no client: the store of that directory knows none.
    expect(await token(refusedUrl, { grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: CLIENT_SECRET })).toEqual({ status: 401, body: { error: "invalid_client", error_description: "Client authentication failed." } });
    await stop(restarted);
  }, 60_000);
});
