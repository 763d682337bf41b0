/**
 * examples/client-script, run the way `pnpm --filter @plantgate/example-client-script start` runs
 * it (`tsx src/main.ts`), against the real example server on a socket.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { createMemoryStorage } from "@plantgate/core";
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { serverLines } from "@plantgate/http-suite-tests/server-lines";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { recordingLogger } from "./support.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;
const scriptDir = `${root}examples/client-script`;
const RUN_TIMEOUT_MS = 25_000;
const hex = (n: number) => randomBytes(n).toString("hex");

const creds = { clientId: `script-${hex(4)}`, clientSecret: hex(32), username: `user-${hex(4)}`, password: hex(16) };
let server: RunningServer;
const errors: unknown[] = [];
const lines = serverLines();
let child: ChildProcess | undefined;

beforeAll(async () => {
  server = await startServer(
    {
      PORT: "0",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: creds.clientId,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: creds.clientSecret,
      PLANTGATE_BOOTSTRAP_USERNAME: creds.username,
      PLANTGATE_BOOTSTRAP_PASSWORD: creds.password,
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
    },
    { storage: createMemoryStorage(), logger: recordingLogger(errors) },
    { destination: lines.destination },
  );
  await server.app.admin.createAccount({ username: "second-user", password: "second-password" });
});
afterAll(async () => {
  await server?.close();
  expect(errors).toEqual([]);
  lines.check([creds.clientSecret, creds.password, "second-password"]);
});
afterEach(() => {
  // Only when a run hung: tsx runs the script in a grandchild, so kill the whole group.
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  }
  child = undefined;
});

/** Runs the script with `env` on top of this process's environment. */
function run(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(tsx, ["src/main.ts"], { cwd: scriptDir, env: { ...process.env, ...env }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    child = proc;
    let stdout = "";
    let stderr = "";
    proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    proc.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => reject(new Error(`no exit within ${RUN_TIMEOUT_MS} ms\n${stdout}\n${stderr}`)), RUN_TIMEOUT_MS);
    proc.once("error", reject);
    proc.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const baseEnv = () => ({ PLANTGATE_URL: server.url, PLANTGATE_CLIENT_ID: creds.clientId, PLANTGATE_CLIENT_SECRET: creds.clientSecret });

function expectNoSecrets(text: string) {
  expect(text).not.toContain(creds.clientSecret);
  expect(text).not.toContain(creds.password);
  expect(text).not.toMatch(/eyJ[\w-]{20,}\.[\w-]+\.[\w-]+/); // never a whole JWT
}

it("with a user: token by password grant, a plant with a random int64 id, every account, a refresh", async () => {
  const { code, stdout, stderr } = await run({ ...baseEnv(), PLANTGATE_USERNAME: creds.username, PLANTGATE_PASSWORD: creds.password });
  expect(stderr).toBe("");
  expect(code).toBe(0);
  const lines = stdout.trim().split("\n");
  expect(lines[0]).toBe(`plantgate at ${server.url} as user ${creds.username}`);
  expect(lines[1]).toMatch(/^token: eyJ\S{9}\.\.\. via password, scope "Platform_UserAPIs offline_access", expires \S+Z, refresh token: yes$/);
  const plant = /^created plant: id=(-?\d+) name="Monstera deliciosa" tag=indoor$/.exec(lines[2]!);
  expect(plant).not.toBeNull();
  const id = BigInt(plant![1]!);
  expect(await server.app.storage.plants.get(id)).toEqual({ id, name: "Monstera deliciosa", tag: "indoor" });
  expect(lines[3]).toBe("plant id round-trip exact: true");
  const accounts = lines.filter((l) => l.startsWith("account: ")).map((l) => l.split(" ")[1]);
  expect(accounts.sort()).toEqual([creds.username, "second-user"].sort());
  expect(lines).toContain("accounts: 2");
  expect(lines.find((l) => l.startsWith("refreshed: "))).toMatch(/^refreshed: eyJ\S{9}\.\.\. via refresh_token, new token: true$/);
  expect(lines.slice(-2)).toEqual(["after refresh: listing works, total 2", "done"]);
  expectNoSecrets(stdout);
});

it("without a user: client credentials, and the refresh runs that grant again", async () => {
  const { code, stdout, stderr } = await run(baseEnv());
  expect(stderr).toBe("");
  expect(code).toBe(0);
  expect(stdout).toContain("as the client itself");
  expect(stdout).toMatch(/via client_credentials, scope "Platform_UserAPIs", expires \S+, refresh token: no/);
  expect(stdout).toMatch(/^refreshed: \S+ via client_credentials, new token: true$/m);
  expect(stdout).toContain("accounts: 2");
  expectNoSecrets(stdout);
});

it("a wrong secret: a typed OAuthError message and exit code 1", async () => {
  const { code, stdout, stderr } = await run({ ...baseEnv(), PLANTGATE_CLIENT_SECRET: "wrong-secret" });
  expect(code).toBe(1);
  expect(stderr.trim()).toBe("token endpoint refused (HTTP 401): invalid_client: Client authentication failed.");
  expectNoSecrets(stdout + stderr);
});

it("missing configuration: says what is missing, exit code 2", async () => {
  const { code, stderr } = await run({ PLANTGATE_URL: server.url, PLANTGATE_CLIENT_ID: "", PLANTGATE_CLIENT_SECRET: "" });
  expect(code).toBe(2);
  expect(stderr).toContain("PLANTGATE_CLIENT_ID is required");
});

it("no server: a NetworkError message and exit code 1", async () => {
  const { code, stderr } = await run({ ...baseEnv(), PLANTGATE_URL: "http://127.0.0.1:9" });
  expect(code).toBe(1);
  expect(stderr).toMatch(/^cannot reach plantgate \(fetch_failed\): POST \/UserService\/connect\/token failed: /);
});
