/**
 * Node-only helper (not part of the runtime-agnostic suite): bundles a Worker entry, refuses any
 * node:* import, and measures it. Used by the workerd runner and by `pnpm worker-size`; its
 * esbuild configuration (`bundleEntry`) by packages/cloudflare/test/support.ts too.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build, type Metafile } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));

/**
 * The two Workers: `minimal` is `createWorker()` (token endpoint, revocation, introspection, the
 * APIs, metadata, JWKS, openapi.json); `full` adds the API reference page and the console page.
 */
export type WorkerVariant = "minimal" | "full";

const ENTRIES: Record<WorkerVariant, string> = {
  minimal: 'import { createWorker } from "@plantgate/cloudflare";\nexport default createWorker();\n',
  full: [
    'import { createWorker } from "@plantgate/cloudflare";',
    'import { consolePage } from "@plantgate/console";',
    'import { swaggerUi } from "@plantgate/docs";',
    "export default createWorker({ docs: swaggerUi(), console: { enabled: false, page: consolePage() } });",
    "",
  ].join("\n"),
};

/** One bundled Worker: its script, sizes in bytes, and esbuild's metafile (what went in). */
export interface WorkerBundle {
  script: string;
  raw: number;
  gzip: number;
  metafile: Metafile;
}

/**
 * Bundles the Worker entry `contents` (its imports resolved from `resolveDir`) as `wrangler deploy`
 * would: Workers conditions, ESM, for the browser platform. Also used by packages/cloudflare's
 * Miniflare tests (test/support.ts), whose entries wrap `createWorker()` with test hooks.
 */
export async function bundleEntry(contents: string, resolveDir: string, { minify = false }: { minify?: boolean } = {}): Promise<{ script: string; metafile: Metafile }> {
  const result = await build({
    stdin: { contents, resolveDir, loader: "ts" },
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    target: "es2022",
    // The runtime's own modules (`import { waitUntil } from "cloudflare:workers"`), left to workerd as wrangler does.
    external: ["cloudflare:*"],
    minify,
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  return { script: result.outputFiles[0]!.text, metafile: result.metafile };
}

/** Bundles a Worker entry as `wrangler deploy` would (Workers conditions, ESM, minified, no Node built-ins). */
export async function bundleWorker(variant: WorkerVariant = "full"): Promise<WorkerBundle> {
  const { script, metafile } = await bundleEntry(ENTRIES[variant], here, { minify: true });
  const nodeImport = /\bfrom\s*["']node:|\bimport\s*\(\s*["']node:|\brequire\s*\(\s*["']node:/.exec(script);
  if (nodeImport) throw new Error(`the ${variant} Worker bundle imports a node:* module: ${script.slice(nodeImport.index, nodeImport.index + 60)}`);
  return { script, raw: Buffer.byteLength(script), gzip: gzipSync(script, { level: 9 }).length, metafile };
}

/** `minimal Worker bundle: 123.4 KiB raw, 45.6 KiB gzip` */
export function sizeLine(variant: WorkerVariant, bundle: WorkerBundle): string {
  return `${variant} Worker bundle: ${(bundle.raw / 1024).toFixed(1)} KiB raw, ${(bundle.gzip / 1024).toFixed(1)} KiB gzip`;
}
