/**
 * The generated module must be page/, byte for byte: it is generated and committed (plantgate
 * serves the page from a module, without a file system), so this test keeps it from drifting.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SECURITY_EVENT_TYPES } from "@plantgate/core";
import * as generated from "../src/generated/page.js";
import { GENERATED, generatedModule, PAGE_DIR, PAGE_FILES, withCoreEventTypes } from "../scripts/files.js";

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

  it("the Security events type filter offers exactly core's SECURITY_EVENT_TYPES, in its order", () => {
    const js = readFileSync(join(PAGE_DIR, "console.js"), "utf8");
    // As `generate` writes it from core's constant (run it when this fails)...
    expect(js).toBe(withCoreEventTypes(js));
    // ...and read back as the page reads it.
    const list = /\n  const EVENT_TYPES = \[\n([^\]]*)\n  \];\n/.exec(js);
    expect(list).not.toBeNull();
    expect(JSON.parse(`[${list![1]!.replace(/,\s*$/, "")}]`)).toEqual([...SECURITY_EVENT_TYPES]);
  });

  it("exports exactly the page's files", () => {
    expect(Object.keys(generated).sort()).toEqual(Object.keys(PAGE_FILES).sort());
  });
});
