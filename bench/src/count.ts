// Instructions per request, counted by valgrind's callgrind: the same total for the same run
// whatever else the machine does, so an A/B of a small change reads on a busy shared machine where
// req/s moves by 20% between runs. Runs the bundled in-process driver (src/servers/count-driver.ts)
// under callgrind twice per variant, with `low` and `high` counted requests after the same warm-up,
// and divides the difference of the totals by the difference of the counts. Usage:
//   tsx bench/src/count.ts cc plain,observed [warm-up = 3000] [low = 500] [high = 4000]
//   tsx bench/src/count.ts refresh memory,sqlite 10000 500 2500
// Each count of one build moves by up to ~20,000 instructions a request between runs (a garbage
// collection more or less inside the counted part); use long warm-ups (optimizing compilation
// still running counts too) and compare variants of one run. Under valgrind node runs about 50x
// slower: a cc count of 4,000 takes about a minute, a refresh count of 12,500 several.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildServer } from "./proc.js";

const [workload = "cc", variantList = "plain,observed", warm = "3000", low = "500", high = "4000"] = process.argv.slice(2);

try {
  execFileSync("valgrind", ["--version"], { stdio: "ignore" });
} catch {
  process.stderr.write("valgrind is not installed (apt-get install -y valgrind)\n");
  process.exit(2);
}

const driver = await buildServer("count-driver.ts");
const dir = mkdtempSync(join(tmpdir(), "plantgate-count-"));

/** callgrind's total instruction count for one run of the driver. */
function count(variant: string, counted: string): Promise<number> {
  const out = join(dir, `${variant}-${counted}.callgrind`);
  // --predictable: V8 compiles on the main thread and takes no timing-dependent decisions; fixed
  // seeds for its hash tables and Math.random.
  const args = ["--tool=callgrind", `--callgrind-out-file=${out}`, "node", "--predictable", "--hash-seed=7", "--random-seed=7", driver, workload, variant, warm, counted];
  return new Promise((resolve, reject) => {
    const child = spawn("valgrind", args, { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (chunk: Buffer) => (err = (err + chunk.toString("utf8")).slice(-4000)));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`${variant} ${counted}: exit ${code}\n${err}`));
      const total = /^summary: (\d+)$/m.exec(readFileSync(out, "utf8"))?.[1];
      if (total === undefined) return reject(new Error(`${variant} ${counted}: no summary line in ${out}`));
      resolve(Number(total));
    });
  });
}

const perRequest: Record<string, number> = {};
try {
  for (const variant of variantList.split(",")) {
    // The two counts of a variant run side by side (2 cores); instruction counts do not mind.
    const [a, b] = await Promise.all([count(variant, low), count(variant, high)]);
    perRequest[variant] = (b - a) / (Number(high) - Number(low));
    process.stdout.write(`${workload} ${variant}: ${Math.round(perRequest[variant]).toLocaleString("en-US")} instructions a request\n`);
  }
  const [first, ...rest] = Object.keys(perRequest);
  for (const variant of rest) {
    process.stdout.write(`${first} / ${variant}: ${(perRequest[first!]! / perRequest[variant]!).toFixed(3)}x\n`);
  }
} finally {
  // BENCH_COUNT_KEEP=1 keeps the callgrind files for callgrind_annotate (per function, per object file).
  if (process.env.BENCH_COUNT_KEEP === "1") process.stdout.write(`callgrind output kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}
