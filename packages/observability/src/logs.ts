/**
 * JSON-line logs through pino: one object per line on stdout, security events with a string
 * member `event` (the event's type), errors and housekeeping with `msg`. Nothing here adds a
 * request body, a header or a credential; the `redact` list is a second line of defence.
 */
import { fstatSync, writeSync } from "node:fs";
import { pino, type DestinationStream, type Logger as Pino, type LevelWithSilent } from "pino";
import type { Logger, SecurityEvent } from "@plantgate/core";
import { encodeEventLine, headBytes, sameKeys } from "./event-bytes.js";

/** The levels `PLANTGATE_LOG_LEVEL` accepts (pino's). */
export const LOG_LEVELS: readonly LevelWithSilent[] = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

/**
 * Field names that never belong in a log line; replaced by `[redacted]` if one ever shows up (as a
 * top-level member: pino's paths match exact names, and nested paths would cost every line). No
 * event has a member of these names.
 */
const REDACTED = [
  "password",
  "client_secret",
  "clientSecret",
  "access_token",
  "accessToken",
  "refresh_token",
  "refreshToken",
  "client_assertion",
  "clientAssertion",
  "assertion",
  "token",
  "secretHash",
  "passwordHash",
  "authorization",
  "Authorization",
  "cookie",
  "set-cookie",
];

/** Options of {@link createLog}. */
export interface LogOptions {
  /** Default `info`. */
  level?: LevelWithSilent;
  /** Where lines go (anything with `write(line)`). Default: stdout. */
  destination?: DestinationStream;
}

/**
 * A pino logger writing JSON lines: `level` as its name, `time` as an ISO string; to stdout
 * asynchronously unless a destination is given.
 *
 * @example
 * const log = createLog({ level: "info" });
 * log.info({ port: 3000 }, "plantgate listening");
 */
export function createLog(options: LogOptions = {}): Pino {
  const settings = {
    level: options.level ?? "info",
    base: null,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: REDACTED, censor: "[redacted]" },
  };
  // One stdout writer per process, whatever the number of loggers: each had its own exit listener,
  // sonic-boom and 64 KiB block for good (and lines of two loggers could go out of order).
  const log = pino(settings, options.destination ?? (sharedStdout ??= stdoutLines()));
  OWN_FORMAT.add(log);
  return log;
}

let sharedStdout: (DestinationStream & EventBytes) | undefined;

/**
 * The loggers {@link createLog} made: the only ones whose lines {@link eventLogger} may write itself
 * (their settings are the ones it copies). Any other logger, a child of one with its bindings
 * included, gets its events through pino, with its own redaction, bindings and format.
 */
const OWN_FORMAT = new WeakSet<Pino>();

/**
 * stdout for a busy server: lines are held for at most HOLD_MS (or until the next one would not
 * fit in HOLD_BYTES) and go out in one synchronous write (sonic-boom, as pino.destination makes it,
 * in pino's default sync mode, handed bytes). Measured on the bench machine: an asynchronous
 * fs.write costs about 50 µs of CPU (thread-pool hand-off and wake-ups) whatever its size, a
 * synchronous 16 KiB write 7-13 µs; a line per token request written as it came cost more than
 * building the lines (see the README's performance section). Per 400-byte line, synchronous writes
 * to a file cost 0.64 µs of CPU in 4 KiB writes, 0.41 in 16 KiB, 0.25 in 64 KiB and 0.18 in
 * 256 KiB: 64 KiB, which a busy server fills in about the 10 ms a line may wait anyway.
 *
 * Each line is encoded into the held bytes as it comes (one UTF-8 write of the line), instead of
 * being kept as a string and joined at the write: a line built piece by piece is a rope, and
 * keeping 150 of them alive until the join, then flattening them, then encoding the joined text
 * cost about 2.2 µs a line against 1.2 µs here (micro-benchmark of a token.issued line, the line's
 * own building included). The block is written again once sonic-boom has written all of it (in
 * sync mode, before its write returns; it waits out EAGAIN), which keeps it in the CPU's caches;
 * if sonic-boom still holds some of it, the next lines go to a fresh block, since it keeps the
 * buffer to retry. The lines still held when the process exits are written before it ends (and any logged after, at once). On a
 * pipe or socket the block goes out in writes of whole lines of at most 4096 bytes (see
 * sendWholeLines). The writes block (on a pipe or socket fd 1 is put into blocking mode: see
 * blockingStdout): a reader that stops reading stops the process once the pipe is full, until it
 * reads again (the README says so).
 *
 * When a write fails (a full disk), the lines are dropped and counted; stdout is tried again after
 * 1 s, then after twice as long each time, at most 30 s (see TRANSIENT for the errors that are for
 * good). The first write that works is a warn line saying how many lines were dropped since when,
 * after a newline ending the line the failed write cut, if it cut one. Nothing of this is on a
 * line's path: a line is dropped when its block would be written.
 */
