import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import projects from "./vitest.workspace.js";
import SlowestFirst from "./vitest.sequencer.js";

export default defineConfig({
  test: {
    projects,
    // Most test files spend their time waiting on sockets, databases, child processes and a
    // browser, not on this process's CPU. vitest's default (one worker less than the CPUs) ran
    // them one file at a time on a 2-core machine: 500 s of `pnpm test`, 412 s of it in tests.
    // At least two at once (three read 606 s against 634 s for two in one try each: not worth
    // the contention for timing-bound tests).
    maxWorkers: Math.max(2, availableParallelism()),
    // The slowest files first, across projects (see vitest.sequencer.ts).
    sequence: { sequencer: SlowestFirst },
  },
});
