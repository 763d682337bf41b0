import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "cloudflare-worker-example", include: ["test/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 90_000 },
});
