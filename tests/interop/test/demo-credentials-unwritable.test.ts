/**
 * The real entries (`src/main.ts` of examples/node-server and examples/express-server) with stdout
 * no terminal, where ./data/demo-credentials.txt cannot be written (here `data` is a file, which
 * stops root too; a read-only working directory does the same for another user): the start fails,
 * exit 1, with one line on stderr, and no demo client or user is stored, so a start from a working
 * directory that can take the file makes the demo and writes its credentials there.
 *
 * Until 2026-11-30 the demo client and user were stored first and the file written after: the
 * start went on with "the demo secret and password are lost", and every later start, finding a
 * client, made no demo: the store held a client whose secret nobody had.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import fetch from "node-fetch";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ENTRIES, killRunning, spawnEntry, type Entry, type EntryProcess } from "./entries.js";
import { TOKEN_PATH } from "./helpers.js";

const RUN_TIMEOUT_MS = 20_000;
const root = mkdtempSync(join(tmpdir(), "plantgate-demo-file-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const running = new Set<ChildProcess>();
afterEach(() => killRunning(running));

function exitWithin(run: EntryProcess, ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    run.exited,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still running after ${ms} ms\n--- stdout ---\n${run.stdout()}\n--- stderr ---\n${run.stderr()}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function listening(entry: Entry, run: EntryProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within ${RUN_TIMEOUT_MS} ms\n${run.stdout()}\n${run.stderr()}`)), RUN_TIMEOUT_MS);
    const check = () => {
      const url = ENTRIES[entry].listening.exec(run.stdout())?.[1];
      if (url && /client_secret and password: |could not write /.test(run.stdout())) {
        clearTimeout(timer);
        resolve(url);
      } else setTimeout(check, 20);
    };
    void run.exited.then(({ code }) => reject(new Error(`exited (${code}) before it started\n${run.stdout()}\n${run.stderr()}`)));
    check();
  });
}

describe.each(["node", "express"] as const)("%s entry, demo credentials file that cannot be written", (entry) => {
  it(
    "fails the start with one line and stores no demo; a start where ./data can be written makes it",
    async () => {
      const db = join(root, `${entry}.db`);
      const blocked = join(root, `${entry}-blocked`);
      mkdirSync(blocked);
      writeFileSync(join(blocked, "data"), "a file where the data folder would go\n");

      const failed = spawnEntry(entry, blocked, { PLANTGATE_DB: db }, running);
      expect(await exitWithin(failed, RUN_TIMEOUT_MS)).toEqual({ code: 1, signal: null });
      const file = join(blocked, "data", "demo-credentials.txt");
      expect(failed.stderr()).toBe(
        `cannot write the demo credentials to ${file} (EEXIST: file already exists, mkdir '${join(blocked, "data")}'); no demo client or user was made: start where ./data can be written, or set PLANTGATE_BOOTSTRAP_CLIENT_ID/_SECRET and PLANTGATE_BOOTSTRAP_USERNAME/_PASSWORD\n`,
      );
      expect(failed.stdout()).not.toMatch(/Created a demo client|listening on/);
      expect(readdirSync(blocked)).toEqual(["data"]);

      // The same store, from a working directory that can take the file: the demo is made now (it
      // was not before: a client was stored, so no start made one again).
      const writable = join(root, `${entry}-writable`);
      mkdirSync(writable);
      const run = spawnEntry(entry, writable, { PLANTGATE_DB: db }, running);
      const url = await listening(entry, run);
      const credentials = join(writable, "data", "demo-credentials.txt");
      expect(run.stdout()).toContain(`  client_secret and password: ${credentials} (mode 0600; shown only there, delete it once read)\n`);
      expect(statSync(credentials).mode & 0o777).toBe(0o600);
      // Only the file itself: no draft left beside it.
      expect(readdirSync(join(writable, "data"))).toEqual(["demo-credentials.txt"]);
      const saved = Object.fromEntries(readFileSync(credentials, "utf8").trimEnd().split("\n").map((line) => line.split("=", 2) as [string, string]));
      expect(Object.keys(saved)).toEqual(["client_id", "client_secret", "username", "password"]);
      const base = entry === "express" ? `${url}/auth` : url;
      const response = await fetch(base + TOKEN_PATH, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "password", client_id: saved.client_id!, client_secret: saved.client_secret!, username: saved.username!, password: saved.password! }),
      });
      expect(response.status, await response.clone().text()).toBe(200);
      run.child.kill("SIGTERM");
      expect(await exitWithin(run, RUN_TIMEOUT_MS)).toEqual({ code: 0, signal: null });
      expect(run.stderr()).toBe("");

      // A start that makes no demo (a client is stored) makes no draft, nor ./data.
      const again = join(root, `${entry}-again`);
      mkdirSync(again);
      const third = spawnEntry(entry, again, { PLANTGATE_DB: db }, running);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no start\n${third.stdout()}\n${third.stderr()}`)), RUN_TIMEOUT_MS);
        const check = () => (/^  store: /m.test(third.stdout()) ? (clearTimeout(timer), resolve()) : setTimeout(check, 20));
        check();
      });
      third.child.kill("SIGTERM");
      expect(await exitWithin(third, RUN_TIMEOUT_MS)).toEqual({ code: 0, signal: null });
      expect(third.stdout()).not.toContain("Created a demo client");
      expect(readdirSync(again)).toEqual([]);
    },
    3 * RUN_TIMEOUT_MS,
  );

  it(
    "a draft left by an earlier start under the same pid (killed mid-start; a container's process is pid 1 each time) does not fail the start",
    async () => {
      const dir = join(root, `${entry}-stale-draft`);
      mkdirSync(dir);
      // Put there before the entry runs, named with the pid it runs under: what a SIGKILLed start
      // of an earlier container (same pid) left behind.
      const preload = join(root, `${entry}-stale-draft.mjs`);
      writeFileSync(preload, 'import { mkdirSync, writeFileSync } from "node:fs";\nmkdirSync("data", { recursive: true });\nwriteFileSync(`data/demo-credentials.txt.${process.pid}.tmp`, "");\n');
      const run = spawnEntry(entry, dir, { PLANTGATE_DB: ":memory:", NODE_OPTIONS: `--import=${pathToFileURL(preload).href}` }, running);
      const url = await listening(entry, run);
      expect(url).toMatch(/^http:/);
      const credentials = join(dir, "data", "demo-credentials.txt");
      expect(run.stdout()).toContain(`  client_secret and password: ${credentials} (mode 0600; shown only there, delete it once read)\n`);
      expect(readFileSync(credentials, "utf8")).toMatch(/^client_id=demo-client\nclient_secret=\S+\nusername=demo\npassword=\S+\n$/);
      run.child.kill("SIGTERM");
      expect(await exitWithin(run, RUN_TIMEOUT_MS)).toEqual({ code: 0, signal: null });
      expect(run.stderr()).toBe("");
    },
    2 * RUN_TIMEOUT_MS,
  );
});
