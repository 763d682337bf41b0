/**
 * The README's `signer` sample ("Keys held elsewhere") compiled as a user would compile it: the
 * repository's own strict settings, against core's public entry. Until 2026-12-02 it did not
 * type-check (TS2345: `sign` was handed a `Uint8Array<ArrayBufferLike>`, which Web Crypto's
 * `sign()` does not take as a `BufferSource`), and the repository's own tests cast around it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const README = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");

/** The TypeScript errors of `source` (a module in a fresh directory) under tsconfig.base.json. */
function typeErrors(source: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "readme-signer-"));
  try {
    const file = join(dir, "sample.ts");
    writeFileSync(file, source);
    const ts = createRequire(import.meta.url)("typescript") as typeof import("typescript");
    const base = ts.readConfigFile(new URL("../../../tsconfig.base.json", import.meta.url).pathname, ts.sys.readFile).config.compilerOptions;
    const { options } = ts.convertCompilerOptionsFromJson({ ...base, types: ["node"], noUnusedLocals: false, allowImportingTsExtensions: true, noEmit: true }, dir);
    const program = ts.createProgram([file], options);
    return ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file?.fileName === file)
      .map((d) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n").split("\n")[0]}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("the README's signer sample", () => {
  it("type-checks under the repository's strict settings, as the README prints it", () => {
    const start = README.indexOf("const { privateKey, publicKey } = await crypto.subtle.generateKey(");
    expect(start).toBeGreaterThan(0);
    const sample = README.slice(start, README.indexOf("```", start));
    expect(sample).toContain("signer: {");
    const entry = new URL("../src/index.ts", import.meta.url).pathname;
    expect(typeErrors(`import { createPlantgate, createMemoryStorage } from "${entry}";\nconst storage = createMemoryStorage();\n${sample}\nexport { app };\n`)).toEqual([]);
  }, 60_000);

  it("type-checks as keys.ts's doc comment prints it (the SigningKeySigner example)", () => {
    const keys = readFileSync(new URL("../src/tokens/keys.ts", import.meta.url), "utf8");
    const start = keys.indexOf(" * const { privateKey, publicKey } = await crypto.subtle.generateKey(");
    expect(start).toBeGreaterThan(0);
    const sample = keys
      .slice(start, keys.indexOf(" * ```", start))
      .split("\n")
      .map((line) => line.replace(/^ \* ?/, ""))
      .join("\n");
    const entry = new URL("../src/index.ts", import.meta.url).pathname;
    expect(typeErrors(`import { createPlantgate, type SigningKeySigner } from "${entry}";\n${sample}\n`)).toEqual([]);
  }, 60_000);
});
