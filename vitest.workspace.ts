/** The one list of test projects; vitest.config.ts hands it to `test.projects`. */
import { readdirSync } from "node:fs";
import { configDefaults, type TestProjectInlineConfiguration, type UserWorkspaceConfig } from "vitest/config";
import cloudflare from "./packages/cloudflare/vitest.config.js";
import storageSql from "./packages/storage-sql/vitest.config.js";
import httpSuite from "./tests/http-suite/vitest.config.js";

/**
 * The files that drive a D1 database in Miniflare from Node through its synchronous proxy
 * (`getD1Database`: every call blocks on a worker thread until workerd answers). With other test
 * files running beside them that proxy lost track of its replies (an assertion in its fetch-sync
 * code, after which every call of the file failed: seen with two storage-sql files at once on an
 * idle 2-core machine and with three beside a busy loop; likely the same once in cloudflare's
 * worker.test.ts, whose tests from the third on all answered 503, not confirmed since its logger
 * was silent then). So they run after every other file, one file at a time: each group below has
 * its own `groupOrder`, so no two of them overlap either.
 */
const SYNC_D1: Array<{ root: string; config: UserWorkspaceConfig; files: string[] }> = [
  { root: "./packages/storage-sql", config: storageSql, files: ["test/d1.test.ts", "test/d1-kysely.test.ts"] },
  { root: "./packages/cloudflare", config: cloudflare, files: ["test/worker.test.ts", "test/scheduled.test.ts"] },
  // workerd.test.ts seeds its accounts through the proxy (the Worker itself uses D1 inside workerd).
  { root: "./tests/http-suite", config: httpSuite, files: ["test/workerd.test.ts"] },
];
const split = new Set(SYNC_D1.map((g) => g.root.slice(2)));

const dirs = (parent: string) =>
  readdirSync(new URL(`./${parent}`, import.meta.url), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !split.has(`${parent}/${entry.name}`))
    .map((entry) => `${parent}/${entry.name}`);

const projects: Array<string | TestProjectInlineConfiguration> = [
  ...dirs("packages"),
  ...dirs("tests"),
  ...SYNC_D1.flatMap(({ root, config, files }, i) => [
    { test: { ...config.test, root, exclude: [...configDefaults.exclude, ...files] } },
    { test: { ...config.test, name: `${config.test?.name ?? root} (D1 proxy)`, root, include: files, sequence: { groupOrder: i + 1 }, fileParallelism: false } },
  ]),
  "examples/custom-storage",
  "examples/cloudflare-worker",
  "bench",
];

export default projects;
