// `pnpm bench [--quick]`: plantgate side by side with a bare node:http server,
// @node-oauth/oauth2-server and oidc-provider, then the memory check and paging (PostgreSQL, SQLite).
// See the README's "Performance" section for what each row means.
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshFleetStore, REDIS_URL, redisReachable } from "./fleet.js";
import { measureHashCost, type HashCost } from "./hash-cost.js";
import { ENGINE_LABEL, measurePaging, postgresReachable, type PagingEngine, type PagingResult } from "./paging.js";
import { prepareBaseline } from "./baseline.js";
import { BENCH_DIR, startServer, tools, type ServerProcess } from "./proc.js";
import { BASIC_AUTH, DEFAULT_BENCH_ITERATIONS, PASSWORD, username, USERS } from "./shared.js";
import { errorCount, runWrk, type WrkResult } from "./wrk.js";

const quick = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1";
const iterations = Number(process.env.BENCH_ITERATIONS ?? DEFAULT_BENCH_ITERATIONS);
const PG_URL = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const settings = quick
  ? { warmup: 1, rounds: 2, seconds: 2, connections: 32, memoryTotal: 100_000, memoryCheckpoint: 10_000, pagingAccounts: 100_000, pagingSamples: 11 }
  : { warmup: 2, rounds: 3, seconds: 2, connections: 32, memoryTotal: 1_000_000, memoryCheckpoint: 100_000, pagingAccounts: 1_000_000, pagingSamples: 25 };
const only = process.env.BENCH_ONLY?.split(",");
// BENCH_CONTENDERS=<id,...> (or BENCH_SERVERS): only these servers in the workload rows (ids as
// in CONTENDERS below, a baseline's as `<id>Baseline`); the bare row stays, "x bare" divides by it.
const onlyContenders = (process.env.BENCH_CONTENDERS ?? process.env.BENCH_SERVERS)?.split(",");
// The memory check's length is bounded by plantgate's own throughput; BENCH_MEMORY_REQUESTS
// shortens it (the checkpoint stays at a tenth) when a run must fit a time box.
// BENCH_WARMUP=<seconds>: the warm-up each server gets alone before its measured rounds.
if (process.env.BENCH_WARMUP) settings.warmup = Number(process.env.BENCH_WARMUP);
if (process.env.BENCH_MEMORY_REQUESTS) {
  settings.memoryTotal = Number(process.env.BENCH_MEMORY_REQUESTS);
  settings.memoryCheckpoint = Math.floor(settings.memoryTotal / 10);
}

const versions = (JSON.parse(readFileSync(join(BENCH_DIR, "package.json"), "utf8")) as { devDependencies: Record<string, string> }).devDependencies;
const FORM = "application/x-www-form-urlencoded";
const PLANTGATE_TOKEN = "/UserService/connect/token";
const LIST_PATH = "/rbac/ServerCommand/GetAccountList?page=1&pageSize=20";

type Workload = "baseline" | "cc" | "password" | "refresh" | "list" | "plants";
const WORKLOAD_LABEL: Record<Workload, string> = {
  baseline: "fixed JSON (POST, form body)",
  cc: "client credentials",
  password: `password grant (${USERS} users, PBKDF2 ${iterations.toLocaleString("en-US")} it.)`,
  refresh: "refresh grant (rotating)",
  list: "GetAccountList (bearer)",
  plants: "POST /plants (bearer)",
};

interface Contender {
  id: string;
  label: string;
  entry: string;
  env: () => Record<string, string>;
  tokenPath: string;
  ccBody: string;
  /** Password-grant body after `username=...`: the password and any scope. */
  passwordRest: string;
  /** Whether each started process needs a fresh SQLite file. */
  sqlite?: boolean;
  /** Whether each started process needs a fresh PostgreSQL schema (and, with `redis`, a Redis key prefix beside it). */
  postgres?: { redis: boolean };
  /** Another checkout's bench folder (a BENCH_BASELINE row); this checkout's when absent. */
  benchDir?: string;
}

