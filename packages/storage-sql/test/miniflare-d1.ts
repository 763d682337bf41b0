/** A real D1 database in Miniflare (workerd) for one test file, driven from Node over the bridge of d1-bridge.ts. */
import { Miniflare } from "miniflare";
import { afterAll, beforeAll } from "vitest";
import { TABLES } from "../src/schema.js";
import { connectD1Bridge, d1BridgeWorker, type BridgedD1, type D1Bridge } from "./d1-bridge.js";
import { DATA_TABLES } from "./support.js";

/** The binding as the tests use it: a D1 database (over the bridge, see d1-bridge.ts) whose statements can also be run directly. */
export type TestD1 = BridgedD1;

/**
 * Starts one Miniflare with the D1 database `name` before the file's tests (handing its binding, over
 * the bridge Worker, to `use`) and disposes of it after them.
 */
export function miniflareD1(name: string, use: (binding: TestD1) => void): void {
  let mf: Miniflare | undefined;
  let bridge: D1Bridge | undefined;
  beforeAll(async () => {
    mf = new Miniflare({ workers: [d1BridgeWorker(name)] });
    bridge = await connectD1Bridge(mf);
    use(bridge.database);
  }, 30_000);
  afterAll(async () => {
    await bridge?.close();
    await mf?.dispose();
  });
}

/** Empties every plantgate table in one batch (cheaper than dropping and migrating again). */
export async function emptyD1Tables(binding: TestD1): Promise<void> {
  await binding.batch([...DATA_TABLES.map((t) => binding.prepare(`delete from "${t}"`)), binding.prepare(`update "${TABLES.counters}" set value = 0`)]);
}

/** Every plantgate table as JSON text, read through the binding (the conformance suite looks for secrets in it). */
export async function d1RawDump(binding: TestD1): Promise<string> {
  const dump: Record<string, unknown[]> = {};
  for (const table of DATA_TABLES) dump[table] = (await binding.prepare(`select * from "${table}"`).all()).results;
  return JSON.stringify(dump);
}
