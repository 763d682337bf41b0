/** stdout lines are held for at most one short interval, and never lost when the process exits. */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, constants, existsSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleNodeEntry } from "@plantgate/http-suite-tests/node-entry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The fixtures, each bundled once (beforeAll) for plain `node`: every test starts one or two child
 * processes, and through `--import tsx` each start sent every module through tsx's loader thread.
 */
const FIXTURES = ["log-lines", "failing-stdout", "stdout-retries", "stdio-gone", "steady-lines", "flush-lines"] as const;
const bundled = new Map<(typeof FIXTURES)[number], string>();
let bundleDir: string | undefined;
beforeAll(async () => {
  bundleDir = mkdtempSync(join(tmpdir(), "plantgate-stdout-fixtures-"));
  for (const name of FIXTURES) {
    bundled.set(name, await bundleNodeEntry(fileURLToPath(new URL(`./fixtures/${name}.ts`, import.meta.url)), join(bundleDir, `${name}.mjs`)));
  }
});
afterAll(() => {
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
});
const fixture = (name: (typeof FIXTURES)[number]): string => bundled.get(name)!;
const FAILED = "plantgate: writing log lines to stdout failed (ENOSPC); they are dropped, and counted, until a write works again (tried after 1 s, then at most every 30 s)\n";

/**
 * fd: "non-blocking" as a program that uses process.stdout has it (the example servers; the logger
 * makes fd 1 blocking again), "blocking" as one that never does, "stays-non-blocking" made
 * non-blocking again after the logger was made (where it cannot change it: a worker thread).
 */
