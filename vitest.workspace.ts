/** The one list of test projects; vitest.config.ts hands it to `test.projects`. */
import { readdirSync } from "node:fs";
import { configDefaults, type TestProjectInlineConfiguration } from "vitest/config";
import storageSql from "./packages/storage-sql/vitest.config.js";

/**
 * The storage-sql files that drive a D1 database in Miniflare through its synchronous proxy
 * (`getD1Database`: every `prepare` blocks on a worker thread). With other test files running
 * beside them that proxy lost track of its replies (an assertion in its fetch-sync worker, after
 * which every call of the file failed: seen with two files at once on an idle 2-core machine and
 * with three beside a busy loop), so they run last, in a group of their own, one at a time.
 */
const D1_FILES = ["test/d1.test.ts", "test/d1-kysely.test.ts"];
const STORAGE_SQL = "./packages/storage-sql";

const packages = readdirSync(new URL("./packages", import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && entry.name !== "storage-sql")
  .map((entry) => `packages/${entry.name}`);

const projects: Array<string | TestProjectInlineConfiguration> = [
  ...packages,
  { test: { ...storageSql.test, root: STORAGE_SQL, exclude: [...configDefaults.exclude, ...D1_FILES] } },
  { test: { ...storageSql.test, name: "storage-sql (D1)", root: STORAGE_SQL, include: D1_FILES, sequence: { groupOrder: 1 }, fileParallelism: false } },
  "tests/*",
  "examples/custom-storage",
  "examples/cloudflare-worker",
  "bench",
];

export default projects;