function stdoutLines(): DestinationStream & EventBytes {
  let held = Buffer.allocUnsafeSlow(HOLD_BYTES);
  let used = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  // Made after the exit listener below is registered (pino registers no exit flush of its own for a
  // synchronous destination). A fresh one after each failure: see `failed`.
  let out: Destination | null = null;
  // Whether stdout is a pipe or socket, which other processes may write to as well.
  const shared = stdoutIsShared();
  // On a pipe or socket, fd 1 put (back) into blocking mode: a full pipe holds a write up until the
  // reader has made room, not 100 ms at a time (see blockingStdout).
  if (shared) blockingStdout();
  // Set while stdout fails: lines are dropped, and counted, until a write works again (`recover`).
  // Before 2026-11-29 the error was thrown from the holding timer (an uncaught exception), and the
  // exit flush then retried the write forever: a process that neither served nor exited; the fix
  // made every failure one for good: after a full disk had been cleaned up, every later line
  // (security events included) was still dropped until the process ended (until later that day).
  let broken = false;
  // Set when stdout fails for good (see TRANSIENT): nothing is tried again.
  let gone = false;
  // Of the failure under way: the lines dropped, when it began (null: none), its code, the delay
  // before the next try and its timer.
  let dropped = 0;
  let since: number | null = null;
  let reason = "";
  let delay = RETRY_FIRST_MS;
  let retry: ReturnType<typeof setTimeout> | null = null;
  // Whether the last bytes written end inside a line (the kernel took part of a write, then failed):
  // the next write starts with a newline, so that the lines after it are whole JSON lines.
  let partial = false;
  // Bytes sonic-boom had not written when it reported the failed write.
  let unwritten = 0;
  // Written to fd 2 synchronously, so that a failure is an exception caught here: through
  // process.stderr, a stderr whose reader had gone too (`2>&1 | collector`, the collector dead)
  // answered with an 'error' event a tick later, which nothing listened to: the process ended on the
  // first line after stdout failed (until 2026-11-29). Node's own stderr writes synchronously to
  // files, pipes and terminals on Linux, so the order of its lines and these is unchanged.
  const say = (text: string) => {
    try {
      writeSync(2, `plantgate: ${text}\n`);
    } catch {
      // stderr gone too (or a full pipe): the line is lost, the process goes on.
    }
  };
  // Hands bytes to the destination; returns how many were written: all of them unless the write
  // failed (in sync mode sonic-boom reports the error before its write returns, holding nothing
  // else, since every write before this one was written whole).
  const put = (bytes: Buffer): number => {
    (out as unknown as { write(data: Buffer): boolean }).write(bytes);
    if (!broken) return bytes.length;
    const written = bytes.length - Math.min(unwritten, bytes.length);
    if (written > 0) partial = bytes[written - 1] !== NEWLINE;
    return written;
  };
  // Writes bytes of whole lines; the lines not written (a failed write, or stdout failing) are counted.
  const send = (bytes: Buffer) => {
    if (!broken) {
      const written = put(bytes);
      if (written === bytes.length) return;
      bytes = bytes.subarray(written);
    }
    dropped += linesIn(bytes);
  };
  // Bytes sonic-boom still holds (its `_len`; not a number in another version: taken as some).
  // Its `write` event tells only the first write of a flush, not the rest of a partial one: counted
  // from those events, one partial write (a full pipe) meant a fresh block on every flush for good.
  const pending = () => (out as unknown as { _len?: unknown } | null)?._len ?? -1;
  const release = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (used === 0 || out === null) return;
    const bytes = held.subarray(0, used);
    used = 0;
    if (broken) {
      dropped += linesIn(bytes);
      return;
    }
    if (shared) sendWholeLines(bytes);
    else send(bytes);
    // In sync mode sonic-boom has written the bytes when write returns, and the block is written
    // again from its start (a fresh block every time was memory no cache held). If sonic-boom still
    // holds any of them (a destination that writes later), a fresh block. (A failed write's
    // destination is dropped, never written again: the block is free.)
    if (!broken && pending() !== 0) held = Buffer.allocUnsafeSlow(HOLD_BYTES);
  };
  // A pipe or socket may have other writers (cluster workers, processes under one supervisor): the
  // kernel keeps a write whole only up to PIPE_BUF (4096 bytes on Linux), so the held lines go out in
  // writes of whole lines of at most that size, each line in one piece (a longer line goes alone).
  // Before 2026-11-29 a 64 KiB write could be torn by another process's, leaving two broken lines.
  const sendWholeLines = (bytes: Buffer) => {
    let start = 0;
    while (bytes.length - start > PIPE_BUF) {
      const cut = bytes.lastIndexOf(0x0a, start + PIPE_BUF - 1);
      const end = cut >= start ? cut + 1 : bytes.indexOf(0x0a, start + PIPE_BUF) + 1 || bytes.length;
      send(bytes.subarray(start, end));
      start = end;
    }
    if (start < bytes.length) send(bytes.subarray(start));
  };
  // A write failed. sonic-boom keeps what it could not write and retries it on every later write,
  // and its flushSync retries it without end (a sleep of 100 ms between tries): as pino does at
  // EPIPE, nothing more goes to that destination, and a fresh one is made when writing is tried
  // again, so the failed bytes are not held (nor written half a day later into the middle of the
  // log). fd 1 stays open (closing it would hand the number to the next file opened).
  const failed = (stream: Destination, error: NodeJS.ErrnoException) => {
    // pino's own listener emits an error (all but EPIPE) a second time; a dropped destination has nothing more to say.
    if (stream !== out || broken) return;
    const left = (stream as unknown as { _len?: unknown })._len;
    unwritten = typeof left === "number" ? left : Number.POSITIVE_INFINITY;
    broken = true;
    Object.assign(stream, { write: () => true, flushSync: () => {}, flush: () => {}, end: () => {} });
    const code = error.code ?? error.message;
    if (!TRANSIENT.has(code)) {
      gone = true;
      // For the exit's count of the lines lost (the ones of a failure under way are counted on).
      since ??= Date.now();
      reason = code;
      if (retry !== null) clearTimeout(retry);
      retry = null;
      say(`writing log lines to stdout failed (${code}); they are dropped from now on`);
      return;
    }
    if (since === null) {
      since = Date.now();
      reason = code;
      delay = RETRY_FIRST_MS;
      say(`writing log lines to stdout failed (${code}); they are dropped, and counted, until a write works again (tried after 1 s, then at most every 30 s)`);
    } else {
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
    // No timer keeps the process alive: one that has nothing else to do ends (the exit tries once more).
    retry = setTimeout(recover, delay);
    retry.unref();
  };
  const open = (): Destination => {
    const stream = pino.destination({ dest: 1, sync: true, contentMode: "buffer" });
    stream.on("error", (error: NodeJS.ErrnoException) => failed(stream, error));
    return stream;
  };
  // Tries stdout again with one warn line saying how many lines were dropped since when (after a
  // newline if a line was cut at the failure). Written: lines go out again; failed: the next try
  // waits twice as long, at most RETRY_MAX_MS.
  const recover = () => {
    if (retry !== null) clearTimeout(retry);
    retry = null;
    if (!broken || gone) return;
    out = open();
    broken = false;
    const began = new Date(since ?? Date.now()).toISOString();
    const line = `{"level":"warn","time":"${new Date().toISOString()}","dropped_lines":${dropped},"dropped_since":"${began}","reason":${JSON.stringify(reason)},"msg":"log lines were dropped: writing to stdout failed"}\n`;
    put(Buffer.from(partial ? `\n${line}` : line));
    if (broken) return;
    say(`writing log lines to stdout works again; ${dropped} ${dropped === 1 ? "line was" : "lines were"} dropped since ${began}`);
    dropped = 0;
    since = null;
    partial = false;
  };
  process.once("exit", () => {
    // From now on no timer runs: a line logged later (by an exit listener registered after this
    // one, a host's "exiting" line) is written as it comes, an event's as text. Until 2026-11-30 it
    // was held for the timer and lost without a count. The methods are swapped here, at exit, so
    // nothing is added to a line's path before it.
    const hold = writer.write;
    writer[EVENT_BYTES] = () => false;
    writer.write = (line: string) => {
      hold(line);
      release();
    };
    // One more try if stdout is failing (the space may be back since the last one), then the held
    // lines; nothing loops: a failed write drops its destination, and flushSync, whose retries have
    // no end, is called only on a destination that holds nothing.
    if (broken) recover();
    release();
    if (broken) {
      // The lines of the failure are lost for good: said once, with their count, on stderr (before
      // 2026-11-29 a process that ended with stdout still failing left no count of them anywhere).
      if (dropped > 0) say(`exiting with stdout still failing (${reason}): ${dropped} log ${dropped === 1 ? "line" : "lines"} dropped since ${new Date(since ?? Date.now()).toISOString()} ${dropped === 1 ? "is" : "are"} lost`);
      return;
    }
    try {
      out?.flushSync();
    } catch {
      // stdout gone or busy (EAGAIN).
    }
  });
  out = open();
  const writer = {
    [EVENT_BYTES](head: Uint8Array, event: Record<string, unknown>): boolean {
      // An event line is a few hundred bytes: it starts a fresh block when this one has less room.
      if (used > HOLD_BYTES - EVENT_ROOM) release();
      const end = encodeEventLine(held, used, head, event, REDACTED_NAMES);
      if (end < 0) return false;
      used = end;
      if (timer === null) timer = setTimeout(release, HOLD_MS);
      return true;
    },
    write(line: string) {
      // UTF-8 takes at most 3 bytes per UTF-16 code unit.
      if (used + line.length * 3 > HOLD_BYTES) {
        release();
        if (line.length * 3 > HOLD_BYTES) {
          send(Buffer.from(line, "utf8"));
          return;
        }
      }
      used += held.write(line, used);
      if (timer === null) timer = setTimeout(release, HOLD_MS);
    },
    // pino's `log.flush(cb)` and its `fatal()` (which calls `flushSync` after the line) ask for the
    // lines to be out now: the held ones are written before they return (until 2026-11-30 this
    // writer had neither method: pino called back at once, and a fatal line, with the 10 ms of
    // lines before it, was lost if the process then died without an exit, e.g. by a signal).
    // Called only there, never on a line's path.
    flush(done?: (error?: Error) => void) {
      release();
      done?.();
    },
    flushSync() {
      release();
    },
  };
  return writer;
}

