/**
 * Node-only helper (not part of the runtime-agnostic suite): bundles the Worker entry, refuses any
 * node:* import, and prints its size. Used by the workerd runner and by `pnpm worker-size`.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));

export /** Bundles the Worker entry as `wrangler deploy` would (Workers conditions, ESM, no Node built-ins). */
async function bundleWorker(): Promise<string> {
  const result = await build({
    stdin: { contents: 'import { createWorker } from "@plantgate/cloudflare";\nexport default createWorker();\n', resolveDir: here, loader: "ts" },
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    target: "es2022",
    minify: true,
    write: false,
    logLevel: "silent",
  });
  const script = result.outputFiles[0]!.text;
  const nodeImport = /\bfrom\s*["']node:|\bimport\s*\(\s*["']node:|\brequire\s*\(\s*["']node:/.exec(script);
  if (nodeImport) throw new Error(`the Worker bundle imports a node:* module: ${script.slice(nodeImport.index, nodeImport.index + 60)}`);
  const raw = Buffer.byteLength(script);
  const gzip = gzipSync(script, { level: 9 }).length;
  console.log(`plantgate Worker bundle (minified): ${(raw / 1024).toFixed(1)} KiB raw, ${(gzip / 1024).toFixed(1)} KiB gzip`);
  return script;
}

