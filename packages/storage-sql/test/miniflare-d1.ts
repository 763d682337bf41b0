/** A real D1 database in Miniflare (workerd) for one test file, driven from Node. */
import { Miniflare } from "miniflare";
import { afterAll, beforeAll } from "vitest";
import type { D1DatabaseLike } from "../src/d1.js";

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