const o2sBase = { entry: "oauth2-server.ts", tokenPath: "/token", ccBody: "grant_type=client_credentials", passwordRest: `&password=${PASSWORD}` };
const plantgateBase = {
  entry: "plantgate.ts",
  tokenPath: PLANTGATE_TOKEN,
  ccBody: "grant_type=client_credentials",
  passwordRest: `&password=${PASSWORD}&scope=Platform_UserAPIs%20offline_access`,
};
const CONTENDERS: Record<string, Contender> = {
  bare: { id: "bare", label: "bare node:http", entry: "bare.ts", env: () => ({}), tokenPath: "/", ccBody: "grant_type=client_credentials", passwordRest: "" },
  bareJwt: { id: "bareJwt", label: "bare node:http + one ES256 JWT (batched)", entry: "bare-jwt.ts", env: () => ({}), tokenPath: "/", ccBody: "grant_type=client_credentials", passwordRest: "" },
  o2sOpaque: { id: "o2sOpaque", label: `oauth2-server ${versions["@node-oauth/oauth2-server"]} (opaque)`, ...o2sBase, env: () => ({ BENCH_TOKENS: "opaque" }) },
  o2sJwt: { id: "o2sJwt", label: `oauth2-server ${versions["@node-oauth/oauth2-server"]} (JWT ES256)`, ...o2sBase, env: () => ({ BENCH_TOKENS: "jwt" }) },
  oidc: {
    id: "oidc",
    label: `oidc-provider ${versions["oidc-provider"]} (JWT ES256)`,
    entry: "oidc-provider.ts",
    env: () => ({}),
    tokenPath: "/token",
    ccBody: "grant_type=client_credentials&scope=api",
    passwordRest: "",
  },
  pgMemory: { id: "pgMemory", label: "plantgate, memory store", ...plantgateBase, env: () => ({ BENCH_STORE: "memory", BENCH_SEED_ACCOUNTS: "200" }) },
  pgMemoryObserved: {
    id: "pgMemoryObserved",
    label: "plantgate, memory store + events, logs, metrics",
    ...plantgateBase,
    env: () => ({ BENCH_STORE: "memory", BENCH_SEED_ACCOUNTS: "200", BENCH_OBSERVE: "1" }),
  },
  // The observed row's own "off" twin, measured at the same time as it (see PAIRED, SIMULTANEOUS).
  pgMemoryObservedOff: {
    id: "pgMemoryObservedOff",
    label: "plantgate, memory store (observability off, under load at the same time as the row below: each has half the server CPU)",
    ...plantgateBase,
    env: () => ({ BENCH_STORE: "memory", BENCH_SEED_ACCOUNTS: "200" }),
  },
  // Memory-store twins of the rows whose issue 22 target is a ratio to the memory store (see PAIRED).
  pgSqliteMemoryTwin: {
    id: "pgSqliteMemoryTwin",
    label: "plantgate, memory store (twin of the SQLite row, alternating with it)",
    ...plantgateBase,
    env: () => ({ BENCH_STORE: "memory", BENCH_SEED_ACCOUNTS: "200" }),
  },
  pgPostgresRedisMemoryTwin: {
    id: "pgPostgresRedisMemoryTwin",
    label: "plantgate, memory store (twin of the PostgreSQL + Redis row, alternating with it)",
    ...plantgateBase,
    env: () => ({ BENCH_STORE: "memory", BENCH_SEED_ACCOUNTS: "200" }),
  },
  pgSqlite: { id: "pgSqlite", label: "plantgate, SQLite", ...plantgateBase, sqlite: true, env: () => ({ BENCH_STORE: "sqlite", BENCH_SEED_ACCOUNTS: "200" }) },
  pgPostgres: { id: "pgPostgres", label: "plantgate, PostgreSQL", ...plantgateBase, postgres: { redis: false }, env: () => ({ BENCH_SEED_ACCOUNTS: "200" }) },
  pgPostgresRedis: { id: "pgPostgresRedis", label: "plantgate, PostgreSQL + Redis", ...plantgateBase, postgres: { redis: true }, env: () => ({ BENCH_SEED_ACCOUNTS: "200" }) },
};

/** `BENCH_ONLY=observe`: only the two rows of the observability cost (client credentials, memory store, off and on). */
const OBSERVE_ROWS = ["pgMemory", "pgMemoryObserved"];

/**
 * Rows measured with a twin (both servers up, in alternating ABBA rounds or, for SIMULTANEOUS, at
 * the same time; BENCH_BASELINE_ROUNDS rounds, default 7; the ratio is the median of the per-round
 * ratios, see Row.pairRatio), because their target is a ratio of the two: a change in the
 * machine's load during the run then falls on both alike. The observability cost is a 5% question; rows measured one
 * after the other on a shared 2-core machine differed by more than that between runs.
 */
const PAIRED: Record<string, string> = {
  pgMemoryObserved: "pgMemoryObservedOff",
  // Issue 22's ratios to the memory store: rows measured apart moved by 20-40% between runs.
  pgSqlite: "pgSqliteMemoryTwin",
  pgPostgresRedis: "pgPostgresRedisMemoryTwin",
};

/**
 * Pairs measured at the same time rather than in alternating rounds: both servers pinned to the
 * one server CPU, each under its own wrk (on the other CPU) for the same seconds, so the kernel's
 * scheduler gives each half the core and whatever else the machine does falls on both within the
 * same milliseconds. Their throughput ratio is then the ratio of their CPU cost per request. Only
 * for the observability pair: its target is exactly that ratio, both servers are the same code on
 * the memory store with nothing to wait for, and alternating 2-second rounds of it moved by up to
 * 20% from one round to the next on this machine (per-round ratios 0.78-1.19 in one run). Not for
 * the SQLite twins: a server that gets the core in slices batches more commits per turn, which
 * would flatter SQLite, and its checkpoint thread competes for the same core.
 */
const SIMULTANEOUS = new Set(["pgMemoryObserved"]);

// oidc-provider has no password grant, and only issues refresh tokens from the authorization code
// flow; only plantgate has the account and plant APIs. Those cells are left out, not faked.
const PLAN: Array<[Workload, string[]]> = [
  ["baseline", ["bare"]],
  ["cc", ["bareJwt", "o2sOpaque", "o2sJwt", "oidc", "pgMemory", "pgMemoryObserved", "pgSqlite", "pgPostgres", "pgPostgresRedis"]],
  ["password", ["o2sOpaque", "o2sJwt", "pgMemory", "pgSqlite", "pgPostgres", "pgPostgresRedis"]],
  ["refresh", ["o2sOpaque", "o2sJwt", "pgMemory", "pgSqlite", "pgPostgres", "pgPostgresRedis"]],
  ["list", ["pgMemory", "pgSqlite", "pgPostgres", "pgPostgresRedis"]],
  ["plants", ["pgMemory", "pgSqlite", "pgPostgres", "pgPostgresRedis"]],
];

