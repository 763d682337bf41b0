import { defineProject } from "vitest/config";

export default defineProject({
  // 20 s a test: the D1 suites run each case through workerd (Miniflare), which took 5 s for the
  // 47-account paging walk when other test files ran beside it on a 2-core machine.
  test: { name: "storage-sql", include: ["test/**/*.test.ts"], testTimeout: 20_000 },
});
