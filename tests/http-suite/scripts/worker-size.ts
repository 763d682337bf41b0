// `pnpm worker-size`: the size of the minified Worker bundles (raw and gzip), minimal and full,
// then what weighs most in the minimal one (bytes each package contributes before gzip).
import { bundleWorker, sizeLine, type WorkerBundle } from "../src/bundle-worker.js";

const minimal = await bundleWorker("minimal");
const full = await bundleWorker("full");
console.log(sizeLine("minimal", minimal));
console.log(sizeLine("full", full));

function byPackage(bundle: WorkerBundle): [string, number][] {
  const totals = new Map<string, number>();
  for (const output of Object.values(bundle.metafile.outputs)) {
    for (const [file, { bytesInOutput }] of Object.entries(output.inputs)) {
      const pkg = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1] ?? /^(?:\.\.\/)*packages\/([^/]+)\/(src\/[^/]+)?/.exec(file)?.slice(1).join(" ") ?? file;
      totals.set(pkg, (totals.get(pkg) ?? 0) + bytesInOutput);
    }
  }
  return [...totals].sort((a, b) => b[1] - a[1]);
}

console.log("\nminimal Worker, minified bytes by source (before gzip):");
for (const [name, bytes] of byPackage(minimal).slice(0, 12)) console.log(`  ${(bytes / 1024).toFixed(1).padStart(7)} KiB  ${name}`);
