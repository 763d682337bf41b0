import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "storage-testing", include: ["test/**/*.test.ts"] },
});
