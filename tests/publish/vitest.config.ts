import { defineProject } from "vitest/config";

// Builds and packs every package, then installs the tarballs with npm outside the workspace:
// minutes of work done once in beforeAll, so the timeouts are long on purpose.
export default defineProject({
  test: { name: "publish", include: ["test/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 600_000 },
});
