/**
 * The client must run on Node, workerd and browsers: src uses Web standards only. This reads every
 * source file and fails on Node built-ins or Node globals. (`tsconfig.src.json` also type-checks
 * src with no runtime types at all.)
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const srcDir = fileURLToPath(new URL("../src/", import.meta.url));
const files = readdirSync(srcDir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));

/** Source text without comments, so prose about Node does not trip the checks. */
function code(file: string): string {
  return readFileSync(join(srcDir, file), "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:"'])\/\/.*$/gm, "$1");
}

it("finds the source files", () => {
  expect(files).toEqual(expect.arrayContaining(["index.ts", "client.ts", "token-manager.ts", "errors.ts", "fetch.ts", "lossless-json.ts", "types.ts"]));
});

it.each(files)("%s imports no node:* module and no bare package", (file) => {
  const text = code(file);
  const specifiers = [...text.matchAll(/\b(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!);
  for (const s of specifiers) {
    expect(s.startsWith("node:"), `${file} imports ${s}`).toBe(false);
    expect(s.startsWith("./") || s.startsWith("../"), `${file} imports the package ${s}`).toBe(true);
  }
  expect(text).not.toMatch(/\brequire\s*\(/);
});

it.each(files)("%s uses no Node-only global", (file) => {
  const text = code(file);
  for (const global of ["process", "Buffer", "__dirname", "__filename", "global", "setImmediate"]) {
    expect(text, `${file} uses ${global}`).not.toMatch(new RegExp(`(?<![.\\w])${global}\\b(?!\\s*:)`));
  }
});

it("has no runtime dependencies", () => {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { dependencies?: object };
  expect(pkg.dependencies ?? {}).toEqual({});
});
