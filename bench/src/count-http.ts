// Instructions per client-credentials request over real sockets: the bench's own plantgate server
// (src/servers/plantgate.ts, bundled as for `pnpm bench`) runs under valgrind's callgrind and is
// driven over kept-alive HTTP connections from this process; after the warm-up the counters are
// zeroed (`callgrind_control -z`), after the counted requests dumped (`-d`), so the count holds the
// counted requests and nothing else (no start-up, no warm-up). Unlike count.ts (the app in
// process) it includes node:http, the sockets' system-call wrappers, the timers and the event
// loop: everything the server's CPU does for a request but the kernel's side. Usage:
//   tsx bench/src/count-http.ts plain,observed [warm-up = 12000] [counted = 4000] [connections = 32]
// Variants: plain | observed | events | observer | noop | none (as BENCH_OBSERVE_PART). Variants run
// two at a time. Printed: instructions a request, the same without the optimizing compiler and
// the garbage collector (both run when V8 decides, so they move by 10,000-20,000 a request from
// one run to the next and hide a small difference), the groups, and the JavaScript functions
// (named from `--perf-basic-prof`'s map) that differ most from the first variant.
// BENCH_COUNT_KEEP=1 keeps the callgrind files and maps.
import { execFileSync, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parsePerfMap, selfCosts, summarize } from "./callgrind.js";
import { BENCH_DIR, buildServer } from "./proc.js";
import { BASIC_AUTH } from "./shared.js";

const [variantList = "plain,observed", warmArg = "12000", countedArg = "4000", connectionsArg = "32"] = process.argv.slice(2);
const VARIANTS = ["plain", "observed", "events", "observer", "noop", "none"];
const variants = variantList.split(",");
const warm = Number(warmArg);
const counted = Number(countedArg);
const connections = Number(connectionsArg);
if (variants.some((v) => !VARIANTS.includes(v)) || !(warm >= 0) || !(counted > 0) || !(connections > 0)) {
  process.stderr.write(`usage: count-http.ts ${VARIANTS.join("|")}[,...] [warm-up] [counted] [connections]\n`);
  process.exit(2);
}
for (const tool of ["valgrind", "callgrind_control"]) {
  try {
    execFileSync(tool, ["--version"], { stdio: "ignore" });
  } catch {
    process.stderr.write(`${tool} is not installed (apt-get install -y valgrind)\n`);
    process.exit(2);
  }
}

const server = await buildServer("plantgate.ts");
/** BENCH_COUNT_CACHE=1: callgrind also simulates the caches (slower); the misses a request are printed. */
const CACHE_SIM = process.env.BENCH_COUNT_CACHE === "1";
const dir = mkdtempSync(join(tmpdir(), "plantgate-count-http-"));
const body = "grant_type=client_credentials";

/** `total` requests over `agent`'s connections, `connections` in flight; each must answer 200. */
async function drive(port: number, agent: Agent, total: number): Promise<void> {
  let left = total;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const headers = { authorization: BASIC_AUTH, "content-type": "application/x-www-form-urlencoded", "content-length": String(body.length) };
      const req = request({ host: "127.0.0.1", port, path: "/UserService/connect/token", method: "POST", agent, headers }, (res) => {
        res.resume();
        res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on("error", reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (left-- > 0) await one();
    }),
  );
}

interface Counted {
  variant: string;
  perRequest: number;
  groups: Map<string, number>;
  js: Map<string, number>;
  /** Every event callgrind counted (Ir, and with BENCH_COUNT_CACHE the cache misses), a request. */
  events: Map<string, number>;
}

