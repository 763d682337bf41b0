import { spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { verifyPassword } from "@plantgate/core";
import { bundleNodeEntry } from "@plantgate/http-suite-tests/node-entry";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";
import { InterruptedError, runCli, UsageError } from "../src/cli.js";
import { terminalPasswordReader } from "../src/password-prompt.js";

/**
 * `user create` on a terminal prompts for the password (twice, echo off) instead of failing with
 * "none was given". These tests run main.ts (bundled, under plain `node`) on a real pseudo-terminal:
 * util-linux `script` gives the command one and copies what the test writes to its stdin (a pipe)
 * to the terminal as keystrokes, and everything the terminal shows back to its stdout. The CLI's
 * stdout is redirected to a file inside the terminal session (`>out.json`), as a pipe into a file
 * would be: the prompts must not go there. After the CLI, the same shell prints its exit code and
 * `stty -a`, to check that the terminal was left in its normal mode (echo and line editing on).
 */

let bundled: string;
let bundleDir: string | undefined;
beforeAll(async () => {
  bundleDir = mkdtempSync(join(tmpdir(), "plantgate-cli-prompt-main-"));
  bundled = await bundleNodeEntry(fileURLToPath(new URL("../src/main.ts", import.meta.url)), join(bundleDir, "main.mjs"));
});
afterAll(() => {
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
});

let dir: string;
const baseEnv = () => ({ PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" });
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-prompt-"));
  const code = await runCli(["migrate"], { env: baseEnv(), cwd: dir, readStdin: async () => "", stdout: () => {}, stderr: () => {} });
  expect(code).toBe(0);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The account stored under `username`, or null. */
async function account(username: string) {
  const storage = await openStorageFromEnv({}, { cwd: dir, migrate: false });
  try {
    return await storage.accounts.findByUsername(username);
  } finally {
    await storage.close();
  }
}

/** One CLI run on a pseudo-terminal: keystrokes in, what the terminal showed out. */
function onTerminal(argv: string[], env: Record<string, string> = {}, errFile?: string) {
  const outFile = join(dir, "out.json");
  const command = `${quote(process.execPath)} ${quote(bundled)} ${argv.map(quote).join(" ")} >${quote(outFile)}${errFile === undefined ? "" : ` 2>${quote(errFile)}`}; echo "exit=$?"; stty -a`;
  const child = spawn("script", ["-qfec", command, "/dev/null"], {
    env: { ...process.env, ...baseEnv(), PLANTGATE_DB: join(dir, "data", "plantgate.db"), ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let shown = "";
  let seen = 0;
  const waiters = new Set<() => void>();
  child.stdout.on("data", (chunk: Buffer) => {
    shown += chunk.toString("utf8");
    for (const wake of waiters) wake();
  });
  child.stderr.on("data", (chunk: Buffer) => (shown += chunk.toString("utf8")));
  const closed = new Promise<void>((resolve) => child.on("close", () => {
    for (const wake of waiters) wake();
    resolve();
  }));
  let exited = false;
  void closed.then(() => (exited = true));
  return {
    /**
     * Waits until `text` is shown after what earlier waits consumed; fails when the CLI ends first
     * (its exit code shown: `script` itself waits for the end of its stdin).
     */
    async prompt(text: string) {
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          const at = shown.indexOf(text, seen);
          if (at >= 0) {
            seen = at + text.length;
            waiters.delete(check);
            resolve();
          } else if (exited || /exit=\d+/.test(shown)) {
            waiters.delete(check);
            reject(new Error(`no ${JSON.stringify(text)} shown; the terminal showed ${JSON.stringify(shown)}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
    type(keys: string | Buffer) {
      child.stdin.write(keys);
    },
    /** Lets a write reach the CLI as a read of its own (a character cut between two reads, say). */
    pause: () => new Promise((resolve) => setTimeout(resolve, 50)),
    /** Waits for the CLI's exit and the shell's `stty -a` (its last word, extproc), then ends the session. */
    async end() {
      // Not before: `script` given the end of its stdin while the CLI reads in raw mode may drop
      // keystrokes it has not yet handed over (seen under load with 8 KiB typed at once).
      await new Promise<void>((resolve) => {
        const check = () => {
          if (!exited && !/exit=\d+[\s\S]*extproc/.test(shown)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
      child.stdin.end();
      await closed;
      const exit = /exit=(\d+)/.exec(shown);
      const stty = shown.slice(exit?.index ?? 0).split(/\s+|;/);
      return {
        code: exit === null ? null : Number(exit[1]),
        // What the terminal showed of the CLI's run, before the shell's own lines.
        shown: exit === null ? shown : shown.slice(0, exit.index),
        stdout: existsSync(outFile) ? readFileSync(outFile, "utf8") : "",
        // The terminal's mode after the CLI: echo and canonical line editing back on.
        restored: stty.includes("echo") && stty.includes("icanon") && stty.includes("isig"),
      };
    },
  };
}

describe("user create on a terminal prompts for the password, echo off", () => {
  it("asks twice on stderr, never stdout; stores exactly what was typed (UTF-8, a character cut between reads); the password is never shown", async () => {
    const password = "pässwörd-€𝄞-9";
    const t = onTerminal(["user", "create", "--username", "tina", "--roles", "ops"]);
    await t.prompt("Password: ");
    const bytes = Buffer.from(password);
    // "€" (3 bytes) written in two parts, read apart.
    const cut = bytes.indexOf(Buffer.from("€")) + 1;
    t.type(bytes.subarray(0, cut));
    await t.pause();
    t.type(Buffer.concat([bytes.subarray(cut), Buffer.from("\r")]));
    await t.prompt("Repeat password: ");
    t.type(`${password}\r`);
    const run = await t.end();
    expect(run.code, run.shown).toBe(0);
    expect(run.shown).toBe("Password: \r\nRepeat password: \r\n");
    expect(JSON.parse(run.stdout)).toEqual({ id: expect.any(String), username: "tina", displayName: null, email: null, roles: ["ops"], enabled: true, createdAt: expect.any(String) });
    expect(run.restored).toBe(true);
    const stored = await account("tina");
    expect(await verifyPassword(password, stored!.passwordHash)).toBe(true);
  });

  it("Backspace and DEL erase the last character (a multi-byte one whole), Ctrl-U the line; a pasted CR LF is one Enter", async () => {
    const t = onTerminal(["user", "create", "--username", "ed"]);
    await t.prompt("Password: ");
    // "junk" cleared; "€x" erased by DEL then Backspace (Ctrl-H).
    t.type("junk\x15pässwörd-€x\x7f\x08" + "9\r\n");
    await t.prompt("Repeat password: ");
    t.type("pässwörd-9\r");
    const run = await t.end();
    expect(run.code, run.shown).toBe(0);
    expect(run.shown).toBe("Password: \r\nRepeat password: \r\n");
    const stored = await account("ed");
    expect(await verifyPassword("pässwörd-9", stored!.passwordHash)).toBe(true);
    expect(await verifyPassword("pässwörd-€x9", stored!.passwordHash)).toBe(false);
  });

  it("two different passwords: exit 2, a clear message, no account", async () => {
    const t = onTerminal(["user", "create", "--username", "mia"]);
    await t.prompt("Password: ");
    t.type("password-one\r");
    await t.prompt("Repeat password: ");
    t.type("password-two\r");
    const run = await t.end();
    expect([run.code, run.stdout, run.restored]).toEqual([2, "", true]);
    expect(run.shown).toBe("Password: \r\nRepeat password: \r\nplantgate: the passwords typed do not match; nothing was created\r\n");
    expect(await account("mia")).toBeNull();
  });

  it("Ctrl-C: the terminal is restored, exit 130, no account", async () => {
    const t = onTerminal(["user", "create", "--username", "cy"]);
    await t.prompt("Password: ");
    t.type("password-one\r");
    await t.prompt("Repeat password: ");
    t.type("passw\x03");
    const run = await t.end();
    expect([run.code, run.stdout, run.restored]).toEqual([130, "", true]);
    expect(run.shown).toBe("Password: \r\nRepeat password: \r\nplantgate: interrupted; nothing was created\r\n");
    expect(await account("cy")).toBeNull();
  });

  it("Ctrl-D or Enter on an empty line is no password, Ctrl-D at the repeat prompt no repetition: exit 2 saying so, no account", async () => {
    const t = onTerminal(["user", "create", "--username", "dee"]);
    await t.prompt("Password: ");
    t.type("\x04");
    const run = await t.end();
    expect([run.code, run.stdout, run.restored]).toEqual([2, "", true]);
    expect(run.shown).toBe("Password: \r\nplantgate: no password was typed; nothing was created\r\n");
    const enter = onTerminal(["user", "create", "--username", "dee"]);
    await enter.prompt("Password: ");
    enter.type("\r");
    const entered = await enter.end();
    expect([entered.code, entered.shown, entered.stdout, entered.restored]).toEqual([2, "Password: \r\nplantgate: no password was typed; nothing was created\r\n", "", true]);
    const unrepeated = onTerminal(["user", "create", "--username", "dee"]);
    await unrepeated.prompt("Password: ");
    unrepeated.type("password-one\r");
    await unrepeated.prompt("Repeat password: ");
    unrepeated.type("\x04");
    const stopped = await unrepeated.end();
    expect([stopped.code, stopped.shown, stopped.stdout, stopped.restored]).toEqual([2, "Password: \r\nRepeat password: \r\nplantgate: the password was not repeated; nothing was created\r\n", "", true]);
    expect(await account("dee")).toBeNull();
  });

  it("the limits and checks of the stdin path: more than 8192 bytes is refused at once, a password outside 8-1024 characters right after the first prompt", async () => {
    const long = onTerminal(["user", "create", "--username", "lee"]);
    await long.prompt("Password: ");
    long.type("x".repeat(8193));
    const refused = await long.end();
    expect([refused.code, refused.stdout, refused.restored]).toEqual([2, "", true]);
    expect(refused.shown).toBe("Password: \r\nplantgate: the password typed is longer than 8192 bytes\r\n");
    // Judged before it is asked again (until 2026-12-01 only after both prompts).
    const over = onTerminal(["user", "create", "--username", "lee"]);
    await over.prompt("Password: ");
    over.type("y".repeat(1025) + "\r");
    const checked = await over.end();
    expect([checked.code, checked.shown, checked.stdout, checked.restored]).toEqual([2, "Password: \r\nplantgate: password must be 8-1024 characters\r\n", "", true]);
    const short = onTerminal(["user", "create", "--username", "lee"]);
    await short.prompt("Password: ");
    short.type("seven-7\r");
    const tooShort = await short.end();
    expect([tooShort.code, tooShort.shown, tooShort.stdout, tooShort.restored]).toEqual([2, "Password: \r\nplantgate: password must be 8-1024 characters\r\n", "", true]);
    expect(await account("lee")).toBeNull();
  });

  it("what would refuse the command anyway is said before any prompt: a bad flag, a taken username, a store that is not there", async () => {
    const badFlag = await onTerminal(["user", "create", "--username", "flo", "--email", "e".repeat(321)]).end();
    expect([badFlag.code, badFlag.shown, badFlag.stdout, badFlag.restored]).toEqual([2, "plantgate: --email must be a string of at most 320 characters\r\n", "", true]);
    const badName = await onTerminal(["user", "create", "--username", " flo"]).end();
    expect([badName.code, badName.shown, badName.stdout]).toEqual([2, "plantgate: --username must not start or end with white space or an invisible character\r\n", ""]);
    expect(await account("flo")).toBeNull();

    const first = onTerminal(["user", "create", "--username", "taken"]);
    await first.prompt("Password: ");
    first.type("password-one\r");
    await first.prompt("Repeat password: ");
    first.type("password-one\r");
    expect((await first.end()).code).toBe(0);
    const again = await onTerminal(["user", "create", "--username", "taken"]).end();
    expect([again.code, again.shown, again.stdout, again.restored]).toEqual([2, 'plantgate: username "taken" is taken\r\n', "", true]);

    const missing = join(dir, "nowhere", "plantgate.db");
    const noStore = await onTerminal(["user", "create", "--username", "flo"], { PLANTGATE_DB: missing }).end();
    expect(noStore.code).toBe(2);
    expect(noStore.shown).not.toContain("Password: ");
    expect(noStore.shown).toContain(missing);
    expect(existsSync(missing)).toBe(false);
  });

  it("with stderr sent to a file, the prompts still show on the terminal (/dev/tty, as getpass does) and the messages go to the file (the prompts went to the file)", async () => {
    const errFile = join(dir, "err.log");
    const t = onTerminal(["user", "create", "--username", "rae"], {}, errFile);
    await t.prompt("Password: ");
    t.type("password-one\r");
    await t.prompt("Repeat password: ");
    t.type("password-two\r");
    const run = await t.end();
    expect([run.code, run.shown, run.stdout, run.restored]).toEqual([2, "Password: \r\nRepeat password: \r\n", "", true]);
    expect(readFileSync(errFile, "utf8")).toBe("plantgate: the passwords typed do not match; nothing was created\n");
    expect(await account("rae")).toBeNull();
  });

  it("user import on a terminal does not prompt: it stays an error (records come from stdin only)", async () => {
    const t = onTerminal(["user", "import"]);
    const run = await t.end();
    expect([run.code, run.shown, run.stdout]).toEqual([2, "plantgate: no records on stdin\r\n", ""]);
  });
});

describe("terminalPasswordReader", () => {
  /** A terminal's stdin that records its mode changes and the prompt's writes, in order. */
  function fakeTerminal() {
    const log: string[] = [];
    const input = Object.assign(new EventEmitter(), {
      setRawMode(mode: boolean) {
        log.push(`raw ${mode}`);
        return input as never;
      },
      resume: () => input as never,
      pause: () => input as never,
    });
    const read = terminalPasswordReader(input as never, (text) => log.push(`write ${JSON.stringify(text)}`), 16);
    return { input, log, read };
  }

  it("puts the terminal in raw mode before the prompt and restores it before settling, whatever the outcome (Node's own reset only comes at exit)", async () => {
    const outcomes: [Buffer | Error | "end", unknown][] = [
      [Buffer.from("pässword\r"), "pässword"],
      [Buffer.from("pass\x03"), new InterruptedError("interrupted; nothing was created")],
      [Buffer.from("x".repeat(17)), new UsageError("the password typed is longer than 16 bytes")],
      [Buffer.from([0x70, 0xe4, 0x0d]), new UsageError("the password typed is not valid UTF-8")],
      // A left arrow (ESC [ D), Tab and Ctrl-Z: control keys, refused at once.
      ...["pass\x1b[Dx\r", "pa\tss\r", "pass\x1a"].map((text): [Buffer, unknown] => [
        Buffer.from(text),
        new UsageError("the password typed holds a control key (an arrow or function key, Esc, Tab or Ctrl with a letter); type it with printable characters only"),
      ]),
      [new Error("EIO"), new Error("EIO")],
      ["end", null],
    ];
    for (const [typed, expected] of outcomes) {
      const { input, log, read } = fakeTerminal();
      const settled = read("Password: ").then((value) => ({ value }), (error: unknown) => ({ error }));
      if (typed === "end") input.emit("end");
      else if (typed instanceof Error) input.emit("error", typed);
      else input.emit("data", typed);
      const result = await settled;
      expect(result).toEqual(expected instanceof Error ? { error: expected } : { value: expected });
      if ("error" in result) expect(result.error).toBeInstanceOf(expected!.constructor);
      expect(log).toEqual(["raw true", 'write "Password: "', ...(typed instanceof Error ? [] : ['write "\\n"']), "raw false"]);
      expect(input.listenerCount("data") + input.listenerCount("end") + input.listenerCount("error")).toBe(0);
    }
  });
});
