/**
 * Core's schemas use `zod/mini` (functions, not methods): one import of classic `zod` anywhere in
 * core puts all of classic zod (~70 KiB minified) back into every Worker (see `pnpm worker-size`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../src", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []));
}

describe("zod in core", () => {
  it("every import of zod in packages/core/src is zod/mini (write schemas as z.optional(x), meta(x, {...}), x.check(z.minimum(1)))", () => {
    const offending = sources(SRC).flatMap((file) =>
      [...readFileSync(file, "utf8").matchAll(/from\s+["'](zod(?:\/[^"']*)?)["']/g)].filter((m) => m[1] !== "zod/mini").map((m) => `${file.slice(SRC.length + 1)}: ${m[1]}`),
    );
    expect(offending).toEqual([]);
  });
});
