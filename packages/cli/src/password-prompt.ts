import type { ReadStream } from "node:tty";
import { InterruptedError, UsageError } from "./cli.js";

/** What {@link terminalPasswordReader} needs of stdin: a terminal's (process.stdin when isTTY). */
type TerminalInput = Pick<ReadStream, "setRawMode" | "on" | "off" | "resume" | "pause">;

const CR = 0x0d;
const LF = 0x0a;
const CTRL_C = 0x03;
const CTRL_D = 0x04;
const CTRL_H = 0x08;
const CTRL_U = 0x15;
const DEL = 0x7f;

/**
 * Reads passwords typed at a terminal with echo off, as passwd(1) and getpass(3) do: `input` is put
 * in raw mode, then `prompt` is written with `write` (stderr: never stdout, which may be a file), so
 * that nothing typed after the prompt appears is echoed. Enter (CR, or LF) ends the line, and a LF
 * right after a CR (a pasted CR LF) is skipped; Backspace and DEL erase the last character (a UTF-8
 * sequence whole), Ctrl-U the line; Ctrl-D on an empty line, or the end of input, is no password
 * (null); Ctrl-C rejects with {@link InterruptedError} (exit 130). Any other control byte (an
 * arrow or function key's escape sequence, Esc, Tab, Ctrl-Z: raw mode turns the terminal's signal
 * keys off) is a {@link UsageError} at once: getpass would take it into a password nobody could type
 * again. Any other byte is part of the password. More than `maxBytes` bytes is a {@link UsageError} at once, as the
 * stdin path's line limit; text that is not UTF-8 is refused as it is there. A newline goes to
 * `write` after the line, however it ended. The terminal's mode is restored (`finally`) before the
 * returned promise settles, whatever the outcome; a signal that kills the process is left to Node,
 * which restores stdin's terminal mode on exit. Bytes typed ahead past the end of a line are kept
 * for the next call (a password and its repetition pasted at once).
 */
export function terminalPasswordReader(input: TerminalInput, write: (text: string) => void, maxBytes: number): (prompt: string) => Promise<string | null> {
  let ahead: Buffer = Buffer.alloc(0);
  let afterCr = false;

  /** Collects one line from `ahead` and the input's data; settles once, with listeners removed. */
  const line = () =>
    new Promise<string | null>((resolve, reject) => {
      let bytes: number[] = [];
      const settle = (outcome: () => void) => {
        input.off("data", onData);
        input.off("end", onEnd);
        input.off("error", onError);
        outcome();
      };
      /** True when the line has ended (the rest of `chunk` is kept in `ahead`). */
      const take = (chunk: Buffer): boolean => {
        for (let i = 0; i < chunk.length; i++) {
          const byte = chunk[i]!;
          const skip = afterCr && byte === LF;
          afterCr = false;
          if (skip) continue;
          if (byte === CR || byte === LF || byte === CTRL_C || (byte === CTRL_D && bytes.length === 0)) {
            ahead = chunk.subarray(i + 1);
            afterCr = byte === CR;
            write("\n");
            if (byte === CTRL_C) settle(() => reject(new InterruptedError("interrupted; nothing was created")));
            else if (byte === CTRL_D) settle(() => resolve(null));
            else settle(() => resolve(decode(Buffer.from(bytes))));
            return true;
          }
          if (byte === CTRL_D) continue; // on a non-empty line, as getpass: nothing
          if (byte === CTRL_U) bytes = [];
          else if (byte === DEL || byte === CTRL_H) {
            // A UTF-8 character whole: its continuation bytes (10xxxxxx), then its first.
            while (bytes.length > 0 && (bytes[bytes.length - 1]! & 0xc0) === 0x80) bytes.pop();
            bytes.pop();
          } else if (byte < 0x20) {
            // Another control byte: an arrow or function key's escape sequence (ESC ...), Tab,
            // Ctrl-Z or Ctrl-\ (raw mode turns the terminal's signal keys off). Taken into the
            // password it would make one nobody could type again (the left arrow pressed to fix a
            // typo, twice alike): refused at once, nothing created.
            bytes = [];
            write("\n");
            settle(() => reject(new UsageError("the password typed holds a control key (an arrow or function key, Esc, Tab or Ctrl with a letter); type it with printable characters only")));
            return true;
          } else {
            bytes.push(byte);
            if (bytes.length > maxBytes) {
              bytes = [];
              write("\n");
              settle(() => reject(new UsageError(`the password typed is longer than ${maxBytes} bytes`)));
              return true;
            }
          }
        }
        return false;
      };
      const onData = (chunk: Buffer) => {
        try {
          take(chunk);
        } catch (error) {
          settle(() => reject(error));
        }
      };
      const onEnd = () => {
        write("\n");
        settle(() => resolve(null));
      };
      const onError = (error: Error) => settle(() => reject(error));
      const typed = ahead;
      ahead = Buffer.alloc(0);
      if (take(typed)) return;
      input.on("data", onData);
      input.on("end", onEnd);
      input.on("error", onError);
      input.resume();
    });

  return async (prompt) => {
    input.setRawMode(true);
    try {
      // After raw mode is on: a keystroke made once the prompt shows is never echoed.
      write(prompt);
      return await line();
    } finally {
      input.pause();
      input.setRawMode(false);
    }
  };
}

/** The typed bytes as text; not UTF-8 is refused as on stdin. */
function decode(bytes: Buffer): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError("the password typed is not valid UTF-8");
  }
}
