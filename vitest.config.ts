import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import projects from "./vitest.workspace.js";

export default defineConfig({
  test: {
    projects,
    // Most test files spend their time waiting on sockets, databases, child processes and a
    // browser, not on this process's CPU. vitest's default (one worker less than the CPUs) ran
    // them one file at a time on a 2-core machine: 500 s of `pnpm test`, 412 s of it in tests.
    // Two at once on 2 cores: all passed in 452 s even beside a busy loop on one core; three at
    // once (334-362 s when the machine was otherwise idle) beside that loop broke Miniflare's
    // synchronous D1 proxy (an assertion in its fetch-sync worker) and timed out the D1 tests.
    maxWorkers: Math.max(2, availableParallelism()),
  },
});
