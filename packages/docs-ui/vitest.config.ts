import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "docs-ui", include: ["test/**/*.test.ts"] },
});