// BENCH_BASELINE=<git ref>: each plantgate contender named in BENCH_BASELINE_STORES (default
// pgMemory) runs a second time from that commit, right after this checkout's row, so a change's
// A/B comes from one run on one machine state.
const baselineRef = process.env.BENCH_BASELINE;
const baselineOf: Record<string, string> = {};
const baseline = baselineRef ? prepareBaseline(baselineRef, (line) => process.stderr.write(`${line}\n`)) : null;
if (baseline) {
  for (const id of (process.env.BENCH_BASELINE_STORES ?? "pgMemory").split(",").filter(Boolean)) {
    const c = CONTENDERS[id];
    if (!c || c.entry !== "plantgate.ts") throw new Error(`BENCH_BASELINE_STORES: ${id} is not a plantgate contender`);
    const baseId = `${id}Baseline`;
    CONTENDERS[baseId] = { ...c, id: baseId, label: `${c.label} @ ${baseline.commit} (baseline)`, benchDir: baseline.benchDir };
    baselineOf[id] = baseId;
    for (const [, ids] of PLAN) {
      const at = ids.indexOf(id);
      if (at >= 0) ids.splice(at + 1, 0, baseId);
    }
  }
}

interface Row {
  workload: Workload;
  contender: Contender;
  rps: number;
  p50ms: number;
  p99ms: number;
  peakRssMb: number;
  errors: number;
  requests: number;
  /** Server CPU time (user + system) per request, median of the rounds: stays meaningful on a busy machine. */
  cpuUsPerRequest: number;
  /**
   * Paired rows only (the second of a pair): the median over the rounds of this row's req/s divided
   * by its twin's in the same round. Each round runs the two back to back, so a burst of load on the
   * machine (this 2-core VM's neighbours) falls on one round's pair alike and the median drops the
   * rounds it skewed; the ratio of the two medians mixes rounds run minutes apart.
   */
  pairRatio?: { value: number; rounds: number[]; partnerRps: number };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const log = (line: string) => process.stderr.write(`${line}\n`);

const tempDirs: string[] = [];
function freshSqliteFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "plantgate-bench-"));
  tempDirs.push(dir);
  return join(dir, "bench.db");
}

async function post(url: string, body: string, authorization: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(url, { method: "POST", headers: { authorization, "content-type": FORM }, body });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

async function bearerFor(server: ServerProcess, c: Contender): Promise<string> {
  const { status, json } = await post(server.baseUrl + c.tokenPath, c.ccBody, BASIC_AUTH);
  if (status !== 200 || typeof json.access_token !== "string") throw new Error(`${c.label}: client credentials failed (${status})`);
  return `Bearer ${json.access_token}`;
}

/** A pool of fresh refresh tokens (two per connection), issued by the password grant before a run. */
async function refreshSeeds(server: ServerProcess, c: Contender, n: number): Promise<string> {
  const tokens: string[] = [];
  for (let i = 0; i < n; i += 8) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(8, n - i) }, (_, j) => post(server.baseUrl + c.tokenPath, `grant_type=password&username=${username(i + j)}${c.passwordRest}`, BASIC_AUTH)),
    );
    for (const { status, json } of batch) {
      if (status !== 200 || typeof json.refresh_token !== "string") throw new Error(`${c.label}: password grant gave no refresh token (${status})`);
      tokens.push(json.refresh_token);
    }
  }
  const dir = mkdtempSync(join(tmpdir(), "plantgate-bench-seeds-"));
  tempDirs.push(dir);
  const file = join(dir, "seeds.txt");
  writeFileSync(file, tokens.join("\n") + "\n");
  return file;
}

let idBase = 0;
/** Builds one wrk run of a workload; async because some runs need fresh material (seeds, ids). */
async function wrkRun(workload: Workload, c: Contender, server: ServerProcess, bearer: string, seconds: number): Promise<WrkResult> {
  const base = { seconds, connections: settings.connections };
  switch (workload) {
    case "baseline":
    case "cc":
      return runWrk({ ...base, url: server.baseUrl + c.tokenPath, script: "static.lua", env: { BENCH_METHOD: "POST", BENCH_BODY: c.ccBody, BENCH_CTYPE: FORM, BENCH_AUTH: BASIC_AUTH } });
    case "password":
      return runWrk({
        ...base,
        url: server.baseUrl + c.tokenPath,
        script: "password.lua",
        env: { BENCH_PATH: c.tokenPath, BENCH_AUTH: BASIC_AUTH, BENCH_USERS: String(USERS), BENCH_BODY: c.passwordRest },
      });
    case "refresh": {
      const seeds = await refreshSeeds(server, c, settings.connections * 2);
      return runWrk({ ...base, url: server.baseUrl + c.tokenPath, script: "refresh.lua", env: { BENCH_PATH: c.tokenPath, BENCH_AUTH: BASIC_AUTH, BENCH_SEEDS: seeds } });
    }
    case "list":
      return runWrk({ ...base, url: server.baseUrl + LIST_PATH, script: "static.lua", env: { BENCH_METHOD: "GET", BENCH_AUTH: bearer } });
    case "plants":
      idBase += 10_000_000_000;
      return runWrk({ ...base, url: server.baseUrl + "/plants", script: "plants.lua", env: { BENCH_PATH: "/plants", BENCH_AUTH: bearer, BENCH_ID_BASE: String(idBase) } });
  }
}

