/**
 * The generated module must be page/, byte for byte: it is generated and committed (plantgate
 * serves the page from a module, without a file system), so this test keeps it from drifting.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as generated from "../src/generated/page.js";
import { GENERATED, generatedModule, PAGE_DIR, PAGE_FILES } from "../scripts/files.js";

describe("@plantgate/console generated page module", () => {
  it("is exactly what `pnpm --filter @plantgate/console generate` writes now", () => {
    expect(readFileSync(GENERATED, "utf8")).toBe(generatedModule());
  });

  for (const [name, file] of Object.entries(PAGE_FILES)) {
    it(`${name} is page/${file} byte for byte`, () => {
      const onDisk = readFileSync(join(PAGE_DIR, file));
      expect(onDisk.length).toBeGreaterThan(100);
      expect(Buffer.from((generated as Record<string, string>)[name]!, "utf8").equals(onDisk)).toBe(true);
    });
  }

  it("exports exactly the page's files", () => {
    expect(Object.keys(generated).sort()).toEqual(Object.keys(PAGE_FILES).sort());
  });
});
