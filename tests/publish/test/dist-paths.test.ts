import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * `tsconfig.dist.json` maps each published entry point to its built declarations, so that a
 * package's declaration build reads the other packages' `dist/*.d.ts` instead of type-checking
 * their sources again. An entry point missing there would build correctly but slowly (its sources
 * checked again); an entry there that no package publishes would point the build at a file that
 * is never made. Either way the two lists must agree, and each package builds with the file.
 */
const root = resolve(import.meta.dirname, "../../..");

interface PackageJson {
  name: string;
  private?: boolean;
  scripts?: Record<string, string>;
  publishConfig?: { exports?: Record<string, { types?: string }> };
}

/** The JSON of a tsconfig file: its whole-line `//` comments dropped (the only kind these files have). */
async function readConfig(path: string): Promise<Record<string, unknown>> {
  const text = await readFile(path, "utf8");
  return JSON.parse(text.replace(/^\s*\/\/.*$/gm, "")) as Record<string, unknown>;
}

async function published(): Promise<{ name: string; dir: string; pkg: PackageJson }[]> {
  const out: { name: string; dir: string; pkg: PackageJson }[] = [];
  for (const name of (await readdir(join(root, "packages"))).sort()) {
    const dir = join(root, "packages", name);
    const pkg = JSON.parse(await readFile(join(dir, "package.json"), "utf8")) as PackageJson;
    if (!pkg.private) out.push({ name, dir, pkg });
  }
  return out;
}

describe("tsconfig.dist.json", () => {
  it("maps exactly the published entry points, each to the declarations its package publishes", async () => {
    const config = await readConfig(join(root, "tsconfig.dist.json"));
    const options = config.compilerOptions as { baseUrl?: string; paths?: Record<string, string[]> };
    expect(options.baseUrl).toBe(".");
    const expected: Record<string, string[]> = {};
    for (const { name, pkg } of await published()) {
      const exports = pkg.publishConfig?.exports ?? {};
      expect(Object.keys(exports).length, pkg.name).toBeGreaterThan(0);
      for (const [subpath, entry] of Object.entries(exports)) {
        expect(entry.types, `${pkg.name} ${subpath}`).toMatch(/^\.\/dist\/.+\.d\.ts$/);
        expected[subpath === "." ? pkg.name : `${pkg.name}${subpath.slice(1)}`] = [`./packages/${name}/${entry.types!.slice(2)}`];
      }
    }
    expect(options.paths).toEqual(expected);
  });

  it("every published package's build reads it, through a tsconfig.build.json of its sources", async () => {
    for (const { dir, pkg } of await published()) {
      expect(pkg.scripts?.build, pkg.name).toMatch(/^tsup .* --dts .*--tsconfig tsconfig\.build\.json$/);
      expect(await readConfig(join(dir, "tsconfig.build.json")), pkg.name).toEqual({
        extends: ["./tsconfig.json", "../../tsconfig.dist.json"],
        include: ["src"],
      });
    }
  });
});