/** A contender's server for one workload, started on its own fresh store. */
async function startContender(workload: Workload, c: Contender): Promise<{ server: ServerProcess; bearer: string; stop: () => Promise<void> }> {
  const env: Record<string, string> = { BENCH_ITERATIONS: String(iterations), ...c.env() };
  if (c.sqlite) env.BENCH_DB_URL = freshSqliteFile();
  const fleet = c.postgres ? await freshFleetStore(PG_URL, c.postgres.redis) : null;
  Object.assign(env, fleet?.env);
  const server = await startServer(c.entry, env, undefined, `${workload}-${c.id}`, [], c.benchDir).catch(async (error: unknown) => {
    await fleet?.drop();
    throw error;
  });
  const stop = async () => {
    await server.stop();
    await fleet?.drop();
  };
  try {
    const bearer = workload === "list" || workload === "plants" ? await bearerFor(server, c) : "";
    return { server, bearer, stop };
  } catch (error) {
    await stop();
    throw new Error(`${c.label} / ${workload}: ${(error as Error).message}\n${server.stderr()}`);
  }
}

function toRow(workload: Workload, c: Contender, peakRssKb: number, runs: WrkResult[], cpuUs: number[]): Row {
  const row: Row = {
    workload,
    contender: c,
    rps: median(runs.map((r) => r.rps)),
    p50ms: median(runs.map((r) => r.p50_us)) / 1000,
    p99ms: median(runs.map((r) => r.p99_us)) / 1000,
    peakRssMb: peakRssKb / 1024,
    errors: runs.reduce((n, r) => n + errorCount(r), 0),
    requests: runs.reduce((n, r) => n + r.requests, 0),
    cpuUsPerRequest: median(cpuUs),
  };
  log(`  ${WORKLOAD_LABEL[workload].padEnd(46)} ${c.label.padEnd(34)} ${row.rps.toFixed(0).padStart(7)} req/s  p50 ${row.p50ms.toFixed(2)} ms  p99 ${row.p99ms.toFixed(2)} ms  RSS ${row.peakRssMb.toFixed(0)} MB  CPU ${row.cpuUsPerRequest.toFixed(0)} µs/req${row.errors ? `  ERRORS ${row.errors}` : ""}`);
  return row;
}

/** One timed round: its wrk result into `runs`, the server's CPU µs per request into `cpuUs`. */
async function timedRun(workload: Workload, c: Contender, server: ServerProcess, bearer: string, runs: WrkResult[], cpuUs: number[]): Promise<void> {
  const cpu0 = server.cpuMs();
  const run = await wrkRun(workload, c, server, bearer, settings.seconds);
  runs.push(run);
  cpuUs.push(run.requests > 0 ? ((server.cpuMs() - cpu0) * 1000) / run.requests : NaN);
}

async function measure(workload: Workload, c: Contender): Promise<Row> {
  const { server, bearer, stop } = await startContender(workload, c);
  try {
    await wrkRun(workload, c, server, bearer, settings.warmup);
    const runs: WrkResult[] = [];
    const cpuUs: number[] = [];
    for (let i = 0; i < settings.rounds; i++) await timedRun(workload, c, server, bearer, runs, cpuUs);
    return toRow(workload, c, server.memoryKb("VmHWM"), runs, cpuUs);
  } catch (error) {
    throw new Error(`${c.label} / ${workload}: ${(error as Error).message}\n${server.stderr()}`);
  } finally {
    await stop();
  }
}

/**
 * A contender and its twin or baseline, both servers up at once and measured in alternating rounds
 * (this checkout, baseline, baseline, this checkout, ...; BENCH_BASELINE_ROUNDS of them, default 7), so a
 * change in the machine's load during the run falls on both alike: one under load at a time, or
 * both at once for the pairs in SIMULTANEOUS.
 */
async function measurePair(workload: Workload, a: Contender, b: Contender): Promise<Row[]> {
  const simultaneous = SIMULTANEOUS.has(b.id) || SIMULTANEOUS.has(a.id);
  // A SIMULTANEOUS pair runs on BENCH_PAIR_PROCESSES fresh pairs of server processes (default 4,
  // so each side is started first as often as the other: with 3, in five of seven observe runs the
  // one pair of three that started the observed server first read lowest),
  // the twin started first in one and second in the next: A/A runs of one fresh pair read anywhere
  // from 0.98 to 1.02 (what each process's compiled code and heap happen to be), more than the
  // spread of the rounds within one pair.
  const processes = simultaneous ? Number(process.env.BENCH_PAIR_PROCESSES ?? 4) : 1;
  const sides = [
    { c: a, runs: [] as WrkResult[], cpuUs: [] as number[], peakKb: 0 },
    { c: b, runs: [] as WrkResult[], cpuUs: [] as number[], peakKb: 0 },
  ];
  const pairMedians: number[] = [];
  for (let p = 0; p < processes; p++) {
    const order = p % 2 === 0 ? sides : [...sides].reverse();
    const up: Array<Awaited<ReturnType<typeof startContender>>> = [];
    try {
      for (const side of order) up.push(await startContender(workload, side.c));
      const running = order.map((side, i) => ({ side, ...up[i]! }));
      for (const r of running) await wrkRun(workload, r.side.c, r.server, r.bearer, settings.warmup);
      const rounds = Number(process.env.BENCH_BASELINE_ROUNDS ?? 7);
      const start = sides.map((side) => side.runs.length);
      // ABBA: the side that runs second in a round ran slower in A/A checks on this machine (the same
      // server twice: 5-10% apart), so each round swaps the order.
      const inPairOrder = sides.map((side) => running.find((r) => r.side === side)!);
      for (let i = 0; i < rounds; i++) {
        if (simultaneous) await Promise.all(inPairOrder.map((r) => timedRun(workload, r.side.c, r.server, r.bearer, r.side.runs, r.side.cpuUs)));
        else for (const r of i % 2 === 0 ? inPairOrder : [...inPairOrder].reverse()) await timedRun(workload, r.side.c, r.server, r.bearer, r.side.runs, r.side.cpuUs);
      }
      for (const r of running) r.side.peakKb = Math.max(r.side.peakKb, r.server.memoryKb("VmHWM"));
      const these = sides[1]!.runs.slice(start[1]).map((run, i) => run.rps / sides[0]!.runs[start[0]! + i]!.rps);
      pairMedians.push(median(these));
    } finally {
      for (const u of up) await u.stop();
    }
  }
  const [rowA, rowB] = sides.map((side) => toRow(workload, side.c, side.peakKb, side.runs, side.cpuUs)) as [Row, Row];
  const perRound = sides[1]!.runs.map((run, i) => run.rps / sides[0]!.runs[i]!.rps);
  rowB.pairRatio = { value: median(perRound), rounds: perRound, partnerRps: rowA.rps };
  const each = processes > 1 ? `; per process pair ${pairMedians.map((r) => r.toFixed(3)).join(" ")}` : "";
  log(`    per-round ratio ${rowB.contender.id} / ${rowA.contender.id}${simultaneous ? " (both under load at once)" : ""}: median ${rowB.pairRatio.value.toFixed(3)} (${perRound.map((r) => r.toFixed(3)).join(" ")})${each}`);
  return [rowA, rowB];
}