type Destination = ReturnType<typeof pino.destination>;

/**
 * Write errors of stdout that may pass, after which {@link stdoutLines} tries again: a full disk
 * or quota (ENOSPC, EDQUOT: log rotation or a clean-up frees space), a file at its size limit
 * (EFBIG: rotation by truncation), EIO (a thin-provisioned volume out of space, an NFS server that
 * went away; on a terminal that was closed, a try every 30 s costs one failed write). Any other
 * error is for good: EPIPE (the reader has gone, as pino has it), EBADF (fd 1 closed or not
 * writable: a later try could write into whatever file gets number 1 next). EAGAIN never gets
 * here: sonic-boom waits it out.
 */
const TRANSIENT = new Set(["ENOSPC", "EDQUOT", "EFBIG", "EIO"]);

/** Delay before the first new try after stdout failed; it doubles after each failed try, up to the second. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;

const NEWLINE = 0x0a;

/** How many lines end in `bytes` (a cut line at the end, which never happens here, is not counted). */
function linesIn(bytes: Uint8Array): number {
  let lines = 0;
  for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) lines++;
  return lines;
}

/**
 * What the stdout of {@link createLog} takes beside `write(line)`: an event's line written as
 * bytes into the held block (see event-bytes.ts); false when it must go as text instead.
 */
