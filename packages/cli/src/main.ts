#!/usr/bin/env node
import { openSync, readFileSync, readlinkSync, writeSync } from "node:fs";
import { runCli, UsageError } from "./cli.js";
import { terminalPasswordReader } from "./password-prompt.js";

/** The longest password line read (a password is at most 1024 characters, 4 bytes each at most). */
const LINE_MAX_BYTES = 8192;
/**
 * The most `user import` reads from stdin: about 800,000 records of 80 bytes, days of hashing at the
 * default 600,000 iterations. Until 2026-11-30 it read everything (memory without bound; past V8's
 * longest string, about 512 MiB, it said "stdin is not valid UTF-8").
 */
const ALL_MAX_BYTES = 64 * 1024 * 1024;

/**
 * stdin as UTF-8 text; "" when stdin is a terminal (a password is then asked for instead: see
 * terminalPasswordReader). `"line"` stops at the first newline (`yes pw | plantgate user create` read
 * forever, gigabytes of it); bytes that are not UTF-8 are refused (they were replaced by U+FFFD and
 * stored, a password nobody could type again).
 */
async function readStdin(mode: "line" | "all" = "all"): Promise<string> {
  if (process.stdin.isTTY) return "";
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const bytes = chunk as Buffer;
    const newline = mode === "line" ? bytes.indexOf(0x0a) : -1;
    if (newline >= 0) {
      chunks.push(bytes.subarray(0, newline));
      break; // leaving the loop destroys stdin: the rest is never read
    }
    chunks.push(bytes);
    size += bytes.length;
    if (mode === "line" && size > LINE_MAX_BYTES) throw new UsageError(`the password line on stdin is longer than ${LINE_MAX_BYTES} bytes`);
    // Refused as soon as it is over, without reading on: leaving the loop destroys stdin.
    if (mode === "all" && size > ALL_MAX_BYTES) throw new UsageError("stdin holds more than 64 MiB: split the import into smaller files (each is imported all or nothing)");
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new UsageError("stdin is not valid UTF-8");
  }
}

/**
 * True when stdout is /dev/null opened for reading and writing, which is what Node puts in place of
 * a closed fd 1 before any script runs (`plantgate client create ... >&-`; pnpm and tsx, Node too,
 * hand it on): every write then succeeds and the result is gone. A shell's `>/dev/null` opens it for
 * writing only. Node's own `stdio: "ignore"`, systemd's `StandardOutput=null` and daemon(3) give the
 * same read-write /dev/null and cannot be told apart from a closed stdout. Linux only (/proc);
 * elsewhere false.
 */
function stdoutClosed(): boolean {
  try {
    if (readlinkSync("/proc/self/fd/1") !== "/dev/null") return false;
    const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync("/proc/self/fdinfo/1", "utf8"));
    return flags !== null && (parseInt(flags[1]!, 8) & 0o3) === 0o2; // O_ACCMODE is O_RDWR
  } catch {
    return false;
  }
}

/** The commands whose result holds a new secret, shown only then. */
const SECRET_MAKERS = new Set(["create", "add-secret", "rotate-secret"]);
const [group, action, ...rest] = process.argv.slice(2);
// `client create --auth private_key_jwt` registers keys and makes no secret.
const makesSecret = group === "client" && action !== undefined && SECRET_MAKERS.has(action) && !(rest.includes("--auth=private_key_jwt") || rest.some((arg, i) => arg === "--auth" && rest[i + 1] === "private_key_jwt"));

// Before anything is done: a new secret nobody can read is not made. Only for the commands that
// make one: any other result lost that way (a prune's counts from a job run with stdio "ignore" or
// systemd's StandardOutput=null, which look the same) costs nothing, and those runs must work.
if (makesSecret && stdoutClosed()) {
  process.stderr.write(
    `plantgate: stdout is closed (or is /dev/null opened read-write, which Node puts in place of a closed one), so the secret client ${action} makes could not be shown; nothing was done: give it a stdout it can write to (>/dev/null is taken as discarding it on purpose)\n`,
  );
  process.exit(2);
}

// A command's result may hold the only copy of a new secret. When stdout cannot take it (a closed
// pipe: `| head -c0`, a reader that died), the command has still been carried out: say so on
// stderr in one line and exit 1, instead of an uncaught EPIPE with a stack trace and exit code 1
// that looked like the command had failed (before 2026-11-29).
let unwritten: Error | undefined;
// stderr carries messages only, never a result. One it cannot take (a closed pipe: `2>&1 | head -1`,
// a log reader that died; a full disk) is dropped, and the exit code stays the command's: until
// 2026-11-30 the write's error went uncaught and every such run ended with exit 1, a success (its
// secret shown on stdout) and a refusal (2) or an outage (3) alike.
const stderr = (text: string) => {
  try {
    process.stderr.write(text);
  } catch {}
};
process.stderr.on("error", () => {});
process.stdout.on("error", (error: Error) => {
  unwritten ??= error;
});
/**
 * Where the password prompts go: stderr when it is the terminal, else the terminal itself
 * (`/dev/tty`), as getpass(3) and passwd write theirs. With stderr sent to a file
 * (`2>errors.log`) the prompt went there until 2026-12-01, and the command seemed to hang; the
 * command's messages stay on stderr. Where there is no `/dev/tty` (Windows), stderr.
 */
function promptWriter(): (text: string) => void {
  if (process.stderr.isTTY) return stderr;
  let tty: number;
  try {
    tty = openSync("/dev/tty", "w");
  } catch {
    return stderr;
  }
  return (text) => {
    try {
      writeSync(tty, text);
    } catch {}
  };
}
const writes: Promise<void>[] = [];
// Whether the output holds a new secret; looked at write by write (a long `client list` is not
// kept in memory to ask it afterwards).
let printedSecret = false;

const code = await runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  readStdin,
  // On a terminal, `user create` asks for the password (echo off; the prompts on the terminal).
  ...(process.stdin.isTTY ? { readPassword: terminalPasswordReader(process.stdin, promptWriter(), LINE_MAX_BYTES) } : {}),
  stdout: (t) => {
    printedSecret ||= t.includes('"client_secret":');
    writes.push(new Promise((resolve) => process.stdout.write(t, (error) => {
      if (error) unwritten ??= error;
      resolve();
    })));
  },
  stderr,
});
await Promise.all(writes);
const reason = unwritten === undefined ? undefined : ((unwritten as NodeJS.ErrnoException).code ?? unwritten.message);
// Commands whose result holds a new secret, shown only then.
const madeSecret = code === 0 && printedSecret;
if (reason === undefined || (reason === "EPIPE" && !madeSecret)) {
  // A reader that stopped early (`events | head -1`) is no failure of a command that made no secret.
  process.exitCode = code;
} else {
  stderr(
    `plantgate: the result could not be written to stdout (${reason})${madeSecret ? "; the command was carried out, and the secret it made is lost: make another (client add-secret or rotate-secret)" : ""}\n`,
  );
  process.exitCode = code === 0 ? 1 : code;
}