interface MemoryCheck {
  store: string;
  checkpoint: number;
  total: number;
  rssCheckpointMb: number;
  rssEndMb: number;
  /** Live heap after a forced full GC (diagnostic: a leak grows it, a lazily sized heap does not). */
  heapCheckpointMb: number;
  heapEndMb: number;
  peakMb: number;
  rps: number;
  errors: number;
  /** 3-second slices in which not one response completed. */
  stalledSlices: number;
}

/**
 * One plantgate process on SQLite under a repeating mix of token, GetAccountList and POST /plants.
 * SQLite, because the memory store keeps every plant in the heap by design (it is for tests and
 * demos), so its RSS grows with the data, not with a leak; on SQLite the rows go to disk and
 * whatever the process still grows by is what the check is meant to catch.
 */
async function memoryCheck(): Promise<MemoryCheck> {
  const c = CONTENDERS.pgSqlite!;
  const server = await startServer(c.entry, { BENCH_ITERATIONS: String(iterations), ...c.env(), BENCH_DB_URL: freshSqliteFile() }, undefined, "memory", ["--expose-gc"]);
  try {
    const bearer = await bearerFor(server, c);
    const env = { BENCH_BASIC: BASIC_AUTH, BENCH_AUTH: bearer };
    const t0 = performance.now();
    let idBase = 9_000_000_000_000;
    // wrk's thread:stop() (lua) ends sending but not the run, so the requests go in short slices,
    // each told how many responses are still due: counts are exact, and at most a slice is idle.
    const sendExactly = async (count: number) => {
      const sum = { requests: 0, errors: 0, stalledSlices: 0 };
      let idle = 0;
      while (sum.requests < count) {
        idBase += 100_000_000;
        const r = await runWrk({ url: server.baseUrl, script: "mix.lua", seconds: 3, connections: settings.connections, env: { ...env, BENCH_ID_BASE: String(idBase), BENCH_LIMIT: String(count - sum.requests) } });
        if (r.requests === 0) {
          // A slice without one completed response is a stall worth reporting, not a harness error;
          // only a server that stays stuck for 30 s ends the check.
          sum.stalledSlices++;
          log(`  memory check: no response within a 3 s slice at ${sum.requests} requests (socket errors: connect ${r.errors_connect}, read ${r.errors_read}, write ${r.errors_write}, timeout ${r.errors_timeout})`);
          if (++idle >= 10) throw new Error(`memory check: the server answered nothing for 30 s after ${sum.requests} requests`);
        } else idle = 0;
        sum.requests += r.requests;
        sum.errors += errorCount(r);
      }
      return sum;
    };
    const first = await sendExactly(settings.memoryCheckpoint);
    const rssCheckpointMb = server.memoryKb("VmRSS") / 1024;
    const heapCheckpointMb = (await server.heapAfterGc()) / 1048576;
    log(`  memory check: ${first.requests} requests, RSS ${rssCheckpointMb.toFixed(1)} MB, live heap ${heapCheckpointMb.toFixed(1)} MB`);
    const rest = await sendExactly(settings.memoryTotal - first.requests);
    const seconds = (performance.now() - t0) / 1000;
    const rssEndMb = server.memoryKb("VmRSS") / 1024;
    const heapEndMb = (await server.heapAfterGc()) / 1048576;
    log(`  memory check: ${first.requests + rest.requests} requests, RSS ${rssEndMb.toFixed(1)} MB, live heap ${heapEndMb.toFixed(1)} MB`);
    return {
      store: "SQLite",
      checkpoint: first.requests,
      total: first.requests + rest.requests,
      rssCheckpointMb,
      rssEndMb,
      heapCheckpointMb,
      heapEndMb,
      peakMb: server.memoryKb("VmHWM") / 1024,
      rps: (first.requests + rest.requests) / seconds,
      errors: first.errors + rest.errors,
      stalledSlices: first.stalledSlices + rest.stalledSlices,
    };
  } finally {
    await server.stop();
  }
}

interface Target {
  name: string;
  value: string;
  pass: boolean | null;
}

