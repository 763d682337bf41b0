/**
 * What `pnpm start` runs (`exec node --import tsx examples/node-server/src/main.ts`) really starts: it prints its
 * URL and, stdout being no terminal here, writes the demo credentials to a 0600 file; those
 * credentials get a token over the socket, and SIGTERM stops it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fetch from "node-fetch";
import { afterAll, afterEach, expect, it } from "vitest";
import { tsxLoader } from "./entries.js";
import { DEFAULT_SCOPE, TOKEN_PATH, verifyAccessToken } from "./helpers.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
// `pnpm start` is `exec node --import tsx ...` (not the tsx command, whose signal relay SIGKILLs the server
// when it answers a SIGTERM late: exit 143 under load). Run from a scratch directory, `tsx` is named
// by its loader's path, which is what `--import tsx` resolves to from the repository root.
const START_SCRIPT = "exec node --import tsx examples/node-server/src/main.ts";
const startArgs = () => ["--import", tsxLoader, entry];
const entry = fileURLToPath(new URL("examples/node-server/src/main.ts", `file://${repoRoot}`));

const START_TIMEOUT_MS = 20_000;
const EXIT_TIMEOUT_MS = 10_000;

// The server keeps its data in ./data/plantgate.db of its working directory: run it in a scratch
// directory so the repository stays clean, and so a restart in the same directory finds the data.
const workDir = mkdtempSync(join(tmpdir(), "plantgate-start-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

let child: ChildProcess | undefined;
afterEach(() => {
  // Only if the test failed half-way: never leave the server running, nor anything it started: the
  // whole process group (led by our child, see `detached`) is killed.
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  }
  child = undefined;
});

interface Printed {
  url: string;
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
}

/** Reads the child's stdout until the URL and all four demo credentials were printed. */
function waitForStartup(proc: ChildProcess, stderr: () => string): Promise<Printed> {
  return waitForOutput(proc, stderr, true) as Promise<Printed>;
}

/** Everything a child printed on stdout so far (collected by {@link waitForOutput}). */
const printedSoFar = new WeakMap<ChildProcess, () => string>();
function stdoutOf(proc: ChildProcess): string {
  return printedSoFar.get(proc)?.() ?? "";
}

/** Reads the child's stdout until the URL (and, with `demo`, the demo credentials) were printed. */
function waitForOutput(proc: ChildProcess, stderr: () => string, demo: boolean): Promise<Printed | { url: string; out: string }> {
  return new Promise((resolve, reject) => {
    let out = "";
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`${why}\n--- stdout ---\n${out}\n--- stderr ---\n${stderr()}`));
    };
    const timer = setTimeout(() => fail(`no start-up output within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
    proc.once("exit", (code, signal) => fail(`exited early (code ${code}, signal ${signal})`));
    printedSoFar.set(proc, () => out);
    proc.stdout!.setEncoding("utf8");
    proc.stdout!.on("data", (chunk: string) => {
      out += chunk;
      const url = /^plantgate listening on (http:\/\/127\.0\.0\.1:([1-9]\d*))$/m.exec(out);
      const field = (text: string, name: string, indent: string) => new RegExp(`^${indent}${name}=(\\S+)$`, "m").exec(text)?.[1];
      if (url && !demo && /^  store: +.+$/m.test(out)) {
        clearTimeout(timer);
        resolve({ url: url[1]!, out });
      }
      // stdout is a pipe here, not a terminal: the secret and the password are in a 0600 file, and
      // stdout names it instead of printing them.
      const file = /^  client_secret and password: (\S+) \(mode 0600; shown only there, delete it once read\)$/m.exec(out)?.[1];
      if (url && demo && file) {
        clearTimeout(timer);
        expect(out).toContain("Created a demo client and user; stdout is not a terminal (it may be kept as a log), so their secret and password are not printed:");
        expect(file).toBe(join(workDir, "data", "demo-credentials.txt"));
        expect(statSync(file).mode & 0o777).toBe(0o600);
        const saved = readFileSync(file, "utf8");
        const [clientId, clientSecret, username, password] = ["client_id", "client_secret", "username", "password"].map((name) => field(saved, name, ""));
        expect([field(out, "client_id", "  "), field(out, "username", "  ")]).toEqual([clientId, username]);
        if (!clientId || !clientSecret || !username || !password) return fail(`the credentials file lacks a field:\n${saved.replace(/=.*/g, "=...")}`);
        expect(out).not.toContain(clientSecret);
        expect(out).not.toContain(password);
        resolve({ url: url[1]!, clientId, clientSecret, username, password });
      }
    });
  });
}

function waitForExit(proc: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still running ${EXIT_TIMEOUT_MS} ms after SIGTERM`)), EXIT_TIMEOUT_MS);
    proc.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

