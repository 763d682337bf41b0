/**
 * What the Miniflare tests of this package share: a test entry (source that wraps this package's
 * `createWorker()` with the hooks a test drives) bundled for the Workers runtime with the http
 * suite's esbuild configuration, started in Miniflare, and workerd's console output captured.
 */
import { dirname } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { afterEach } from "vitest";
import { bundleEntry } from "../../../tests/http-suite/src/bundle-worker.js";

/** This folder: an entry's imports (`../src/index.ts`, `@plantgate/core`) resolve from here. */
const here = dirname(fileURLToPath(import.meta.url));

/** The compatibility date the tests' Workers run with. */
/**
 * Source text for a test entry: `gate(db)` wraps the real D1 binding so that every statement and
 * batch goes through the entry's own `gated(sql, run, statements)` (hold, delay, count or pass it;
 * `statements` is 1, or a batch's length); the entry defines `gated` and `const real = new
 * WeakMap()` (a wrapped statement's SQL and real statement, for batch).
 */
export const D1_GATE = `function gate(db) {
  const wrap = (sql, statement) => {
    const w = {
      bind: (...values) => wrap(sql, statement.bind(...values)),
      all: () => gated(sql, () => statement.all(), 1),
      run: () => gated(sql, () => statement.run(), 1),
      first: (column) => gated(sql, () => statement.first(column), 1),
      raw: (o) => gated(sql, () => statement.raw(o), 1),
    };
    real.set(w, { sql, statement });
    return w;
  };
  return {
    prepare: (sql) => wrap(sql, db.prepare(sql)),
    batch: (statements) => gated(statements.map((s) => real.get(s).sql).join(";"), () => db.batch(statements.map((s) => real.get(s).statement)), statements.length),
  };
}`;

export const COMPATIBILITY_DATE = "2026-04-26";

/** A Miniflare worker's `scheduled()`, as the tests call it (Miniflare types its Fetcher with workers-types, which this package does not install). */
export type ScheduledWorker = { scheduled(options: { cron?: string }): Promise<{ outcome: string; noRetry: boolean }> };

/** The entry `source`, bundled as `wrangler deploy` would. */
export async function bundle(source: string, { minify = false }: { minify?: boolean } = {}): Promise<string> {
  return (await bundleEntry(source, here, { minify })).script;
}

export interface StartWorkerOptions {
  /** The Worker's `env` vars. */
  bindings?: Record<string, string>;
  /** A D1 database bound as `env.DB`. */
  d1?: boolean;
  /** Each chunk of workerd's stdout and stderr, as it arrives. */
  onLog?: (chunk: string) => void;
  /** The Worker's compatibility date, {@link COMPATIBILITY_DATE} unless given (an older one for workerd's legacy behaviours). */
  compatibilityDate?: string;
}

/** A Miniflare running the entry `source` as its one Worker; `base` is its origin. The caller disposes of `mf`. */
export async function startWorker(source: string, { bindings = {}, d1 = false, onLog, compatibilityDate = COMPATIBILITY_DATE }: StartWorkerOptions = {}): Promise<{ mf: Miniflare; base: string }> {
  const mf = new Miniflare({
    modules: true,
    script: await bundle(source),
    compatibilityDate,
    ...(d1 ? { d1Databases: ["DB"] } : {}),
    bindings,
    ...(onLog ? { handleRuntimeStdio: (stdout: Readable, stderr: Readable) => captureStdio(stdout, stderr, onLog) } : {}),
  });
  try {
    return { mf, base: (await mf.ready).origin };
  } catch (error) {
    await mf.dispose().catch(() => {});
    throw error;
  }
}

/** Hands each chunk of workerd's stdout and stderr to `onLog` (for a Miniflare's `handleRuntimeStdio`). */
export function captureStdio(stdout: Readable, stderr: Readable, onLog: (chunk: string) => void): void {
  stdout.on("data", (chunk: Buffer) => onLog(chunk.toString()));
  stderr.on("data", (chunk: Buffer) => onLog(chunk.toString()));
}

/** workerd's console output, gathered as it arrives. */
export class CapturedLog {
  text = "";
  readonly onLog = (chunk: string): void => void (this.text += chunk);
  /** The output reaches us asynchronously: waits up to 2 s for `line` to be in it (the test then asserts it). */
  async waitFor(line: string): Promise<void> {
    for (let i = 0; i < 40 && !this.text.includes(line); i++) await new Promise((r) => setTimeout(r, 50));
  }
  clear(): void {
    this.text = "";
  }
}

/**
 * For a file whose tests each start a Worker of their own (call it at the file's top level): `start`
 * is {@link startWorker} with workerd's output gathered in `log`; after each test the Worker is
 * disposed of and the log cleared.
 */
export function workerPerTest(): { log: CapturedLog; start(source: string, options?: Omit<StartWorkerOptions, "onLog">): Promise<{ mf: Miniflare; base: string }> } {
  const log = new CapturedLog();
  let mf: Miniflare | undefined;
  afterEach(async () => {
    await mf?.dispose();
    mf = undefined;
    log.clear();
  });
  return {
    log,
    async start(source, options = {}) {
      const started = await startWorker(source, { ...options, onLog: log.onLog });
      mf = started.mf;
      return started;
    },
  };
}
