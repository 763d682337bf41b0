/**
 * Runs a property in chunks of {@link CHUNK} on fresh worlds, with seeds derived from the fixed
 * {@link SEED}, and tallies what the server answered so a test can show its generator reached
 * both sides (accepted and rejected requests).
 */
import fc from "fast-check";
import { CHUNK, RUNS, SEED } from "./settings.js";
import { createWorld, STORE_ENV, type World, type WorldOptions } from "./world.js";
import { outputIsClean } from "./invariants.js";

export interface Tally {
  runs: number;
  byStatus: Map<number, number>;
  /** Free-form counters a property bumps (e.g. "pristine", "jwt-accepted"). */
  labels: Map<string, number>;
}

export function bump(tally: Tally, label: string): void {
  tally.labels.set(label, (tally.labels.get(label) ?? 0) + 1);
}

export function summary(t: Tally): string {
  const s = [...t.byStatus].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}:${v}`).join(" ");
  const l = [...t.labels].sort().map(([k, v]) => `${k}:${v}`).join(" ");
  return `${t.runs} requests; status ${s}; ${l}`;
}

/**
 * @example
 * const tally = await runChunked(requestArb, async (world, spec, tally) => { ... return status; });
 */
export async function runChunked<T>(
  arb: fc.Arbitrary<T>,
  check: (world: World, value: T, tally: Tally) => Promise<number>,
  options: { runs?: number; world?: WorldOptions } = {},
): Promise<Tally> {
  const total = options.runs ?? RUNS;
  const tally: Tally = { runs: 0, byStatus: new Map(), labels: new Map() };
  for (let chunk = 0, done = 0; done < total; chunk++) {
    const numRuns = Math.min(CHUNK, total - done);
    const seed = SEED + chunk;
    const world = await createWorld(seed, options.world);
    try {
      try {
        await fc.assert(
          fc.asyncProperty(arb, async (value) => {
            const status = await check(world, value, tally);
            tally.runs++;
            tally.byStatus.set(status, (tally.byStatus.get(status) ?? 0) + 1);
          }),
          { seed, numRuns },
        );
      } catch (e) {
        // fast-check names seed, path and the shrunk counterexample; say how to replay this chunk alone.
        const message = e instanceof Error ? e.message : String(e);
        throw new Error(`chunk ${chunk} failed; replay with HOSTILE_SEED=${seed} HOSTILE_RUNS=${numRuns}${STORE_ENV}\n${message}`, { cause: e });
      }
      // Secrets never logged: the whole chunk's log lines and metrics, against all it carried.
      await outputIsClean(world);
    } finally {
      await world.close();
    }
    done += numRuns;
  }
  return tally;
}
