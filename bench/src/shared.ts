/**
 * Credentials and settings every contender is provisioned with, so the load generator can send the
 * same requests to each. They exist only inside throw-away benchmark processes.
 */
export const CLIENT_ID = "bench-client";
export const CLIENT_SECRET = "bench-secret-3f9c2a7d1e8b4c6a9f0e2d4b6a8c0e1f";
/**
 * The password workload logs in as USERS different accounts in turn (all with PASSWORD): one
 * account hammered by 32 connections would meet plantgate's per-username brute-force throttle,
 * which counts an attempt before the password is checked, and real logins come from many users.
 */
export const USERS = 64;
export const username = (i: number) => `bench-user-${i % USERS}`;
export const PASSWORD = "bench-password-1";

/** `Authorization` header value for client_secret_basic (RFC 6749 §2.3.1; both parts are form-safe). */
export const BASIC_AUTH = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`;

/**
 * PBKDF2-SHA256 iterations of the password workload, the same for every contender. plantgate's
 * default (600 000) makes any password-grant run a pure hashing benchmark (a few requests per
 * second), so the hash cost is measured on its own and the grant runs at this documented count.
 */
export const DEFAULT_BENCH_ITERATIONS = 1_000;

/** What each server prints on stdout, on one line, once it is listening and provisioned. */
export interface ReadyMessage {
  port: number;
}

/** Prints the ready line the harness waits for. */
export function announceReady(message: ReadyMessage): void {
  // A normal exit on SIGTERM lets `--cpu-prof` write its profile (BENCH_CPU_PROF).
  process.once("SIGTERM", () => process.exit(0));
  process.stdout.write(`READY ${JSON.stringify(message)}\n`);
}

/** Reads a positive integer from the environment. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`${name} must be a non-negative integer`);
  return n;
}

/** Reads a form-urlencoded request body; benchmark bodies are tiny, so a cap guards against mistakes only. */
export function readBody(req: import("node:http").IncomingMessage, limit = 65_536): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new Error("body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/**
 * What of the observability (`setupObservability(...).options`) goes into a plantgate app under
 * measurement: all of it (`part` undefined), or, to find where its cost is, only the event hook
 * that writes the log lines (`events`), only the metrics observer (`observer`), a no-op event
 * hook (`noop`: the events alone), or nothing (`none`: an A/A check). Used by the bench server
 * (BENCH_OBSERVE_PART), bench/src/inproc.ts (INPROC_PART) and the instruction-count driver.
 */
export function observabilityParts<O extends { onEvent: unknown; observer?: unknown }>(options: O, part: string | undefined): Partial<O> {
  switch (part) {
    case undefined:
      return options;
    case "events":
      return { onEvent: options.onEvent } as Partial<O>;
    case "observer":
      return (options.observer === undefined ? {} : { observer: options.observer }) as Partial<O>;
    case "noop":
      return { onEvent: () => {} } as Partial<O>;
    case "none":
      return {};
    default:
      throw new Error(`unknown observability part ${part} (events, observer, noop or none)`);
  }
}