const EVENT_BYTES = Symbol("plantgate.eventLineBytes");
type EventBytes = { [EVENT_BYTES](head: Uint8Array, event: Record<string, unknown>): boolean };

/** The most bytes a pipe keeps in one piece when several processes write to it (POSIX's minimum; Linux's too). */
const PIPE_BUF = 4096;

/** Whether fd 1 is a pipe or a socket (not a file or terminal); false when it cannot be told. */
function stdoutIsShared(): boolean {
  try {
    const stat = fstatSync(1);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false;
  }
}

/**
 * Puts fd 1 into blocking mode, as Node does for a terminal (and on Windows for a pipe): a write to a
 * full pipe or socket then waits in the kernel until the reader has made room, and returns as soon
 * as it has. Node makes fd 1 non-blocking when process.stdout is first used on a pipe or socket
 * (the example servers' console.log, any `--import` loader); a full pipe then failed a write with
 * EAGAIN, and sonic-boom, in sync mode, slept 100 ms (Atomics.wait, its BUSY_WRITE_TIMEOUT) before
 * each new try: the whole event loop stopped for 100 ms at a time whenever a log reader (a
 * container's log driver, journald, `| tee`) fell behind by a pipe's worth for a few milliseconds
 * (until 2026-11-30; measured: a reader pausing 40 ms every 400 ms cost 7 stalls of 103 ms in 3 s,
 * none of 90 ms or more with fd 1 blocking, the longest 21-51 ms). process.stdout is made first: made later, it would
 * make fd 1 non-blocking again. Its own writes (console.log) then wait too, as they do on files and
 * terminals. The flag belongs to the open pipe, so other processes writing to it (cluster workers)
 * see it too; Node puts back the flags fd 1 had when the process exits. Not done where
 * process.stdout has no libuv handle (a worker thread's): it may stay non-blocking there.
 */
