import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "storage-redis", include: ["test/**/*.test.ts"] },
});
