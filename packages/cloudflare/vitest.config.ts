import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "cloudflare", include: ["test/**/*.test.ts"], hookTimeout: 30_000 },
});