/** Accounts of the small paging run, the reference for the deep pages of the large one. */
const PAGING_SMALL = 10_000;
const PAGING_P50_MS = 3;

function pagingTargets(paging: PagingResult[]): Target[] {
  const out: Target[] = [];
  for (const engine of ["postgres", "sqlite"] as PagingEngine[]) {
    const label = ENGINE_LABEL[engine];
    const large = paging.find((p) => p.engine === engine && p.accounts === settings.pagingAccounts && !p.baseline);
    const small = paging.find((p) => p.engine === engine && p.accounts === PAGING_SMALL && !p.baseline);
    const n = settings.pagingAccounts.toLocaleString("en-US");
    out.push(
      large
        ? {
            name: `${label}, ${n} accounts: page 1, middle and last page each p50 <= ${PAGING_P50_MS} ms`,
            value: [large.firstMs, large.middleMs, large.lastMs].map((l) => l.p50.toFixed(2)).join(" / ") + " ms",
            pass: Math.max(large.firstMs.p50, large.middleMs.p50, large.lastMs.p50) <= PAGING_P50_MS,
          }
        : { name: `${label} paging at ${n} accounts`, value: "not run", pass: null },
      large && small
        ? {
            name: `${label}: last page at ${n} accounts within 1.5x of page 1 at ${PAGING_SMALL.toLocaleString("en-US")} (p50)`,
            value: `${(large.lastMs.p50 / small.firstMs.p50).toFixed(2)}x`,
            pass: large.lastMs.p50 <= 1.5 * small.firstMs.p50,
          }
        : { name: `${label}: last page at ${n} vs page 1 at ${PAGING_SMALL.toLocaleString("en-US")}`, value: "not run", pass: null },
    );
  }
  return out;
}

function targets(rows: Row[], paging: PagingResult[], memory: MemoryCheck | null): Target[] {
  const rps = (w: Workload, id: string) => rows.find((r) => r.workload === w && r.contender.id === id)?.rps;
  /** A paired row's median per-round ratio to its twin (see Row.pairRatio), with the ratio of the medians beside it. */
  const pairRatio = (w: Workload, id: string): { value: number; rounds: number; text: string } | undefined => {
    const row = rows.find((r) => r.workload === w && r.contender.id === id);
    const twin = row && rows.find((r) => r.workload === w && r !== row && (r.contender.id === PAIRED[id] || baselineOf[r.contender.id] === id));
    if (!row?.pairRatio || !twin) return undefined;
    const { value, rounds } = row.pairRatio;
    return { value, rounds: rounds.length, text: `${value.toFixed(3)}x (median of ${rounds.length} round ratios; medians ${(row.rps / twin.rps).toFixed(3)}x)` };
  };
  const bare = rps("baseline", "bare");
  const ratio = (w: Workload, id: string, min: number, name: string): Target => {
    const v = rps(w, id);
    if (v === undefined || bare === undefined) return { name, value: "not run", pass: null };
    return { name, value: `${(v / bare).toFixed(2)}x bare`, pass: v / bare >= min };
  };
  const versus = (id: string, min: number, name: string): Target => {
    const mine = rps("cc", "pgMemory");
    const other = rps("cc", id);
    if (mine === undefined || other === undefined) return { name, value: "not run", pass: null };
    return { name, value: `${(mine / other).toFixed(2)}x`, pass: mine / other >= min };
  };
  /** Issue 22's targets: a store's req/s against the memory store's on the same workload. */
  const ofMemory = (w: Workload, id: string, min: number, name: string): Target => {
    const paired = pairRatio(w, id);
    if (paired !== undefined) return { name, value: paired.text, pass: paired.value >= min };
    const memoryRps = rps(w, PAIRED[id] ?? "pgMemory") ?? rps(w, "pgMemory");
    const v = rps(w, id);
    if (memoryRps === undefined || v === undefined) return { name, value: "not run", pass: null };
    return { name, value: `${(v / memoryRps).toFixed(2)}x`, pass: v / memoryRps >= min };
  };
  return [
    ratio("cc", "pgMemory", 0.35, "Client credentials (ES256 JWT), memory store >= 0.35x bare"),
    versus("o2sJwt", 2, "... and >= 2x oauth2-server issuing JWTs"),
    versus("oidc", 3, "... and >= 3x oidc-provider with JWTs"),
    ratio("cc", "pgSqlite", 0.3, "Client credentials on SQLite >= 0.30x bare"),
    ratio("list", "pgSqlite", 0.3, "GetAccountList (bearer) on SQLite >= 0.30x bare"),
    ratio("refresh", "pgSqlite", 0.2, "Refresh grant on SQLite >= 0.20x bare"),
    ((name: string): Target => {
      const paired = pairRatio("cc", "pgMemoryObserved");
      if (paired !== undefined) return { name, value: paired.text, pass: paired.value >= 0.95 };
      const off = rps("cc", "pgMemory");
      const on = rps("cc", "pgMemoryObserved");
      if (off === undefined || on === undefined) return { name, value: "not run", pass: null };
      return { name, value: `${(on / off).toFixed(3)}x`, pass: on / off >= 0.95 };
    })("Client credentials, memory store, with events + JSON logs + metrics >= 0.95x without"),
    ofMemory("cc", "pgSqlite", 0.9, "Client credentials on SQLite >= 0.90x the memory store"),
    ofMemory("list", "pgSqlite", 0.8, "GetAccountList (bearer) on SQLite >= 0.80x the memory store"),
    ofMemory("plants", "pgSqlite", 0.7, "POST /plants (bearer) on SQLite >= 0.70x the memory store"),
    ofMemory("refresh", "pgSqlite", 0.6, "Refresh grant on SQLite >= 0.60x the memory store"),
    ofMemory("cc", "pgPostgresRedis", 0.7, "Client credentials on PostgreSQL + Redis >= 0.70x the memory store"),
    ...Object.entries(baselineOf).flatMap(([id, baseId]) =>
      (["cc", "refresh", "list", "plants"] as Workload[]).flatMap((w): Target[] => {
        const now = rps(w, id);
        const before = rps(w, baseId);
        if (now === undefined || before === undefined) return [];
        const name = `${WORKLOAD_LABEL[w]}, ${CONTENDERS[id]!.label}: this checkout within 5% of ${baselineRef} (or faster)`;
        // The pair is (this checkout, baseline): its rounds hold baseline / this checkout, so the
        // target takes the median of their inverses (this checkout / baseline), round by round.
        const paired = rows.find((r) => r.workload === w && r.contender.id === baseId)?.pairRatio;
        if (paired !== undefined) {
          const value = median(paired.rounds.map((r) => 1 / r));
          return [{ name, value: `${value.toFixed(3)}x (median of ${paired.rounds.length} round ratios; medians ${(paired.partnerRps / before).toFixed(3)}x)`, pass: value >= 0.95 }];
        }
        return [{ name, value: `${(now / before).toFixed(3)}x`, pass: now / before >= 0.95 }];
      }),
    ),
    ...pagingTargets(paging),
    memory
      ? {
          name: `Memory: RSS after ${memory.total.toLocaleString("en-US")} requests within 10% of RSS after ${memory.checkpoint.toLocaleString("en-US")}`,
          value: `${(((memory.rssEndMb - memory.rssCheckpointMb) / memory.rssCheckpointMb) * 100).toFixed(1)}%`,
          pass: Math.abs(memory.rssEndMb - memory.rssCheckpointMb) <= 0.1 * memory.rssCheckpointMb,
        }
      : { name: "Memory check", value: "not run", pass: null },
  ];
}

