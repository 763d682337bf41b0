import { defineProject } from "vitest/config";

// The hostile files that have a Workers path, once more with HOSTILE_RUNTIME=workerd: their
// generated requests answered by @plantgate/cloudflare's Worker in workerd (Miniflare) on D1 (see
// src/workerd.ts). DEFAULT_WORKERD_RUNS (src/settings.ts) requests each unless HOSTILE_RUNS says
// otherwise; a longer run: HOSTILE_RUNS=2000 pnpm vitest run --project @plantgate/hostile-tests-workerd.
// The console file runs on workerd too (the full Worker, PLANTGATE_CONSOLE=1), but not here: its 400
// requests took 11-18 s, and with it this project took 41 s against 22 without it (2-core machine).
// Run it alone: HOSTILE_RUNTIME=workerd pnpm vitest run --project @plantgate/hostile-tests test/console.test.ts.
const runs = Number(process.env.HOSTILE_RUNS || 400);

export default defineProject({
  test: {
    name: "@plantgate/hostile-tests-workerd",
    include: ["test/token-endpoint.test.ts", "test/plants.test.ts", "test/account-list.test.ts", "test/world-setup.test.ts"],
    env: { HOSTILE_RUNTIME: "workerd" },
    testTimeout: Math.max(120_000, runs * 100),
    hookTimeout: 60_000,
  },
});
