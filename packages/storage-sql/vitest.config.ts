import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "storage-sql", include: ["test/**/*.test.ts"] },
});