function blockingStdout(): void {
  try {
    const handle = (process.stdout as unknown as { _handle?: { setBlocking?: (blocking: boolean) => number } })._handle;
    handle?.setBlocking?.(true);
  } catch {
    // No process.stdout to be had (its creation failed): fd 1 stays as it is.
  }
}

/** Room below which an event line starts a fresh held block. */
const EVENT_ROOM = 4096;

/** Lines are held at most this long, or until the next would not fit in this many bytes. */
const HOLD_MS = 10;
const HOLD_BYTES = 65_536;

/** The core's `logger` option on top of pino: unexpected errors and warnings, as JSON lines. */
export function coreLogger(log: Pino): Logger {
  return {
    error: (message, context) => log.error(context ?? {}, message),
    warn: (message, context) => log.warn(context ?? {}, message),
  };
}

/** Events that say someone may be attacking: logged at `warn`, the rest at `info`. */
const WARN_EVENTS = new Set(["client.authentication_failed", "account.login_failed", "account.locked_out", "refresh_token.reuse_detected"]);

/**
 * Logs a security event as one line: `event` is the type, then the event's fields (snake_case, as
 * the core names them; its own `time`, epoch ms, as `event_time`, since pino's `time` is the line's).
 *
 * @example
 * createPlantgate({ onEvent: eventLogger(log) });
 */