type Fd = "non-blocking" | "blocking" | "stays-non-blocking";
function run(count: number, mode: "exit" | "exit-late" | "stay", text: "ascii" | "wide" | "clock" = "ascii", fd: Fd = "non-blocking") {
  const child = spawn(process.execPath, [fixture("log-lines"), String(count), mode, text, "", "", fd], { stdio: ["ignore", "pipe", "pipe"] });
  const chunks: Buffer[] = [];
  child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
  // Decoded once whole: a multi-byte character may be split across two chunks.
  const lines = () => Buffer.concat(chunks).toString("utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { child, lines };
}

/**
 * From the writer's first bytes on `stream`: stops reading for `ms`, then reads for `readMs` (default `ms`), `times`
 * over (a log reader that falls behind while lines are written). Returns how many stalls ended with
 * `running()` true: the writer was held up by the full pipe, not done already.
 *
 * Timed from the first bytes, not from the spawn: through tsx a child wrote its first line about
 * 0.7 s after its spawn, after every stall timed from the spawn had ended (no stall ever met a
 * writer); a bundled child starts in about 0.2 s and is done within the stalls, so the callers,
 * which listened for `close` only after the stalls, missed it and waited until the test's timeout.
 * Callers take `closed(child)` before this.
 */
async function stallNowAndThen(stream: NodeJS.ReadableStream, times: number, ms: number, running: () => boolean, readMs = ms): Promise<number> {
  await new Promise<void>((resolve) => {
    const started = () => {
      stream.off("data", started).off("end", started);
      resolve();
    };
    stream.on("data", started).on("end", started);
  });
  let held = 0;
  for (let stall = 0; stall < times; stall++) {
    stream.pause();
    await new Promise((r) => setTimeout(r, ms));
    if (running()) held++;
    stream.resume();
    await new Promise((r) => setTimeout(r, readMs));
  }
  return held;
}

/** The child's exit code once it has exited and its stdio have closed; listened for from the call on. */
const closed = (child: ChildProcess) => new Promise<number | null>((resolve) => child.once("close", resolve));

// Each test starts a child Node process: through tsx (a compile at start) that was over 5 s when the
// machine was loaded (seen once in a clean-clone CI run beside other work); bundled it starts in about
// 0.2 s, but the 30 s stays: where fd 1 stays non-blocking, a stalled reader's EAGAINs cost the writer 100 ms each.
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** The exit's line (a pattern) when stdout still fails: `count` lines lost since an ISO time. */
const exiting = (code: string, count: number) =>
  escape(`plantgate: exiting with stdout still failing (${code}): ${count} log ${count === 1 ? "line" : "lines"} dropped since `) + "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z" + escape(` ${count === 1 ? "is" : "are"} lost\n`);

describe("stdout lines", { timeout: 30_000 }, () => {
  // /dev/full (writes fail with ENOSPC) is Linux's; the CI machine is Linux.
  it.skipIf(!existsSync("/dev/full"))("a stdout that fails (a full disk: ENOSPC; skipped where there is no /dev/full) drops lines, says so once on stderr, and the process lives on and exits normally (no retry keeps it alive)", async () => {
    const full = openSync("/dev/full", "w");
    try {
      const child = spawn(process.execPath, [fixture("failing-stdout")], { stdio: ["ignore", full, "pipe"] });
      let stderr = "";
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
      // Before 2026-11-29: an uncaught exception from the holding timer, then an exit flush that
      // retried the write forever (no exit at all).
      // At exit, with stdout still failing: the count of the lines lost (4 events, 4 lines).
      expect([code, stderr]).toEqual([0, expect.stringMatching(new RegExp(`^${escape(FAILED)}alive after the failure\ndone\n${exiting("ENOSPC", 8)}$`))]);
    } finally {
      closeSync(full);
    }
  });

  it.skipIf(!existsSync("/dev/full"))("a stdout that keeps failing (ENOSPC; skipped where there is no /dev/full) is tried again after 1 s, then 2 s later, then once more at exit, and the lines logged meanwhile take no memory", async () => {
    const full = openSync("/dev/full", "w");
    try {
      const child = spawn(process.execPath, [fixture("stdout-retries")], { stdio: ["ignore", full, "pipe"] });
      let stderr = "";
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
      expect(code).toBe(0);
      // The failure, the exit's count of the lines lost, the fixture's report (its exit listener runs last).
      const [failed, lost, report, ...rest] = stderr.split("\n");
      const { tried, logged, peak } = JSON.parse(report!) as { tried: number[]; logged: number; peak: number };
      // Every line logged was dropped, and the exit says how many.
      expect([`${failed}\n`, `${lost}\n`, rest]).toEqual([FAILED, expect.stringMatching(new RegExp(`^${exiting("ENOSPC", logged)}$`)), [""]]);
      // The first write (failed), the tries at 1 s and 3 s after it (4.5 s of logging), the one at exit:
      // never more often (a busy loop would be thousands), never twice the same failed bytes.
      expect(tried, stderr).toHaveLength(4);
      expect(tried[1]! - tried[0]!, stderr).toBeGreaterThanOrEqual(999);
      expect(tried[2]! - tried[1]!, stderr).toBeGreaterThanOrEqual(1999);
      expect(tried[3]!, stderr).toBeGreaterThanOrEqual(4400);
      // Some 60 MB of lines, none of them kept: sonic-boom keeps what it could not write.
      expect(logged).toBeGreaterThan(150_000);
      expect(peak, stderr).toBeLessThan(4_000_000);
    } finally {
      closeSync(full);
    }
  });

  it("a stdout pipe whose reader has gone (EPIPE) drops lines from then on, says so once on stderr, and the process lives on and exits normally", async () => {
    const child = spawn(process.execPath, [fixture("failing-stdout")], { stdio: ["ignore", "pipe", "pipe"] });
    // The reader goes away before the first line is written.
    child.stdout!.destroy();
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    expect([code, stderr]).toEqual([
      0,
      expect.stringMatching(new RegExp(`^${escape("plantgate: writing log lines to stdout failed (EPIPE); they are dropped from now on\nalive after the failure\ndone\n")}${exiting("EPIPE", 8)}$`)),
    ]);
  });

  it("a stdout and a stderr whose readers have both gone (`2>&1 | collector`, the collector died: EPIPE on both) do not end the process", async () => {
    const child = spawn(process.execPath, [fixture("stdio-gone")], { stdio: ["ignore", "pipe", "pipe", "ipc"] });
    const said: unknown[] = [];
    child.on("message", (message) => {
      said.push(message);
      // Both readers go away once the child runs; then it logs.
      if (message === "ready") {
        child.stdout!.destroy();
        child.stderr!.destroy();
        child.send("log");
      }
    });
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    // Before the fix: the line saying stdout failed went to process.stderr, whose EPIPE came back as
    // an 'error' event nobody listened to: an uncaught exception (exit code 1) on the first log line.
    expect([code, said]).toEqual([0, ["ready", "alive after the failure"]]);
  });

  it("writes every held line when the process exits right after logging", async () => {
    const { child, lines } = run(2000, "exit");
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    expect(code).toBe(0);
    const got = lines();
    expect(got).toHaveLength(2000);
    expect(got.map((l) => l.id)).toEqual(Array.from({ length: 2000 }, (_, i) => `id-${i}`));
  });

  it("writes the lines an exit listener logs after the logger's own exit flush (they were held for a timer that never ran, and lost)", async () => {
    const { child, lines } = run(3, "exit-late");
    expect(await closed(child)).toBe(0);
    expect(lines().map((l) => [l.level, l.id ?? l.msg, l.code])).toEqual([
      ["info", "id-0", undefined],
      ["info", "id-1", undefined],
      ["info", "id-2", undefined],
      ["info", "id-late", undefined],
      ["info", "exiting", 0],
    ]);
  });

  it.each(["fatal", "flush"] as const)("pino's %s() writes the held lines at once: they are out when the process is killed right after (they were held 10 ms, and lost)", async (how) => {
    const child = spawn(process.execPath, [fixture("flush-lines"), how], { stdio: ["ignore", "pipe", "pipe"] });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    const ended = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once("close", (code, signal) => resolve([code, signal])));
    expect(await ended).toEqual([null, "SIGKILL"]);
    const lines = Buffer.concat(chunks).toString("utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.level, l.id ?? l.msg])).toEqual([["info", "id-0"], ["info", "before"], ...(how === "fatal" ? [["fatal", "dying"]] : [])]);
  });

  // fd 1 as a program that uses process.stdout has it (the logger makes it blocking again), as a
  // bundled one that never does (writes block), and kept non-blocking (writes fail with EAGAIN or go
  // in part when the pipe is full).
  it.each(["non-blocking", "blocking", "stays-non-blocking"] as const)("lines arrive whole and in order when the reader stalls and the held block is written again and again (stdout %s)", async (fd) => {
    // About 6 MB: the 64 KiB block is reused ~100 times, and the pipe fills while the reader waits.
    const { child, lines } = run(20_000, "exit", "ascii", fd);
    const code = closed(child);
    expect(await stallNowAndThen(child.stdout, 1, 300, () => child.exitCode === null)).toBe(1);
    expect(await code).toBe(0);
    const got = lines();
    expect(got.map((l) => [l.id, l.jti, l.event_time])).toEqual(Array.from({ length: 20_000 }, (_, i) => [`id-${i}`, `j${i}`, 1767225600000 + i]));
  });

  it("two processes writing to one pipe (cluster workers, one supervisor): every line arrives whole while the reader stalls and the pipe fills", async () => {
    // Each child's stdout is the same FIFO, read by cat, whose output this test reads and stalls. fd 1
    // left blocking: a blocking write longer than PIPE_BUF is torn too, and a non-blocking one's EAGAIN
    // costs sonic-boom a 100 ms sleep each (some 3 s more here).
    const child = (n: string) => `${JSON.stringify(process.execPath)} ${JSON.stringify(fixture("log-lines"))} 20000 exit ascii ${n} "" blocking`;
    const shell = spawn("sh", ["-c", `(${child("A")} & ${child("B")} & wait) | cat`], { stdio: ["ignore", "pipe", "pipe"] });
    const chunks: Buffer[] = [];
    shell.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    const code = closed(shell);
    // The stalls held the writers up (about 14 MB through a 64 KiB pipe): not writers already done.
    expect(await stallNowAndThen(shell.stdout, 4, 150, () => shell.exitCode === null)).toBeGreaterThan(0);
    expect(await code).toBe(0);
    const lines = Buffer.concat(chunks).toString("utf8").split("\n").filter(Boolean);
    // Before 2026-11-29 a 64 KiB write of one could be torn by the other's: broken JSON lines.
    const torn = lines.filter((line) => {
      try {
        JSON.parse(line);
        return false;
      } catch {
        return true;
      }
    });
    expect(torn.slice(0, 2)).toEqual([]);
    const ids = lines.map((line) => (JSON.parse(line) as { id: string }).id);
    for (const who of ["A", "B"]) expect(ids.filter((id) => id.startsWith(who))).toEqual(Array.from({ length: 20_000 }, (_, i) => `${who}id-${i}`));
  });

  it("a reader that stalls now and then does not make the writer take a fresh held block for every write after (the block is reused once sonic-boom holds none of it)", async () => {
    // stdout kept non-blocking past the logger's start: only then does a full pipe take part of a write,
    // the case the writer once miscounted (with fd 1 blocking this passed with that bug put back).
    const child = spawn(process.execPath, [fixture("log-lines"), "40000", "exit", "ascii", "", "allocs", "stays-non-blocking"], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    let bytes = 0;
    child.stdout.on("data", (chunk: Buffer) => (bytes += chunk.length));
    const code = closed(child);
    expect(await stallNowAndThen(child.stdout, 3, 100, () => child.exitCode === null)).toBeGreaterThan(0);
    expect(await code).toBe(0);
    // About 12 MB, some 190 blocks' worth: a fresh block a flush after the first stall would be
    // well over 100 of them; a few are taken while sonic-boom waits out a full pipe.
    expect(bytes).toBeGreaterThan(11_000_000);
    const blocks = Number(/^blocks (\d+)$/m.exec(stderr)?.[1]);
    expect(blocks).toBeLessThan(20);
  });

  it("a reader that falls behind for 40 ms now and then holds the writer up about that long, not 100 ms at a time (stdout a pipe made non-blocking by process.stdout, as in the example servers)", async () => {
    // A real pipe (a FIFO: 64 KiB, what a container's log driver or `| tee` gives), not the socket
    // pair Node's spawn makes. Read here, paused 40 ms every 300 ms from the first bytes on.
    const dir = mkdtempSync(join(tmpdir(), "plantgate-stdout-fifo-"));
    try {
      const fifo = join(dir, "stdout");
      execFileSync("mkfifo", [fifo]);
      const reader = new Socket({ fd: openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK), readable: true, writable: false });
      const writer = openSync(fifo, "w");
      // 20 lines a 1 ms turn for 3.6 s: some 5 MB/s, which fills the pipe well within each pause.
      const child = spawn(process.execPath, [fixture("steady-lines"), "3600", "20"], { stdio: ["ignore", writer, "pipe"] });
      closeSync(writer);
      let stderr = "";
      child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      const chunks: Buffer[] = [];
      reader.on("data", (chunk: Buffer) => chunks.push(chunk));
      const ended = new Promise<void>((resolve) => reader.once("end", resolve));
      const code = closed(child);
      expect(await stallNowAndThen(reader, 12, 40, () => child.exitCode === null, 260)).toBeGreaterThanOrEqual(10);
      expect(await code).toBe(0);
      await ended;
      const report = JSON.parse(stderr) as { logged: number; longest: number; stalls: number };
      // Until 2026-11-30 each pause that filled the pipe cost the writer an EAGAIN and sonic-boom's
      // 100 ms sleep: about one turn of 100 ms or more per pause (10-12 here). Now the writer waits
      // while the reader does: none should be that long; two allowed for a loaded machine (a reader
      // or writer not scheduled for 90 ms).
      expect(report.stalls, stderr).toBeLessThanOrEqual(2);
      // The pauses did hold the writer up (not a pipe that never filled).
      expect(report.longest, stderr).toBeGreaterThanOrEqual(20);
      const ids = Buffer.concat(chunks).toString("utf8").split("\n").filter(Boolean).map((line) => (JSON.parse(line) as { id: string }).id);
      expect(ids.length).toBe(report.logged);
      expect(ids.every((id, i) => id === `id-${i}`)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("lines of 1- to 4-byte UTF-8 characters, some far longer than the bytes held at once, arrive whole and in order", async () => {
    const { child, lines } = run(400, "exit", "wide");
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    expect(code).toBe(0);
    const got = lines();
    const WIDE = ["a", "é", "水", "🌱"];
    expect(got.map((l) => l.id)).toEqual(Array.from({ length: 400 }, (_, i) => `id-${i}`));
    expect(got.map((l) => l.client_id)).toEqual(Array.from({ length: 400 }, (_, i) => WIDE[i % 4]!.repeat(i % 7 === 0 ? 30_000 : 1 + (i % 50))));
    // The lines pino made (a BigInt member) sit in their places too, as pino writes them.
    expect(got.filter((l) => "big" in l).map((l) => [l.id, l.big, l.event, l.msg])).toEqual(
      Array.from({ length: 400 }, (_, i) => i).filter((i) => i % 11 === 5).map((i) => [`id-${i}`, i, "token.issued", "token.issued"]),
    );
    // Every line has the level and an ISO time first, whichever way it was made.
    for (const l of got) expect(Object.keys(l).slice(0, 2)).toEqual(["level", "time"]);
  });

  it("each line's time is the instant it was logged at, to the millisecond, within a second and across seconds", async () => {
    const CLOCK = [1767225600000, 1767225600001, 1767225600999, 1767225601000, 1767225601000, 1767225601007, 1767225600500, 1767225659999, 1767225660000, 1767229199999, 1767229200000, 946684799999, 946684800000, 0, 5, -1, -1001];
    const { child, lines } = run(CLOCK.length * 2, "exit", "clock");
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    expect(code).toBe(0);
    expect(lines().map((l) => l.time)).toEqual([...CLOCK, ...CLOCK].map((t) => new Date(t).toISOString()));
  });

  it("lines reach stdout while the process keeps running (no wait for more lines)", async () => {
    const { child, lines } = run(3, "stay");
    try {
      await new Promise<void>((resolve) => child.stderr.once("data", () => resolve()));
      const started = Date.now();
      while (lines().length < 3 && Date.now() - started < 2000) await new Promise((r) => setTimeout(r, 5));
      expect(lines().map((l) => l.event)).toEqual(["token.issued", "token.issued", "token.issued"]);
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      child.kill();
    }
  });
});
