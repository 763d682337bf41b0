/**
 * What `pnpm start` runs (tsx examples/node-server/src/main.ts), its stdout a file on a real tmpfs
 * of 256 KiB: the disk fills up while requests come in, then a filler file is deleted. The events
 * logged while the disk was full are dropped and counted; once there is room again, the server
 * writes one warn line with that count and every later event, all as whole JSON lines (before
 * 2026-11-29 every line after the first failed write was dropped until the process ended).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, expect, it } from "vitest";
import { killGroup, TOKEN_PATH, until } from "./helpers.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const tsx = join(repoRoot, "node_modules/.bin/tsx");
const entry = join(repoRoot, "examples/node-server/src/main.ts");
const workDir = mkdtempSync(join(tmpdir(), "plantgate-full-disk-"));
const disk = join(workDir, "disk");

/** Null when a 256 KiB tmpfs is mounted at `disk` (mount needs root); else why not. */
const mountProblem = ((): string | null => {
  try {
    execFileSync("mkdir", [disk]);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", disk], { stdio: ["ignore", "ignore", "pipe"] });
    return null;
  } catch (error) {
    // Nothing runs on it then (and vitest runs no afterAll for a file whose tests are all skipped).
    rmSync(workDir, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return stderr || (error instanceof Error ? error.message : String(error));
  }
})();

let child: ChildProcess | undefined;
afterEach(async () => {
  await killGroup(child);
  child = undefined;
});
afterAll(async () => {
  // The server's node process (under tsx's) may hold the log file open a moment after tsx's exit.
  for (let tries = 0; mountProblem === null; tries++) {
    try {
      execFileSync("umount", tries < 50 ? [disk] : ["-l", disk], { stdio: "ignore" });
      break;
    } catch (error) {
      if (tries >= 50) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  rmSync(workDir, { recursive: true, force: true });
});

const CLIENT_ID = "disk-client";
const CLIENT_SECRET = "disk-secret-4e1a9c7b3d5f2e8a6c0b1d3f5a7c9e2b";
const USERNAME = "disk-user";
const PASSWORD = "disk-password-7c5a3e1f9b8d6a4c";

/**
 * Sends one request that logs one event and returns the event as the test expects to see it:
 * `issued:<jti>` (a token, its jti read from the token), `client_failed` (a wrong client secret),
 * `login_failed` (a wrong password).
 */
async function request(url: string, kind: "issued" | "client_failed" | "login_failed"): Promise<string> {
  const form: Record<string, string> =
    kind === "issued"
      ? { grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: CLIENT_SECRET }
      : kind === "client_failed"
        ? { grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: "disk-wrong-secret" }
        : { grant_type: "password", client_id: CLIENT_ID, client_secret: CLIENT_SECRET, username: USERNAME, password: "disk-wrong-password" };
  const response = await fetch(url + TOKEN_PATH, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(form) });
  const body = (await response.json()) as { access_token?: string; error?: string };
  expect([response.status, body.error]).toEqual(kind === "issued" ? [200, undefined] : kind === "client_failed" ? [401, "invalid_client"] : [400, "invalid_grant"]);
  if (kind !== "issued") return kind;
  const claims = JSON.parse(Buffer.from(body.access_token!.split(".")[1]!, "base64url").toString()) as { jti: string };
  return `issued:${claims.jti}`;
}

/** The test's name for an event line (see `request`); anything else as its `msg`. */
function nameOf(line: Record<string, unknown>): string {
  if (line.event === "token.issued" && line.client_id === CLIENT_ID) return `issued:${String(line.jti)}`;
  if (line.event === "client.authentication_failed" && line.client_id === CLIENT_ID && line.reason === "invalid_secret") return "client_failed";
  if (line.event === "account.login_failed" && line.username === USERNAME && line.reason === "invalid_password") return "login_failed";
  // At start: the warning that the signing keys are not encrypted, the bootstrap's events.
  if (line.event === "client.created" && line.client_id === CLIENT_ID) return "client.created";
  if (line.event === "account.created" && line.username === USERNAME) return "account.created";
  if (line.level === "warn" && String(line.msg).startsWith("signing keys are stored in clear")) return "keys in clear";
  return `other: ${JSON.stringify(line)}`;
}

const FAILED = "plantgate: writing log lines to stdout failed (ENOSPC); they are dropped, and counted, until a write works again (tried after 1 s, then at most every 30 s)\n";

(mountProblem === null || process.env.CI === "true" ? it : it.skip)(
  `a full disk under stdout: the events logged meanwhile are dropped and counted, and once there is room again a warn line gives the count and every later event is a whole JSON line${mountProblem === null ? "" : ` (skipped: a tmpfs could not be mounted: ${mountProblem})`}`,
  { timeout: 90_000 },
  async () => {
    if (mountProblem !== null) throw new Error(`a tmpfs could not be mounted at ${disk}: ${mountProblem}`);
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of Object.keys(env)) if (name.startsWith("PLANTGATE_") || name === "HOST") delete env[name];
    Object.assign(env, {
      PORT: "0",
      PLANTGATE_LOG_LEVEL: "info",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: CLIENT_ID,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
      PLANTGATE_BOOTSTRAP_USERNAME: USERNAME,
      PLANTGATE_BOOTSTRAP_PASSWORD: PASSWORD,
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
    });
    const logFile = join(disk, "server.log");
    const stdout = openSync(logFile, "w");
    let err = "";
    let proc: ChildProcess;
    try {
      // The server's data (SQLite) stays in workDir: only stdout is on the small disk.
      proc = spawn(tsx, [entry], { cwd: workDir, env, stdio: ["ignore", stdout, "pipe"], detached: true });
    } finally {
      closeSync(stdout);
    }
    child = proc;
    proc.stderr!.setEncoding("utf8").on("data", (c: string) => (err += c));
    const out = () => readFileSync(logFile, "utf8");
    const output = () => `--- stdout ---\n${out()}\n--- stderr ---\n${err}`;
    const names = () =>
      out()
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .flatMap((line) => {
          try {
            return [nameOf(JSON.parse(line) as Record<string, unknown>)];
          } catch {
            return [];
          }
        });
    const url = await until("the listening line", () => /^plantgate listening on (http:\/\/127\.0\.0\.1:\d+)$/m.exec(out())?.[1], output);

    // Before: the disk has room.
    // The keys are loaded before the bootstrap (since 2026-11-30), so their warning comes first.
    const before: string[] = ["keys in clear", "client.created", "account.created"];
    for (const kind of ["issued", "client_failed", "issued"] as const) before.push(await request(url, kind));
    await until("the events before the disk fills", () => (names().length >= before.length ? true : undefined), output);

    // The disk fills up (the log file's last page may still take a few lines).
    const fillerFile = join(disk, "filler");
    const filler = openSync(fillerFile, "w");
    const filledAt = Date.now();
    let fillError: unknown;
    try {
      for (;;) writeSync(filler, Buffer.alloc(4096, 0x78));
    } catch (error) {
      fillError = error;
    } finally {
      closeSync(filler);
    }
    expect((fillError as NodeJS.ErrnoException).code).toBe("ENOSPC");

    // While it is full: tokens, wrong client secrets, wrong passwords (some 12 KiB of lines).
    const during: string[] = [];
    for (let i = 0; i < 24; i++) {
      during.push(await request(url, "issued"));
      if (i % 8 === 3) during.push(await request(url, "client_failed"));
      if (i % 8 === 7) during.push(await request(url, "login_failed"));
    }
    await until("the failure on stderr", () => (err.length > 0 ? true : undefined), output);
    // The lines held when the last request was answered are dropped within 10 ms.
    await new Promise((r) => setTimeout(r, 200));
    expect(err).toBe(FAILED);

    // Room again: the next try (1 s after the failure, then 2, 4... s after the one before) works.
    rmSync(fillerFile);
    const freedAt = Date.now();
    await until("the recovery on stderr", () => (err.length > FAILED.length ? true : undefined), output, 40_000);

    // After: every event is written again.
    const after: string[] = [];
    for (const kind of ["issued", "login_failed", "issued", "client_failed", "issued"] as const) after.push(await request(url, kind));
    await until("the events after the recovery", () => (names().includes(after.at(-1)!) ? true : undefined), output);
    proc.kill("SIGTERM");
    const code = await new Promise((resolve) => (proc.exitCode !== null ? resolve(proc.exitCode) : proc.once("exit", resolve)));
    expect(code, output()).toBe(0);

    const lines = out().split("\n");
    // The file ends with a whole line.
    expect(lines.at(-1)).toBe("");
    lines.pop();
    // The start-up banner is text (its lines may come between the bootstrap's JSON lines); every other line starts as JSON.
    const banner = lines.filter((line) => !line.startsWith("{"));
    expect(banner).toEqual([`plantgate listening on ${url}`, expect.stringMatching(/^ {2}store: /), expect.stringMatching(/^ {2}token endpoint: /), expect.stringMatching(/^ {2}metadata: /)]);
    const parsed = lines.filter((line) => line.startsWith("{")).map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return { unparsable: line };
      }
    });
    const noticeAt = parsed.findIndex((line) => line.msg === "log lines were dropped: writing to stdout failed");
    expect(noticeAt, output()).toBeGreaterThan(0);
    const notice = parsed[noticeAt]!;
    // At most one line does not parse: the one the failed write cut, right before the count.
    const cut = parsed.filter((line) => "unparsable" in line);
    expect(cut.length, output()).toBeLessThanOrEqual(1);
    if (cut.length === 1) {
      expect(parsed[noticeAt - 1]).toBe(cut[0]);
      expect(String(cut[0]!.unparsable)).toMatch(/^\{/);
    }
    // The events before the disk filled, those written whole before the failure, then the count of
    // the rest, then every event after the recovery, in the order they were logged.
    const written = parsed.slice(0, noticeAt - cut.length).map(nameOf);
    const kept = written.length - before.length;
    expect(kept).toBeGreaterThanOrEqual(0);
    expect(kept).toBeLessThan(during.length);
    expect(written).toEqual([...before, ...during.slice(0, kept)]);
    expect(parsed.slice(noticeAt + 1).map(nameOf)).toEqual(after);
    expect(Object.keys(notice)).toEqual(["level", "time", "dropped_lines", "dropped_since", "reason", "msg"]);
    expect(notice).toMatchObject({ level: "warn", dropped_lines: during.length - kept, reason: "ENOSPC" });
    const since = Date.parse(String(notice.dropped_since));
    expect(since).toBeGreaterThanOrEqual(filledAt);
    expect(since).toBeLessThan(freedAt);
    expect(Date.parse(String(notice.time))).toBeGreaterThanOrEqual(freedAt);
    expect(err).toBe(`${FAILED}plantgate: writing log lines to stdout works again; ${during.length - kept} lines were dropped since ${String(notice.dropped_since)}\n`);
    for (const secret of [CLIENT_SECRET, PASSWORD]) expect(out() + err).not.toContain(secret);
  },
);
