/**
 * Node-only helper for tests that start a TypeScript entry point as a child process many times
 * (the CLI's main.ts, observability's fixtures): bundles it once into one ES module that plain
 * `node` runs, instead of each child going through tsx. tsx costs a second Node process (its CLI
 * spawns the real one) and sends every module's resolve and load through its loader thread: 2-5 s
 * a start on a loaded 2-core machine, against a fraction of a second for the bundle.
 *
 * The bundle is the same program: the workspace sources (what tsx would compile) are inlined, each
 * keeping its own `import.meta.url`; every other package stays external, imported by the absolute
 * path of the very file node would have loaded for it from that source's folder (so the bundle can
 * live in a temp directory), drivers with native code included.
 */
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";

const external: Plugin = {
  name: "node-entry-external",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === "resolving" || args.path.startsWith("node:") || args.path.startsWith("@plantgate/")) return undefined;
      const resolved = await b.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: "resolving" });
      if (resolved.errors.length > 0) return { errors: resolved.errors };
      // A Node built-in named without node: stays as written.
      if (resolved.external) return { path: args.path, external: true };
      return { path: pathToFileURL(resolved.path).href, external: true };
    });
    // Each workspace source keeps the import.meta.url it has under tsx (it resolves files and
    // packages relative to itself), not the bundle's.
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      return { contents: source.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)), loader: "ts" };
    });
  },
};

/** Bundles the TypeScript entry point `entry` into `outfile` (an .mjs path) for `node outfile ...args`. */
export async function bundleNodeEntry(entry: string, outfile: string): Promise<string> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "error",
    plugins: [external],
  });
  return outfile;
}
