// Summarises V8 .cpuprofile files: top N functions by self time, then the plantgate functions
// (packages/*) by inclusive time, which says which of our calls the self time comes from. Usage:
//   tsx bench/src/profile-summary.ts <file-or-dir> [N]
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function files(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((name) => files(join(path, name))).filter((f) => f.endsWith(".cpuprofile"));
}

function shortUrl(url: string): string {
  const pnpm = url.lastIndexOf("node_modules/");
  if (pnpm >= 0) return url.slice(pnpm + "node_modules/".length);
  return url.startsWith("file://") ? relative(process.cwd(), url.slice(7)) : url || "(native)";
}

const [target, n = "15"] = process.argv.slice(2);
if (!target) {
  console.error("usage: profile-summary <file-or-dir> [N]");
  process.exit(2);
}
for (const file of files(target)) {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || "(anonymous)"}  ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ""}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  });
  console.log(`\n${file}  (${(total / 1000).toFixed(0)} ms sampled)`);
  const top = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(n));
  console.log("self time:");
  for (const [key, us] of top) console.log(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`);

  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const inclusive = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
      // Our code: the workspace sources, or the bench's esbuild bundle of them.
      if (!url.includes("/packages/") && !url.includes("/.build/")) continue;
      const key = `${functionName || "(anonymous)"}  ${shortUrl(url)}:${lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + dt);
    }
  });
  console.log("plantgate functions, inclusive (synchronous part of each call):");
  for (const [key, us] of [...inclusive.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(n))) {
    console.log(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`);
  }
}