function render(rows: Row[], hash: HashCost[], memory: MemoryCheck | null, memoryNote: string | null, paging: PagingResult[], pagingNotes: string[], seconds: number): string {
  const bare = rows.find((r) => r.workload === "baseline")?.rps;
  const lines: string[] = [];
  lines.push(`# plantgate benchmark${quick ? " (quick smoke run: numbers are not comparable)" : ""}`);
  lines.push("");
  lines.push(
    `Node ${process.version}, ${tools.taskset ? "server pinned to CPU 0, wrk to CPU 1 (taskset)" : "no taskset: server and wrk share CPUs"}; ` +
      `wrk -t1 -c${settings.connections}; per row a fresh server process, ${settings.warmup} s warm-up, median of ${settings.rounds} x ${settings.seconds} s. ` +
      `Run took ${Math.round(seconds)} s. ${new Date().toISOString().slice(0, 10)}.`,
  );
  lines.push("");
  lines.push("| Workload | Server | req/s | p50 ms | p99 ms | peak RSS MB | CPU µs/req | x bare | errors |");
  lines.push("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const r of rows) {
    lines.push(
      `| ${WORKLOAD_LABEL[r.workload]} | ${r.contender.label} | ${r.rps.toFixed(0)} | ${r.p50ms.toFixed(2)} | ${r.p99ms.toFixed(2)} | ${r.peakRssMb.toFixed(0)} | ${r.cpuUsPerRequest.toFixed(0)} | ${bare ? (r.rps / bare).toFixed(2) : "-"} | ${r.errors} |`,
    );
  }
  lines.push("");
  lines.push("Password hash cost on its own (PBKDF2-SHA256, median ms per hash; the password-grant rows above run every contender at the same lower count):");
  lines.push("");
  lines.push("| Iterations | plantgate (WebCrypto) | node:crypto pbkdf2 (oauth2-server model) |");
  lines.push("| ---: | ---: | ---: |");
  for (const h of hash) lines.push(`| ${h.iterations.toLocaleString("en-US")} | ${h.plantgateMs.toFixed(2)} | ${h.nodeCryptoMs.toFixed(2)} |`);
  lines.push("");
  if (memory) {
    lines.push(
      `Memory check (plantgate, ${memory.store}; cycle of 1 token + 9 GetAccountList + 10 POST /plants): RSS ${memory.rssCheckpointMb.toFixed(1)} MB after ${memory.checkpoint.toLocaleString("en-US")} requests, ` +
        `${memory.rssEndMb.toFixed(1)} MB after ${memory.total.toLocaleString("en-US")}; peak ${memory.peakMb.toFixed(1)} MB; live heap after a forced GC ${memory.heapCheckpointMb.toFixed(1)} MB then ${memory.heapEndMb.toFixed(1)} MB; ~${memory.rps.toFixed(0)} req/s; ${memory.errors} errors; ${memory.stalledSlices} stalled 3 s slices.`,
    );
    lines.push("");
  } else if (memoryNote) {
    lines.push(`Memory check: ${memoryNote}`);
    lines.push("");
  }
  const ms = (l: { p50: number; max: number }) => `p50 ${l.p50.toFixed(2)} ms (max ${l.max.toFixed(2)})`;
  for (const p of paging) {
    lines.push(
      `Paging on ${ENGINE_LABEL[p.engine]}${p.baseline ? ` @ ${p.baseline} (baseline)` : ""} (${p.accounts.toLocaleString("en-US")} accounts, pageSize 20, ${p.samples} sequential requests each${p.seedSeconds !== null ? `, seeded in ${p.seedSeconds.toFixed(1)} s` : ", seeded earlier"}): ` +
        `page 1 ${ms(p.firstMs)}, middle page (${p.middlePage}) ${ms(p.middleMs)}, last page (${p.lastPage}) ${ms(p.lastMs)}.`,
    );
  }
  for (const note of pagingNotes) lines.push(`Paging: ${note}`);
  if (paging.length > 0 || pagingNotes.length > 0) lines.push("");
  lines.push("| Target | Result | |");
  lines.push("| --- | ---: | --- |");
  for (const t of targets(rows, paging, memory)) lines.push(`| ${t.name} | ${t.value} | ${t.pass === null ? "NOT RUN" : t.pass ? "PASS" : "FAIL"} |`);
  lines.push("");
  return lines.join("\n");
}