export function eventLogger(log: Pino): (event: SecurityEvent) => void {
  const out = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
  // The start of a line (level and time) as bytes, per level: made once per second (toISOString
  // goes through C's printf), its three millisecond digits rewritten in place in between.
  let lastMs = -1;
  let lastSecond = Number.NaN;
  /** Where the millisecond digits are in both heads (-1: rebuild every millisecond). */
  let msAt = -1;
  let infoHead: Uint8Array = new Uint8Array(0);
  let warnHead = infoHead;
  // The same as text, for lines that go as text: made when such a line needs it.
  let textMs = -1;
  let infoStart = "";
  let warnStart = "";
  const textStart = (warn: boolean, now: number) => {
    if (now !== textMs) {
      textMs = now;
      const stamp = new Date(now).toISOString();
      infoStart = `{"level":"info","time":"${stamp}",`;
      warnStart = `{"level":"warn","time":"${stamp}",`;
    }
    return warn ? warnStart : infoStart;
  };
  // The stdout createLog makes takes event lines as bytes (see EVENT_BYTES); other destinations as text.
  const bytes = out !== undefined && EVENT_BYTES in out ? (out as unknown as EventBytes) : undefined;
  // Lines are built here only for createLog's own loggers (see OWN_FORMAT); others go through pino.
  const own = OWN_FORMAT.has(log);
  // Whether each level writes (kept as pino's level changes), and the level of the last event type seen.
  const levels = levelsOf(log);
  let lastType = "";
  let lastWarn = false;
  return (event) => {
    if (event.type !== lastType) {
      lastType = event.type;
      lastWarn = WARN_EVENTS.has(lastType);
    }
    const warn = lastWarn;
    const level = warn ? "warn" : "info";
    if (!(warn ? levels.warn : levels.info)) return;
    if (out === undefined || !own) return viaPino(log, level, event);
    const now = Date.now();
    if (now !== lastMs && bytes !== undefined) {
      lastMs = now;
      const second = Math.floor(now / 1000);
      if (second === lastSecond && msAt >= 0) {
        const ms = now - second * 1000;
        const d0 = 0x30 + ((ms / 100) | 0);
        const d1 = 0x30 + ((ms / 10) % 10 | 0);
        const d2 = 0x30 + (ms % 10);
        infoHead[msAt] = warnHead[msAt] = d0;
        infoHead[msAt + 1] = warnHead[msAt + 1] = d1;
        infoHead[msAt + 2] = warnHead[msAt + 2] = d2;
      } else {
        lastSecond = second;
        const info = textStart(false, now);
        infoHead = headBytes(info);
        warnHead = headBytes(textStart(true, now));
        // `...:SS.mmmZ",`: the digits follow the last dot (any other shape: rebuilt each millisecond).
        const dot = info.lastIndexOf(".");
        msAt = info.endsWith('Z",') && info.length - dot === 7 ? dot + 1 : -1;
      }
    }
    if (bytes !== undefined && bytes[EVENT_BYTES](warn ? warnHead : infoHead, event as unknown as Record<string, unknown>)) return;
    const line = fastLine(event);
    if (line === null) return viaPino(log, level, event);
    out.write(textStart(warn, now) + line);
  };
}

/** Whether a logger writes at `info` and at `warn`, as its level is now. */
interface Levels {
  info: boolean;
  warn: boolean;
}

const LEVELS = new WeakMap<Pino, Levels>();

/**
 * The levels of `log`, kept by one `level-change` listener per logger, shared by every event hook
 * made for it (a listener per {@link eventLogger} call would pile up on a logger that gets many).
 * `isLevelEnabled` on every event read pino's level tables through symbols.
 */
function levelsOf(log: Pino): Levels {
  const known = LEVELS.get(log);
  if (known !== undefined) return known;
  const levels = { info: log.isLevelEnabled("info"), warn: log.isLevelEnabled("warn") };
  log.on("level-change", () => {
    levels.info = log.isLevelEnabled("info");
    levels.warn = log.isLevelEnabled("warn");
  });
  LEVELS.set(log, levels);
  return levels;
}

function viaPino(log: Pino, level: "info" | "warn", event: SecurityEvent): void {
  const { type, time, ...fields } = event;
  log[level]({ event: type, event_time: time, ...fields }, type);
}

/**
 * The line pino would write for `event` (after pino's own `level` and `time`), built member by
 * member: a token request logs a line, so this is on the hot path. A string value with nothing to
 * escape (no quote, backslash, control character or surrogate: every value a normal request puts in
 * an event) is written between quotes as it is; a number as its text; anything else through
 * `JSON.stringify`, as the whole object would have it (a value it leaves out, e.g. `undefined`, is
 * left out here too). On the bench machine that is about 0.8 µs a token.issued line against 1.5-2.5
 * for `JSON.stringify` per value or one of the whole event (Node 20). Member names are escaped
 * once per event type (see shapeOf). The line is the one pino writes, except that a lone surrogate is escaped
 * (`\ud800`) where pino, on Node below 25, writes short strings raw (which UTF-8 then turns into
 * U+FFFD). Works for events as the core makes them (`type` first, a string `id` and an integer
 * `time`, under names pino does not redact, no `toJSON`); for anything else it returns null and
 * the line goes through pino.
 */
