import { defineProject } from "vitest/config";

// The hostile files that have a Workers path, once more with HOSTILE_RUNTIME=workerd: their
// generated requests answered by @plantgate/cloudflare's Worker in workerd (Miniflare) on D1 (see
// src/workerd.ts). DEFAULT_WORKERD_RUNS (src/settings.ts) requests each unless HOSTILE_RUNS says
// otherwise; a longer run: HOSTILE_RUNS=2000 pnpm vitest run --project @plantgate/hostile-tests-workerd.
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
