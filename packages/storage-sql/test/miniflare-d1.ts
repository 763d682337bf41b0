/** A real D1 database in Miniflare (workerd) for one test file, driven from Node. */
import { Miniflare } from "miniflare";
import { afterAll, beforeAll } from "vitest";
import type { D1DatabaseLike } from "../src/d1.js";
import { TABLES } from "../src/schema.js";
import { DATA_TABLES } from "./support.js";

interface Statement {
  all(): Promise<{ results: Record<string, unknown>[] }>;
  run(): Promise<unknown>;
}

/** The binding as the tests use it: a D1 database whose statements can also be run directly. */
export type TestD1 = Omit<D1DatabaseLike, "prepare"> & { prepare(query: string): Statement & ReturnType<D1DatabaseLike["prepare"]> };

/**
 * Starts one Miniflare with the D1 database `name` before the file's tests (handing its binding to
 * `use`) and disposes of it after them.
 */
export function miniflareD1(name: string, use: (binding: TestD1) => void): void {
  let mf: Miniflare | undefined;
  beforeAll(async () => {
    mf = new Miniflare({ modules: true, script: "export default { fetch() { return new Response(null, { status: 404 }) } }", d1Databases: { DB: name } });
    use((await mf.getD1Database("DB")) as unknown as TestD1);
  }, 30_000);
  afterAll(async () => {
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