function fastLine(event: SecurityEvent): string | null {
  const e = event as unknown as Record<string, unknown>;
  if ("toJSON" in e) return null;
  const keys = Object.keys(e);
  if (keys[0] !== "type") return null;
  const { type: rawType, id, time } = e;
  if (typeof rawType !== "string" || typeof id !== "string" || !Number.isSafeInteger(time)) return null;
  const type = jsonString(rawType);
  // {"type":T,...fields,"id":I,"time":N} -> "event":T,"event_time":N,"id":I,...fields,"msg":T}
  // (the core stamps `id` and `time` after the fields; wherever they are, they come first here)
  const shape = shapeOf(rawType, keys);
  if (shape === null) return null;
  const { prefixes, values, texts } = shape;
  let line = `"event":${type},"event_time":${time as number},"id":${jsonString(id)}`;
  try {
    // The values in the order of `keys` (one call, where a lookup per name by a variable name is a
    // generic keyed load each: events of many types pass through here).
    const now = Object.values(e);
    for (let i = 1; i < keys.length; i++) {
      const prefix = prefixes[i];
      if (prefix === null) continue;
      const value = now[i];
      let text: string | undefined;
      if (value === values[i] && i < texts.length) {
        // The same string, number, boolean or null as this member had in the last event of this type.
        text = texts[i];
      } else {
        const json = jsonValue(value);
        text = json === undefined ? undefined : prefix + json;
        if (typeof value !== "object" || value === null) {
          values[i] = value;
          texts[i] = text;
        }
      }
      if (text !== undefined) line += text;
    }
  } catch {
    // A BigInt or a circular value: pino's own serializer copes with those.
    return null;
  }
  return `${line},"msg":${type}}\n`;
}

const REDACTED_NAMES = new Set(REDACTED);

/** What makes `JSON.stringify` escape a string (or, for surrogates, look at it twice). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** `JSON.stringify(s)`, without the call when there is nothing to escape. */
function jsonString(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** `JSON.stringify(v)` for a member's value (undefined where it would leave the member out). */
function jsonValue(v: unknown): string | undefined {
  switch (typeof v) {
    case "string":
      return jsonString(v);
    case "number":
      // JSON writes a finite number as its shortest text (what template literals do), others as null.
      return Number.isFinite(v) ? `${v}` : "null";
    case "boolean":
      return v ? "true" : "false";
    default:
      return v === null ? "null" : (JSON.stringify(v) as string | undefined);
  }
}

/**
 * What fastLine keeps of an event type, for the member names its events had last: each member's
 * `,"name":` (null for `type`, `id` and `time`, which the line writes first), and the value each
 * member had in the last event with the text it made. Events of one type from one site have the
 * same names in the same order, and most of their values repeat from one event to the next (grant
 * type, client, subject, scope, address): such a value's text is reused, without its escape check
 * or its concatenation. A shape is found by one Map lookup and a comparison of names by identity.
 */
interface Shape {
  keys: readonly string[];
  prefixes: ReadonlyArray<string | null>;
  /** By member index: the last primitive value seen (never an object: its JSON may change). */
  values: unknown[];
  /** By member index: that value's `,"name":json` (undefined when JSON leaves the member out). */
  texts: Array<string | undefined>;
}

/** The event type's {@link Shape} for these member names; null when one is a name pino redacts (that event goes through pino). */
function shapeOf(type: string, keys: readonly string[]): Shape | null {
  const known = shapes.get(type);
  if (known !== undefined && sameKeys(known.keys, keys)) return known;
  const prefixes: Array<string | null> = [];
  for (const key of keys) {
    // pino's redact paths are top-level names.
    if (REDACTED_NAMES.has(key)) return null;
    prefixes.push(key === "type" || key === "id" || key === "time" ? null : `,${JSON.stringify(key)}:`);
  }
  // `texts` starts empty: no value has a text yet (a member whose value is undefined matches `values`).
  const shape: Shape = { keys: [...keys], prefixes, values: [], texts: [] };
  // The core has a few dozen event types; a caller's own types beyond 1,000 are not kept.
  if (known !== undefined || shapes.size < 1000) shapes.set(type, shape);
  return shape;
}

const shapes = new Map<string, Shape>();

/** `schedulePrune`'s logger (from `@plantgate/node`) on top of pino. */
export function pruneLogger(log: Pino): {
  info(message: string, fields: Record<string, unknown>): void;
  error(message: string, fields: Record<string, unknown>): void;
  warn(message: string, fields: Record<string, unknown>): void;
} {
  return {
    info: (message, fields) => log.info(fields, message),
    error: (message, fields) => log.error(fields, message),
    warn: (message, fields) => log.warn(fields, message),
  };
}
