import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "custom-storage", include: ["test/**/*.test.ts"] },
});
