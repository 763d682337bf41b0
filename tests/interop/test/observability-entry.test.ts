/**
 * Issue 21's "done when", against what `pnpm start` runs (tsx examples/node-server/src/main.ts) as
 * a real process on real sockets: a wrong client secret, a wrong password and a successful token
 * each produce their event as a JSON line on the server's stdout; no line holds a secret,
 * password or token the requests carried; `/metrics` on PLANTGATE_METRICS_PORT (a listener of its
 * own) counts the token under grant_type="client_credentials".
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, expect, it } from "vitest";
import { TOKEN_PATH, until } from "./helpers.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const tsx = join(repoRoot, "node_modules/.bin/tsx");
const entry = join(repoRoot, "examples/node-server/src/main.ts");
const workDir = mkdtempSync(join(tmpdir(), "plantgate-observe-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

let child: ChildProcess | undefined;
afterEach(() => {
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  }
  child = undefined;
});

const CLIENT_ID = "observed-client";
const CLIENT_SECRET = "obs-secret-5b0c7f1e9d2a4c6b8e0f1a3c5e7d9b2f";
const USERNAME = "observed-user";
const PASSWORD = "obs-password-8d6f4b2a0c9e7d5f";
const WRONG_SECRET = "obs-wrong-secret-1a2b3c4d5e6f";
const WRONG_PASSWORD = "obs-wrong-password-9f8e7d6c";

function token(url: string, form: Record<string, string>) {
  return fetch(url + TOKEN_PATH, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form),
  });
}

it("events as JSON lines, no secret in any line, and the client_credentials counter on the metrics port", { timeout: 60_000 }, async () => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith("PLANTGATE_") || name === "HOST") delete env[name];
  Object.assign(env, {
    PORT: "0",
    PLANTGATE_METRICS_PORT: "0",
    PLANTGATE_LOG_LEVEL: "info",
    PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID,
    PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
    PLANTGATE_BOOTSTRAP_USERNAME: USERNAME,
    PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD,
    PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
  });
  let out = "";
  let err = "";
  const proc = spawn(tsx, [entry], { cwd: workDir, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  child = proc;
  proc.stdout!.setEncoding("utf8").on("data", (c: string) => (out += c));
  proc.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
  const output = () => `--- stdout ---\n${out}\n--- stderr ---\n${err}`;

  const url = await until("the listening line", () => /^plantgate listening on (http:\/\/127\.0\.0\.1:\d+)$/m.exec(out)?.[1], output);
  const metricsUrl = await until("the metrics line", () => /^ {2}metrics: +(http:\/\/127\.0\.0\.1:\d+\/metrics)$/m.exec(out)?.[1], output);
  expect(new URL(metricsUrl).port).not.toBe(new URL(url).port);
  // The public port does not serve the metrics.
  expect((await fetch(`${url}/metrics`)).status).toBe(404);

  const wrongSecret = await token(url, { grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: WRONG_SECRET });
  expect(wrongSecret.status).toBe(401);
  const wrongPassword = await token(url, { grant_type: "password", client_id: CLIENT_ID, client_secret: CLIENT_SECRET, username: USERNAME, password: WRONG_PASSWORD });
  expect(wrongPassword.status).toBe(400);
  const issued = await token(url, { grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
  expect(issued.status).toBe(200);
  const accessToken = ((await issued.json()) as { access_token: string }).access_token;
  const session = await token(url, {
    grant_type: "password",
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    username: USERNAME,
    password: PASSWORD,
    scope: "Platform_UserAPIs offline_access",
  });
  const sessionBody = (await session.json()) as { access_token: string; refresh_token: string };
  expect(session.status).toBe(200);

  const lines = () =>
    out
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const events = await until(
    "the three events",
    () => {
      const seen = lines().filter((l) => typeof l.event === "string");
      const types = seen.map((l) => l.event);
      return ["client.authentication_failed", "account.login_failed", "token.issued"].every((t) => types.includes(t)) ? seen : undefined;
    },
    output,
  );
  expect(events.find((e) => e.event === "client.authentication_failed")).toMatchObject({ level: "warn", client_id: CLIENT_ID, reason: "invalid_secret", client_ip: "127.0.0.1" });
  expect(events.find((e) => e.event === "account.login_failed")).toMatchObject({ level: "warn", username: USERNAME, reason: "invalid_password", source: "password_grant", client_id: CLIENT_ID });
  expect(events.find((e) => e.event === "token.issued")).toMatchObject({ level: "info", grant_type: "client_credentials", client_id: CLIENT_ID, subject: `client:${CLIENT_ID}` });

  const metrics = await fetch(metricsUrl);
  expect(metrics.status).toBe(200);
  const text = await metrics.text();
  expect(text).toMatch(/^plantgate_token_requests_total\{grant_type="client_credentials",result="success"\} 1$/m);
  expect(text).toMatch(/^plantgate_token_requests_total\{grant_type="client_credentials",result="invalid_client"\} 1$/m);
  expect(text).toMatch(/^plantgate_token_requests_total\{grant_type="password",result="invalid_grant"\} 1$/m);

  proc.kill("SIGTERM");
  await new Promise((resolve) => (proc.exitCode !== null ? resolve(null) : proc.once("exit", resolve)));
  // Every stdout line is one JSON object but the start-up banner's; no line of either stream holds what the requests carried.
  const banner = out.split("\n").filter((line) => line !== "" && !line.startsWith("{"));
  expect(banner).toEqual([`plantgate listening on ${url}`, expect.stringMatching(/^ {2}store: /), expect.stringMatching(/^ {2}token endpoint: /), expect.stringMatching(/^ {2}metadata: /), `  metrics:         ${metricsUrl}`]);
  for (const line of out.split("\n").filter((l) => l.startsWith("{"))) expect(() => JSON.parse(line), line).not.toThrow();
  expect(err).toBe("");
  for (const secret of [CLIENT_SECRET, WRONG_SECRET, PASSWORD, WRONG_PASSWORD, accessToken, sessionBody.access_token, sessionBody.refresh_token]) {
    expect(out + err).not.toContain(secret);
  }
  expect(proc.exitCode, output()).toBe(0);
});

it("PLANTGATE_METRICS_PORT equal to PORT: the start stops with a message naming the variable, exit 1", { timeout: 60_000 }, async () => {
  // A port free a moment ago.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith("PLANTGATE_") || name === "HOST") delete env[name];
  Object.assign(env, { PORT: String(port), PLANTGATE_METRICS_PORT: String(port), PLANTGATE_DB: ":memory:" });
  let out = "";
  let err = "";
  const proc = spawn(tsx, [entry], { cwd: workDir, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  child = proc;
  proc.stdout!.setEncoding("utf8").on("data", (c: string) => (out += c));
  proc.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
  const code = await new Promise((resolve) => proc.once("exit", resolve));
  // Before: "listen EADDRINUSE: address already in use 127.0.0.1:PORT", which did not say which port.
  expect([code, out, err]).toEqual([1, "", `PLANTGATE_METRICS_PORT ${port}: the metrics listener could not start (listen EADDRINUSE: address already in use 127.0.0.1:${port})\n`]);
});

it("closing the server closes its metrics listener and that listener's connections: the process ends by itself", { timeout: 60_000 }, async () => {
  const fixture = fileURLToPath(new URL("./fixtures/close-with-metrics.ts", import.meta.url));
  let err = "";
  const proc = spawn(tsx, [fixture], { cwd: workDir, stdio: ["ignore", "ignore", "pipe"], detached: true });
  child = proc;
  proc.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
  const ended = await Promise.race([
    new Promise((resolve) => proc.once("exit", (code) => resolve(code))),
    new Promise((resolve) => setTimeout(() => resolve("still running 20 s later"), 20_000)),
  ]);
  expect([ended, err]).toEqual([0, "closed\n"]);
});
