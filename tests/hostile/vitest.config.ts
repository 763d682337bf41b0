import { defineProject } from "vitest/config";
import { RUNS } from "./src/settings.js";

// Each property runs RUNS requests; a big HOSTILE_RUNS needs proportionally more time per test. On
// a SQL store (HOSTILE_STORE, see src/world.ts) every read of a snapshot is a query: allow more.
const msPerRequest = (process.env.HOSTILE_STORE ?? "memory") === "memory" ? 30 : 200;
const perTest = Math.max(120_000, RUNS * msPerRequest);

export default defineProject({
  test: { name: "@plantgate/hostile-tests", include: ["test/**/*.test.ts"], testTimeout: perTest, hookTimeout: 60_000 },
});