it(
  "node --import tsx examples/node-server/src/main.ts (pnpm start) with PORT=0 starts, serves the printed demo client, and exits on SIGTERM",
  async () => {
    // What runs below is what `pnpm start` runs.
    expect((JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start).toBe(START_SCRIPT);
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: "0" };
    // The defaults are what is under test: no host override, no bootstrap client or user.
    for (const name of Object.keys(env)) if (name.startsWith("PLANTGATE_") || name === "HOST") delete env[name];

    // A symlink already at the credentials path (pointing at a file of someone else's): the secret
    // must not go through it, nor change that file.
    const elsewhere = join(workDir, "elsewhere.txt");
    writeFileSync(elsewhere, "not yours\n", { mode: 0o644 });
    mkdirSync(join(workDir, "data"), { recursive: true });
    symlinkSync(elsewhere, join(workDir, "data", "demo-credentials.txt"));
    let stderr = "";
    // detached: its own process group, so a failed run can be cleaned up completely (afterEach).
    const proc = spawn(process.execPath, startArgs(), { cwd: workDir, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    child = proc;
    proc.stderr!.setEncoding("utf8");
    proc.stderr!.on("data", (chunk: string) => (stderr += chunk));

    const printed = await waitForStartup(proc, () => stderr);
    expect(printed).toMatchObject({ clientId: "demo-client", username: "demo" });
    expect([readFileSync(elsewhere, "utf8"), statSync(elsewhere).mode & 0o777]).toEqual(["not yours\n", 0o644]);
    expect(lstatSync(join(workDir, "data", "demo-credentials.txt")).isSymbolicLink()).toBe(false);

    const response = await fetch(printed.url + TOKEN_PATH, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: printed.clientId, client_secret: printed.clientSecret }),
    });
    const body = (await response.json()) as { access_token: string };
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 7200, scope: DEFAULT_SCOPE });
    expect(body).not.toHaveProperty("refresh_token");
    await verifyAccessToken({ url: printed.url, clientId: printed.clientId }, body.access_token, {
      sub: `client:${printed.clientId}`,
      scope: DEFAULT_SCOPE,
    });

    const plant = await fetch(`${printed.url}/plants`, {
      method: "POST",
      headers: { authorization: `Bearer ${body.access_token}`, "content-type": "application/json" },
      body: '{"id":9223372036854775807,"name":"Monstera","tag":"indoor"}',
    });
    expect(await plant.text()).toBe('{"id":9223372036854775807,"name":"Monstera","tag":"indoor"}');

    expect(proc.kill("SIGTERM")).toBe(true);
    const exit = await waitForExit(proc);
    expect(exit, stderr).toEqual({ code: 0, signal: null });
    // Nothing on stderr: the server logs JSON lines on stdout, among them this warning, said once at
    // start as no PLANTGATE_KEY_ENCRYPTION_KEY is set.
    expect(stderr).toBe("");
    const warnings = stdoutOf(proc)
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.level === "warn");
    expect(warnings).toEqual([
      {
        level: "warn",
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        msg: "signing keys are stored in clear: anyone who can read the store can sign tokens; set PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys) to encrypt them at rest",
      },
    ]);
    expect(existsSync(join(workDir, "data", "plantgate.db"))).toBe(true);
    firstRun = { ...printed, accessToken: body.access_token };
  },
  START_TIMEOUT_MS + EXIT_TIMEOUT_MS + 10_000,
);

let firstRun: (Printed & { accessToken: string }) | undefined;

it(
  "restarted on the same ./data/plantgate.db, it keeps clients, users and keys: no new demo, old credentials and tokens still work",
  async () => {
    expect(firstRun, "the first start must have run").toBeDefined();
    const before = firstRun!;
    const port = new URL(before.url).port;
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: port };
    for (const name of Object.keys(env)) if (name.startsWith("PLANTGATE_") || name === "HOST") delete env[name];
    let stderr = "";
    const proc = spawn(process.execPath, startArgs(), { cwd: workDir, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    child = proc;
    proc.stderr!.setEncoding("utf8");
    proc.stderr!.on("data", (chunk: string) => (stderr += chunk));
    const started = (await waitForOutput(proc, () => stderr, false)) as { url: string; out: string };
    expect(started.url).toBe(before.url);
    expect(started.out).not.toContain("Created a demo client");
    expect(started.out).toContain(`store:           SQLite ${join(workDir, "data", "plantgate.db")}`);

    // The access token issued before the restart still verifies: same signing key, same issuer.
    const list = await fetch(`${started.url}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${before.accessToken}` } });
    const page = (await list.json()) as { accounts: { username: string }[]; total: number };
    expect(list.status, JSON.stringify(page)).toBe(200);
    expect(page.accounts.map((a) => a.username)).toEqual(["demo"]);

    // The plant is still there: creating the same id again is the documented duplicate error.
    const duplicate = await fetch(`${started.url}/plants`, {
      method: "POST",
      headers: { authorization: `Bearer ${before.accessToken}`, "content-type": "application/json" },
      body: '{"id":9223372036854775807,"name":"Other"}',
    });
    expect(duplicate.status).toBe(400);
    expect(await duplicate.json()).toEqual({ error: 1006, message: "A plant with id 9223372036854775807 already exists." });

    // The demo client and user still authenticate.
    const response = await fetch(started.url + TOKEN_PATH, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "password",
        client_id: before.clientId,
        client_secret: before.clientSecret,
        username: before.username,
        password: before.password,
      }),
    });
    expect(response.status, await response.clone().text()).toBe(200);

    expect(proc.kill("SIGTERM")).toBe(true);
    expect(await waitForExit(proc), stderr).toEqual({ code: 0, signal: null });
  },
  START_TIMEOUT_MS + EXIT_TIMEOUT_MS + 10_000,
);
