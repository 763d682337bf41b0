/**
 * How many generated requests each property runs, and from which seed. `pnpm test` uses the fixed
 * defaults so CI is reproducible; `pnpm hostile` (root) raises the count, and a failure report
 * names the seed and path to replay (`HOSTILE_SEED=... HOSTILE_RUNS=...`).
 */

function intFromEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^-?\d+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/** The fixed seed of the CI run. */
export const DEFAULT_SEED = 20261123;

/** Requests per endpoint in `pnpm test`: the issue asks for at least 10,000. */
export const DEFAULT_RUNS = 10_000;

/**
 * Requests per endpoint on workerd (`HOSTILE_RUNTIME=workerd`, what `pnpm test` runs in the
 * `@plantgate/hostile-tests-workerd` project) unless `HOSTILE_RUNS` says otherwise: each goes through
 * workerd and D1, about 16 ms with its two snapshots on a 2-core machine, where the in-process world
 * takes about 4; 400 keeps each file to a few seconds beside the Worker's start.
 */
export const DEFAULT_WORKERD_RUNS = 400;

export const SEED = intFromEnv("HOSTILE_SEED", DEFAULT_SEED, -(2 ** 31));
export const RUNS = intFromEnv("HOSTILE_RUNS", process.env.HOSTILE_RUNTIME === "workerd" ? DEFAULT_WORKERD_RUNS : DEFAULT_RUNS, 1);

/** In a test's name: where its requests are answered (empty in process). */
export const RUNTIME_LABEL = process.env.HOSTILE_RUNTIME === "workerd" ? "workerd + D1: " : "";

/**
 * Runs are split into chunks, each on a fresh world, so the set of keys the snapshot has to read
 * back (plants and refresh tokens created by successful requests) stays small and snapshots cheap.
 */
export const CHUNK = 1000;

/**
 * Whether the run is large enough for the "the generator reached both sides" checks (counts of
 * accepted and refused requests); a tiny HOSTILE_RUNS for a quick replay may not reach every label.
 */
export const COVERAGE_CHECKS = RUNS >= 2000;