async function main(): Promise<number> {
  if (!tools.wrk) {
    console.error("pnpm bench needs wrk (the load generator), which is not installed. On Debian/Ubuntu: apt-get install -y wrk");
    return 2;
  }
  if (!tools.taskset) log("note: taskset not available (or one CPU): wrk and the servers will compete for CPUs");
  const t0 = performance.now();
  log(`plantgate bench${quick ? " --quick" : ""}: ${settings.rounds} x ${settings.seconds} s per row`);

  log("password hash cost");
  const hash = [await measureHashCost(600_000, quick ? 1 : 3), await measureHashCost(100_000, quick ? 1 : 5), await measureHashCost(iterations, quick ? 5 : 21)];

  const rows: Row[] = [];
  // The fleet rows need PostgreSQL (and Redis); without them they are left out, and said so.
  const haveRedis = await redisReachable(REDIS_URL);
  const havePostgres = await postgresReachable(PG_URL);
  if (!havePostgres) log(`note: PostgreSQL not reachable at BENCH_DATABASE_URL: the PostgreSQL rows are left out`);
  else if (!haveRedis) log(`note: Redis not reachable at BENCH_REDIS_URL: the PostgreSQL + Redis rows are left out`);
  const wanted = (id: string) => {
    const c = CONTENDERS[id]!;
    if (c.postgres && (!havePostgres || (c.postgres.redis && !haveRedis))) return false;
    return !onlyContenders || id === "bare" || onlyContenders.includes(id);
  };
  for (const [workload, ids] of PLAN) {
    const observeOnly = only !== undefined && !only.includes(workload) && only.includes("observe") && workload === "cc";
    if (only && !only.includes(workload) && !observeOnly) continue;
    for (const id of ids) {
      if (observeOnly && !OBSERVE_ROWS.includes(id)) continue;
      if (!wanted(id) || Object.values(baselineOf).includes(id)) continue;
      const baseId = baselineOf[id];
      const twin = PAIRED[id];
      if (twin !== undefined) rows.push(...(await measurePair(workload, CONTENDERS[twin]!, CONTENDERS[id]!)));
      if (baseId !== undefined && wanted(baseId)) {
        // A row with a twin and a baseline runs both pairs; its own row is the twin pair's, and the
        // baseline's row carries its ratio to this checkout's side of the baseline pair.
        const [mine, base] = await measurePair(workload, CONTENDERS[id]!, CONTENDERS[baseId]!);
        if (twin === undefined) rows.push(mine!);
        rows.push(base!);
      } else if (twin === undefined) rows.push(await measure(workload, CONTENDERS[id]!));
    }
  }

  let memory: MemoryCheck | null = null;
  let memoryNote: string | null = null;
  if (!only || only.includes("memory")) {
    log(`memory check: ${settings.memoryTotal.toLocaleString("en-US")} mixed requests`);
    try {
      memory = await memoryCheck();
    } catch (error) {
      // The table above is still worth writing; the failure goes into it.
      memoryNote = `failed: ${(error as Error).message.split("\n")[0]}`;
      log(`memory check ${memoryNote}`);
    }
  }

  const paging: PagingResult[] = [];
  const pagingNotes: string[] = [];
  if (!only || only.includes("paging")) {
    const engines: PagingEngine[] = [];
    if (await postgresReachable(PG_URL)) engines.push("postgres");
    else {
      pagingNotes.push("PostgreSQL skipped: not reachable (set BENCH_DATABASE_URL).");
      log(`paging: ${pagingNotes.at(-1)}`);
    }
    engines.push("sqlite");
    for (const engine of engines) {
      for (const count of [PAGING_SMALL, settings.pagingAccounts]) {
        log(`paging on ${ENGINE_LABEL[engine]} with ${count.toLocaleString("en-US")} accounts`);
        paging.push(await measurePaging(engine, PG_URL, count, settings.pagingSamples));
        // The baseline's server on the same seeded database, right after (the schema is the same
        // as long as the baseline has the same migrations; an older one refuses to start on it).
        if (baseline && process.env.BENCH_BASELINE_PAGING === "1") paging.push(await measurePaging(engine, PG_URL, count, settings.pagingSamples, baseline));
      }
    }
  }

  const markdown = render(rows, hash, memory, memoryNote, paging, pagingNotes, (performance.now() - t0) / 1000);
  console.log(markdown);
  const resultsDir = join(BENCH_DIR, "results");
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, quick || only || onlyContenders || baseline ? "quick.md" : "latest.md");
  writeFileSync(file, markdown);
  log(`written to ${file}`);
  return 0;
}

try {
  process.exitCode = await main();
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

