import { defineProject } from "vitest/config";
import { RUNS } from "./src/settings.js";

// Each property runs RUNS requests; a big HOSTILE_RUNS needs proportionally more time per test.
const perTest = Math.max(120_000, RUNS * 30);

export default defineProject({
  test: { name: "@plantgate/hostile-tests", include: ["test/**/*.test.ts"], testTimeout: perTest, hookTimeout: 60_000 },
});
