/**
 * JSON-line logs through pino: one object per line on stdout, security events with a string
 * member `event` (the event's type), errors and housekeeping with `msg`. Nothing here adds a
 * request body, a header or a credential; the `redact` list is a second line of defence.
 */
import { pino, type DestinationStream, type Logger as Pino, type LevelWithSilent } from "pino";
import type { Logger, SecurityEvent } from "@plantgate/core";

/** The levels `PLANTGATE_LOG_LEVEL` accepts (pino's). */
export const LOG_LEVELS: readonly LevelWithSilent[] = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

/** Field names that never belong in a log line; replaced by `[redacted]` if one ever shows up. */
const REDACTED = [
  "password",
  "client_secret",
  "clientSecret",
  "access_token",
  "refresh_token",
  "client_assertion",
  "secretHash",
  "passwordHash",
  "authorization",
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
  // stdout written asynchronously (lines that pile up during a write go out together in the next
  // one), so a busy server does not make one write(2) per line; pino flushes it when the process exits.
  return pino(settings, options.destination ?? pino.destination({ dest: 1, sync: false }));
}

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
  return (event) => {
    const { type, time, ...fields } = event;
    const line = { event: type, event_time: time, ...fields };
    if (WARN_EVENTS.has(type)) log.warn(line, type);
    else log.info(line, type);
  };
}

/** `schedulePrune`'s logger (from `@plantgate/node`) on top of pino. */
export function pruneLogger(log: Pino): { info(message: string, fields: Record<string, unknown>): void; error(message: string, fields: Record<string, unknown>): void } {
  return {
    info: (message, fields) => log.info(fields, message),
    error: (message, fields) => log.error(fields, message),
  };
}