async function count(variant: string): Promise<Counted> {
  const out = join(dir, `${variant}.callgrind`);
  const stdout = join(dir, `${variant}.stdout`);
  const env: Record<string, string> = { ...process.env, NODE_ENV: "production", BENCH_STORE: "memory", BENCH_SEED_ACCOUNTS: "200" } as Record<string, string>;
  if (variant !== "plain") env.BENCH_OBSERVE = "1";
  if (variant !== "plain" && variant !== "observed") env.BENCH_OBSERVE_PART = variant;
  const fd = openSync(stdout, "w");
  // --predictable: V8 compiles and collects on the main thread and takes no timing-dependent decisions.
  const args = ["--tool=callgrind", ...(CACHE_SIM ? ["--cache-sim=yes"] : []), "--compress-strings=no", `--callgrind-out-file=${out}`, "node", "--perf-basic-prof", "--predictable", "--hash-seed=7", "--random-seed=7", server];
  const child = spawn("valgrind", args, { cwd: BENCH_DIR, env, stdio: ["ignore", fd, "pipe"] });
  closeSync(fd);
  let err = "";
  child.stderr!.on("data", (chunk: Buffer) => (err = (err + chunk.toString("utf8")).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    let port = 0;
    for (let waited = 0; port === 0; waited += 250) {
      if (child.exitCode !== null || waited > 300_000) throw new Error(`${variant}: the server did not start\n${err}`);
      await new Promise((r) => setTimeout(r, 250));
      const ready = /^READY (.*)\n/m.exec(readFileSync(stdout, "utf8"));
      if (ready) port = (JSON.parse(ready[1]!) as { port: number }).port;
    }
    const agent = new Agent({ keepAlive: true, maxSockets: connections });
    await drive(port, agent, warm);
    execFileSync("callgrind_control", ["-z", String(child.pid)], { stdio: "ignore" });
    await drive(port, agent, counted);
    execFileSync("callgrind_control", ["-d", "counted", String(child.pid)], { stdio: "ignore" });
    agent.destroy();
    // The dump of `-d` is `<out>.1` (the final one, at exit, is `<out>`).
    const dump = readdirSync(dir).find((f) => f.startsWith(`${variant}.callgrind.`) && /Trigger: .*counted/.test(readFileSync(join(dir, f), "utf8").slice(0, 2000)));
    if (dump === undefined) throw new Error(`${variant}: no dump after the counted requests`);
    const text = readFileSync(join(dir, dump), "utf8");
    const costs = selfCosts(text);
    const names = /^events: (.*)$/m.exec(text)?.[1]?.split(" ") ?? [];
    const sums = /^(?:summary|totals): (.*)$/m.exec(text)?.[1]?.split(" ").map(Number) ?? [];
    const events = new Map(names.map((name, i) => [name, (sums[i] ?? 0) / counted]));
    const map = parsePerfMap(readFileSync(`/tmp/perf-${child.pid}.map`, "utf8"));
    const { groups, js, total } = summarize(costs, map);
    const per = (m: Map<string, number>) => new Map([...m].map(([k, v]) => [k, v / counted]));
    return { variant, perRequest: total / counted, groups: per(groups), js: per(js), events };
  } finally {
    child.kill("SIGTERM");
    await exited;
    if (process.env.BENCH_COUNT_KEEP !== "1") rmSync(`/tmp/perf-${child.pid}.map`, { force: true });
  }
}

const results: Counted[] = [];
try {
  for (let i = 0; i < variants.length; i += 2) results.push(...(await Promise.all(variants.slice(i, i + 2).map(count))));
} finally {
  if (process.env.BENCH_COUNT_KEEP === "1") process.stdout.write(`callgrind output kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US").padStart(10);
const steady = (r: Counted) => r.perRequest - (r.groups.get("optimizing compiler") ?? 0) - (r.groups.get("garbage collector") ?? 0);
const first = results[0]!;
process.stdout.write(`instructions a request (${counted} counted after ${warm}, ${connections} connections)\n`);
process.stdout.write(`${"".padEnd(28)}${results.map((r) => r.variant.padStart(10)).join("")}\n`);
process.stdout.write(`${"all".padEnd(28)}${results.map((r) => fmt(r.perRequest)).join("")}\n`);
process.stdout.write(`${"without compiler and GC".padEnd(28)}${results.map((r) => fmt(steady(r))).join("")}\n`);
if (CACHE_SIM) {
  process.stdout.write("callgrind's events a request (cache misses simulated):\n");
  for (const name of first.events.keys()) process.stdout.write(`  ${name.padEnd(26)}${results.map((r) => fmt(r.events.get(name) ?? 0)).join("")}\n`);
}
const groupNames = [...new Set(results.flatMap((r) => [...r.groups.keys()]))].sort();
for (const g of groupNames) process.stdout.write(`  ${g.padEnd(26)}${results.map((r) => fmt(r.groups.get(g) ?? 0)).join("")}\n`);
for (const r of results.slice(1)) {
  process.stdout.write(`${r.variant} / ${first.variant}: ${(r.perRequest / first.perRequest).toFixed(3)}x, without compiler and GC ${(steady(r) / steady(first)).toFixed(3)}x\n`);
  const names = new Set([...first.js.keys(), ...r.js.keys()]);
  const diffs = [...names].map((n) => [n, (r.js.get(n) ?? 0) - (first.js.get(n) ?? 0)] as const).sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
  process.stdout.write(`  JavaScript functions that differ most (${r.variant} - ${first.variant}):\n`);
  for (const [name, d] of diffs.slice(0, 15)) process.stdout.write(`  ${fmt(d)}  ${name}\n`);
}
